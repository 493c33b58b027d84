# SPDX-License-Identifier: GPL-2.0
# Included by the runtime suites (memory, stream, kernels, stress) before
# ../lib.mk: the raw-ioctl helpers of common/snpu_test.h, no libsnpu at run
# time (lib.mk links -lsnpu; --as-needed drops it since nothing uses it),
# and f32 references that round every operation like the device does.
SNPU_COMMON_DIR := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# The rules below come before lib.mk's: keep its "all" the default goal.
.DEFAULT_GOAL := all

CFLAGS += -I$(SNPU_COMMON_DIR) -ffp-contract=off
LDFLAGS += -Wl,--as-needed

# Rebuild when the helpers change (TEST_GEN_PROGS is rewritten by lib.mk).
$(foreach p,$(TEST_GEN_PROGS),$(eval $(OUTPUT)/$(p): $(SNPU_COMMON_DIR)/snpu_test.h $(SNPU_COMMON_DIR)/snpu_proc.h $(SNPU_COMMON_DIR)/snpu_cgroup.h \
	$(SNPU_COMMON_DIR)/snpu_ksft.h))
