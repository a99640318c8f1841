//! `oxmpi-info`: prints the version and every `OXMPI_*` tunable with its value and where the
//! value comes from (environment or default).

use oxmpi::config::{TUNABLES, Tunable};

fn main() {
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
        Ok((offers, chosen)) => {
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
        }
        Err(why) => println!("network: unavailable: {why}"),
    }
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
