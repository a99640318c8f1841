//! `mpiexec` (also installed as `mpirun`): starts the ranks of a job, serves PMI-1 to them,
//! forwards their output and reports how each one ended. On one host it forks the ranks
//! itself; across hosts it starts one proxy per host (`proxy.rs`), the same binary run as
//! `mpiexec --proxy ...`.

mod capacity;
mod job;
mod link;
mod options;
mod output;
mod placement;
mod proxy;
mod signals;
mod slurm;

use std::net::TcpListener;
use std::process::ExitCode;

use job::{Head, Job, JobSpec, ProxyState, Role};
use link::{AppSpec, StartSpec};
use options::{Launcher, Options, ParseOutcome, USAGE};
use placement::Placement;

/// A bound on the size of a job across hosts, so a mistyped count is an error message.
const MAX_RANKS: u64 = 1 << 20;

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::new().filter_or("OXMPI_LOG", "warn")).init();
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "--proxy") {
        return proxy::run(&args[1..]);
    }
    let mut options = match options::parse(args) {
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
    use oxmpi::config::{EAGER_LIMIT, LINK_TIMEOUT, RANK_SESSIONS, SHM_CELLS, SHM_SLOTS};
    if let Err(problem) =
        oxmpi::config::check_environment_of([RANK_SESSIONS, SHM_SLOTS, SHM_CELLS, EAGER_LIMIT, LINK_TIMEOUT])
    {
        eprintln!("mpiexec: {problem}");
        return ExitCode::from(1);
    }
    // Inside a Slurm allocation, no host option means the allocation's nodes, reached by srun.
    if options.hosts.is_empty()
        && let Some(allocation) = slurm::allocation(|name| std::env::var(name).ok())
    {
        match allocation {
            Ok(hosts) => options.hosts = hosts,
            Err(problem) => {
                eprintln!("mpiexec: inside a Slurm allocation, but {problem}");
                return ExitCode::from(1);
            }
        }
        if !options.launcher_given {
            options.launcher = Launcher::Slurm;
        }
    }
    // Without -n, a single program runs on every slot of the hosts (the allocation's tasks
    // inside Slurm), as under Hydra; with no hosts, one rank.
    if let [app] = &mut options.apps[..]
        && !app.ranks_given
        && !options.hosts.is_empty()
    {
        app.ranks = match options.ppn {
            Some(ppn) => ppn * options.hosts.len(),
            None => options.hosts.iter().map(|h| h.slots.unwrap_or(1)).sum(),
        };
    }
    // Proxies whenever a named host is another machine (or `-launcher fork` asks for them);
    // with no host, or only this machine's names, mpiexec forks the ranks itself.
    let use_proxies = !options.hosts.iter().all(|h| placement::is_local(&h.name))
        || options.launcher == Launcher::Fork && !options.hosts.is_empty();
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
    let signals = match signals::SignalPipe::install() {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("mpiexec: cannot install signal handlers: {error}");
            return ExitCode::from(1);
        }
    };
    let job = if use_proxies {
        match across_hosts(&options, &placement, signals) {
            Ok(job) => job,
            Err(message) => {
                eprintln!("mpiexec: {message}");
                return ExitCode::from(1);
            }
        }
    } else {
        capacity::raise_open_files(ranks);
        Job::new(job_spec(&options, &placement, true), Role::Local, signals)
    };
    log::debug!("job {}", job.kvsname());
    let code = job.run();
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// The job as mpiexec runs it; `local`: it forks every rank itself.
fn job_spec(options: &Options, placement: &Placement, local: bool) -> JobSpec {
    let app_of_rank = options.app_of_rank();
    let apps = (0..options.apps.len())
        .map(|index| {
            let app = &options.apps[index];
            AppSpec { program: app.program.clone(), args: app.args.clone(), env: options.env_of(index) }
        })
        .collect();
    JobSpec {
        kvsname: job::new_kvsname(),
        size: app_of_rank.len(),
        process_mapping: placement.process_mapping(),
        apps,
        ranks: if local { app_of_rank.iter().copied().enumerate().collect() } else { Vec::new() },
        app_of_rank,
        tag_output: options.tag_output,
        timeout: options.timeout,
        auto_cleanup: options.auto_cleanup,
        base_env: None,
        universe_size: universe_size(options),
    }
}

/// MPI_UNIVERSE_SIZE: `-usize`; else the hosts' slots (a host without a count is one slot;
/// inside a Slurm allocation the hosts are its nodes with their task counts), never fewer
/// than the ranks started; else, on this machine alone, unset, as under Hydra: mpiexec
/// starts any number of processes here (ranks beyond the cores share them).
fn universe_size(options: &Options) -> Option<usize> {
    if let Some(n) = options.universe_size {
        return Some(n);
    }
    if options.hosts.is_empty() {
        return None;
    }
    let slots: usize = match options.ppn {
        Some(ppn) => ppn * options.hosts.len(),
        None => options.hosts.iter().map(|h| h.slots.unwrap_or(1)).sum(),
    };
    Some(slots.max(options.ranks()))
}

/// mpiexec with one proxy per host: listens for them and prepares what each is sent.
fn across_hosts(options: &Options, placement: &Placement, signals: signals::SignalPipe) -> Result<Job, String> {
    let fork = options.launcher == Launcher::Fork;
    let first_remote = placement.hosts.iter().find(|h| !placement::is_local(h)).map(String::as_str);
    let host = proxy::contact_host(options.iface.as_deref(), fork, first_remote)?;
    let listener = TcpListener::bind(("0.0.0.0", 0)).map_err(|e| format!("cannot listen for proxies: {e}"))?;
    let port = listener.local_addr().map_err(|e| format!("cannot listen for proxies: {e}"))?.port();
    let address = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let launcher = match (fork, &options.launcher_exec) {
        (true, _) => None,
        (false, Some(command)) => Some(command.split_whitespace().map(String::from).collect()),
        (false, None) => Some(match options.launcher {
            Launcher::Slurm => slurm::launcher_words(),
            Launcher::Rsh => vec!["rsh".to_string()],
            _ => vec!["ssh".to_string()],
        }),
    };
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the mpiexec binary to start proxies: {e}"))?;
    let launch = proxy::Launch { launcher, exe, address, token: oxmpi::pmi::random_hex() };
    let spec = job_spec(options, placement, false);
    let proxies: Vec<ProxyState> = placement
        .ranks_of_host()
        .into_iter()
        .zip(&placement.hosts)
        .filter(|(ranks, _)| !ranks.is_empty())
        .map(|(ranks, host)| ProxyState {
            host: host.clone(),
            ranks,
            launcher_pid: 0,
            launcher_reaped: false,
            link: None,
            started: false,
            in_barrier: false,
        })
        .collect();
    capacity::raise_open_files(proxies.len() as u64);
    let host_of_rank = placement.node_of_rank.iter().map(|&node| placement.hosts[node].clone()).collect();
    let start = StartSpec {
        kvsname: spec.kvsname.clone(),
        size: spec.size as u32,
        process_mapping: spec.process_mapping.clone(),
        tag_output: spec.tag_output,
        cwd: std::env::current_dir().map(Into::into).unwrap_or_default(),
        env: proxy::exported_environment(),
        apps: spec.apps.clone(),
        ranks: Vec::new(),
        universe_size: spec.universe_size.map_or(0, |n| n as u32),
    };
    let head = Head::new(listener, launch, proxies, host_of_rank, start);
    Ok(Job::new(spec, Role::Head(Box::new(head)), signals))
}
