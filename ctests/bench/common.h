/*
 * Shared code of the oxmpi micro-benchmarks (ctests/bench/). Portable MPI-3 C99: builds with
 * any MPI's mpicc.
 *
 * Output: lines starting with '#' are comments; every other line on stdout is one CSV record
 *   bench,mpi,np,size,median_us,p90_us,mbps,msgrate
 * printed by rank 0, one per (benchmark, size). median_us and p90_us are taken over the timed
 * samples of that size (a sample is one iteration, or a batch of iterations for tiny messages;
 * its value is the time of one iteration). mbps is MB/s (10^6 bytes per second) at the median,
 * msgrate messages per second at the median (0 where it means nothing).
 */
#ifndef OXMPI_BENCH_COMMON_H
#define OXMPI_BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_LIST_MAX 256

typedef struct {
    size_t min_size;
    size_t max_size;
    int iters;       /* timed iterations at sizes up to 64 KiB (fewer above) */
    int warmup;      /* untimed iterations before them */
    int batch;       /* iterations per timed sample; 0 = automatic */
    int step;        /* size multiplier from one size to the next (default 2) */
    int window;      /* messages in flight (bw, bibw, mbw_mr, vector bw) */
    int check;       /* validate received data; abort loudly on a mismatch */
    int vary;        /* change the send data every iteration (outside the timed region) */
    int header;      /* print the CSV header as a comment */
    char label[64];  /* the "mpi" column */
    char list[BENCH_LIST_MAX]; /* program-specific list: --ops, --density, --blocks */
} bench_opts;

/* What a program accepts besides the common options. */
typedef struct {
    const char *name;        /* program name for messages */
    const char *purpose;     /* one line for --help */
    int default_iters;
    int default_warmup;
    size_t default_max_size;
    int uses_window;
    int uses_vary;
    const char *list_option; /* e.g. "--ops"; NULL if none */
    const char *list_help;
    const char *list_default;
} bench_spec;

extern int bench_rank, bench_np;

/* Calls MPI_Init and parses the options (every rank parses the same argv). Returns 0 to go
 * on; otherwise the program should return the value after MPI_Finalize (done here). */
int bench_init(int *argc, char ***argv, const bench_spec *spec, bench_opts *o);
/* MPI_Finalize and the exit status. */
int bench_finish(void);

/* First size and the one after `s`: 0, 1, then the next power of --step (2: 2, 4, 8, ...);
 * loop while s <= max_size. */
size_t bench_first_size(const bench_opts *o);
size_t bench_next_size(const bench_opts *o, size_t s);
/* Iterations (timed or warm-up) at a size: `base` up to 64 KiB, then scaled down by size
 * (never below min(base, 10) timed / min(base, 2) warm-up). */
int bench_iters_for(const bench_opts *o, size_t size);
int bench_warmup_for(const bench_opts *o, size_t size);
/* Iterations per timed sample: --batch, else 10 below 1 KiB and 1 above; 1 with --check or
 * --vary (their work is done outside the timed region). */
int bench_batch_for(const bench_opts *o, size_t size);

/* Sorts t[0..n) and returns the median and the 90th percentile (nearest rank). */
void bench_stats(double *t, int n, double *median, double *p90);
/* Prints one CSV record (rank 0 only calls it). */
void bench_emit(const bench_opts *o, const char *bench, int np, size_t size, double median_us,
                double p90_us, double mbps, double msgrate);
/* Prints a '#' comment line (rank 0 only). */
void bench_note(const char *fmt, ...);

/* Page-aligned, zero-filled (touched) memory; aborts when out of memory. */
void *bench_alloc(size_t bytes);

/* Deterministic data: byte i of the stream with the given seed. */
void bench_fill(void *buf, size_t n, uint64_t seed);
/* Fills with a value no pattern is likely to produce at every byte. */
void bench_poison(void *buf, size_t n);
/* Verifies buf against bench_fill(seed) (the stream starts at `offset` bytes into it);
 * on a mismatch prints where and aborts the job. */
void bench_verify(const void *buf, size_t n, uint64_t seed, size_t offset, const char *what,
                  size_t size);
/* The expected byte at `offset` of the stream `seed`. */
unsigned char bench_byte(uint64_t seed, size_t offset);
/* A 64-bit mix of two values (splitmix64). */
uint64_t bench_hash(uint64_t a, uint64_t b);

/* Aborts the job after printing "CHECK FAILED" with the message. */
void bench_fail(const char *fmt, ...);
/* bench_fail with the error string of `rc` unless it is MPI_SUCCESS. */
void bench_check_rc(int rc, const char *what, size_t size);

/* Splits o->list on commas: returns the number of items copied to items (each at most 31
 * characters). */
int bench_split_list(const char *list, char items[][32], int max_items);

#endif
