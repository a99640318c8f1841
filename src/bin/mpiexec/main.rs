//! `mpiexec` (also installed as `mpirun`): starts the ranks of a job on this node, serves
//! PMI-1 to them, forwards their output and reports how each one ended.

mod capacity;
mod job;
mod options;
mod output;
mod placement;
mod signals;

use std::process::ExitCode;

use options::{ParseOutcome, USAGE};

/// A bound on the size of a job across hosts, so a mistyped count is an error message.
const MAX_RANKS: u64 = 1 << 20;

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
    // Proxies whenever a named host is another machine (or `-launcher fork` asks for them);
    // with no host, or only this machine's names, mpiexec forks the ranks itself.
    let use_proxies = !options.hosts.iter().all(|h| placement::is_local(&h.name))
        || options.launcher == options::Launcher::Fork && !options.hosts.is_empty();
    let ranks = options.ranks() as u64;
    // Checked before the placement is computed, which takes memory per rank. Each proxy
    // checks its own host's share.
    if !use_proxies
        && let Some(problem) = capacity::problem(ranks, &capacity::this_machine(), capacity::shm_segment_bytes)
    {
        eprintln!("mpiexec: {problem}");
        return ExitCode::from(1);
    }
    if ranks > MAX_RANKS {
        eprintln!("mpiexec: cannot start {ranks} ranks: at most {MAX_RANKS} per job");
        return ExitCode::from(1);
    }
    let placement = placement::place(&options.hosts, options.ppn, options.ranks());
    if options.print_rank_map {
        println!("{}", placement.rank_map());
    }
    if use_proxies {
        eprintln!("mpiexec: ranks on other hosts are not supported yet (this build starts ranks on this machine only)");
        return ExitCode::from(2);
    }
    capacity::raise_open_files(ranks);
    let signals = match signals::SignalPipe::install() {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("mpiexec: cannot install signal handlers: {error}");
            return ExitCode::from(1);
        }
    };
    let job = job::Job::new(options, placement.process_mapping(), signals);
    log::debug!("job {}", job.kvsname());
    let code = job.run();
    ExitCode::from(code.clamp(0, 255) as u8)
}
