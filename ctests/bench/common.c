/* Shared code of the micro-benchmarks: options, statistics, output, data patterns. */
#define _POSIX_C_SOURCE 200112L
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bench_rank = 0, bench_np = 1;

static void usage(const bench_spec *s, FILE *f)
{
    fprintf(f,
            "usage: %s [options]\n"
            "  %s\n"
            "options:\n"
            "  --min-size N    smallest message size in bytes (suffix K or M; default 0)\n"
            "  --max-size N    largest message size in bytes (default %zu)\n"
            "  --iters N       timed iterations per size, up to 64 KiB; fewer above (default %d)\n"
            "  --warmup N      untimed iterations per size first (default %d)\n"
            "  --batch N       iterations per timed sample (default: 10 below 1 KiB, else 1)\n"
            "  --step N        size multiplier: 0, 1, N, N^2, ... (default 2)\n",
            s->name, s->purpose, s->default_max_size, s->default_iters, s->default_warmup);
    if (s->uses_window)
        fprintf(f, "  --window N      messages in flight per iteration (default 64)\n");
    if (s->uses_vary)
        fprintf(f, "  --vary          new send data every iteration (outside the timed region)\n");
    if (s->list_option)
        fprintf(f, "  %-15s %s (default %s)\n", s->list_option, s->list_help, s->list_default);
    fprintf(f,
            "  --check         validate every received buffer; abort on a mismatch (timings\n"
            "                  then include the validation and are not representative)\n"
            "  --label NAME    the \"mpi\" column (default: from MPI_Get_library_version)\n"
            "  --no-header     do not print the '# bench,mpi,...' header comment\n"
            "  --help          this text\n"
            "output: CSV records bench,mpi,np,size,median_us,p90_us,mbps,msgrate; '#' lines "
            "are comments\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'k' || *end == 'K') {
        v <<= 10;
        end++;
    } else if (*end == 'm' || *end == 'M') {
        v <<= 20;
        end++;
    } else if (*end == 'g' || *end == 'G') {
        v <<= 30;
        end++;
    }
    if (*end == 'i' || *end == 'B') /* KiB, KB, MiB */
        end++;
    if (*end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int *out, int min)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < min || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

static void default_label(char *label, size_t n)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    const char *name = "unknown";
    v[0] = '\0';
    if (MPI_Get_library_version(v, &len) == MPI_SUCCESS) {
        if (strstr(v, "oxmpi"))
            name = "oxmpi";
        else if (strstr(v, "Open MPI"))
            name = "openmpi";
        else if (strstr(v, "MPICH"))
            name = "mpich";
        else if (strstr(v, "Intel"))
            name = "intelmpi";
    }
    snprintf(label, n, "%s", name);
}

int bench_init(int *argc, char ***argv, const bench_spec *s, bench_opts *o)
{
    int err = 0, help = 0, i;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &bench_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &bench_np);

    memset(o, 0, sizeof *o);
    o->min_size = 0;
    o->max_size = s->default_max_size;
    o->iters = s->default_iters;
    o->warmup = s->default_warmup;
    o->window = 64;
    o->step = 2;
    o->header = 1;
    if (s->list_default)
        snprintf(o->list, sizeof o->list, "%s", s->list_default);
    default_label(o->label, sizeof o->label);

    for (i = 1; i < *argc && !err && !help; i++) {
        const char *a = (*argv)[i];
        const char *v = i + 1 < *argc ? (*argv)[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help = 1;
            takes = 0;
        } else if (!strcmp(a, "--check")) {
            o->check = 1;
            takes = 0;
        } else if (!strcmp(a, "--no-header")) {
            o->header = 0;
            takes = 0;
        } else if (s->uses_vary && !strcmp(a, "--vary")) {
            o->vary = 1;
            takes = 0;
        } else if (!v) {
            err = 1;
        } else if (!strcmp(a, "--min-size")) {
            err = parse_size(v, &o->min_size);
        } else if (!strcmp(a, "--max-size")) {
            err = parse_size(v, &o->max_size);
        } else if (!strcmp(a, "--iters")) {
            err = parse_int(v, &o->iters, 1);
        } else if (!strcmp(a, "--warmup")) {
            err = parse_int(v, &o->warmup, 0);
        } else if (!strcmp(a, "--batch")) {
            err = parse_int(v, &o->batch, 1);
        } else if (!strcmp(a, "--step")) {
            err = parse_int(v, &o->step, 2);
        } else if (s->uses_window && !strcmp(a, "--window")) {
            err = parse_int(v, &o->window, 1);
        } else if (!strcmp(a, "--label")) {
            snprintf(o->label, sizeof o->label, "%s", v);
        } else if (s->list_option && !strcmp(a, s->list_option)) {
            snprintf(o->list, sizeof o->list, "%s", v);
        } else {
            err = 1;
        }
        if (err && bench_rank == 0)
            fprintf(stderr, "%s: bad or unknown option: %s%s%s\n", s->name, a, v && takes ? " " : "",
                    v && takes ? v : "");
        if (takes && v)
            i++;
    }
    if (!err && o->min_size > o->max_size) {
        if (bench_rank == 0)
            fprintf(stderr, "%s: --min-size is above --max-size\n", s->name);
        err = 1;
    }
    if (err || help) {
        if (bench_rank == 0)
            usage(s, err ? stderr : stdout);
        MPI_Finalize();
        return err ? 2 : 1;
    }
    if (bench_rank == 0) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        char *nl;
        v[0] = '\0';
        MPI_Get_library_version(v, &len);
        if ((nl = strchr(v, '\n')))
            *nl = '\0';
        printf("# %s: %s\n", s->name, s->purpose);
        printf("# library: %s\n", v);
        printf("# np=%d sizes=%zu..%zu step=%d iters=%d warmup=%d%s%s\n", bench_np, o->min_size,
               o->max_size, o->step, o->iters, o->warmup, o->check ? " check" : "", o->vary ? " vary" : "");
        if (s->list_option)
            printf("# %s=%s\n", s->list_option + 2, o->list);
        if (o->check)
            printf("# --check: timings include validation and are not representative\n");
        if (o->header)
            printf("# bench,mpi,np,size,median_us,p90_us,mbps,msgrate\n");
        fflush(stdout);
    }
    return 0;
}

