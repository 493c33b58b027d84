#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# snpu-vm-gpu: bring up the foreign DRM driver of selftests/interop in the
# test VM. scripts/vm gives every guest QEMU's virtio-gpu-pci device; this
# loads Debian's virtio-gpu module and its dependencies (staged in
# /opt/snpu/kmod by scripts/vm-gpu-modules, dependencies first) unless the
# driver is already registered (loaded before, or built in as in the debug
# kernel), waits for its nodes, and gives them the permissions Debian's
# udev rules give them (systemd's 50-udev-default.rules): the render node
# /dev/dri/renderD128 0666 (any user may use a render node: its ioctls
# act on the opener's own objects only), the primary node /dev/dri/card0
# 0660 root:video (gid 44; modesetting and dumb buffers are for the video
# group). Exits non-zero, saying why, when the GPU cannot be brought up.
dir=${SNPU_KMOD:-/opt/snpu/kmod}
drv=/sys/bus/virtio/drivers/virtio_gpu

if [ ! -d "$drv" ]; then
	if [ ! -s "$dir/order" ]; then
		echo "snpu-vm-gpu: the kernel has no virtio-gpu driver and none is staged in $dir" >&2
		exit 1
	fi
	while read -r f; do
		m=$(basename "$f" .ko | tr - _)
		[ -d "/sys/module/$m" ] && continue
		if ! insmod "$dir/$f"; then
			echo "snpu-vm-gpu: insmod $dir/$f failed" >&2
			exit 1
		fi
	done < "$dir/order"
fi
# The driver probes the device as it registers; devtmpfs makes the nodes.
i=0
while [ ! -c /dev/dri/renderD128 ] || [ ! -c /dev/dri/card0 ]; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then
		echo "snpu-vm-gpu: no /dev/dri/renderD128 and card0 after 10 s" \
			"(is there a virtio-gpu-pci device? lspci: $(ls /sys/bus/pci/devices))" >&2
		exit 1
	fi
	sleep 0.1
done
chmod 0666 /dev/dri/renderD*
chown 0:44 /dev/dri/card*
chmod 0660 /dev/dri/card*
