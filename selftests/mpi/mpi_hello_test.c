// SPDX-License-Identifier: GPL-2.0
/*
 * The MPI plumbing of the VM: run under mpirun (run_vm.sh), the processes
 * find each other, agree on their number, and pass data around.
 */
#include "mpi_ksft.h"

int main(int argc, char **argv)
{
	int rank, size, sum = -1, i, ok;
	int *all;

	mpit_init(&argc, &argv, 3, &rank, &size);

	ok = size >= 2;
	mpit_result(ok, "mpi.world_has_ranks (%d processes)", size);

	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	mpit_result(sum == size * (size - 1) / 2,
		    "mpi.allreduce_sum_of_ranks (%d)", sum);

	all = calloc(size, sizeof(*all));
	ok = all != NULL;
	if (ok) {
		int mine = 1000 + rank;

		MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT,
			      MPI_COMM_WORLD);
		for (i = 0; i < size; i++)
			ok &= all[i] == 1000 + i;
	}
	mpit_result(ok, "mpi.allgather_in_rank_order");
	free(all);

	return mpit_finish();
}
