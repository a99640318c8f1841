/* A PMPI profiling library: counts MPI_Send calls and reports at
 * MPI_Finalize. Built as a shared library and put in LD_PRELOAD in front of
 * the MPI library (tests/ctests.rs, abi_pmpi_profiling_library). */
#include <mpi.h>
#include <stdio.h>

static int send_calls = 0;

int prof_send_count(void)
{
    return send_calls;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    send_calls++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Finalize(void)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("prof: rank %d MPI_Send calls %d\n", rank, send_calls);
    fflush(stdout);
    return PMPI_Finalize();
}
