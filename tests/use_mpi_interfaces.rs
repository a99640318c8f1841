//! The `use mpi` module (include/mpi.f90) declares explicit interfaces: gfortran compiles it,
//! accepts the calls MPI programs make (MPI_STATUS(ES)_IGNORE, MPI_UNWEIGHTED, CHARACTER and
//! LOGICAL arguments; routines with choice buffers, left implicit, with scalars for
//! MPI_IN_PLACE's counts; a profiling wrapper of its own `mpi_send`), and refuses calls with
//! a wrong number, type or kind of arguments, as the standard's `use mpi` lets compilers do.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles the module into a fresh directory; returns it.
fn module_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("oxmpi-use-mpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("gfortran")
        .current_dir(&dir)
        .args(["-c", "-I"])
        .arg(root.join("include"))
        .arg(root.join("include/mpi.f90"))
        .output()
        .expect("gfortran runs (the Fortran bindings need it: apt-get install gfortran)");
    assert!(out.status.success(), "mpi.f90 does not compile: {}", String::from_utf8_lossy(&out.stderr));
    dir
}

/// A profiling wrapper, as programs write them: their own `mpi_send` over `pmpi_send`, in a
/// unit that uses the module.
const PROFILER: &str = "subroutine mpi_send(buf, count, datatype, dest, tag, comm, ierror)\n  use mpi\n  \
                        integer :: buf(*), count, datatype, dest, tag, comm, ierror\n  \
                        call pmpi_send(buf, count, datatype, dest, tag, comm, ierror)\nend subroutine mpi_send\n";

/// Checks `body` (statements after the declarations below) in a program that uses the module:
/// the compiler's status and its messages.
fn compile(dir: &Path, name: &str, body: &str) -> (bool, String) {
    let source = format!(
        "program {name}\n  use mpi\n  implicit none\n  integer :: ierr, req(2), rank, n, ibuf(4), iscalar\n  \
         integer :: status(MPI_STATUS_SIZE), edges(1)\n  real(kind=8) :: dbuf(3,3), dscalar\n  \
         character(len=MPI_MAX_OBJECT_NAME) :: cname\n  logical :: flag\n  \
         integer(kind=MPI_OFFSET_KIND) :: offset\n  integer :: comm\n{body}\nend program {name}\n"
    );
    let path = dir.join(format!("{name}.f90"));
    std::fs::write(&path, source).unwrap();
    // As mpifort compiles (gfortran >= 10 otherwise refuses implicit calls whose arguments
    // differ between calls, as buffers of different types do).
    let out = Command::new("gfortran")
        .current_dir(dir)
        .args(["-fsyntax-only", "-fallow-argument-mismatch", "-I."])
        .arg(&path)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn use_mpi_checks_arguments() {
    let dir = module_dir();
    let (ok, errors) = compile(
        &dir,
        "good",
        "  call MPI_Init(ierr)\n  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)\n  \
         call MPI_Send(ibuf, 4, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, ierr)\n  \
         call MPI_Send(iscalar, 1, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, ierr)\n  \
         call MPI_Recv(dbuf, 9, MPI_DOUBLE_PRECISION, 0, 0, MPI_COMM_WORLD, status, ierr)\n  \
         call MPI_Recv(dscalar, 1, MPI_DOUBLE_PRECISION, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)\n  \
         call MPI_Allreduce(MPI_IN_PLACE, dbuf(1,2), 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)\n  \
         call MPI_Irecv(ibuf, 4, MPI_INTEGER, 0, 0, MPI_COMM_WORLD, req(1), ierr)\n  \
         call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)\n  \
         call MPI_Iprobe(0, 0, MPI_COMM_WORLD, flag, status, ierr)\n  \
         call MPI_Comm_get_name(MPI_COMM_WORLD, cname, n, ierr)\n  \
         call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, edges, MPI_UNWEIGHTED, 1, edges, &\n    \
         MPI_UNWEIGHTED, MPI_INFO_NULL, .false., comm, ierr)\n  \
         call MPI_File_seek(comm, offset, MPI_SEEK_SET, ierr)\n  \
         call MPI_Alltoallv(MPI_IN_PLACE, 0, 0, MPI_DATATYPE_NULL, ibuf, req, req, MPI_INTEGER, &\n    \
         MPI_COMM_WORLD, ierr)\n  call MPI_Finalize(ierr)",
    );
    assert!(ok, "a correct program was refused:\n{errors}");
    std::fs::write(dir.join("profiler.f90"), PROFILER).unwrap();
    let out =
        Command::new("gfortran").current_dir(&dir).args(["-fsyntax-only", "-I.", "profiler.f90"]).output().unwrap();
    assert!(out.status.success(), "a profiling wrapper was refused: {}", String::from_utf8_lossy(&out.stderr));
    for (name, call, complaint) in [
        ("no_ierror", "call MPI_Comm_size(MPI_COMM_WORLD, n)", "ierror"),
        ("real_color", "call MPI_Comm_split(MPI_COMM_WORLD, 1.0, 0, comm, ierr)", "color"),
        ("integer_flag", "call MPI_Iprobe(0, 0, MPI_COMM_WORLD, n, status, ierr)", "flag"),
        ("default_kind_offset", "call MPI_File_seek(comm, n, MPI_SEEK_SET, ierr)", "offset"),
        ("extra_argument", "call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr, n)", "MPI_Comm_rank"),
    ] {
        let (ok, errors) = compile(&dir, name, &format!("  {call}"));
        assert!(!ok, "{name}: the compiler accepted `{call}`");
        assert!(errors.to_lowercase().contains(&complaint.to_lowercase()), "{name}: {errors}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
