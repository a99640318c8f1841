/* oxmpi-test: np=1,2,3,4,8 */
/* Neighbourhood collectives on Cartesian communicators: periodic and non-periodic grids of one
 * to three dimensions, including dimensions of extent 1 and 2 (periodic: a rank is its own
 * neighbour, or both neighbours are the same rank, so the messages of the two directions must
 * still land in the right blocks), and a grid smaller than the communicator. Each of the five
 * collectives blocking, nonblocking and persistent, int and large-count forms. */
#include "neighbor_mtest.h"

static void cart(int ndims, const int *dims, const int *periods, const char *name)
{
    MPI_Comm c;
    CM_OK(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &c));
    nb_run_all(c, name);
    if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    int size;
    cm_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int ring[1] = {size}, per1[1] = {1}, nper1[1] = {0};
    cart(1, ring, per1, "1-d periodic ring");
    cart(1, ring, nper1, "1-d open line");

    int d2[2] = {0, 0}, per2[2] = {1, 1}, mixed2[2] = {1, 0};
    MPI_Dims_create(size, 2, d2);
    cart(2, d2, per2, "2-d periodic");
    cart(2, d2, mixed2, "2-d periodic x open");

    /* A dimension of extent 1 next to the full one: periodic and not. */
    int col[2] = {size, 1};
    cart(2, col, per2, "n x 1 periodic");
    int nper2[2] = {0, 0};
    cart(2, col, nper2, "n x 1 open");
    int row[2] = {1, size};
    cart(2, row, per2, "1 x n periodic");

    /* Extent 2 periodic (both neighbours the same rank) in three dimensions. */
    if (size % 2 == 0) {
        int d3[3] = {1, 2, size / 2}, per3[3] = {1, 1, 1}, mix3[3] = {0, 1, 0};
        cart(3, d3, per3, "1 x 2 x n/2 periodic");
        cart(3, d3, mix3, "1 x 2 x n/2 open x periodic x open");
        int two[2] = {2, size / 2};
        cart(2, two, per2, "2 x n/2 periodic");
    }

    /* A grid on fewer ranks than the communicator: the others get MPI_COMM_NULL. */
    if (size > 2) {
        int part[1] = {size - 1};
        cart(1, part, per1, "ring on n-1 ranks");
    }
    return cm_finalize();
}
