/*
 * io_mtest.h - helpers of the MPI-IO tests: a temporary directory per run (made by rank 0,
 * its name broadcast, removed with its contents at the end) and error-class checks.
 */
#ifndef OXMPI_IO_MTEST_H
#define OXMPI_IO_MTEST_H

#include "mtest.h"
#include <dirent.h>
#include <unistd.h>

static char io_dir[256];

/* Makes the run's directory on rank 0 and tells every rank its name. */
static inline void io_make_dir(void)
{
    if (mt_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(io_dir, sizeof io_dir, "%s/oxmpi-io-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(io_dir)) {
            perror("mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    MPI_Bcast(io_dir, sizeof io_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* The path of file `name` in the run's directory. */
static inline const char *io_path(const char *name)
{
    static char path[2][512];
    static int which = 0;
    which ^= 1;
    snprintf(path[which], sizeof path[which], "%s/%s", io_dir, name);
    return path[which];
}

/* Removes the run's directory and what is left in it (after every rank is done). */
static inline void io_remove_dir(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank == 0) {
        DIR *d = opendir(io_dir);
        struct dirent *e;
        char p[600];
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(p, sizeof p, "%s/%s", io_dir, e->d_name);
                unlink(p);
            }
        }
        if (d)
            closedir(d);
        rmdir(io_dir);
    }
}

static inline int io_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

/* CHECK_CLASS(call, class): the call fails with that error class. */
#define CHECK_CLASS(call, want)                                                                    \
    do {                                                                                           \
        int io_rc_ = (call);                                                                       \
        CHECK(io_class(io_rc_) == (want), "%s: class %d (%s), expected %d", #call, io_class(io_rc_), \
              io_rc_ == MPI_SUCCESS ? "success" : mt_errstr(io_rc_), (want));                      \
    } while (0)

/* The hints `used` (from MPI_File_get_info) report `key` as `want`. */
static inline void io_check_hint(MPI_Info used, const char *key, const char *want)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(used, key, MPI_MAX_INFO_VAL, v, &flag);
    CHECK(flag && !strcmp(v, want), "hint %s reported as %s, expected %s", key, flag ? v : "(unset)", want);
}

static inline int io_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

#endif
