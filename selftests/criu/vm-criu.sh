#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# snpu-vm-criu: set the test VM up for criu (the criu kselftests). Loads
# the modules scripts/vm-criu staged in /opt/snpu/kmod-criu (nf_tables and
# the socket diagnostics, dependencies first; none on a kernel with them
# built in), mounts devpts (criu checks /dev/ptmx) and makes /run (criu
# keeps its cache of the kernel's features there). Exits non-zero, saying
# why, when criu's own check fails.
dir=${SNPU_KMOD_CRIU:-/opt/snpu/kmod-criu}

# Neither criu nor the plugin: the system that built the image builds no
# plugin (Debian 13, criu 4: not supported yet); status 2, left out.
if [ ! -e /usr/sbin/criu ] && [ ! -e /opt/snpu/lib/criu/snpu_plugin.so ]; then
	echo "snpu-vm-criu: no criu and no CRIU plugin in this guest: its" \
		"system builds none (scripts/deps criu, criu-plugin.h)" >&2
	exit 2
fi
if [ ! -x /usr/sbin/criu ] || [ ! -f /opt/snpu/lib/criu/snpu_plugin.so ]; then
	echo "snpu-vm-criu: no criu or no plugin in this guest: boot it with" \
		"scripts/vm -x build/vm/criu.cpio.gz (scripts/deps criu)" >&2
	exit 1
fi

if [ -s "$dir/order" ]; then
	while read -r f; do
		m=$(basename "$f" .ko | tr - _)
		[ -d "/sys/module/$m" ] && continue
		if ! insmod "$dir/$f"; then
			echo "snpu-vm-criu: insmod $dir/$f failed" >&2
			exit 1
		fi
	done < "$dir/order"
fi
mkdir -p /run /dev/pts
grep -q ' /dev/pts ' /proc/mounts || mount -t devpts devpts /dev/pts
# criu that cannot even start here (its kernel feature probe fails:
# Debian 12's criu 3.17 on kernel 7.x stops on the vDSO's layout) is
# status 2, for the runner to say so and leave the suite out.
if ! /usr/sbin/criu check > /tmp/criu-check.log 2>&1 &&
   grep -q 'Could not initialize kernel features detection' /tmp/criu-check.log; then
	echo "snpu-vm-criu: $(/usr/sbin/criu -V 2>&1 | head -n 1) cannot start on $(uname -r):" >&2
	grep '^Error' /tmp/criu-check.log | tail -n 3 >&2
	exit 2
fi
# criu check's verdict is printed, not obeyed: it also asks for what
# these dumps never use (the debug kernel has no network devices, so
# getsockopt(SO_BINDTODEVICE) fails it), and the suite's own dumps and
# restores are what tell whether criu works here.
if ! /usr/sbin/criu check > /tmp/criu-check.log 2>&1; then
	echo "snpu-vm-criu: criu check reports missing features:" >&2
	cat /tmp/criu-check.log >&2
fi
