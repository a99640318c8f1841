/* oxmpi-test: np=1,2,3 timeout=120 env=OXMPI_CONNECT_TIMEOUT=1 one-node="ports are implemented under mpiexec on one host only" */
/* MPI_Comm_connect and MPI_Comm_accept that cannot meet fail with MPI_ERR_PORT, on every
 * member and with MPI_COMM_NULL, rather than wait for ever: a name that is no port (MPICH's
 * errors/spawn/badport), a port never opened, a port closed before the connect, a connect
 * with no accept once OXMPI_CONNECT_TIMEOUT (1 s here) has passed, and (2 ranks or more) a
 * connect waiting at a port its owner closes meanwhile. Closing a port that is not open is
 * MPI_ERR_PORT too. */
#include "comm_mtest.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* MPI_Comm_connect over `comm` to `port` (read at rank 0) fails with MPI_ERR_PORT, leaving
 * MPI_COMM_NULL. */
static void connect_fails(const char *port, MPI_Comm comm, const char *what)
{
    MPI_Comm conn = MPI_COMM_WORLD;
    int rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, comm, &conn);
    int cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    CM_CHECK(cls == MPI_ERR_PORT, "%s: connect gave class %d, expected MPI_ERR_PORT", what, cls);
    CM_CHECK(conn == MPI_COMM_NULL, "%s: connect left a communicator", what);
}

int main(int argc, char **argv)
{
    char port[MPI_MAX_PORT_NAME] = "", never[MPI_MAX_PORT_NAME];
    int rank, size;
    MPI_Comm conn;
    cm_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    connect_fails("myhost:27", MPI_COMM_WORLD, "a name that is no port");

    /* A well-formed name that was never opened: an open port's name with another number. */
    if (rank == 0) {
        CM_OK(MPI_Open_port(MPI_INFO_NULL, port));
        snprintf(never, sizeof never, "%s999", port);
    }
    connect_fails(never, MPI_COMM_WORLD, "a port never opened");
    conn = MPI_COMM_WORLD;
    CM_EXPECT_ERR(MPI_Comm_accept(never, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn), MPI_ERR_PORT);
    CM_CHECK(conn == MPI_COMM_NULL, "a failed accept left a communicator");

    /* No accept: the connect gives up after OXMPI_CONNECT_TIMEOUT. */
    double t0 = MPI_Wtime();
    connect_fails(port, MPI_COMM_WORLD, "no accept");
    double waited = MPI_Wtime() - t0;
    CM_CHECK(waited >= 0.9 && waited < 30, "the connect gave up after %.2f s, expected about 1 s", waited);

    if (rank == 0) {
        CM_OK(MPI_Close_port(port));
        CM_EXPECT_ERR(MPI_Close_port(port), MPI_ERR_PORT);
        CM_EXPECT_ERR(MPI_Close_port("oxmpi-no-such-port"), MPI_ERR_PORT);
    }
    connect_fails(port, MPI_COMM_WORLD, "a closed port");

    /* A connect waiting at a port that its owner closes fails then, not at its timeout. */
    if (size >= 2) {
        if (rank == 0) {
            CM_OK(MPI_Open_port(MPI_INFO_NULL, port));
            MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            usleep(300 * 1000);
            CM_OK(MPI_Close_port(port));
        } else if (rank == 1) {
            setenv("OXMPI_CONNECT_TIMEOUT", "60", 1);
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_INT, 0, 1, MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            connect_fails(port, MPI_COMM_SELF, "a port closed while the connect waits");
            waited = MPI_Wtime() - t0;
            CM_CHECK(waited < 30, "the connect failed after %.2f s, not when the port closed", waited);
        }
    }
    return cm_finalize();
}
