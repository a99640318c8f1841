//! The committed include/mpi.h is the one build.rs generates, and it compiles as strict C99
//! and as C++.

use std::path::Path;
use std::process::Command;

const BLESS: &str = "include/ is stale: run OXMPI_BLESS_HEADERS=1 cargo build and commit include/";

#[test]
fn committed_headers_are_current() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (committed, generated) in
        [("include/mpi.h", concat!(env!("OUT_DIR"), "/mpi.h")), ("include/mpio.h", concat!(env!("OUT_DIR"), "/mpio.h"))]
    {
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
