/*
 * An HDF5 program (Debian's parallel HDF5 over MPICH, built with h5pcc.mpich) writing and
 * reading a dataset collectively through MPI-IO: a 2-D array of doubles of N rows and
 * 8 * np columns, each rank writing a block of columns (its data interleaves with every
 * other rank's in the file), then reading a block of rows back. HDF5 must report that the
 * transfers were collective; every element is checked. Run by tests/ctests.rs on oxmpi
 * with the library swapped through LD_LIBRARY_PATH (and on MPICH to check the program).
 * Argument: the file's directory.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 300 /* rows */

static int errs = 0;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            errs++;                                                                                \
            fprintf(stderr, "[rank %d] check failed: %s: ", rank, #cond);                          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static double value(hsize_t r, hsize_t c)
{
    return (double)r * 1000.0 + (double)c + 0.25;
}

int main(int argc, char **argv)
{
    int rank, np, total;
    char path[512], version[MPI_MAX_LIBRARY_VERSION_STRING];
    hid_t fapl, file, space, dset, mem, dxpl;
    hsize_t dims[2], start[2], count[2], r, c, cols;
    H5D_mpio_actual_io_mode_t mode;
    double *buf;
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Get_library_version(version, &len);
    if (rank == 0)
        printf("# library: %.40s\n", version);
    snprintf(path, sizeof path, "%s/hdf5_collective.h5", argc > 1 ? argv[1] : "/tmp");
    cols = 8 * (hsize_t)np;
    dims[0] = N;
    dims[1] = cols;

    fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file >= 0, "H5Fcreate %s", path);
    space = H5Screate_simple(2, dims, NULL);
    dset = H5Dcreate2(file, "a", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);

    /* Write: the 8 columns of this rank, every row. */
    start[0] = 0;
    start[1] = 8 * (hsize_t)rank;
    count[0] = N;
    count[1] = 8;
    buf = malloc(sizeof(double) * N * cols);
    for (r = 0; r < N; r++)
        for (c = 0; c < 8; c++)
            buf[r * 8 + c] = value(r, start[1] + c);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    mem = H5Screate_simple(2, count, NULL);
    CHECK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf) >= 0, "H5Dwrite");
    H5Pget_mpio_actual_io_mode(dxpl, &mode);
    CHECK(mode == H5D_MPIO_CONTIGUOUS_COLLECTIVE, "write I/O mode %d", (int)mode);
    H5Sclose(mem);
    H5Dclose(dset);
    H5Sclose(space);
    H5Fclose(file);

    /* Read: a block of rows (the remainder on the last rank). */
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    CHECK(file >= 0, "H5Fopen %s", path);
    dset = H5Dopen2(file, "a", H5P_DEFAULT);
    space = H5Dget_space(dset);
    start[0] = (hsize_t)rank * (N / np);
    count[0] = rank == np - 1 ? N - start[0] : N / np;
    start[1] = 0;
    count[1] = cols;
    memset(buf, 0, sizeof(double) * N * cols);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    mem = H5Screate_simple(2, count, NULL);
    CHECK(H5Dread(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf) >= 0, "H5Dread");
    H5Pget_mpio_actual_io_mode(dxpl, &mode);
    CHECK(mode == H5D_MPIO_CONTIGUOUS_COLLECTIVE, "read I/O mode %d", (int)mode);
    for (r = 0; r < count[0]; r++)
        for (c = 0; c < cols; c++)
            if (buf[r * cols + c] != value(start[0] + r, c) && errs < 5)
                CHECK(0, "element (%llu, %llu) is %g", (unsigned long long)(start[0] + r), (unsigned long long)c,
                      buf[r * cols + c]);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
    H5Fclose(file);
    H5Pclose(dxpl);
    H5Pclose(fapl);
    free(buf);

    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("No Errors\n");
        else
            printf(" Found %d errors\n", total);
        remove(path);
    }
    MPI_Finalize();
    return total != 0;
}
