/* The C half of f_attr_lang.f90: reads and sets attributes with the C routines. Every
 * argument comes by reference from Fortran. */
#include <stddef.h>
#include <mpi.h>

void c_read_comm_aint_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag);
void c_read_comm_int_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Fint *value, MPI_Fint *flag);
void c_read_comm_ptr_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag);
void c_read_type_aint_(MPI_Fint *ftype, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag);
void c_set_comm_ptr_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Aint *value);
void c_create_keyval_(MPI_Fint *keyval);
void c_deleted_(MPI_Aint *last, MPI_Fint *count);

/* MPI_Comm_get_attr: a value set from Fortran comes as a pointer to the integer. */
void c_read_comm_aint_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag)
{
    MPI_Aint *p = NULL;
    int f = 0;
    MPI_Comm_get_attr(MPI_Comm_f2c(*fcomm), *keyval, &p, &f);
    *flag = f;
    if (f)
        *value = *p;
}

/* MPI_Attr_get of an INTEGER attribute: a pointer to an int. */
void c_read_comm_int_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Fint *value, MPI_Fint *flag)
{
    int *p = NULL;
    int f = 0;
    MPI_Attr_get(MPI_Comm_f2c(*fcomm), *keyval, &p, &f);
    *flag = f;
    if (f)
        *value = *p;
}

/* The pointer itself, for values set from C. */
void c_read_comm_ptr_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag)
{
    void *p = NULL;
    int f = 0;
    MPI_Comm_get_attr(MPI_Comm_f2c(*fcomm), *keyval, &p, &f);
    *flag = f;
    if (f)
        *value = (MPI_Aint) p;
}

void c_read_type_aint_(MPI_Fint *ftype, MPI_Fint *keyval, MPI_Aint *value, MPI_Fint *flag)
{
    MPI_Aint *p = NULL;
    int f = 0;
    MPI_Type_get_attr(MPI_Type_f2c(*ftype), *keyval, &p, &f);
    *flag = f;
    if (f)
        *value = *p;
}

void c_set_comm_ptr_(MPI_Fint *fcomm, MPI_Fint *keyval, MPI_Aint *value)
{
    MPI_Comm_set_attr(MPI_Comm_f2c(*fcomm), *keyval, (void *) *value);
}

static MPI_Aint last_deleted;
static int ndeleted;

/* Callbacks of a C keyval used on values set from Fortran: both are given a pointer to the
 * integer; the copy is one more. */
static int copy_plus_one(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    *(void **) out = (void *) (*(MPI_Aint *) in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int record_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    last_deleted = *(MPI_Aint *) val;
    ndeleted++;
    return MPI_SUCCESS;
}

void c_create_keyval_(MPI_Fint *keyval)
{
    int k;
    MPI_Comm_create_keyval(copy_plus_one, record_delete, &k, NULL);
    *keyval = k;
}

void c_deleted_(MPI_Aint *last, MPI_Fint *count)
{
    *last = last_deleted;
    *count = ndeleted;
}
