/* A performance variable of class counter, read through the tools interface from the moment
   it is started: for tests that check which protocol moved their messages. Failures count
   as test errors (mtest.h's MPI_CHECK). */
#ifndef OXMPI_PVAR_COUNTER_H
#define OXMPI_PVAR_COUNTER_H

#include "mtest.h"

typedef struct {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
} mt_counter;

/* Initialises the tools interface and starts counter `name`. */
static inline void mt_counter_start(mt_counter *c, const char *name)
{
    int provided, index = -1, count;
    c->session = MPI_T_PVAR_SESSION_NULL;
    c->handle = MPI_T_PVAR_HANDLE_NULL;
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_CHECK(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index));
    MPI_CHECK(MPI_T_pvar_session_create(&c->session));
    MPI_CHECK(MPI_T_pvar_handle_alloc(c->session, index, NULL, &c->handle, &count));
    MPI_CHECK(MPI_T_pvar_start(c->session, c->handle));
}

static inline unsigned long long mt_counter_read(mt_counter *c)
{
    unsigned long long v = 0;
    MPI_CHECK(MPI_T_pvar_read(c->session, c->handle, &v));
    return v;
}

/* Frees the counter and finalizes the tools interface. */
static inline void mt_counter_end(mt_counter *c)
{
    MPI_CHECK(MPI_T_pvar_handle_free(c->session, &c->handle));
    MPI_CHECK(MPI_T_pvar_session_free(&c->session));
    MPI_CHECK(MPI_T_finalize());
}

#endif
