/* What a copy through shared memory between two cores costs on this machine, against one
 * memcpy: a producer thread on CPU 0 copies a message into a ring of chunks, a consumer on
 * CPU 1 copies each chunk out as soon as it is published (the two overlap), message after
 * message. This bounds any double-copy protocol (eager rings, streamed rendezvous, packing
 * on one side and unpacking on the other); see docs/performance.md, "Eleventh session".
 *   cc -O2 -pthread -o pipecost scripts/pipecost.c
 *   ./pipecost [CHUNK [SLOTS [MESSAGE]]]   (defaults 16384 64 1048576) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t chunk = 16384, slots = 64, message = 1 << 20;
static const int rounds = 200;
static char *ring, *src, *dst;
/* Chunks published by the producer and taken by the consumer, counted from the start. */
static _Atomic long published, taken;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *consume(void *unused)
{
    (void)unused;
    pin(1);
    long n = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t off = 0; off < message; off += chunk, n++) {
            while (atomic_load_explicit(&published, memory_order_acquire) <= n)
                ;
            memcpy(dst + off, ring + (n % slots) * chunk, chunk);
            atomic_store_explicit(&taken, n + 1, memory_order_release);
        }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        chunk = strtoul(argv[1], NULL, 0);
    if (argc > 2)
        slots = strtoul(argv[2], NULL, 0);
    if (argc > 3)
        message = strtoul(argv[3], NULL, 0);
    if (!chunk || !slots || message % chunk) {
        fprintf(stderr, "usage: pipecost [CHUNK [SLOTS [MESSAGE]]] (MESSAGE a multiple of CHUNK)\n");
        return 2;
    }
    ring = aligned_alloc(4096, chunk * slots);
    src = aligned_alloc(4096, message);
    dst = aligned_alloc(4096, message);
    memset(ring, 1, chunk * slots);
    memset(src, 2, message);
    memset(dst, 3, message);

    pthread_t consumer;
    pthread_create(&consumer, NULL, consume, NULL);
    pin(0);
    long n = 0;
    double t0 = now();
    for (int r = 0; r < rounds; r++)
        for (size_t off = 0; off < message; off += chunk, n++) {
            while (n - atomic_load_explicit(&taken, memory_order_acquire) >= (long)slots)
                ;
            memcpy(ring + (n % slots) * chunk, src + off, chunk);
            atomic_store_explicit(&published, n + 1, memory_order_release);
        }
    pthread_join(consumer, NULL);
    double piped = (now() - t0) / rounds * 1e6;

    t0 = now();
    for (int r = 0; r < rounds; r++)
        memcpy(dst, src, message);
    double copied = (now() - t0) / rounds * 1e6;
    printf("message %zu B, chunks of %zu B, %zu slots: two-core pipeline %.1f us, one memcpy %.1f us\n",
           message, chunk, slots, piped, copied);
    return 0;
}