int bench_finish(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

size_t bench_first_size(const bench_opts *o)
{
    return o->min_size;
}

size_t bench_next_size(const bench_opts *o, size_t s)
{
    size_t p = 1;
    if (s == 0)
        return 1;
    while (p <= s)
        p *= (size_t)o->step;
    return p;
}

#define SCALE_ABOVE ((size_t)65536)

int bench_iters_for(const bench_opts *o, size_t size)
{
    int floor_ = o->iters < 10 ? o->iters : 10;
    double v;
    if (size <= SCALE_ABOVE)
        return o->iters;
    v = (double)o->iters * (double)SCALE_ABOVE / (double)size;
    return v < floor_ ? floor_ : (int)v;
}

int bench_warmup_for(const bench_opts *o, size_t size)
{
    int floor_ = o->warmup < 2 ? o->warmup : 2;
    double v;
    if (size <= SCALE_ABOVE)
        return o->warmup;
    v = (double)o->warmup * (double)SCALE_ABOVE / (double)size;
    return v < floor_ ? floor_ : (int)v;
}

int bench_batch_for(const bench_opts *o, size_t size)
{
    if (o->check || o->vary)
        return 1;
    if (o->batch > 0)
        return o->batch;
    return size < 1024 ? 10 : 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void bench_stats(double *t, int n, double *median, double *p90)
{
    int k;
    if (n <= 0) {
        *median = *p90 = 0;
        return;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    k = (9 * n + 9) / 10; /* nearest rank: ceil(0.9 n) */
    if (k < 1)
        k = 1;
    *p90 = t[k - 1];
}

void bench_emit(const bench_opts *o, const char *bench, int np, size_t size, double median_us,
                double p90_us, double mbps, double msgrate)
{
    printf("%s,%s,%d,%zu,%.3f,%.3f,%.2f,%.0f\n", bench, o->label, np, size, median_us, p90_us,
           mbps, msgrate);
    fflush(stdout);
}

void bench_note(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void *bench_alloc(size_t bytes)
{
    void *p = NULL;
    if (bytes == 0)
        bytes = 1;
    if (posix_memalign(&p, 4096, bytes) != 0 || !p) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", bench_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    memset(p, 0, bytes);
    return p;
}

uint64_t bench_hash(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return x;
}

unsigned char bench_byte(uint64_t seed, size_t offset)
{
    return (unsigned char)(bench_hash(seed, offset / 8) >> (8 * (offset % 8)));
}

void bench_fill(void *buf, size_t n, uint64_t seed)
{
    unsigned char *p = buf;
    size_t w, i;
    for (w = 0; w * 8 < n; w++) {
        uint64_t h = bench_hash(seed, w);
        for (i = 0; i < 8 && w * 8 + i < n; i++)
            p[w * 8 + i] = (unsigned char)(h >> (8 * i));
    }
}

void bench_poison(void *buf, size_t n)
{
    memset(buf, 0xA5, n);
}

void bench_fail(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "CHECK FAILED (rank %d): ", bench_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

void bench_verify(const void *buf, size_t n, uint64_t seed, size_t offset, const char *what,
                  size_t size)
{
    const unsigned char *p = buf;
    size_t i;
    uint64_t h = 0;
    for (i = 0; i < n; i++) {
        size_t at = offset + i;
        unsigned char want;
        if (i == 0 || at % 8 == 0)
            h = bench_hash(seed, at / 8);
        want = (unsigned char)(h >> (8 * (at % 8)));
        if (p[i] != want)
            bench_fail("%s, size %zu: byte %zu is 0x%02x, expected 0x%02x", what, size, i,
                       p[i], want);
    }
}

int bench_split_list(const char *list, char items[][32], int max_items)
{
    int n = 0;
    const char *p = list;
    while (*p && n < max_items) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0) {
            if (len > 31)
                len = 31;
            memcpy(items[n], p, len);
            items[n][len] = '\0';
            n++;
        }
        if (!e)
            break;
        p = e + 1;
    }
    return n;
}

void bench_check_rc(int rc, const char *what, size_t size)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        msg[0] = '\0';
        MPI_Error_string(rc, msg, &len);
        bench_fail("%s failed at size %zu: %s", what, size, msg);
    }
}
