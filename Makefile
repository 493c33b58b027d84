# SPDX-License-Identifier: GPL-2.0
# snpu top-level build: the kernel module (kbuild, see Kbuild), libsnpu,
# its tools, the kselftests, the VM image and the checks. `make help`.

VERSION := 0.4.0
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

LIB_SRCS := $(wildcard lib/*.c)
LIB_HDRS := lib/include/snpu.h uapi/linux/snpu.h
LIB_CFLAGS := $(CFLAGS) $(WARN) -fPIC -D_GNU_SOURCE \
	      -Iuapi -Ilib/include
TOOLS := $(patsubst lib/tools/%.c,$(B)/tools/%,$(wildcard lib/tools/*.c))
CORE_SRCS := $(wildcard kmod/core/*.c)
CORE_HDRS := $(wildcard kmod/core/*.h) uapi/linux/snpu.h
# Native unit tests: every kmod/core/tests/*.c and lib/tests/*.c program.
CORE_TESTS := $(patsubst kmod/core/tests/%.c,$(B)/unit/%,$(wildcard kmod/core/tests/*.c))
LIB_TESTS := $(patsubst lib/tests/%.c,$(B)/unit/%,$(wildcard lib/tests/*.c))
UNIT_TESTS := $(CORE_TESTS) $(LIB_TESTS)

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include

.PHONY: all module kbuild vm-check lib tools selftests unit unit-build deps ksrc lint check run \
	vm-image vm-shell bench install clean help

all: module lib tools selftests

help:
	@echo 'snpu make targets:'
	@echo '  all (default)  module, library, tools and selftests'
	@echo '  module         snpu.ko with kbuild against KDIR ($(KDIR))'
	@echo '  lib            build/lib: libsnpu.a, libsnpu.so (versioned symbols)'
	@echo '  tools          build/tools: snpu-smi, snpu-bench'
	@echo '  selftests      build/selftests: kselftest suites (run in the VM)'
	@echo '  unit           native unit tests of kmod/core and lib under ASan/UBSan'
	@echo '  lint           checkpatch --strict, sparse C=2, pahole ABI check'
	@echo '  check          build + lint + unit + kselftests in the VM; ends with'
	@echo '                 "N passed, N failed"'
	@echo '  vm-check       only the kselftests in the VM'
	@echo '  run            boot the VM, load the module, show the devices'
	@echo '  vm-image       build/vm/initramfs.cpio.gz for scripts/vm'
	@echo '  vm-shell       interactive shell in the VM with the module loaded'
	@echo '  bench          snpu-bench in the VM: task throughput and latency'
	@echo '  deps           install every Debian package any target needs'
	@echo '  install        library, headers and libsnpu.pc under DESTDIR/PREFIX'
	@echo '  clean          remove build outputs'
	@echo 'Variables: KDIR=<kernel build dir>  V=1 (verbose)  PREFIX=/usr/local'
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

$(B)/lib/obj/%.o: lib/%.c $(LIB_HDRS) $(wildcard lib/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

$(B)/lib/libsnpu.a: $(LIB_OBJS)
	@$(if $(Q),echo '  AR      $@')
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/lib/$(LIBFILE): $(LIB_OBJS) lib/libsnpu.map
	@$(if $(Q),echo '  LD      $@')
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libsnpu.map \
		-Wl,--no-undefined -o $@ $(LIB_OBJS)
	$(Q)ln -sf $(LIBFILE) $(B)/lib/$(SONAME)
	$(Q)ln -sf $(SONAME) $(B)/lib/libsnpu.so

PC_SUBST := sed -e 's|@prefix@|$(PREFIX)|' -e 's|@libdir@|$(LIBDIR)|' \
	-e 's|@includedir@|$(INCLUDEDIR)|' -e 's|@version@|$(VERSION)|'

lib: $(B)/lib/libsnpu.a $(B)/lib/$(LIBFILE)

# ---- tools -----------------------------------------------------------------

# Tools find libsnpu next to them: build/lib here, /opt/snpu/lib in the VM.
# snpu-bench measures io_uring's NOP beside the rings.
$(B)/tools/snpu-bench: TOOL_LIBS := -luring
$(B)/tools/%: lib/tools/%.c $(B)/lib/$(LIBFILE) $(LIB_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) $(CFLAGS) $(WARN) -D_GNU_SOURCE -Iuapi -Ilib/include $< \
		-L$(B)/lib -lsnpu $(TOOL_LIBS) -Wl,-rpath,'$$ORIGIN/../lib' -o $@

tools: $(TOOLS)

# ---- tests -----------------------------------------------------------------

selftests: lib ksrc
	$(Q)$(MAKE) -C selftests OUTPUT=$(CURDIR)/$(B)/selftests

# -ffp-contract=off: the f32 kernels and the tests' references must round
# every product (never an FMA), whatever the compiler's default (clang, or
# a -march with FMA); the f32 results are compared bit for bit.
$(CORE_TESTS): $(B)/unit/%: kmod/core/tests/%.c $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O1 -g $(WARN) $(SAN) -ffp-contract=off -I$(KSFT_INC) -Iuapi -Ikmod \
		$< $(CORE_SRCS) -o $@

$(LIB_TESTS): $(B)/unit/%: lib/tests/%.c $(LIB_SRCS) $(LIB_HDRS) $(wildcard lib/*.h)
	@mkdir -p $(@D)
	@$(if $(Q),echo '  CC      $@')
	$(Q)$(CC) -O1 -g $(WARN) $(SAN) -D_GNU_SOURCE -I$(KSFT_INC) -Iuapi -Ilib/include \
		$< $(LIB_SRCS) -o $@

unit-build: ksrc
	$(Q)$(MAKE) $(UNIT_TESTS)

unit: unit-build
	$(Q)scripts/check unit $(UNIT_TESTS)

lint: ksrc
	$(Q)scripts/deps lint
	$(Q)scripts/check lint

check:
	$(Q)scripts/check all

vm-check:
	$(Q)scripts/check vm

# ---- VM --------------------------------------------------------------------

vm-image: all
	$(Q)scripts/deps vm
	$(Q)rm -rf $(B)/vm/root && mkdir -p $(B)/vm/root/opt/snpu/lib $(B)/vm/root/opt/snpu/bin
	$(Q)cp snpu.ko $(B)/vm/root/opt/snpu/
	$(Q)cp -a $(B)/lib/libsnpu.so* $(B)/vm/root/opt/snpu/lib/
	$(Q)cp $(TOOLS) $(B)/vm/root/opt/snpu/bin/
	$(Q)cp -a $(B)/selftests $(B)/vm/root/opt/snpu/selftests
	$(Q)cp selftests/run_vm.sh $(B)/vm/root/opt/snpu/bin/snpu-selftests
	@$(if $(Q),echo '  GEN     $(B)/vm/initramfs.cpio.gz')
	$(Q)scripts/mkinitramfs $(B)/vm/root $(B)/vm/initramfs.cpio.gz

run: vm-image
	$(Q)scripts/vm run -t 120 snpu-smi

vm-shell: vm-image
	$(Q)scripts/vm shell

bench: vm-image
	$(Q)scripts/vm run -t 600 snpu-bench

# ---- install / clean -------------------------------------------------------

install: lib
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux
	install -m 644 $(B)/lib/libsnpu.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/lib/$(LIBFILE) $(DESTDIR)$(LIBDIR)/
	ln -sf $(LIBFILE) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsnpu.so
	install -m 644 lib/include/snpu.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 uapi/linux/snpu.h $(DESTDIR)$(INCLUDEDIR)/linux/
	$(PC_SUBST) lib/libsnpu.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libsnpu.pc

clean:
	$(Q)if [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	$(Q)rm -rf $(B)
