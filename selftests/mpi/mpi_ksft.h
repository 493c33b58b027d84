/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kselftest-style TAP for programs that run as several MPI processes under
 * mpirun (run_vm.sh). The kselftest harness forks a child per test, and an
 * MPI process cannot be forked into new MPI processes, so these programs
 * run their tests in line: every process runs every test, each test's
 * result is the AND of all processes' (an MPI_Allreduce), and rank 0
 * alone prints the TAP: the plan, one "ok" / "not ok" line per test and
 * the harness's "# Totals:" line, which run_vm.sh looks for. A process
 * that sees a failure prints "# [rank r] ..." lines first. Every process
 * exits 1 when a test failed, so mpirun does too.
 */
#ifndef _MPI_KSFT_H
#define _MPI_KSFT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

static int mpit_rank, mpit_size, mpit_n, mpit_pass, mpit_fail;

static inline void mpit_init(int *argc, char ***argv, int plan, int *rank,
			     int *size)
{
	int provided;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* libsnpu_mpi's proxy threads call MPI beside the main thread. */
	if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) !=
	    MPI_SUCCESS) {
		printf("not ok 1 MPI_Init\n");
		exit(1);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &mpit_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mpit_size);
	*rank = mpit_rank;
	*size = mpit_size;
	if (mpit_rank == 0) {
		printf("TAP version 13\n");
		printf("1..%d\n", plan);
	}
}

/* A diagnostic of this process, on its own line, prefixed with its rank. */
static inline void __attribute__((format(printf, 1, 2)))
mpit_diag(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("# [rank %d] %s\n", mpit_rank, buf);
}

/*
 * One test: passes when @ok holds on every process. Collective: every
 * process calls it, in the same order. Return: whether it passed.
 */
static inline bool __attribute__((format(printf, 2, 3)))
mpit_result(int ok, const char *fmt, ...)
{
	int all = 0;
	char name[256];
	va_list ap;

	ok = !!ok;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	mpit_n++;
	if (all)
		mpit_pass++;
	else
		mpit_fail++;
	if (mpit_rank == 0)
		printf("%s %d %s\n", all ? "ok" : "not ok", mpit_n, name);
	return all;
}

/* The totals line, MPI_Finalize; the exit status of main. */
static inline int mpit_finish(void)
{
	if (mpit_rank == 0)
		printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       mpit_pass, mpit_fail);
	fflush(stdout);
	MPI_Finalize();
	return mpit_fail ? 1 : 0;
}

#endif /* _MPI_KSFT_H */
