/* oxmpi-test: np=2,4 timeout=120 */
/* Non-contiguous transfers around every threshold of the send-gather / receive-scatter path:
 * block sizes just below, at and above the receive-scatter (1 KiB) and send-gather (4 KiB)
 * density thresholds, message sizes around the eager limit (16 KiB) and large, and block lists
 * longer than one rendezvous slot (more than 1024 blocks of 4 KiB, read out of band). Layouts:
 * contiguous, vectors, an hindexed type with unequal blocks and a struct with descending
 * (unsorted) displacements, all of MPI_BYTE so every pair's signatures match. Every data byte
 * is checked, and every gap byte of the receive buffer must stay untouched. Also a window of
 * concurrent sends of one layout from different buffers (many plans at once). Ranks pair up
 * (0-1, 2-3). */
#include "mtest.h"
#include <stdlib.h>
#include <string.h>

#define GAP_FILL 0xA5
#define SEND_GAP_FILL 0x5A

typedef struct {
    MPI_Datatype type;
    long *disp, *len; /* the blocks in type order */
    int nblocks;
    long span; /* bytes from the buffer start that the blocks touch */
} layout;

enum { L_CONTIG, L_VEC8, L_VEC1000, L_VEC1024, L_VEC1100, L_VEC4000, L_VEC4096, L_VEC4200, L_HINDEXED, L_STRUCT, NL };

static void add_block(layout *l, long disp, long len)
{
    l->disp[l->nblocks] = disp;
    l->len[l->nblocks++] = len;
    if (disp + len > l->span)
        l->span = disp + len;
}

/* Layout `which` holding exactly `n` bytes. */
static layout make_layout(int which, long n)
{
    static const long vec_bl[] = {0, 8, 1000, 1024, 1100, 4000, 4096, 4200};
    layout l;
    long at, left, i;
    int *lens;
    MPI_Aint *disps;
    MPI_Datatype *types;
    memset(&l, 0, sizeof l);
    l.disp = malloc(sizeof(long) * (n / 8 + 4));
    l.len = malloc(sizeof(long) * (n / 8 + 4));
    if (which == L_CONTIG) {
        add_block(&l, 0, n);
        MPI_Type_contiguous((int)n, MPI_BYTE, &l.type);
    } else if (which <= L_VEC4200) {
        long bl = vec_bl[which], stride = bl + bl / 2 + 8, count = n / bl, rest = n % bl;
        for (i = 0; i < count; i++)
            add_block(&l, i * stride, bl);
        if (rest) { /* a tail block: the vector, then the rest, as a struct */
            MPI_Datatype v, ts[2] = {0, MPI_BYTE};
            int bls[2] = {1, (int)rest};
            MPI_Aint ds[2] = {0, count * stride};
            MPI_Type_vector((int)count, (int)bl, (int)stride, MPI_BYTE, &v);
            ts[0] = v;
            add_block(&l, count * stride, rest);
            MPI_Type_create_struct(count ? 2 : 1, count ? bls : bls + 1, count ? ds : ds + 1, count ? ts : ts + 1,
                                   &l.type);
            MPI_Type_free(&v);
        } else {
            MPI_Type_vector((int)count, (int)bl, (int)stride, MPI_BYTE, &l.type);
        }
    } else if (which == L_HINDEXED) { /* blocks of 3000 and 5200 bytes (4100 on average) */
        for (at = 0, left = n, i = 0; left > 0; i++) {
            long len = (i % 2 ? 5200 : 3000) < left ? (i % 2 ? 5200 : 3000) : left;
            add_block(&l, at, len);
            at += len + 40 + (i % 3) * 8;
            left -= len;
        }
        lens = malloc(sizeof(int) * l.nblocks);
        disps = malloc(sizeof(MPI_Aint) * l.nblocks);
        for (i = 0; i < l.nblocks; i++) {
            lens[i] = (int)l.len[i];
            disps[i] = l.disp[i];
        }
        MPI_Type_create_hindexed(l.nblocks, lens, disps, MPI_BYTE, &l.type);
        free(lens);
        free(disps);
    } else { /* struct: blocks of 2048 and 6144 bytes at descending displacements */
        long nb = 0, total = 0;
        for (left = n; left > 0; nb++)
            left -= (nb % 2 ? 6144 : 2048) < left ? (nb % 2 ? 6144 : 2048) : left;
        /* lay them out from the end: block 0 highest */
        for (at = 0, i = nb - 1; i >= 0; i--) {
            long len = (i % 2 ? 6144 : 2048);
            long before = 0, k;
            for (k = 0; k < i; k++)
                before += (k % 2 ? 6144 : 2048);
            if (before + len > n)
                len = n - before;
            l.disp[i] = at;
            l.len[i] = len;
            at += len + 24;
            total += len;
        }
        l.nblocks = (int)nb;
        l.span = at;
        lens = malloc(sizeof(int) * nb);
        disps = malloc(sizeof(MPI_Aint) * nb);
        types = malloc(sizeof(MPI_Datatype) * nb);
        for (i = 0; i < nb; i++) {
            lens[i] = (int)l.len[i];
            disps[i] = l.disp[i];
            types[i] = MPI_BYTE;
        }
        MPI_Type_create_struct((int)nb, lens, disps, types, &l.type);
        free(lens);
        free(disps);
        free(types);
        CHECK(total == n, "struct layout holds %ld bytes, want %ld", total, n);
    }
    MPI_Type_commit(&l.type);
    return l;
}

