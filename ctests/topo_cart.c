/* oxmpi-test: np=1,2,3,4,6,8 */
/* Cartesian topologies: create (ranks beyond the grid get MPI_COMM_NULL), get, rank,
 * coords, shift (periodic and not), sub, map, Cartdim_get, Topo_test, the topology kept by
 * MPI_Comm_dup, traffic along a shift, and errors for bad arguments. */
#include "comm_mtest.h"

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    int rank, size, status;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    CM_OK(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CM_CHECK(status == MPI_UNDEFINED, "Topo_test(world) = %d", status);

    int dims[2] = {0, 0}, periods[2] = {1, 0};
    CM_OK(MPI_Dims_create(size, 2, dims));
    MPI_Comm cart;
    CM_OK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    CM_CHECK(cart != MPI_COMM_NULL, "no Cartesian communicator");
    if (cart != MPI_COMM_NULL) {
        int r, n, nd, gd[2], gp[2], gc[2], cc[2], back;
        MPI_Comm_rank(cart, &r);
        MPI_Comm_size(cart, &n);
        CM_CHECK(r == rank && n == size, "cart rank %d size %d", r, n);
        CM_OK(MPI_Topo_test(cart, &status));
        CM_CHECK(status == MPI_CART, "Topo_test(cart) = %d", status);
        CM_OK(MPI_Cartdim_get(cart, &nd));
        CM_CHECK(nd == 2, "Cartdim_get = %d", nd);
        CM_OK(MPI_Cart_get(cart, 2, gd, gp, gc));
        CM_CHECK(gd[0] == dims[0] && gd[1] == dims[1], "Cart_get dims %d %d", gd[0], gd[1]);
        CM_CHECK(gp[0] == 1 && gp[1] == 0, "Cart_get periods %d %d", gp[0], gp[1]);
        CM_CHECK(gc[0] == rank / dims[1] && gc[1] == rank % dims[1], "Cart_get coords %d %d", gc[0], gc[1]);
        for (int q = 0; q < size; q++) {
            CM_OK(MPI_Cart_coords(cart, q, 2, cc));
            CM_CHECK(cc[0] == q / dims[1] && cc[1] == q % dims[1], "coords of %d: %d %d", q, cc[0], cc[1]);
            CM_OK(MPI_Cart_rank(cart, cc, &back));
            CM_CHECK(back == q, "Cart_rank(coords of %d) = %d", q, back);
        }
        /* periodic dimension wraps in Cart_rank */
        cc[0] = -1;
        cc[1] = 0;
        CM_OK(MPI_Cart_rank(cart, cc, &back));
        CM_CHECK(back == (dims[0] - 1) * dims[1], "Cart_rank(-1, 0) = %d", back);

        int src, dst;
        CM_OK(MPI_Cart_shift(cart, 0, 1, &src, &dst));
        int ws = ((gc[0] - 1 + dims[0]) % dims[0]) * dims[1] + gc[1];
        int wd = ((gc[0] + 1) % dims[0]) * dims[1] + gc[1];
        CM_CHECK(src == ws && dst == wd, "shift dir 0: %d %d, expected %d %d", src, dst, ws, wd);
        /* traffic along the periodic shift */
        int got = -1;
        CM_OK(MPI_Sendrecv(&rank, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, cart, MPI_STATUS_IGNORE));
        CM_CHECK(got == src, "received %d from %d", got, src);

        CM_OK(MPI_Cart_shift(cart, 1, 1, &src, &dst));
        ws = gc[1] == 0 ? MPI_PROC_NULL : rank - 1;
        wd = gc[1] == dims[1] - 1 ? MPI_PROC_NULL : rank + 1;
        CM_CHECK(src == ws && dst == wd, "shift dir 1: %d %d, expected %d %d", src, dst, ws, wd);
        CM_OK(MPI_Cart_shift(cart, 1, -2, &src, &dst));
        ws = gc[1] + 2 >= dims[1] ? MPI_PROC_NULL : rank + 2;
        wd = gc[1] - 2 < 0 ? MPI_PROC_NULL : rank - 2;
        CM_CHECK(src == ws && dst == wd, "shift dir 1 by -2: %d %d, expected %d %d", src, dst, ws, wd);

        /* sub-grids: the rows (remain dimension 1) */
        int remain[2] = {0, 1};
        MPI_Comm row;
        CM_OK(MPI_Cart_sub(cart, remain, &row));
        MPI_Comm_rank(row, &r);
        MPI_Comm_size(row, &n);
        CM_CHECK(n == dims[1] && r == gc[1], "row rank %d size %d", r, n);
        CM_OK(MPI_Cartdim_get(row, &nd));
        CM_CHECK(nd == 1, "row Cartdim_get = %d", nd);
        CM_OK(MPI_Cart_get(row, 1, gd, gp, gc));
        CM_CHECK(gd[0] == dims[1] && gp[0] == 0, "row dims %d periods %d", gd[0], gp[0]);
        cm_check_ring(row, 6);
        MPI_Comm_free(&row);

        /* duplicates keep the topology */
        MPI_Comm dup;
        CM_OK(MPI_Comm_dup(cart, &dup));
        CM_OK(MPI_Topo_test(dup, &status));
        CM_CHECK(status == MPI_CART, "Topo_test(dup) = %d", status);
        CM_OK(MPI_Cart_get(dup, 2, gd, gp, gc));
        CM_CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1, "dup Cart_get");
        MPI_Comm_free(&dup);

        /* bad arguments */
        CM_EXPECT_ERR(MPI_Cart_shift(cart, 2, 1, &src, &dst), MPI_ERR_ARG);
        CM_EXPECT_ERR(MPI_Cart_coords(cart, size, 2, cc), MPI_ERR_RANK);
        cc[0] = 0;
        cc[1] = dims[1];
        CM_EXPECT_ERR(MPI_Cart_rank(cart, cc, &back), MPI_ERR_ARG);
        MPI_Comm_free(&cart);
    }

    /* a 3-d periodic grid and a sub-grid of two dimensions */
    int d3[3] = {0, 0, 0}, p3[3] = {1, 1, 1};
    MPI_Dims_create(size, 3, d3);
    MPI_Comm c3, s3;
    CM_OK(MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 1, &c3));
    int keep[3] = {1, 0, 1}, c[3], sc[2], n3, r3;
    CM_OK(MPI_Cart_sub(c3, keep, &s3));
    MPI_Cart_coords(c3, rank, 3, c);
    MPI_Comm_size(s3, &n3);
    MPI_Comm_rank(s3, &r3);
    CM_CHECK(n3 == d3[0] * d3[2], "3-d sub size %d", n3);
    MPI_Cart_coords(s3, r3, 2, sc);
    CM_CHECK(sc[0] == c[0] && sc[1] == c[2], "3-d sub coords %d %d vs %d %d", sc[0], sc[1], c[0], c[2]);
    MPI_Comm_free(&s3);
    /* keeping no dimension: rank 0 gets a 0-d grid of itself, the others MPI_COMM_NULL (MPICH) */
    int none[3] = {0, 0, 0}, cmp;
    CM_OK(MPI_Cart_sub(c3, none, &s3));
    if (rank == 0) {
        CM_OK(MPI_Comm_compare(s3, MPI_COMM_SELF, &cmp));
        CM_CHECK(cmp == MPI_CONGRUENT, "0-d sub on rank 0 compares %d with MPI_COMM_SELF", cmp);
        CM_OK(MPI_Cartdim_get(s3, &n3));
        CM_CHECK(n3 == 0, "0-d sub has %d dims", n3);
        MPI_Comm_free(&s3);
    } else {
        CM_CHECK(s3 == MPI_COMM_NULL, "0-d sub on rank %d is not MPI_COMM_NULL", rank);
    }
    MPI_Comm_free(&c3);

    /* a grid smaller than the communicator: the last rank is left out */
    if (size > 1) {
        int d1[1] = {size - 1}, p1[1] = {0}, newrank;
        MPI_Comm small;
        CM_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &small));
        CM_CHECK((rank == size - 1) == (small == MPI_COMM_NULL), "rank %d: comm %s", rank,
                 small == MPI_COMM_NULL ? "null" : "made");
        if (small != MPI_COMM_NULL)
            MPI_Comm_free(&small);
        CM_OK(MPI_Cart_map(MPI_COMM_WORLD, 1, d1, p1, &newrank));
        CM_CHECK(newrank == (rank == size - 1 ? MPI_UNDEFINED : rank), "Cart_map = %d", newrank);
    }

    /* errors */
    int nd;
    CM_EXPECT_ERR(MPI_Cartdim_get(MPI_COMM_WORLD, &nd), MPI_ERR_TOPOLOGY);
    {
        int big[2] = {size, 2}, p[2] = {0, 0};
        MPI_Comm bad = MPI_COMM_WORLD;
        CM_EXPECT_ERR(MPI_Cart_create(MPI_COMM_WORLD, 2, big, p, 0, &bad), MPI_ERR_ARG);
        /* A failed creation leaves MPI_COMM_NULL, not what the variable held. */
        CM_CHECK(bad == MPI_COMM_NULL, "Cart_create failing on a grid larger than the communicator left 0x%x",
              (unsigned)bad);
        int neg[2] = {-1, 1};
#if MT_OXMPI
        /* MPICH 4.0 accepts a negative extent; the standard requires positive ones. */
        CM_EXPECT_ERR(MPI_Cart_create(MPI_COMM_WORLD, 2, neg, p, 0, &bad), MPI_ERR_DIMS);
#endif
        CM_EXPECT_ERR(MPI_Cart_create(MPI_COMM_WORLD, -1, neg, p, 0, &bad), MPI_ERR_ARG);
    }
    return cm_finalize();
}
