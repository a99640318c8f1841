/* oxmpi-test: np=1,2 */
/* MPI_Dims_create: MPICH's balanced factorisation (non-increasing), fixed dimensions kept,
 * and the errors for impossible requests. */
#include "comm_mtest.h"

static void expect(int nnodes, int ndims, const int *in, const int *want)
{
    int dims[8];
    for (int i = 0; i < ndims; i++)
        dims[i] = in[i];
    CM_OK(MPI_Dims_create(nnodes, ndims, dims));
    for (int i = 0; i < ndims; i++)
        CM_CHECK(dims[i] == want[i], "Dims_create(%d, %d): dims[%d]=%d, expected %d", nnodes, ndims, i, dims[i],
                 want[i]);
}

int main(int argc, char **argv)
{
    cm_init(&argc, &argv);
    {
        int in[2] = {0, 0}, want[2] = {3, 2};
        expect(6, 2, in, want);
    }
    {
        int in[3] = {0, 0, 0}, want[3] = {3, 2, 2};
        expect(12, 3, in, want);
    }
    {
        int in[2] = {0, 0}, want[2] = {4, 4};
        expect(16, 2, in, want);
    }
    {
        int in[3] = {0, 0, 0}, want[3] = {4, 3, 2};
        expect(24, 3, in, want);
    }
    {
        int in[2] = {0, 0}, want[2] = {7, 1};
        expect(7, 2, in, want);
    }
    {
        int in[2] = {0, 0}, want[2] = {10, 6};
        expect(60, 2, in, want);
    }
    {
        int in[3] = {0, 3, 0}, want[3] = {2, 3, 2};
        expect(12, 3, in, want);
    }
    {
        int in[3] = {0, 0, 0}, want[3] = {1, 1, 1};
        expect(1, 3, in, want);
    }
    {
        int in[4] = {0, 0, 0, 0}, want[4] = {4, 4, 4, 4};
        expect(256, 4, in, want);
    }
    {
        int in[3] = {0, 0, 0}, want[3] = {128, 128, 64};
        expect(1 << 20, 3, in, want);
    }
    {
        int in[2] = {2, 4}, want[2] = {2, 4};
        expect(8, 2, in, want);
    }
    {
        int in[1] = {0}, want[1] = {5};
        expect(5, 1, in, want);
    }
    {
        int in[3] = {0, 0, 0}, want[3] = {3, 3, 2};
        expect(18, 3, in, want);
    }

    /* errors */
    {
        int d[2] = {3, 0};
        CM_EXPECT_ERR(MPI_Dims_create(10, 2, d), MPI_ERR_DIMS);
    }
    {
        int d[2] = {-1, 0};
        CM_EXPECT_ERR(MPI_Dims_create(10, 2, d), -1);
    }
    {
        int d[2] = {2, 3};
        CM_EXPECT_ERR(MPI_Dims_create(10, 2, d), MPI_ERR_DIMS);
    }
    {
        int d[2] = {0, 0};
        CM_EXPECT_ERR(MPI_Dims_create(4, -1, d), -1);
    }
    return cm_finalize();
}
