//! `mpiexec` (also installed as `mpirun`): starts the ranks of a job on this node, serves
//! PMI-1 to them, forwards their output and reports how each one ended.

mod capacity;
mod job;
mod options;
mod output;
mod signals;

use std::process::ExitCode;

use options::{ParseOutcome, USAGE};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::new().filter_or("OXMPI_LOG", "warn")).init();
    let options = match options::parse(std::env::args_os().skip(1).collect()) {
        Ok(options) => options,
        Err(ParseOutcome::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(ParseOutcome::Version) => {
            println!("mpiexec (oxmpi) {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(ParseOutcome::Error(message)) => {
            eprintln!("mpiexec: {message} (see mpiexec --help)");
            return ExitCode::from(2);
        }
    };
    // The tunables mpiexec reads itself (the ranks check all of theirs in MPI_Init).
    use oxmpi::config::{EAGER_LIMIT, RANK_SESSIONS, SHM_SLOTS};
    if let Err(problem) = oxmpi::config::check_environment_of([RANK_SESSIONS, SHM_SLOTS, EAGER_LIMIT]) {
        eprintln!("mpiexec: {problem}");
        return ExitCode::from(1);
    }
    let ranks = options.ranks as u64;
    if let Some(problem) = capacity::problem(ranks, &capacity::this_machine(), capacity::shm_segment_bytes) {
        eprintln!("mpiexec: {problem}");
        return ExitCode::from(1);
    }
    capacity::raise_open_files(ranks);
    let signals = match signals::SignalPipe::install() {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("mpiexec: cannot install signal handlers: {error}");
            return ExitCode::from(1);
        }
    };
    let job = job::Job::new(options, signals);
    log::debug!("job {}", job.kvsname());
    let code = job.run();
    ExitCode::from(code.clamp(0, 255) as u8)
}
