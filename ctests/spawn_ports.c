/* oxmpi-test: np=1,2,3 timeout=120 one-node="ports and spawn are implemented under mpiexec on one host only" */
/* Ports and the name service between two jobs: the world spawns 2 children; rank 0 opens a
 * port and publishes it under a service name; the children look it up and MPI_Comm_connect
 * while the world MPI_Comm_accept's (twice: the second time the children connect to the
 * port name received in a message), and both sides exchange data and reduce over each
 * connection. Then MPI_Comm_join between world rank 0 and child 0 over a TCP socket. Errors:
 * looking up a name not published (MPI_ERR_NAME), publishing one twice and unpublishing one
 * not published (MPI_ERR_SERVICE). */
#include "comm_mtest.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCHILD 2
#define SERVICE "oxmpi-ctest-spawn-ports"

/* Both sides of a connection: every process sends its rank in its group to every remote
 * process and checks what it gets; then an allreduce (each side gets the other's sum). */
static void exercise(MPI_Comm inter, int side)
{
    int rank, rsize, i, v;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    for (i = 0; i < rsize; i++) {
        v = 100 * side + rank;
        MPI_Send(&v, 1, MPI_INT, i, 4, inter);
    }
    for (i = 0; i < rsize; i++) {
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 4, inter, &st);
        CM_CHECK(v == 100 * (1 - side) + st.MPI_SOURCE, "side %d got %d from %d", side, v, st.MPI_SOURCE);
    }
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter);
    CM_CHECK(sum == rsize, "allreduce: %d, remote size %d", sum, rsize);
}

/* MPI_Comm_join's socket: the listener's end (rank 0 of the world) or the connector's. */
static int join_socket(MPI_Comm link, int listener)
{
    int fd;
    if (listener) {
        int lfd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        socklen_t len = sizeof a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(lfd, (struct sockaddr *)&a, sizeof a);
        listen(lfd, 1);
        getsockname(lfd, (struct sockaddr *)&a, &len);
        int port = ntohs(a.sin_port);
        MPI_Send(&port, 1, MPI_INT, 0, 5, link);
        fd = accept(lfd, NULL, NULL);
        close(lfd);
    } else {
        int port;
        struct sockaddr_in a;
        MPI_Recv(&port, 1, MPI_INT, 0, 5, link, MPI_STATUS_IGNORE);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        CM_CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect to the join socket");
    }
    return fd;
}

/* Joins over the socket and checks the new intercommunicator with one message each way. */
static void join_and_check(int fd, int side)
{
    MPI_Comm joined = MPI_COMM_NULL;
    int v = 7 + side, got = -1, rsize = 0;
    CM_OK(MPI_Comm_join(fd, &joined));
    MPI_Comm_remote_size(joined, &rsize);
    CM_CHECK(rsize == 1, "joined remote size %d", rsize);
    MPI_Sendrecv(&v, 1, MPI_INT, 0, 6, &got, 1, MPI_INT, 0, 6, joined, MPI_STATUS_IGNORE);
    CM_CHECK(got == 7 + (1 - side), "joined: got %d", got);
    MPI_Comm_disconnect(&joined);
    close(fd);
}

static int child(MPI_Comm parent)
{
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm conn;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* The parents' rank 0 publishes before the spawn. */
    CM_OK(MPI_Lookup_name(SERVICE, MPI_INFO_NULL, port));
    CM_OK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn));
    exercise(conn, 1);
    MPI_Comm_disconnect(&conn);
    /* Second connection: the port name as the parents sent it, read at root 1 only. */
    char again[MPI_MAX_PORT_NAME] = "";
    if (rank == 0)
        MPI_Recv(again, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 3, parent, MPI_STATUS_IGNORE);
    MPI_Bcast(again, MPI_MAX_PORT_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
    CM_OK(MPI_Comm_connect(rank == 1 ? again : NULL, MPI_INFO_NULL, 1, MPI_COMM_WORLD, &conn));
    exercise(conn, 1);
    MPI_Comm_disconnect(&conn);
    if (rank == 0)
        join_and_check(join_socket(parent, 0), 1);
    int errs = cm_errs, total = 0;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, parent);
    MPI_Comm_disconnect(&parent);
    return cm_errs;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter, conn;
    char port[MPI_MAX_PORT_NAME], found[MPI_MAX_PORT_NAME];
    int rank;
    cm_init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) {
        int errs = child(parent);
        MPI_Finalize();
        return errs != 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        CM_OK(MPI_Open_port(MPI_INFO_NULL, port));
        CM_OK(MPI_Publish_name(SERVICE, MPI_INFO_NULL, port));
        CM_EXPECT_ERR(MPI_Publish_name(SERVICE, MPI_INFO_NULL, port), MPI_ERR_SERVICE);
        CM_OK(MPI_Lookup_name(SERVICE, MPI_INFO_NULL, found));
        CM_CHECK(strcmp(found, port) == 0, "looked up %s, published %s", found, port);
        CM_EXPECT_ERR(MPI_Lookup_name("oxmpi-no-such-service", MPI_INFO_NULL, found), MPI_ERR_NAME);
        CM_EXPECT_ERR(MPI_Unpublish_name("oxmpi-no-such-service", MPI_INFO_NULL, port), MPI_ERR_SERVICE);
    }
    CM_OK(MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, NCHILD, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                         MPI_ERRCODES_IGNORE));
    CM_OK(MPI_Comm_accept(rank == 0 ? port : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn));
    exercise(conn, 0);
    MPI_Comm_disconnect(&conn);
    if (rank == 0) {
        CM_OK(MPI_Unpublish_name(SERVICE, MPI_INFO_NULL, port));
        MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 3, inter);
    }
    CM_OK(MPI_Comm_accept(rank == 0 ? port : NULL, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn));
    exercise(conn, 0);
    MPI_Comm_disconnect(&conn);
    if (rank == 0) {
        CM_OK(MPI_Close_port(port));
        join_and_check(join_socket(inter, 1), 0);
    }
    int dummy = 0, cerrs = 0;
    MPI_Reduce(&dummy, &cerrs, 1, MPI_INT, MPI_SUM, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    CM_CHECK(cerrs == 0, "the children found %d errors", cerrs);
    MPI_Comm_disconnect(&inter);
    return cm_finalize();
}
