//! Process-wide MPI state: initialisation, the world, and job abort.

use std::ffi::c_int;

/// This process's rank in MPI_COMM_WORLD, once MPI is initialised.
pub fn world_rank() -> Option<c_int> {
    None
}

/// Ends the whole job: tells the process manager, then exits with `code`.
pub fn abort_job(code: c_int, msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(if code == 0 { 1 } else { code })
}
