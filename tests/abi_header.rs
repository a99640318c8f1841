//! The committed include/mpi.h is the one build.rs generates, and it compiles as strict C99
//! and as C++; include/mpif.h likewise, with gfortran in fixed and free source form.

use std::path::Path;
use std::process::Command;

const BLESS: &str = "include/ is stale: run OXMPI_BLESS_HEADERS=1 cargo build and commit include/";

#[test]
fn committed_headers_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (committed, generated) in [
        ("include/mpi.h", concat!(env!("OUT_DIR"), "/mpi.h")),
        ("include/mpio.h", concat!(env!("OUT_DIR"), "/mpio.h")),
        ("include/mpif.h", concat!(env!("OUT_DIR"), "/mpif.h")),
        ("include/mpi.f90", concat!(env!("OUT_DIR"), "/mpi.f90")),
        ("include/mpi_f08.f90", concat!(env!("OUT_DIR"), "/mpi_f08.f90")),
    ] {
        let a = std::fs::read_to_string(root.join(committed)).unwrap_or_else(|e| panic!("{committed}: {e}; {BLESS}"));
        let b = std::fs::read_to_string(generated).unwrap();
        assert!(a == b, "{committed} differs from the generated header; {BLESS}");
    }
}

/// A program that touches the header's types, constants, macros and prototypes.
const PROGRAM: &str = r#"
#include <mpi.h>
#include <mpio.h>
#include <stddef.h>

static void on_error(MPI_Comm *comm, int *code, ...) { (void)comm; (void)code; }

int main(int argc, char **argv)
{
    MPI_Status status;
    MPI_Errhandler eh;
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_File fh = MPI_FILE_NULL;
    MPI_Aint a = MPI_Aint_add(0, 8);
    int keyval, flag = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;
    double t = MPI_Wtime();

    (void)t; (void)fh; (void)a;
    MPI_Init(&argc, &argv);
    MPI_Comm_create_errhandler(on_error, &eh);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL);
    MPI_Send(MPI_BOTTOM, 0, MPI_INT, 0, MPI_ANY_TAG, comm);
    MPI_Recv(NULL, 0, MPI_DOUBLE_INT, MPI_ANY_SOURCE, 0, comm, &status);
    MPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_SUM, comm);
    /* Not MPI_STATUSES_IGNORE: gcc flags that sentinel for array parameters, with MPICH too. */
    MPI_Waitall(0, NULL, &status);
    MPI_Get_processor_name(name, &len);
    MPI_Pcontrol(1, "x");
    MPI_Dist_graph_create_adjacent(comm, 0, NULL, MPI_UNWEIGHTED, 0, NULL, MPI_WEIGHTS_EMPTY,
                                   MPI_INFO_NULL, 0, &comm);
    MPI_File_open(comm, "f", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    PMPI_Barrier(MPI_Comm_f2c(MPI_Comm_c2f(comm)));
    MPI_Finalize();
    return status.MPI_SOURCE + (int)sizeof(MPI_Status) - 20;
}
"#;

fn compile(compiler: &str, args: &[&str], ext: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("abi_header_{compiler}"));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("use_mpi.{ext}"));
    std::fs::write(&src, PROGRAM).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let out = Command::new(compiler)
        .args(args)
        .arg("-I")
        .arg(&include)
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.join("use_mpi.o"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(out.status.success(), "{compiler} {args:?} rejected mpi.h:\n{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn header_compiles_as_strict_c99() {
    compile("gcc", &["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"], "c");
}

#[test]
fn header_compiles_as_cxx() {
    compile("g++", &["-Wall", "-Wextra", "-Werror"], "cpp");
}

/// A fixed-form Fortran program that uses mpif.h's constants, sentinels and functions.
const FORTRAN: &str = "      program use_mpif
      implicit none
      include 'mpif.h'
      integer ierr, status(MPI_STATUS_SIZE), x
      integer (kind=MPI_ADDRESS_KIND) tag_ub
      logical flag
      double precision t
      call mpi_init(ierr)
      t = MPI_WTIME() + PMPI_WTICK()
      call mpi_allreduce(MPI_IN_PLACE, x, 1, MPI_INTEGER, MPI_SUM,
     &     MPI_COMM_WORLD, ierr)
      call mpi_recv(x, 1, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG,
     &     MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call mpi_waitall(0, x, MPI_STATUSES_IGNORE, ierr)
      call mpi_comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag,
     &     ierr)
      x = status(MPI_SOURCE) + status(MPI_TAG) + status(MPI_ERROR)
      call mpi_send(MPI_BOTTOM, 0, MPI_DOUBLE_PRECISION, 0, 0,
     &     MPI_COMM_WORLD, ierr)
      call mpi_finalize(ierr)
      end
";

fn compile_fortran(name: &str, args: &[&str], source: &str) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("abi_header_gfortran");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(name);
    std::fs::write(&src, source).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let out = Command::new("gfortran")
        .args(args)
        .arg("-I")
        .arg(&include)
        .arg("-J")
        .arg(&dir)
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{name}.o")))
        .output()
        .unwrap_or_else(|e| panic!("cannot run gfortran: {e}"));
    assert!(out.status.success(), "gfortran {args:?} rejected {name}:\n{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn mpif_h_compiles_as_fixed_form() {
    compile_fortran(
        "use_mpif.f",
        &["-ffixed-form", "-std=legacy", "-Wall", "-Werror", "-Wno-unused-variable"],
        FORTRAN,
    );
}

#[test]
fn mpif_h_compiles_as_free_form() {
    // Free form: the same statements, with `&` continuations at the end of the line.
    let free = FORTRAN.replace(",\n     &", ", &\n     &");
    compile_fortran("use_mpif.f90", &["-ffree-form", "-Wall", "-Werror", "-Wno-unused-variable"], &free);
}

#[test]
fn mpi_module_compiles() {
    let module = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mpi.f90")).unwrap();
    compile_fortran("mpi.f90", &["-Wall", "-Werror"], &module);
}

#[test]
fn mpi_f08_module_compiles() {
    let module = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mpi_f08.f90")).unwrap();
    // -Wall without -Werror: gfortran notes that the handles' default INTEGER MPI_VAL "may not
    // be C interoperable" in a BIND(C) type, which the standard's definition of them implies.
    compile_fortran("mpi_f08.f90", &["-Wall", "-fPIC"], &module);
}
