# SPDX-License-Identifier: GPL-2.0
# Shared by the snpu selftest suites: a minimal subset of the kernel's
# tools/testing/selftests/lib.mk. A suite's Makefile sets TEST_GEN_PROGS and
# includes this file.
#
#   OUTPUT    where the programs go (default: the suite's directory)
#   TOP       the repository root
#   KSFT_INC  the directory holding kselftest_harness.h
#   SNPU_LIBDIR    the directory holding libsnpu
#   V=1       show the commands

# Where this file is, taken before anything else is included.
SNPU_LIBMK_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

OUTPUT ?= $(CURDIR)
TOP ?= $(abspath $(SNPU_LIBMK_DIR)/..)
KSFT_INC ?= $(TOP)/build/ksrc/tools/testing/selftests
SNPU_LIBDIR ?= $(TOP)/build/lib

CFLAGS += -Wall -Wextra -O2 -g -D_GNU_SOURCE -I$(KSFT_INC) \
	  -I$(TOP)/uapi -I$(TOP)/lib/include
# kselftest_harness.h has unused parameters; the kernel's W=1 drops this too.
CFLAGS += -Wno-unused-parameter
# The harness comes from the release's linux-source (6.1 on Debian 12, 6.12
# on Debian 13), and newer ones keep a test's failure in an exit code read
# with __test_passed() instead of a `passed` flag: found in the header, as
# Kbuild finds kernel APIs (selftests/common/snpu_ksft.h).
ifneq ($(shell grep -s -l '__test_passed' $(KSFT_INC)/kselftest_harness.h),)
CFLAGS += -DSNPU_HAVE_KSFT_TEST_PASSED
endif
LDLIBS += -L$(SNPU_LIBDIR) -lsnpu -lpthread

TEST_GEN_PROGS := $(patsubst %,$(OUTPUT)/%,$(TEST_GEN_PROGS))

ifeq ($(V),1)
Q :=
say := @true
else
Q := @
say := @printf '  %-7s %s\n'
endif

# The empty recipe keeps make quiet when everything is up to date.
all: $(TEST_GEN_PROGS)
	@:

$(OUTPUT)/%: %.c $(TOP)/uapi/linux/snpu.h $(TOP)/lib/include/snpu.h
	@mkdir -p $(dir $@)
	$(say) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS)

clean:
	$(Q)rm -f $(TEST_GEN_PROGS)

.PHONY: all clean
