/* oxmpi-test: np=1,2,4,8 timeout=120 */
/* MPI_THREAD_MULTIPLE waits release the library: on each pair of ranks (a rank alone pairs
 * with itself) one thread of the lower rank blocks in MPI_Recv for an answer the partner
 * sends only after it got a message that another thread of the lower rank sends later.
 * Then: a thread blocked in MPI_Wait on a generalized request that another thread
 * completes; MPI_Waitany/MPI_Waitsome while another thread sends the awaited messages;
 * MPI_Is_thread_main on a thread; a bad MPI_Init_thread level after init. */
#include "mtest.h"
#include <pthread.h>
#include <unistd.h>

static int partner;
static int answer = -1;

static void *wait_answer(void *arg)
{
    (void) arg;
    MPI_Recv(&answer, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

/* The partner's part: answers the question. */
static void *answer_question(void *arg)
{
    int q = -1, a;
    (void) arg;
    MPI_Recv(&q, 1, MPI_INT, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    a = q + 1;
    MPI_Send(&a, 1, MPI_INT, partner, 2, MPI_COMM_WORLD);
    return NULL;
}

static int query_fn(void *extra, MPI_Status *st)
{
    (void) extra;
    MPI_Status_set_elements(st, MPI_BYTE, 0);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int free_fn(void *extra)
{
    *(int *) extra += 1;
    return MPI_SUCCESS;
}
static int cancel_fn(void *extra, int complete)
{
    (void) extra;
    (void) complete;
    return MPI_SUCCESS;
}

static MPI_Request greq;
static void *complete_later(void *arg)
{
    (void) arg;
    usleep(20000);
    MPI_Grequest_complete(greq);
    return NULL;
}

static int is_main = -1;
static void *ask_main(void *arg)
{
    (void) arg;
    MPI_Is_thread_main(&is_main);
    return NULL;
}

static void *send_three(void *arg)
{
    int i, v;
    (void) arg;
    for (i = 0; i < 3; i++) {
        usleep(5000);
        v = 100 + i;
        MPI_Send(&v, 1, MPI_INT, mt_rank, 10 + i, MPI_COMM_WORLD);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, freed = 0, q = 41, i, idx, outcount, got[3], indices[3], rc, p2, cls;
    pthread_t a, b;
    MPI_Request reqs[3];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    partner = (mt_rank ^ 1) < mt_size ? (mt_rank ^ 1) : mt_rank;

    /* 1. A thread blocked in Recv must not stop the send that leads to its answer.
     * Alone, the rank plays both parts (MPICH 4.0.2 ch4:ucx hangs there: oxmpi only). */
    if (partner == mt_rank && !MT_OXMPI) {
        answer = q + 1;
    } else if (mt_rank <= partner) {
        pthread_create(&a, NULL, wait_answer, NULL);
        if (partner == mt_rank)
            pthread_create(&b, NULL, answer_question, NULL);
        usleep(30000); /* the waiter is blocked by now */
        MPI_Send(&q, 1, MPI_INT, partner, 1, MPI_COMM_WORLD);
        pthread_join(a, NULL);
        if (partner == mt_rank)
            pthread_join(b, NULL);
        CHECK(answer == q + 1, "answer %d, expected %d", answer, q + 1);
    } else {
        answer_question(NULL);
    }

    /* 2. MPI_Wait on a generalized request completed by another thread. */
    MPI_CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &freed, &greq));
    pthread_create(&a, NULL, complete_later, NULL);
    MPI_CHECK(MPI_Wait(&greq, MPI_STATUS_IGNORE));
    pthread_join(a, NULL);
    CHECK(greq == MPI_REQUEST_NULL && freed == 1, "grequest not collected (freed %d)", freed);

    /* 3. Waitany and Waitsome on receives another thread satisfies. */
    for (i = 0; i < 3; i++)
        MPI_Irecv(&got[i], 1, MPI_INT, mt_rank, 10 + i, MPI_COMM_WORLD, &reqs[i]);
    pthread_create(&a, NULL, send_three, NULL);
    MPI_CHECK(MPI_Waitany(3, reqs, &idx, MPI_STATUS_IGNORE));
    CHECK(idx >= 0 && idx < 3 && reqs[idx] == MPI_REQUEST_NULL, "Waitany index %d", idx);
    for (i = 0; i < 2;) {
        MPI_CHECK(MPI_Waitsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
        CHECK(outcount >= 1 && outcount != MPI_UNDEFINED, "Waitsome outcount %d", outcount);
        if (outcount < 1)
            break;
        i += outcount;
    }
    MPI_CHECK(MPI_Waitsome(3, reqs, &outcount, indices, MPI_STATUSES_IGNORE));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome with nothing active gave %d", outcount);
    pthread_join(a, NULL);
    for (i = 0; i < 3; i++)
        CHECK(got[i] == 100 + i, "message %d is %d", i, got[i]);

    /* 4. Only the thread that initialised is the main thread. */
    pthread_create(&a, NULL, ask_main, NULL);
    pthread_join(a, NULL);
    CHECK(is_main == 0, "MPI_Is_thread_main on another thread gave %d", is_main);

    /* 5. Bad input: MPI_Init_thread again with an invalid level. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Init_thread(&argc, &argv, 17, &p2);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS, "MPI_Init_thread with level 17 succeeded");
    CHECK_STRICT(cls == MPI_ERR_ARG, "MPI_Init_thread(level 17) class %d, expected MPI_ERR_ARG", cls);
    return mt_finalize();
}
