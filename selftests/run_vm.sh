#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Run every kselftest suite inside the VM (installed there as
# snpu-selftests). Suites in UNLOADED run first with the module unloaded
# (they load it themselves); then the module is loaded with its defaults
# and its test hooks on (test_hooks=1: the SPIN and FAIL kernels and
# SNPU_IOC_NOP, which the suites use), the other suites run, and the
# module must unload cleanly. Suites in
# DEBUG_ONLY need the debug kernel (fault injection): they run only when
# the environment has SNPU_TIER=debug, and are left out silently (not
# reported as skipped) otherwise.
#
# Prints the suites' TAP; a program that ends without the harness's totals
# line is reported as "not ok". Exits 1 when anything failed.
dir=${SNPU_SELFTESTS:-/opt/snpu/selftests}
ko=${SNPU_KO:-/opt/snpu/snpu.ko}
UNLOADED="load"
DEBUG_ONLY="failnth"
# Suites that need other module parameters: the module is reloaded with
# them (and test_hooks=1) for the suite, then with its defaults again; an
# unload that fails (a file left open, a reference leaked) fails the run.
PARAMS_comm="devices=4"
PARAMS_fence="devices=2"
PARAMS_dmabuf="devices=2 ctx_mem_mb=8"
PARAMS_ckpt="devices=4"
PARAMS_criu="devices=4"
PARAMS_mpi="devices=4"
PARAMS_mpitrain="devices=4"
# Suites whose programs are MPI programs: each runs under mpirun once for
# every process count listed (Open MPI's configuration in the VM is
# scripts/vm-mpi's), as root, with a hang guard of MPI_TIMEOUT seconds. The
# mpi suite's processes are ranks on devices of their own, at most 4.
MPIRUN_mpi="2 3 4"
MPI_TIMEOUT=600
# The mpitrain suite's program is not an MPI program: it runs mpirun
# itself (snpu-train --mpi), so it is run once, as any other.
# Suites that need IPv4 (mpirun reaches its daemons over TCP on the
# loopback interface): left out, with a comment line, on a kernel that has
# none (the debug kernel, built from tinyconfig).
NEEDS_INET="mpi mpitrain"
# Suites that need a foreign DRM driver: QEMU's virtio-gpu (scripts/vm
# gives every guest the device). snpu-vm-gpu loads its driver (staged in
# the image, or built in) before the first of them, and only then, so that
# the other suites run without it; a kernel where it cannot be brought up
# fails the suite (not ok), it is never left out.
NEEDS_GPU="interop"
gpu_up=0
# Suites that run criu (as root): snpu-vm-criu loads the modules criu
# needs (nf_tables, the socket diagnostics: staged by scripts/vm-criu, or
# built in) and runs `criu check`. A guest with only one of criu and its
# plugin fails the suite (not ok); a kernel that the guest's criu cannot
# start on at all (its kernel feature probe fails: Debian 12's criu 3.17
# on kernel 7.x), or an image of a system that builds no plugin (Debian
# 13), leaves the suite out, saying so.
NEEDS_CRIU="criu"
rc=0

# Reload the module with test_hooks=1 and the parameters $1.
reload() {
	if ! rmmod snpu; then
		echo "not ok 1 vm.rmmod_for_reload $1"
		rc=1
		return 1
	fi
	if ! insmod "$ko" test_hooks=1 $1; then
		echo "not ok 1 vm.insmod $1"
		rc=1
		return 1
	fi
}

# run_prog PROG [N]: run PROG, or with N, N processes of it under mpirun.
run_prog() {
	if [ -n "${2:-}" ]; then
		echo "# selftest $1 (mpirun -np $2)"
		timeout "$MPI_TIMEOUT" mpirun -np "$2" --allow-run-as-root \
			--oversubscribe "$1" > /tmp/ksft.out 2>&1
	else
		echo "# selftest $1"
		"$1" > /tmp/ksft.out 2>&1
	fi
	st=$?
	cat /tmp/ksft.out
	if ! grep -q '^# Totals:' /tmp/ksft.out; then
		echo "not ok 1 $1 # ended without results (status $st)"
		rc=1
	elif [ $st -ne 0 ]; then
		rc=1
	fi
}

run_suite() {
	nps=$(eval echo "\${MPIRUN_$1:-}")
	for p in "$dir/$1"/*; do
		[ -f "$p" ] && [ -x "$p" ] || continue
		if [ -z "$nps" ]; then
			run_prog "$p"
			continue
		fi
		for np in $nps; do
			run_prog "$p" "$np"
		done
	done
}

if grep -q '^snpu ' /proc/modules; then
	rmmod snpu || { echo "not ok 1 vm.rmmod_before_tests"; exit 1; }
fi
for s in $UNLOADED; do
	run_suite "$s"
done

if insmod "$ko" test_hooks=1; then
	echo "ok 1 vm.insmod_defaults"
else
	echo "not ok 1 vm.insmod_defaults"
	exit 1
fi
for s in $(ls "$dir"); do
	case " $UNLOADED " in *" $s "*) continue ;; esac
	case " $DEBUG_ONLY " in
	*" $s "*) [ "${SNPU_TIER:-}" = debug ] || continue ;;
	esac
	[ -d "$dir/$s" ] || continue
	case " $NEEDS_INET " in
	*" $s "*)
		if [ ! -d /proc/sys/net/ipv4 ]; then
			echo "# suite $s left out: this kernel has no IPv4 (CONFIG_INET)"
			continue
		fi ;;
	esac
	case " $NEEDS_GPU " in
	*" $s "*)
		if [ $gpu_up = 0 ] && ! snpu-vm-gpu; then
			echo "not ok 1 vm.gpu_driver_for_$s"
			rc=1
			continue
		fi
		gpu_up=1 ;;
	esac
	case " $NEEDS_CRIU " in
	*" $s "*)
		snpu-vm-criu
		case $? in
		0) ;;
		2)
			echo "# suite $s left out: no criu for this kernel or system (above)"
			continue ;;
		*)
			echo "not ok 1 vm.criu_for_$s"
			rc=1
			continue ;;
		esac ;;
	esac
	params=$(eval echo "\${PARAMS_$s:-}")
	if [ -n "$params" ]; then
		reload "$params" || exit 1
		run_suite "$s"
		reload "" || exit 1
	else
		run_suite "$s"
	fi
done
if rmmod snpu; then
	echo "ok 1 vm.rmmod_after_tests"
else
	echo "not ok 1 vm.rmmod_after_tests"
	rc=1
fi
exit $rc
