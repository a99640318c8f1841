/* oxmpi-test: np=2,3 timeout=120 one-node="ports are implemented under mpiexec on one host only" */
/* At MPI_THREAD_MULTIPLE a thread waiting in MPI_Comm_accept (for a connect that comes only
 * after the other threads' messages) leaves the library to them: rank 0's server thread
 * accepts on MPI_COMM_SELF while its main thread plays ping-pong with every other rank;
 * only then does rank 1 connect (on MPI_COMM_SELF, with the port name it got in the
 * ping-pong), and the two exchange over the new intercommunicator. With 3 ranks a
 * connecting group of two (ranks 1 and 2 over a communicator of their own) waits in
 * MPI_Comm_connect's exchange while rank 0's main thread still talks to them. */
#include "comm_mtest.h"
#include <pthread.h>
#include <string.h>

static char port[MPI_MAX_PORT_NAME];
static MPI_Comm accepted = MPI_COMM_NULL;

static void *server(void *arg)
{
    (void) arg;
    CM_OK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &accepted));
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, size, i, v;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CM_CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* The clients: rank 1 alone (2 ranks), or ranks 1 and 2 together. */
    MPI_Comm clients;
    MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &clients);

    if (rank == 0) {
        pthread_t t;
        CM_OK(MPI_Open_port(MPI_INFO_NULL, port));
        pthread_create(&t, NULL, server, NULL);
        /* The server thread is in MPI_Comm_accept (or about to be): these go through. */
        for (i = 0; i < 20; i++) {
            for (int r = 1; r < size; r++) {
                MPI_Send(&i, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
                MPI_Recv(&v, 1, MPI_INT, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CM_CHECK(v == i + r, "ping-pong %d with %d: got %d", i, r, v);
            }
        }
        MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        /* The connecting group waits in its exchange; more traffic meanwhile. */
        for (int r = 1; r < size; r++) {
            MPI_Recv(&v, 1, MPI_INT, r, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CM_CHECK(v == r, "late message from %d: %d", r, v);
        }
        pthread_join(t, NULL);
        CM_CHECK(accepted != MPI_COMM_NULL, "no intercommunicator from the accept");
        int remote = 0;
        MPI_Comm_remote_size(accepted, &remote);
        CM_CHECK(remote == size - 1, "remote size %d, expected %d", remote, size - 1);
        for (int r = 0; r < remote; r++) {
            MPI_Recv(&v, 1, MPI_INT, r, 3, accepted, MPI_STATUS_IGNORE);
            CM_CHECK(v == 100 + r, "over the connection from %d: %d", r, v);
        }
        CM_OK(MPI_Comm_disconnect(&accepted));
        CM_OK(MPI_Close_port(port));
    } else {
        int crank;
        MPI_Comm_rank(clients, &crank);
        for (i = 0; i < 20; i++) {
            MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v += rank;
            MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        }
        if (rank == 1)
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        /* Rank 2 (3 ranks) enters the connect at once and waits there for rank 1 while its
         * other message is still to be sent: by a second thread. */
        MPI_Comm conn = MPI_COMM_NULL;
        if (rank == 2) {
            v = rank;
            MPI_Request late;
            MPI_Isend(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &late);
            CM_OK(MPI_Comm_connect(NULL, MPI_INFO_NULL, 0, clients, &conn));
            MPI_Wait(&late, MPI_STATUS_IGNORE);
        } else {
            CM_OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, clients, &conn));
            v = rank;
            MPI_Send(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        }
        v = 100 + crank;
        MPI_Send(&v, 1, MPI_INT, 0, 3, conn);
        CM_OK(MPI_Comm_disconnect(&conn));
        MPI_Comm_free(&clients);
    }
    return cm_finalize();
}
