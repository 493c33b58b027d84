# SPDX-License-Identifier: GPL-2.0
# snpu top-level build: the kernel module (kbuild, see Kbuild), libsnpu,
# its tools, the kselftests, the VM image and the checks. `make help`.

VERSION := 0.15.0
SONAME := libsnpu.so.0
# The file behind the soname: new symbol versions, same soname.
LIBFILE := libsnpu.so.$(VERSION)

# The running kernel's build dir, else the newest Debian headers. Recipes
# that need it run in a sub-make after scripts/deps, so that a first build
# on a fresh machine sees the headers deps just installed.
KDIR ?= $(shell $(CURDIR)/scripts/kdir)

ifeq ($(V),1)
Q :=
else
Q := @
MAKEFLAGS += --no-print-directory
endif

CC ?= gcc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Wno-unused-parameter
B := build
KSRC := $(B)/ksrc
KSFT_INC := $(KSRC)/tools/testing/selftests
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

LIB_SRCS := $(wildcard lib/*.c lib/rt2/*.c)
LIB_HDRS := lib/include/snpu.h lib/include/snpu_rt2.h uapi/linux/snpu.h uapi/linux/snpu_ckpt.h
LIB_CFLAGS := $(CFLAGS) $(WARN) -fPIC -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 \
	      -Iuapi -Ilib/include
TOOLS := $(patsubst lib/tools/%.c,$(B)/tools/%,$(wildcard lib/tools/*.c))
# Tools that are MPI programs (they link libsnpu_mpi): only with Open MPI.
MPI_TOOLS := $(B)/tools/snpu-bench-mpi
ifneq ($(shell pkg-config --exists ompi-c 2>/dev/null && echo y),y)
TOOLS := $(filter-out $(MPI_TOOLS),$(TOOLS))
endif
CORE_SRCS := $(wildcard kmod/core/*.c)
CORE_HDRS := $(wildcard kmod/core/*.h) uapi/linux/snpu.h uapi/linux/snpu_ckpt.h
# Include path of kmod/core built natively (unit tests, fuzz targets).
CORE_INC := -Iuapi -Ikmod
# Native unit tests: every kmod/core/tests/*.c and lib/tests/*.c program.
CORE_TESTS := $(patsubst kmod/core/tests/%.c,$(B)/unit/%,$(wildcard kmod/core/tests/*.c))
LIB_TESTS := $(patsubst lib/tests/%.c,$(B)/unit/%,$(wildcard lib/tests/*.c))
# rt2's hand-over stress test once more under ThreadSanitizer, which
# cannot be combined with ASan: build/unit/rt2_handover_tsan_test.
TSAN_TESTS := $(B)/unit/rt2_handover_tsan_test
UNIT_TESTS := $(CORE_TESTS) $(LIB_TESTS) $(TSAN_TESTS)

# libFuzzer targets of kmod/core: kmod/core/fuzz/<name>_fuzz.c, built with
# clang into build/fuzz/<name>_fuzz. `make fuzz` runs each for its share
# of FUZZ_SECS seconds with libFuzzer's -seed=FUZZ_SEED.
FUZZ_CC ?= clang
FUZZ_SECS ?= 30
FUZZ_SEED ?= 1
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all
FUZZ_BINS := $(patsubst kmod/core/fuzz/%.c,$(B)/fuzz/%,$(wildcard kmod/core/fuzz/*_fuzz.c))
FUZZ_COMMON := kmod/core/fuzz/ref.c
FUZZ_GEN := $(B)/fuzz/gen/snpu_ioc_list.h

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin

# The module's version: the ABI's (modinfo snpu shows it), for DKMS.
MODVER := $(shell sed -n 's/^\#define SNPU_ABI_MAJOR[[:space:]]*//p' uapi/linux/snpu.h).$(shell sed -n 's/^\#define SNPU_ABI_MINOR[[:space:]]*//p' uapi/linux/snpu.h)
DKMS_SRC ?= /usr/src/snpu-$(MODVER)
# The kernel DKMS builds for: the one of KDIR (/lib/modules/<version>/build).
DKMS_KVER ?= $(notdir $(patsubst %/,%,$(dir $(KDIR))))

.PHONY: all module kbuild vm-check lib mpi-lib tools criu-plugin selftests unit unit-build deps ksrc lint check run \
	vm-image vm-shell bench bench-native install clean help debug-module debug-image check-debug fuzz fuzz-build fuzz-bins \
	dkms dkms-src check-kernels kernel-image check-release dkms-version

all: module lib tools criu-plugin selftests

help:
	@echo 'snpu make targets:'
	@echo '  all (default)  module, library, tools and selftests'
	@echo '  module         snpu.ko with kbuild against KDIR ($(KDIR))'
	@echo '  lib            build/lib: libsnpu.a, libsnpu.so (versioned symbols)'
	@echo '  mpi-lib        build/lib/libsnpu_mpi.a, the communicator over hosts (lib/mpi),'
	@echo '                 when pkg-config finds Open MPI (ompi-c; scripts/deps mpi)'
	@echo '  tools          build/tools: snpu-smi, snpu-bench, snpu-bench-snapshot,'
	@echo '                 snpu-bench-graph, snpu-bench-sync, snpu-bench-rt2,'
	@echo '                 snpu-bench-kernels, snpu-bench-coll, snpu-train,'
	@echo '                 snpu-checkpoint (checkpoint to a file, restore elsewhere);'
	@echo '                 with Open MPI snpu-bench-mpi, and snpu-train takes --mpi'
	@echo '  selftests      build/selftests: kselftest suites (run in the VM)'
	@echo '  unit           native unit tests of kmod/core and lib under ASan/UBSan;'
	@echo '                 rt2'"'"'s hand-over stress test also under TSan'
	@echo '  fuzz           libFuzzer targets of kmod/core, FUZZ_SECS=$(FUZZ_SECS) s in all,'
	@echo '                 FUZZ_SEED=$(FUZZ_SEED); crashes in build/fuzz/crashes/'
	@echo '  lint           checkpatch --strict, kernel-doc (no warning), sparse C=2,'
	@echo '                 pahole ABI check'
	@echo '  check          build + lint + unit + fuzz + kselftests in the VM; ends with'
	@echo '                 "N passed, N failed"'
	@echo '  vm-check       only the kselftests in the VM'
	@echo '  check-debug    kselftests in the VM on a debug kernel (KASAN, lockdep,'
	@echo '                 kmemleak, UBSAN), built once and cached, the fuzz suite'
	@echo '                 for a million operations; same last line. CI runs it'
	@echo '                 after check'
	@echo '  check-kernels  for each kernel of scripts/kernels.list (6.1, 6.12, 7.x,'
	@echo '                 fetched from Debian into ~/.cache/snpu/kernels): the module'
	@echo '                 with -Werror, a dkms build, the kselftests in the VM on that'
	@echo '                 kernel; one line per kernel. KERNELS="6.12 ..." picks rows,'
	@echo '                 KERNELS_VM="7.x ..." the rows whose kselftests run'
	@echo '  check-release  make check in a fresh Debian RELEASE=$(RELEASE) system'
	@echo '                 (debootstrap, cached), from a clone of HEAD, with that'
	@echo "                 release's packages and kernel"
	@echo '  run            train an MLP on Fashion-MNIST in the VM (snpu-train, about'
	@echo '                 3 min): test accuracy, time split, build/run/*.svg;'
	@echo '                 EPOCHS=N for N full epochs, RUN_ARGS= snpu-train options'
	@echo '  vm-image       build/vm/initramfs.cpio.gz for scripts/vm (with the'
	@echo '                 virtio-gpu modules of the interop suite), and'
	@echo '                 build/vm/criu.cpio.gz: criu, the CRIU plugin and the'
	@echo '                 modules criu needs (scripts/vm -x, for the criu suite)'
	@echo '  vm-shell       interactive shell in the VM with the module loaded'
	@echo '  bench          bench-native, then snpu-bench in the VM: task throughput'
	@echo '                 and latency (NOPs, fills and a CRC32C through the cores),'
	@echo '                 attached-stream misses; snpu-bench-snapshot:'
	@echo '                 backup/restore GB/s, lock latency, checkpoint cost;'
	@echo '                 snpu-bench-graph: ns per node of a graph launch against'
	@echo '                 the same tasks through the ring, the fixed and'
	@echo '                 per-node cost fitted, stitched against unstitched'
	@echo '                 launches, hazard-list visits; snpu-bench-sync: event'
	@echo '                 ping-pongs, callbacks (ioctl and ring) against FILLs,'
	@echo '                 one task round trip against a pipe, epoll on a'
	@echo '                 sync_file against EVENT_SYNC (a NOP, a 1 MiB FILL), a'
	@echo '                 64 MiB copy from an imported dma-buf against native'
	@echo '                 memory; snpu-bench-rt2:'
	@echo '                 the rt2 executor per node through the ring;'
	@echo '                 snpu-bench-kernels: device GEMM GFLOP/s at block_dim 1,'
	@echo '                 the cores and snpu_launch_dims beside OpenBLAS (1 and N'
	@echo '                 threads) and a plain loop, the FPU section of each f32'
	@echo '                 kernel; snpu-bench-coll: all-reduce (f32, and i32 from'
	@echo '                 4 MiB) on 2 and 4 devices, 4 KiB to 64 MiB, algbw and'
	@echo '                 busbw beside memcpy; with Open MPI, snpu-bench-mpi:'
	@echo '                 libsnpu_mpi'"'"'s ordered f32 sum beside MPI_Allreduce'"'"'s'
	@echo '                 maximum on 2 and 4 hosts;'
	@echo '                 snpu-train: steps/s with graph replay, op by op,'
	@echo '                 CPU reference, CPU with OpenBLAS'
	@echo '  bench-native   attached-stream cache hits on the host (-O2, no sanitizers);'
	@echo '                 fails if a hit allocates; the cost per node of graph capture;'
	@echo '                 the rt2 executor per node on the host-only device, fails if'
	@echo '                 a run after the first allocates; rt2 relations: prepare'
	@echo '                 time and memory, ns per relation event, allocations'
	@echo '  deps           install every Debian package any target needs'
	@echo '  install        library, headers, libsnpu.pc and the tools under DESTDIR/PREFIX;'
	@echo '                 snpu_plugin.so (CRIU) in DESTDIR/CRIU_PLUGIN_DIR=$(CRIU_PLUGIN_DIR)'
	@echo '  dkms-src       the module sources and dkms.conf in DESTDIR$(DKMS_SRC)'
	@echo '  dkms           dkms-src, then dkms add, build and install for $(DKMS_KVER)'
	@echo '                 (DKMS_KVER=<kernel version>; needs root)'
	@echo '  clean          remove build outputs'
	@echo 'Variables: KDIR=<kernel build dir>  V=1 (verbose)  PREFIX=/usr/local  DESTDIR'
	@echo 'The VM by hand: scripts/vm run [-p PARAMS] CMD..., scripts/vm --help'

deps:
	$(Q)scripts/deps all

ksrc:
	$(Q)scripts/deps build
	$(Q)scripts/ksrc $(KSRC)

# ---- kernel module ---------------------------------------------------------

module:
	$(Q)scripts/deps build
	$(Q)$(MAKE) kbuild

kbuild:
	$(Q)$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# ---- library ---------------------------------------------------------------

LIB_OBJS := $(patsubst lib/%.c,$(B)/lib/obj/%.o,$(LIB_SRCS))

$(B)/lib/obj/%.o: lib/%.c $(LIB_HDRS) $(wildcard lib/*.h lib/rt2/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

# lib/core.c builds the task checks of kmod/core into the library.
$(B)/lib/obj/core.o: $(CORE_SRCS) $(CORE_HDRS)

$(B)/lib/libsnpu.a: $(LIB_OBJS)
	@$(if $(Q),echo '  AR      $@')
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/lib/$(LIBFILE): $(LIB_OBJS) lib/libsnpu.map
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libsnpu.map \
		-Wl,--no-undefined -o $@ $(LIB_OBJS)
	$(Q)ln -sf $(LIBFILE) $(B)/lib/$(SONAME)
	$(Q)ln -sf $(SONAME) $(B)/lib/libsnpu.so

# snpu_plugin.so (lib/criu/): the CRIU plugin, built when CRIU's
# criu-plugin.h is there (scripts/deps criu: Debian's criu package ships
# it in /usr/include/criu). It uses the ioctls only, not libsnpu: CRIU
# loads it from its plugin directory, CRIU_PLUGIN_DIR.
CRIU_PLUGIN_DIR ?= /usr/lib/criu
CRIU_PLUGIN := $(B)/lib/criu/snpu_plugin.so

criu-plugin:
	$(Q)scripts/deps criu
	$(Q)if echo '#include <criu/criu-plugin.h>' | $(CC) -E -x c - >/dev/null 2>&1; then \
		$(MAKE) $(CRIU_PLUGIN); \
	else \
		echo "  SKIP    $(CRIU_PLUGIN): no criu/criu-plugin.h (scripts/deps criu)"; \
	fi

$(CRIU_PLUGIN): lib/criu/snpu_plugin.c uapi/linux/snpu.h uapi/linux/snpu_ckpt.h
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(LIB_CFLAGS) -shared -o $@ $<

PC_SUBST := sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' \
	-e 's|@includedir@|$(INCLUDEDIR)|' -e 's|@version@|$(VERSION)|'

lib: $(B)/lib/libsnpu.a $(B)/lib/$(LIBFILE)

# libsnpu_mpi.a (lib/mpi/): the communicator over hosts for MPI programs,
# an optional static library built when pkg-config finds Open MPI (ompi-c,
# scripts/deps mpi); the mpi kselftests link it.
mpi-lib: lib
	$(Q)scripts/deps mpi
	$(Q)if pkg-config --exists ompi-c; then $(MAKE) $(B)/lib/libsnpu_mpi.a; fi

$(B)/lib/obj/mpi/snpu_mpi.o: lib/mpi/snpu_mpi.c lib/mpi/snpu_mpi.h $(LIB_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(LIB_CFLAGS) $$(pkg-config --cflags ompi-c) -c $< -o $@

$(B)/lib/libsnpu_mpi.a: $(B)/lib/obj/mpi/snpu_mpi.o
	@$(if $(Q),echo '  AR      $@')
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- tools -----------------------------------------------------------------

# Tools find libsnpu next to them: build/lib here, /opt/snpu/lib in the VM.
# snpu-bench measures io_uring's NOP beside the rings. snpu-smi talks to
# the generic netlink family with libnl-genl: TOOL_DEPS names the
# scripts/deps groups a tool needs, installed before it is compiled, so
# pkg-config runs in the recipe, after them.
$(B)/tools/snpu-bench: TOOL_LIBS := -luring
# snpu-bench-kernels sets the device's GEMM beside OpenBLAS's (Debian's
# libopenblas-dev, scripts/deps bench).
$(B)/tools/snpu-bench-kernels: TOOL_DEPS := bench
$(B)/tools/snpu-bench-kernels: TOOL_LIBS := -lopenblas
$(B)/tools/snpu-smi: TOOL_DEPS := net
$(B)/tools/snpu-smi: TOOL_CFLAGS := $$(pkg-config --cflags libnl-genl-3.0)
$(B)/tools/snpu-smi: TOOL_LIBS := $$(pkg-config --libs libnl-genl-3.0)
$(B)/tools/snpu-smi: uapi/linux/snpu_netlink.h
# snpu-train reads gzip IDX files with zlib; its CPU reference rounds
# every product as the device's kernels do. With Open MPI (scripts/deps
# mpi, as for mpi-lib; found by pkg-config ompi-c) it takes --mpi.
$(B)/tools/snpu-train: TOOL_DEPS := mpi
$(B)/tools/snpu-train: TOOL_LIBS := -lz -lm -lpthread \
	$$(pkg-config --exists ompi-c && pkg-config --libs ompi-c)
$(B)/tools/snpu-train: TOOL_CFLAGS := -ffp-contract=off \
	$$(pkg-config --exists ompi-c && echo -DSNPU_TRAIN_MPI && pkg-config --cflags ompi-c)
$(B)/tools/%: lib/tools/%.c $(wildcard lib/tools/*.h) $(B)/lib/$(LIBFILE) $(LIB_HDRS)
	@mkdir -p $(@D)
	$(Q)$(if $(TOOL_DEPS),scripts/deps $(TOOL_DEPS))
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(CFLAGS) $(WARN) -D_GNU_SOURCE -Iuapi -Ilib/include $(TOOL_CFLAGS) $< \
		-L$(B)/lib -lsnpu $(TOOL_LIBS) -Wl,-rpath,'$$ORIGIN/../lib' -o $@

# snpu-bench-mpi is an MPI program over libsnpu_mpi (built when Open MPI
# is found; TOOLS leaves it out otherwise).
$(B)/tools/snpu-bench-mpi: lib/tools/snpu-bench-mpi.c lib/tools/bench.h \
		$(B)/lib/$(LIBFILE) $(LIB_HDRS) lib/mpi/snpu_mpi.h lib/mpi/snpu_mpi.c
	$(Q)$(MAKE) mpi-lib
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(CFLAGS) $(WARN) -D_GNU_SOURCE -Iuapi -Ilib/include -Ilib/mpi \
		$$(pkg-config --cflags ompi-c) $< $(B)/lib/libsnpu_mpi.a \
		-L$(B)/lib -lsnpu $$(pkg-config --libs ompi-c) -lpthread \
		-Wl,-rpath,'$$ORIGIN/../lib' -o $@

# snpu-bench-rt2 builds graphs of rt2's empty kernels with its internal
# API (lib/rt2/rt2.h): the library's sources are compiled into it, as into
# the lib/bench/ programs, instead of linking libsnpu.so.
$(B)/tools/snpu-bench-rt2: lib/tools/snpu-bench-rt2.c $(LIB_SRCS) $(LIB_HDRS) \
		$(wildcard lib/*.h lib/rt2/*.h lib/tools/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O2 -g $(WARN) -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Iuapi -Ilib/include \
		$< $(LIB_SRCS) -lpthread -o $@

tools: $(TOOLS)

# ---- tests -----------------------------------------------------------------

# The mpi suite is built when pkg-config finds Open MPI (ompi-c), which
# scripts/deps mpi installs.
selftests: lib ksrc mpi-lib
	$(Q)$(MAKE) -C selftests OUTPUT=$(CURDIR)/$(B)/selftests

# -ffp-contract=off: the f32 kernels and the tests' references must round
# every product (never an FMA), whatever the compiler's default (clang, or
# a -march with FMA); the f32 results are compared bit for bit.
$(CORE_TESTS): $(B)/unit/%: kmod/core/tests/%.c $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O1 -g $(WARN) $(SAN) -ffp-contract=off -I$(KSFT_INC) $(CORE_INC) \
		$< $(CORE_SRCS) -lm -o $@

# lib/tests/rt2/: the host-only device interface of rt2's tests, which runs
# the built-in kernels natively (lib/core.c builds them into the library).
LIB_TEST_SRCS := $(wildcard lib/tests/rt2/*.c)
# The training tests read IDX files with zlib (lib/tools/idx.h).
$(B)/unit/train_test $(B)/unit/rt2_train_test: TEST_LIBS := -lz -lm
$(LIB_TESTS): $(B)/unit/%: lib/tests/%.c $(LIB_SRCS) $(LIB_HDRS) $(LIB_TEST_SRCS) \
		$(wildcard lib/*.h lib/rt2/*.h lib/tests/*.h lib/tests/rt2/*.h lib/tools/*.h) \
		$(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O1 -g $(WARN) $(SAN) -ffp-contract=off -D_GNU_SOURCE -I$(KSFT_INC) \
		-Iuapi -Ilib/include -Ikmod $< $(LIB_SRCS) $(LIB_TEST_SRCS) -lpthread $(TEST_LIBS) -o $@

# -Wno-tsan: lib/ring.c's fence is not one TSan models (the test does not
# use the ring).
$(TSAN_TESTS): $(B)/unit/%_tsan_test: lib/tests/%_test.c $(LIB_SRCS) $(LIB_HDRS) $(LIB_TEST_SRCS) \
		$(wildcard lib/*.h lib/rt2/*.h lib/tests/*.h lib/tests/rt2/*.h) \
		$(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O1 -g $(WARN) -fsanitize=thread -Wno-tsan -ffp-contract=off -D_GNU_SOURCE \
		-I$(KSFT_INC) -Iuapi -Ilib/include -Ikmod $< $(LIB_SRCS) $(LIB_TEST_SRCS) \
		-lpthread -o $@

unit-build: ksrc
	$(Q)$(MAKE) $(UNIT_TESTS)

unit: unit-build
	$(Q)scripts/check unit $(UNIT_TESTS)

# The fuzz targets: the same sources, include path and -ffp-contract=off as
# the unit tests, with libFuzzer. The command and struct-size lists of the
# uapi header are extracted into a header, so a new one is fuzzed too.
$(FUZZ_GEN): uapi/linux/snpu.h
	@mkdir -p $(@D)
	@$(if $(Q),echo '  GEN     $@')
	$(Q)sed -n -e 's/^#define \(SNPU_IOC_[A-Z0-9_]*\)[[:space:]][[:space:]]*_IO.*/FUZZ_IOC_CMD(\1)/p' \
		-e 's/^#define SNPU_\([A-Z0-9_]*\)_SIZE_VER0[[:space:]].*/FUZZ_IOC_SIZE(SNPU_\1_SIZE_VER0, snpu_\L\1)/p' \
		$< > $@.tmp && mv $@.tmp $@

$(FUZZ_BINS): $(B)/fuzz/%: kmod/core/fuzz/%.c kmod/core/fuzz/fuzz.h $(FUZZ_COMMON) \
		$(CORE_SRCS) $(CORE_HDRS) $(FUZZ_GEN)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CLANG   $@')
	$(Q)$(FUZZ_CC) -O1 -g $(WARN) $(FUZZ_SAN) -ffp-contract=off $(CORE_INC) \
		-I$(B)/fuzz/gen $< $(FUZZ_COMMON) $(CORE_SRCS) -o $@

# Seed corpora are generated, never committed: build/fuzz/seeds/<name>/.
$(B)/fuzz/gen/seeds: kmod/core/fuzz/seeds.c kmod/core/tests/ckpt_img.h $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O1 -g $(WARN) -ffp-contract=off $(CORE_INC) $< $(CORE_SRCS) -lm -o $@

$(B)/fuzz/seeds/.stamp: $(B)/fuzz/gen/seeds
	$(Q)rm -rf $(B)/fuzz/seeds
	$(Q)$< $(B)/fuzz/seeds > /dev/null
	$(Q)touch $@

fuzz-bins: $(FUZZ_BINS) $(B)/fuzz/seeds/.stamp
	@:

fuzz-build:
	$(Q)scripts/deps fuzz
	$(Q)$(MAKE) fuzz-bins

fuzz: fuzz-build
	$(Q)FUZZ_SECS=$(FUZZ_SECS) FUZZ_SEED=$(FUZZ_SEED) scripts/check fuzz $(FUZZ_BINS)

lint: ksrc
	$(Q)scripts/deps lint
	$(Q)scripts/check lint

check:
	$(Q)scripts/check all

vm-check:
	$(Q)scripts/check vm

# ---- VM --------------------------------------------------------------------

# $(call vm-root,KO,DIR[,MODDIR]): stage the guest's files in DIR/root, with
# KO as /opt/snpu/snpu.ko and the virtio-gpu driver's modules of the module
# tree MODDIR (none when empty: a kernel with the driver built in), and
# pack them with /init into DIR/initramfs.cpio.gz; criu, its plugin and
# the modules it needs go to DIR/criu.cpio.gz, which scripts/vm -x
# appends for the boots that run the criu suite.
define vm-root
	$(Q)rm -rf $(2)/root && mkdir -p $(2)/root/opt/snpu/lib $(2)/root/opt/snpu/bin
	$(Q)cp $(1) $(2)/root/opt/snpu/snpu.ko
	$(Q)cp -a $(B)/lib/libsnpu.so* $(2)/root/opt/snpu/lib/
	$(Q)cp $(TOOLS) $(2)/root/opt/snpu/bin/
	$(Q)cp -a $(B)/selftests $(2)/root/opt/snpu/selftests
	$(Q)cp selftests/run_vm.sh $(2)/root/opt/snpu/bin/snpu-selftests
	$(Q)cp selftests/interop/vm-gpu.sh $(2)/root/opt/snpu/bin/snpu-vm-gpu
	$(Q)cp selftests/criu/vm-criu.sh $(2)/root/opt/snpu/bin/snpu-vm-criu
	$(Q)$(if $(3),scripts/vm-gpu-modules $(3) $(2)/root)
	$(Q)mkdir -p $(2)/root/opt/snpu/data
	$(Q)cp -a $(MINI_DATA) $(2)/root/opt/snpu/data/
	$(Q)if pkg-config --exists ompi-c; then scripts/vm-mpi $(2)/root; fi
	$(Q)scripts/vm-criu $(CRIU_PLUGIN) $(2)/criu.cpio.gz $(3)
	@$(if $(Q),echo '  GEN     $(2)/initramfs.cpio.gz')
	$(Q)scripts/mkinitramfs $(2)/root $(2)/initramfs.cpio.gz
endef

# The train kselftests' data: the first 512 images of each Fashion-MNIST
# set, cut by scripts/idx-head (about 450 KiB), in every VM image.
MINI_DATA := $(B)/data/fashion-mnist-mini
FMNIST := /usr/share/datasets/fashion-mnist
MINI_FILES := train-images-idx3 train-labels-idx1 t10k-images-idx3 t10k-labels-idx1

$(MINI_DATA)/.stamp: scripts/idx-head
	$(Q)scripts/deps data
	@mkdir -p $(@D)
	@$(if $(Q),echo '  GEN     $(@D)')
	$(Q)for f in $(MINI_FILES); do \
		scripts/idx-head $(FMNIST)/$$f-ubyte.gz $(@D)/$$f-ubyte.gz 512 || exit 1; \
	done
	$(Q)touch $@

# The module tree of the kernel the module is built for (KDIR's release):
# the virtio-gpu driver's modules come from it.
KREL = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"$$/\1/p' $(KDIR)/include/generated/utsrelease.h)

vm-image: all $(MINI_DATA)/.stamp
	$(Q)scripts/deps vm criu
	$(call vm-root,snpu.ko,$(B)/vm,/lib/modules/$(KREL))

# make run: train the MLP in the VM (scripts/train-run); RUN_ARGS are
# snpu-train's options, EPOCHS=N trains N epochs of all 60000 images. The
# default, two passes over 30000 images (936 steps), fits two to three
# minutes on a 2-core machine since the kernels use every core.
RUN_ARGS ?= --subset 30000 --epochs 2
RUN_TIMEOUT ?= 900
run: vm-image
	$(Q)scripts/deps data
	$(Q)scripts/train-run -t $(if $(EPOCHS),$$(( 900 * $(EPOCHS) + 300 )),$(RUN_TIMEOUT)) \
		-- $(if $(EPOCHS),--epochs $(EPOCHS),$(RUN_ARGS))

vm-shell: vm-image
	$(Q)scripts/vm shell

# The native part first, on the host; then the VM's.
# snpu-bench-kernels sets the device's GEMMs beside OpenBLAS and a plain
# loop, and times each f32 kernel's FPU section; OpenBLAS takes QEMU's
# default CPU model for an Opteron and dies on a 3DNow! instruction
# unless told the core type. snpu-bench-snapshot copies up to 256 MiB of device memory into an image
# and back, beside memcpy of as many bytes: 1 GiB of device memory and a
# 2 GiB guest. snpu-bench-graph reads the graph counters in debugfs.
bench: vm-image
	$(Q)$(MAKE) bench-native
	$(Q)scripts/vm run -t 600 'snpu-bench && snpu-bench -r 21 attached && snpu-bench-rt2 -r 7 -b 20000'
	$(Q)scripts/vm run -t 900 'OPENBLAS_CORETYPE=Prescott snpu-bench-kernels'
	$(Q)scripts/vm run -t 900 -m 2048 -p "mem_mb=1024" snpu-bench-snapshot
	$(Q)scripts/vm run -t 600 snpu-bench-graph
	$(Q)scripts/vm run -t 600 snpu-bench-sync
	$(Q)scripts/vm run -t 900 -m 2048 -p "devices=4" 'snpu-bench-coll && snpu-bench-coll -t i32 -b 4M'
	$(Q)if pkg-config --exists ompi-c; then scripts/vm run -t 900 -m 2048 -p "devices=4" \
		'$(BENCH_MPIRUN) -np 2 snpu-bench-mpi && $(BENCH_MPIRUN) -np 4 snpu-bench-mpi'; fi
	$(Q)scripts/vm run -t 900 '$(TRAIN_BENCH) --bench 40 && \
		$(TRAIN_BENCH) --hidden 16 -b 8 --bench 400'

BENCH_MPIRUN := mpirun --allow-run-as-root --oversubscribe

# snpu-train's step four ways (graph replay, op by op, CPU reference, a CPU
# trainer with OpenBLAS's GEMMs, which needs the core type in QEMU's
# default CPU model) on the VM image's small data set;
# Documentation/perf.rst.
TRAIN_BENCH := OPENBLAS_CORETYPE=Prescott snpu-train -d /opt/snpu/data/fashion-mnist-mini --plain -q \
	-n 10 --test-subset 512 --svg -

# lib/bench/*.c: host benchmarks with the library compiled in (they use
# its internal API), optimized, without sanitizers.
$(B)/bench/%: lib/bench/%.c $(LIB_SRCS) $(LIB_HDRS) $(wildcard lib/*.h lib/tools/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O2 -g $(WARN) -D_GNU_SOURCE -Iuapi -Ilib/include $< $(LIB_SRCS) -o $@

# The same program as snpu-bench-rt2, with the host-only device of rt2's
# unit tests (lib/tests/rt2/hostdev.c) for -H.
$(B)/bench/rt2_bench: lib/tools/snpu-bench-rt2.c $(LIB_SRCS) $(LIB_HDRS) $(LIB_TEST_SRCS) \
		$(wildcard lib/*.h lib/rt2/*.h lib/tools/*.h lib/tests/rt2/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O2 -g $(WARN) -D_GNU_SOURCE -DSNPU_BENCH_HOSTDEV -Iuapi -Ilib/include -Ikmod \
		$< $(LIB_SRCS) $(LIB_TEST_SRCS) -lpthread -o $@

bench-native: $(B)/bench/attached_bench $(B)/bench/capture_bench $(B)/bench/rt2_bench \
		$(B)/bench/rt2_relation_bench
	$(Q)$(B)/bench/attached_bench
	$(Q)$(B)/bench/capture_bench
	$(Q)$(B)/bench/rt2_bench -H
	$(Q)$(B)/bench/rt2_relation_bench

# ---- debug tier ------------------------------------------------------------

# The module built against the debug kernel (scripts/debug-kernel prints its
# tree), from a copy of the module's sources in build/debug/src: kbuild
# writes its objects next to the sources, so the normal build's objects and
# snpu.ko are never touched. The copy keeps the files' times, so kbuild only
# rebuilds what changed; sources deleted from kmod/ or uapi/ go from it too.
DEBUG := $(B)/debug
DEBUG_SRC := $(DEBUG)/src
DEBUG_KDIR ?=

debug-module:
ifeq ($(DEBUG_KDIR),)
	$(Q)scripts/deps build debug
	$(Q)tree=$$(scripts/debug-kernel) && \
		$(MAKE) debug-module DEBUG_KDIR="$$(echo "$$tree" | sed -n 1p)"
else
	$(Q)mkdir -p $(DEBUG_SRC)
	$(Q)tar -cf - Kbuild $$(find kmod uapi -name '*.[ch]') | tar -xpf - -C $(DEBUG_SRC)
	$(Q)cd $(DEBUG_SRC) && find kmod uapi -name '*.[ch]' | while read -r f; do \
		[ -e "$(CURDIR)/$$f" ] || rm -f "$$f"; done
	$(Q)$(MAKE) -C $(DEBUG_KDIR) M=$(CURDIR)/$(DEBUG_SRC) modules
endif

# build/debug/initramfs.cpio.gz: the VM image with that module.
debug-image: lib tools criu-plugin selftests debug-module $(MINI_DATA)/.stamp
	$(Q)scripts/deps vm
	$(call vm-root,$(DEBUG_SRC)/snpu.ko,$(DEBUG))

check-debug:
	$(Q)scripts/check debug

# ---- kernel matrix ---------------------------------------------------------

# The module built against each kernel of scripts/kernels.list with
# warnings as errors, and the kselftests run on each in the VM
# (scripts/check kernels; the kernels come from Debian's packages, fetched
# by scripts/kernels into ~/.cache/snpu/kernels). KERNELS="NAME..." picks
# rows; KERNELS_VM="NAME..." runs the kselftests of those rows only (the
# others are built, also by DKMS).
KERNELS ?=
KERNELS_VM ?=
check-kernels:
	$(Q)KERNELS_VM="$(KERNELS_VM)" scripts/check kernels $(KERNELS)

# make check as on a fresh system of another Debian release (RELEASE, a
# suite name; Debian 13 by default), from a clone of HEAD, with that
# release's packages and kernel (scripts/check-release).
RELEASE ?= trixie
check-release:
	$(Q)scripts/check-release $(RELEASE)

# build/kernels/NAME/initramfs.cpio.gz (KERNEL_DIR): the VM image with the
# module built for that kernel (KERNEL_KO) and the virtio-gpu modules of
# its module tree (KERNEL_MODDIR, kept by scripts/kernels).
kernel-image: lib tools criu-plugin selftests $(MINI_DATA)/.stamp
	$(Q)scripts/deps vm
	$(call vm-root,$(KERNEL_KO),$(KERNEL_DIR),$(KERNEL_MODDIR))

# ---- install / clean -------------------------------------------------------

# The tools are linked for build/lib (rpath $ORIGIN/../lib): installed in
# BINDIR they find the library in LIBDIR when that is BINDIR/../lib, else
# through the system's library path.
install: lib tools criu-plugin
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux \
		$(DESTDIR)$(BINDIR)
	install -m 644 $(B)/lib/libsnpu.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/lib/$(LIBFILE) $(DESTDIR)$(LIBDIR)/
	ln -sf $(LIBFILE) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsnpu.so
	install -m 644 lib/include/snpu.h lib/include/snpu_rt2.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 uapi/linux/snpu.h uapi/linux/snpu_netlink.h \
		$(DESTDIR)$(INCLUDEDIR)/linux/
	$(PC_SUBST) lib/libsnpu.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libsnpu.pc
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	if [ -f $(CRIU_PLUGIN) ]; then \
		install -d $(DESTDIR)$(CRIU_PLUGIN_DIR) && \
		install -m 755 $(CRIU_PLUGIN) $(DESTDIR)$(CRIU_PLUGIN_DIR)/; \
	fi

# The module's sources as DKMS takes them: Kbuild, kmod/ (not its unit
# tests and fuzz targets), uapi/, and dkms.conf with the version.
dkms-src:
	$(Q)rm -rf $(DESTDIR)$(DKMS_SRC)
	$(Q)mkdir -p $(DESTDIR)$(DKMS_SRC)
	$(Q)tar -cf - Kbuild $$(find kmod uapi -name '*.[ch]' -not -path 'kmod/core/tests/*' \
		-not -path 'kmod/core/fuzz/*') | tar -xf - -C $(DESTDIR)$(DKMS_SRC)
	$(Q)sed 's/@VERSION@/$(MODVER)/' dkms.conf > $(DESTDIR)$(DKMS_SRC)/dkms.conf
	@echo '  DKMS    sources in $(DESTDIR)$(DKMS_SRC)'

# The version DKMS knows the module by (scripts/check kernels).
dkms-version:
	@echo $(MODVER)

# A version added before is removed first, so that the target can repeat.
dkms:
	$(Q)scripts/deps dkms
	$(Q)$(MAKE) dkms-src DESTDIR=
	$(Q)if dkms status snpu/$(MODVER) | grep -q .; then \
		dkms remove snpu/$(MODVER) --all; fi
	$(Q)dkms add snpu/$(MODVER)
	$(Q)dkms build snpu/$(MODVER) -k $(DKMS_KVER)
	$(Q)dkms install snpu/$(MODVER) -k $(DKMS_KVER)

clean:
	$(Q)if [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	$(Q)rm -rf $(B)