static void free_layout(layout *l)
{
    MPI_Type_free(&l->type);
    free(l->disp);
    free(l->len);
}

static unsigned char data_byte(long k, int salt)
{
    return (unsigned char)((k * 7 + (k >> 8) * 13 + salt) & 0xff);
}

static void fill(const layout *l, unsigned char *buf, int salt)
{
    long b, i, k = 0;
    memset(buf, SEND_GAP_FILL, l->span);
    for (b = 0; b < l->nblocks; b++)
        for (i = 0; i < l->len[b]; i++)
            buf[l->disp[b] + i] = data_byte(k++, salt);
}

/* Every block byte right, every other byte of the span untouched; returns the error count. */
static int verify(const layout *l, const unsigned char *buf, int salt, const char *what)
{
    long b, i, k = 0, errs = 0, data = 0;
    unsigned char *mark = calloc(l->span, 1);
    for (b = 0; b < l->nblocks; b++) {
        for (i = 0; i < l->len[b]; i++) {
            unsigned char want = data_byte(k++, salt);
            mark[l->disp[b] + i] = 1;
            if (buf[l->disp[b] + i] != want && errs++ < 3)
                CHECK(0, "%s: data byte %ld (block %ld) is %d, want %d", what, k - 1, b, buf[l->disp[b] + i], want);
        }
        data += l->len[b];
    }
    for (i = 0; i < l->span; i++)
        if (!mark[i] && buf[i] != GAP_FILL && errs++ < 3)
            CHECK(0, "%s: gap byte at offset %ld was overwritten (%d)", what, i, buf[i]);
    free(mark);
    return (int)errs;
}

static void transfer(int peer, int a, int b, long n, int salt)
{
    layout sl = make_layout(a, n), rl = make_layout(b, n);
    unsigned char *sbuf = malloc(sl.span), *rbuf = malloc(rl.span);
    char what[96];
    snprintf(what, sizeof what, "layouts %d->%d, %ld bytes", a, b, n);
    if (mt_rank < peer) {
        fill(&sl, sbuf, salt);
        MPI_CHECK(MPI_Send(sbuf, 1, sl.type, peer, salt, MPI_COMM_WORLD));
    } else {
        MPI_Status st;
        int count;
        memset(rbuf, GAP_FILL, rl.span);
        MPI_CHECK(MPI_Recv(rbuf, 1, rl.type, peer, salt, MPI_COMM_WORLD, &st));
        MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK(count == n, "%s: received %d bytes", what, count);
        verify(&rl, rbuf, salt, what);
    }
    free(sbuf);
    free(rbuf);
    free_layout(&sl);
    free_layout(&rl);
}

/* `w` sends of one layout at once from different buffers (and receives into different ones). */
static void window(int peer, int which, long n, int w)
{
    layout l = make_layout(which, n);
    unsigned char *buf = malloc(l.span * w);
    MPI_Request *req = malloc(sizeof(MPI_Request) * w);
    MPI_Status *sts = malloc(sizeof(MPI_Status) * w);
    int j, round;
    for (round = 0; round < 3; round++) {
        for (j = 0; j < w; j++) {
            if (mt_rank < peer) {
                fill(&l, buf + j * l.span, 50 + j + round);
                MPI_CHECK(MPI_Isend(buf + j * l.span, 1, l.type, peer, 900 + j, MPI_COMM_WORLD, &req[j]));
            } else {
                memset(buf + j * l.span, GAP_FILL, l.span);
                MPI_CHECK(MPI_Irecv(buf + j * l.span, 1, l.type, peer, 900 + j, MPI_COMM_WORLD, &req[j]));
            }
        }
        MPI_CHECK(MPI_Waitall(w, req, sts));
        if (mt_rank > peer)
            for (j = 0; j < w; j++) {
                char what[64];
                snprintf(what, sizeof what, "window layout %d message %d", which, j);
                verify(&l, buf + j * l.span, 50 + j + round, what);
            }
    }
    free(buf);
    free(req);
    free(sts);
    free_layout(&l);
}

int main(int argc, char **argv)
{
    const long sizes[] = {16384 - 8, 16384, 16384 + 8, 3 * 65536 + 40};
    const int big_layouts[] = {L_CONTIG, L_VEC8, L_VEC1024, L_VEC4096, L_HINDEXED, L_STRUCT};
    int peer, a, b, s, salt = 0;
    mt_init(&argc, &argv);
    peer = mt_rank ^ 1;
    if (peer < mt_size) {
        for (s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++)
            for (a = 0; a < NL; a++)
                for (b = 0; b < NL; b++)
                    transfer(peer, a, b, sizes[s], salt++ % 1000);
        /* More than one slot of 4 KiB blocks (1152 > 1024): the list goes out of band. */
        for (a = 0; a < 6; a++)
            for (b = 0; b < 6; b++)
                transfer(peer, big_layouts[a], big_layouts[b], 1152L * 4096, salt++ % 1000);
        transfer(peer, L_VEC4200, L_VEC4096, 1200L * 4200, salt++ % 1000);
        window(peer, L_VEC4096, 65536, 20);
        window(peer, L_VEC1024, 65536, 20);
        window(peer, L_HINDEXED, 300000, 8);
    }
    return mt_finalize();
}
