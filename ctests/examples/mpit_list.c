/* oxmpi-test: np=1 expect-stdout="OXMPI_EAGER_LIMIT" expect-stdout="shm_messages_sent" expect-stdout="category point_to_point" expect-stdout="self_messages_sent                   counted    = 3" */
/* mpit_list: a small tool that prints every variable of the MPI tools interface (MPI_T):
 * control variables with their values, performance variables with their values after a
 * few messages, and the categories. MPI_T works before MPI_Init and after MPI_Finalize;
 * this one reads the control variables first, then the counters while MPI runs.
 *
 *   mpicc mpit_list.c -o mpit_list && mpiexec -n 1 ./mpit_list
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static const char *type_name(MPI_Datatype t)
{
    return t == MPI_INT ? "int" : t == MPI_UNSIGNED_LONG_LONG ? "unsigned long long" : t == MPI_CHAR ? "char" : "?";
}

int main(int argc, char **argv)
{
    int provided, n, i;
    char name[256], desc[1024];

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_T_cvar_get_num(&n);
    printf("%d control variables\n", n);
    for (i = 0; i < n; i++) {
        int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope, count;
        MPI_Datatype t;
        MPI_T_enum e;
        MPI_T_cvar_handle h;
        MPI_T_cvar_get_info(i, name, &nlen, &verb, &t, &e, desc, &dlen, &bind, &scope);
        MPI_T_cvar_handle_alloc(i, NULL, &h, &count);
        printf("  %-36s %-18s = ", name, type_name(t));
        if (t == MPI_CHAR) {
            char *v = malloc(count);
            MPI_T_cvar_read(h, v);
            printf("\"%s\"\n", v);
            free(v);
        } else if (t == MPI_INT) {
            int v;
            MPI_T_cvar_read(h, &v);
            printf("%d\n", v);
        } else {
            unsigned long long v;
            MPI_T_cvar_read(h, &v);
            printf("%llu\n", v);
        }
        MPI_T_cvar_handle_free(&h);
    }

    /* Handles for every performance variable, started (the continuous ones always are),
     * then a few messages to itself. */
    MPI_T_pvar_session s;
    MPI_T_pvar_session_create(&s);
    MPI_T_pvar_get_num(&n);
    MPI_T_pvar_handle *h = malloc(sizeof *h * n);
    for (i = 0; i < n; i++) {
        int count;
        MPI_T_pvar_handle_alloc(s, i, NULL, &h[i], &count);
    }
    MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES);

    MPI_Init(&argc, &argv);
    int rank, x[3] = {0, 0, 0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Request r[3];
    for (i = 0; i < 3; i++)
        MPI_Isend(&x[i], 1, MPI_INT, rank, i, MPI_COMM_WORLD, &r[i]);
    for (i = 2; i >= 0; i--)
        MPI_Recv(&x[i], 1, MPI_INT, rank, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);

    printf("%d performance variables\n", n);
    for (i = 0; i < n; i++) {
        int nlen = sizeof name, dlen = sizeof desc, verb, cls, bind, ro, cont, atomic;
        MPI_Datatype t;
        MPI_T_enum e;
        unsigned long long v = 0;
        MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &t, &e, desc, &dlen, &bind, &ro, &cont, &atomic);
        MPI_T_pvar_read(s, h[i], &v);
        printf("  %-36s %-10s = %llu: %s\n", name, cont ? "continuous" : "counted", v, desc);
        MPI_T_pvar_handle_free(s, &h[i]);
    }
    MPI_T_pvar_session_free(&s);
    free(h);

    MPI_T_category_get_num(&n);
    for (i = 0; i < n; i++) {
        int nlen = sizeof name, dlen = sizeof desc, nc, np, ns;
        MPI_T_category_get_info(i, name, &nlen, desc, &dlen, &nc, &np, &ns);
        printf("category %s: %d control, %d performance variables, %d subcategories: %s\n", name, nc, np, ns, desc);
    }
    MPI_Finalize();
    MPI_T_finalize();
    printf("No Errors\n");
    return 0;
}
