//! `oxmpi-info`: prints the version and every `OXMPI_*` tunable with its value and where the
//! value comes from (environment or default).

use oxmpi::config::{TUNABLES, Tunable};

fn main() {
    // Output into a closed pipe (`oxmpi-info | head`) ends the program quietly, as it does
    // C tools, instead of a panic in println!.
    // SAFETY: restores the default action of one signal; no handler of ours is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    println!("oxmpi {}", env!("CARGO_PKG_VERSION"));
    // MPI_Init_thread provides the level asked for, up to this one.
    println!("thread support: MPI_THREAD_MULTIPLE");
    println!("tunables:");
    let mut invalid = 0;
    for tunable @ Tunable { name, default, what, kind } in TUNABLES {
        let range = kind.range();
        match std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()) {
            Some(value) => match oxmpi::config::check(tunable, &value) {
                Ok(()) => println!("  {name}={value} (environment; default {default}; {range}) - {what}"),
                Err(_) => {
                    invalid += 1;
                    println!("  {name}={value} (environment; INVALID, MPI_Init will fail: allowed {range}) - {what}");
                }
            },
            None => println!("  {name}={default} (default; {range}) - {what}"),
        }
    }
    // What a job spanning nodes would use (libfabric is only loaded here and by such jobs).
    match oxmpi::transport::net::describe() {
        Ok(oxmpi::transport::net::Description { offers, chosen, rma }) => {
            println!("network (libfabric providers and domains offering reliable tagged endpoints):");
            for c in &offers {
                let mark = match chosen.iter().position(|r| r == c) {
                    Some(0) => "  <- used by jobs that span nodes".to_string(),
                    Some(rail) => format!("  <- rail {rail}"),
                    None => String::new(),
                };
                println!("  {} on {}{mark}", c.provider, c.domain);
            }
            if chosen.is_empty() {
                println!("  none usable: jobs that span nodes cannot start");
            }
            // Each is on by default where the NIC does RMA; the tunable decides otherwise.
            let switch = |name: &str, native: bool| match oxmpi::config::switch_var(name) {
                Some(true) => format!("on ({name}=1)"),
                Some(false) => format!("off ({name}=0)"),
                None if native => "on".to_string(),
                None => format!("off by default over sockets ({name}=1 turns it on)"),
            };
            match rma {
                Some(native) => println!(
                    "  RMA {}: rendezvous by RDMA read {}; RDMA eager rings {}; one-sided Put and Get by RDMA {}",
                    if native { "in the NIC" } else { "emulated over sockets" },
                    switch(oxmpi::config::NET_RNDV_READ, native),
                    switch(oxmpi::config::NET_EAGER_RDMA, native),
                    switch(oxmpi::config::NET_RDMA_RMA, true)
                ),
                None if !chosen.is_empty() => println!(
                    "  no RMA: rendezvous by tagged messages, no RDMA eager rings, one-sided operations by messages"
                ),
                None => {}
            }
        }
        Err(why) => println!("network: unavailable: {why}"),
    }
    println!("one-sided communication: {}", one_sided_paths());
    let mut unknown: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| name.starts_with("OXMPI_") && !TUNABLES.iter().any(|t| t.name == name))
        .collect();
    unknown.sort();
    for (name, value) in unknown {
        println!("  {name}={value} (environment; not a known tunable)");
    }
    if invalid > 0 {
        eprintln!("oxmpi-info: {invalid} tunable(s) set to values MPI_Init refuses (marked INVALID)");
        std::process::exit(1);
    }
}

/// How windows reach their targets in a job started now (docs/user-guide.md, "One-sided
/// communication").
fn one_sided_paths() -> String {
    let cma_off = std::env::var(oxmpi::config::CMA).is_ok_and(|v| v.trim() == "0");
    // Ranks allow each other as tracers (PR_SET_PTRACER), which Yama's scope 1 honours;
    // scope 2 and 3 refuse single copy between them.
    let scope =
        std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok().and_then(|s| s.trim().parse::<u32>().ok());
    let same_node = match (cma_off, scope) {
        (true, _) => "by messages the target's progress engine applies (OXMPI_CMA=0)".to_string(),
        (false, Some(s)) if s >= 2 => {
            format!(
                "by messages the target's progress engine applies (kernel.yama.ptrace_scope={s} refuses single copy)"
            )
        }
        _ => "by single copy (process_vm_readv/writev), nothing needed from the target".to_string(),
    };
    let thread = if std::env::var(oxmpi::config::ASYNC_PROGRESS).is_ok_and(|v| v.trim() == "1") {
        "on (OXMPI_ASYNC_PROGRESS=1): requests are applied while targets compute"
    } else {
        "off: requests wait until the target calls MPI (OXMPI_ASYNC_PROGRESS=1 starts one)"
    };
    format!(
        "windows of MPI-allocated memory on the same node by shared memory; windows over the program's memory on the same node {same_node}; targets on other nodes: Put and Get of contiguous target data by RDMA where the network does RMA (OXMPI_NET_RDMA_RMA), the rest by messages their progress engine applies; progress thread {thread}"
    )
}
