/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kselftest harnesses the suites build with (the
 * release's linux-source: 6.1 on Debian 12, 6.12 on Debian 13), in one
 * place; selftests/lib.mk looks for each in kselftest_harness.h.
 */
#ifndef SNPU_KSFT_H
#define SNPU_KSFT_H

/*
 * Whether the running test has failed so far (an EXPECT_* that did not
 * hold). 6.1's harness keeps a `passed` flag in the test's metadata;
 * 6.12's keeps an exit code, read with __test_passed().
 */
#ifdef SNPU_HAVE_KSFT_TEST_PASSED
#define snpu_ksft_failed(m)	(!__test_passed(m))
#else
#define snpu_ksft_failed(m)	(!(m)->passed)
#endif

#endif /* SNPU_KSFT_H */
