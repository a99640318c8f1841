//! Command line of `mpiexec`/`mpirun`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::time::Duration;

pub const USAGE: &str = "\
usage: mpiexec [global options] [-n N] [options] program [args...] [: -n N [options] program [args...]]...

Starts N ranks of `program` (several programs separated by ':' form one MPI_COMM_WORLD, MPMD),
on this node or on several hosts, and serves PMI-1 to them.

options:
  -n N, -np N          number of ranks of this program (default 1)
  -env NAME VALUE      set an environment variable for the ranks of this program
  -env NAME=VALUE      the same
  -genv NAME VALUE     set it for the ranks of every program (also -genv NAME=VALUE)
  -l, --tag-output     prefix each output line with [rank]
  --timeout SECONDS    kill the job after SECONDS and exit with 124
  -disable-auto-cleanup  a rank that fails (killed, or exits without MPI_Finalize) does not end
                       the job: the others run on, and mpiexec's status is still non-zero
                       (MPI_Abort still ends the job)
  -hosts LIST          hosts to run on: h1,h2 (ranks round-robin, one per host) or h1:4,h2:4
                       (blocks of that many per host); wraps around when ranks outnumber slots
  -host LIST           the same
  -f FILE              hosts from a file (also -hostfile, -machinefile): lines `host`,
                       `host:N` (MPICH) or `host slots=N` (Open MPI); `#` starts a comment
  -ppn N               N consecutive ranks per host (overrides the hosts' counts)
  -launcher L          how proxies are started on other hosts: ssh (default), rsh, slurm
                       (srun; the default inside a Slurm allocation), or fork (every proxy
                       on this machine, whatever the host names)
  -launcher-exec CMD   the command that runs `CMD HOST COMMAND...` (default ssh or rsh)
  -iface NAME          the network interface whose address the proxies connect back to
  -usize N             MPI_UNIVERSE_SIZE: how many processes the job may have in all, spawned
                       ones included (default: the hosts' slots, the Slurm allocation's tasks,
                       or, on this machine alone with no hosts, unset: any number can start)
  -print-rank-map      print the host of each rank before starting
  -V, --version        print the version
  -h, --help           print this help

When every rank is placed on this machine (no host option, or hosts named localhost or this
machine's host name) mpiexec forks the ranks itself; otherwise it starts one proxy per host.
Inside a Slurm allocation (SLURM_JOB_ID set) with no host option, the hosts are the
allocation's nodes with their task counts, and proxies are started with srun.
  -configfile FILE     the programs, one per line (each with its own options, as the
                       parts between ':'), after the global options of the command line
";

/// One program of the job (MPMD: one per ':'-separated part of the command line).
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub ranks: usize,
    /// `-n` was given (without it the job takes the hosts' slots, as Hydra does).
    pub ranks_given: bool,
    /// `-env` of this part (applied after the global `-genv`).
    pub env: Vec<(OsString, OsString)>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// A host of `-hosts` or a host file, with its slot count when one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSlots {
    pub name: String,
    pub slots: Option<usize>,
}

/// How proxies are started on other hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    Ssh,
    Rsh,
    Fork,
    /// `srun` onto one node of the allocation.
    Slurm,
}

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub apps: Vec<App>,
    /// `-genv`: for every program's ranks.
    pub genv: Vec<(OsString, OsString)>,
    /// Empty: every rank on this machine.
    pub hosts: Vec<HostSlots>,
    pub ppn: Option<usize>,
    pub launcher: Launcher,
    /// `-launcher` was given (else a Slurm allocation makes the launcher `Slurm`).
    pub launcher_given: bool,
    pub launcher_exec: Option<String>,
    pub iface: Option<String>,
    pub print_rank_map: bool,
    pub tag_output: bool,
    pub timeout: Option<Duration>,
    /// A failing rank ends the job (not with `-disable-auto-cleanup`).
    pub auto_cleanup: bool,
    /// `-usize`: MPI_UNIVERSE_SIZE.
    pub universe_size: Option<usize>,
}

impl Options {
    /// The size of MPI_COMM_WORLD.
    pub fn ranks(&self) -> usize {
        self.apps.iter().map(|a| a.ranks).sum()
    }

    /// The program index (MPI_APPNUM) of each rank.
    pub fn app_of_rank(&self) -> Vec<usize> {
        self.apps.iter().enumerate().flat_map(|(index, app)| std::iter::repeat_n(index, app.ranks)).collect()
    }

    /// The environment given to ranks of `app`: `-genv` first, so `-env` wins.
    pub fn env_of(&self, app: usize) -> Vec<(OsString, OsString)> {
        self.genv.iter().chain(&self.apps[app].env).cloned().collect()
    }
}

/// How parsing ended without a job to run.
#[derive(Debug)]
pub enum ParseOutcome {
    Help,
    Version,
    Error(String),
}

/// How many separate values option `name` takes (`None`: no such option).
fn value_count(name: &str, next: Option<&OsString>) -> Option<usize> {
    match name {
        "n" | "np" | "timeout" | "hosts" | "host" | "f" | "hostfile" | "machinefile" | "ppn" | "launcher"
        | "launcher-exec" | "iface" | "usize" => Some(1),
        // `-genv NAME VALUE` or, as Hydra also accepts, `-genv NAME=VALUE`.
        "env" | "genv" => Some(if next.is_some_and(|v| v.to_string_lossy().contains('=')) { 1 } else { 2 }),
        "l"
        | "tag-output"
        | "h"
        | "help"
        | "V"
        | "version"
        | "print-rank-map"
        | "disable-auto-cleanup"
        | "enable-auto-cleanup" => Some(0),
        _ => None,
    }
}

/// MPICH spells several options with one dash and several letters (`-np`, `-genv`); lexopt
/// would read those as clustered short options (`-ppn` as `-p -p -n`), so every token in
/// option position is checked here and rewritten to `--np` etc.; one that is no option of
/// ours is refused as typed. The walk stops at the program name. `typed` records how each
/// option was spelled, for error messages.
fn normalize_single_dash_long(
    args: Vec<OsString>,
    typed: &mut HashMap<String, String>,
) -> Result<Vec<OsString>, Inner> {
    let mut out = Vec::with_capacity(args.len());
    let mut index = 0;
    while index < args.len() {
        let token = args[index].to_string_lossy().into_owned();
        index += 1;
        if token == "--" || !token.starts_with('-') || token == "-" {
            out.push(args[index - 1].clone());
            break;
        }
        let body = token.trim_start_matches('-');
        let (name, attached) = match body.split_once('=') {
            Some((name, _)) => (name, true),
            None => (body, false),
        };
        let count = match value_count(name, args.get(index)) {
            Some(count) => {
                typed.insert(name.to_string(), token.split('=').next().unwrap_or(&token).to_string());
                out.push(if token.starts_with("--") { args[index - 1].clone() } else { format!("-{token}").into() });
                if attached { 0 } else { count }
            }
            // `-n4`: the count attached to the short option.
            None if !token.starts_with("--")
                && name.len() > 1
                && name.starts_with('n')
                && name[1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                out.push(format!("--n={}", &name[1..]).into());
                0
            }
            None => return Err(Inner::Error(format!("unknown option '{token}'"))),
        };
        for _ in 0..count {
            if index < args.len() {
                out.push(args[index].clone());
                index += 1;
            }
        }
    }
    out.extend(args[index..].iter().cloned());
    Ok(out)
}

/// A count of at least 1 given to option `typed`.
fn parse_positive(text: &str, typed: &str) -> Result<usize, Inner> {
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Inner::Error(format!("'{typed}' expects a number of at least 1, got {text:?}"))),
    }
}

/// `h1,h2:4` as `-hosts` takes it.
fn parse_host_list(list: &str, typed: &str) -> Result<Vec<HostSlots>, Inner> {
    let mut hosts = Vec::new();
    for entry in list.split(',') {
        let entry = entry.trim();
        // `host:N`; an IPv6 address has several colons and no count.
        let host = match entry.rsplit_once(':') {
            Some((name, count)) if !name.contains(':') => HostSlots {
                name: name.to_string(),
                slots: Some(parse_positive(count, typed).map_err(|_| {
                    Inner::Error(format!("'{typed}': bad slot count in {entry:?} (expected host or host:N, N >= 1)"))
                })?),
            },
            _ => HostSlots { name: entry.to_string(), slots: None },
        };
        if host.name.is_empty() {
            return Err(Inner::Error(format!("'{typed}': empty host name in {list:?}")));
        }
        hosts.push(host);
    }
    Ok(hosts)
}

/// A host file: MPICH's `host` and `host:N` lines, Open MPI's `host slots=N` (other
/// `key=value` words such as `max_slots=` are ignored), `#` comments, blank lines.
pub fn parse_host_file(text: &str) -> Result<Vec<HostSlots>, String> {
    let mut hosts = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or("");
        let bad = |why: &str| format!("line {}: {why}: {line:?}", number + 1);
        let mut host = match first.rsplit_once(':') {
            Some((name, count)) if !name.contains(':') => HostSlots {
                name: name.to_string(),
                slots: Some(parse_positive(count, "").map_err(|_| bad("bad count"))?),
            },
            _ => HostSlots { name: first.to_string(), slots: None },
        };
        for word in words {
            match word.split_once('=') {
                Some(("slots", count)) => {
                    host.slots = Some(parse_positive(count, "").map_err(|_| bad("bad slots"))?);
                }
                Some(_) => {}
                None => return Err(bad("expected `host`, `host:N` or `host slots=N`")),
            }
        }
        hosts.push(host);
    }
    if hosts.is_empty() {
        return Err("names no host".into());
    }
    Ok(hosts)
}

/// Parses `args` (without the program name of mpiexec itself).
pub fn parse(args: Vec<OsString>) -> Result<Options, ParseOutcome> {
    parse_inner(args).map_err(|e| match e {
        Inner::Help => ParseOutcome::Help,
        Inner::Version => ParseOutcome::Version,
        Inner::Error(text) => ParseOutcome::Error(text),
    })
}

enum Inner {
    Help,
    Version,
    Error(String),
}

impl From<lexopt::Error> for Inner {
    fn from(error: lexopt::Error) -> Inner {
        Inner::Error(error.to_string())
    }
}

fn parse_inner(args: Vec<OsString>) -> Result<Options, Inner> {
    let mut options = Options {
        apps: Vec::new(),
        genv: Vec::new(),
        hosts: Vec::new(),
        ppn: None,
        launcher: Launcher::Ssh,
        launcher_given: false,
        launcher_exec: None,
        iface: None,
        print_rank_map: false,
        tag_output: false,
        timeout: None,
        auto_cleanup: true,
        universe_size: None,
    };
    let args = expand_configfile(args)?;
    // Hydra reads every ':' as the start of another program (MPMD).
    for part in args.split(|a| a == ":") {
        let app = parse_part(part.to_vec(), &mut options)?;
        options.apps.push(app);
    }
    Ok(options)
}

/// `-configfile FILE`, as Hydra reads it: the programs come from FILE, one MPMD part per
/// line (options and program, words separated by blanks; `#` starts a comment), after the
/// options of the command line, which then names no program itself.
fn expand_configfile(args: Vec<OsString>) -> Result<Vec<OsString>, Inner> {
    // Only in option position: the walk stops at the program's name.
    let mut at = None;
    let mut index = 0;
    while index < args.len() {
        let token = args[index].to_string_lossy();
        if !token.starts_with('-') || token == "-" || token == "--" {
            break;
        }
        let name = token.trim_start_matches('-');
        if name == "configfile" {
            at = Some(index);
            break;
        }
        let attached = name.contains('=');
        index += 1 + if attached { 0 } else { value_count(name, args.get(index + 1)).unwrap_or(0) };
    }
    let Some(at) = at else {
        return Ok(args);
    };
    let typed = args[at].to_string_lossy().into_owned();
    let Some(path) = args.get(at + 1) else {
        return Err(Inner::Error(format!("'{typed}' expects a file")));
    };
    let shown = path.to_string_lossy();
    if let Some(extra) = args.get(at + 2) {
        return Err(Inner::Error(format!(
            "'{typed}' takes the programs from {shown}; found {:?} after it",
            extra.to_string_lossy()
        )));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| Inner::Error(format!("'{typed}' {shown}: cannot read it: {e}")))?;
    let mut out: Vec<OsString> = args[..at].to_vec();
    let mut parts = 0;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        if line.trim().is_empty() {
            continue;
        }
        if parts > 0 {
            out.push(":".into());
        }
        parts += 1;
        out.extend(line.split_whitespace().map(OsString::from));
    }
    if parts == 0 {
        return Err(Inner::Error(format!("'{typed}' {shown} names no program")));
    }
    Ok(out)
}

/// One ':'-separated part: its options (global ones go into `options`) and its program.
fn parse_part(args: Vec<OsString>, options: &mut Options) -> Result<App, Inner> {
    use lexopt::prelude::*;
    let mut typed = HashMap::new();
    let mut parser = lexopt::Parser::from_args(normalize_single_dash_long(args, &mut typed)?);
    let spelled = |name: &str| typed.get(name).cloned().unwrap_or_else(|| format!("-{name}"));
    let mut app = App { ranks: 1, ranks_given: false, env: Vec::new(), program: OsString::new(), args: Vec::new() };
    let mut program = None;
    while let Some(arg) = parser.next()? {
        match arg {
            Short('n') | Long("np") | Long("n") => {
                let text = parser.value()?.string()?;
                app.ranks =
                    text.parse::<usize>().map_err(|_| Inner::Error(format!("-n expects a number, got {text:?}")))?;
                if app.ranks == 0 {
                    return Err(Inner::Error("-n must be at least 1".into()));
                }
                app.ranks_given = true;
            }
            Long(which @ ("env" | "genv")) => {
                let global = which == "genv";
                let name = parser.value()?;
                let pair = name.to_string_lossy().split_once('=').map(|(n, v)| (n.to_string(), v.to_string()));
                let (name, value) = match pair {
                    Some((name, value)) => (OsString::from(name), OsString::from(value)),
                    None => {
                        let value = parser
                            .raw_args()?
                            .next()
                            .ok_or_else(|| Inner::Error(format!("-env {} needs a value", name.to_string_lossy())))?;
                        (name, value)
                    }
                };
                if name.is_empty() {
                    return Err(Inner::Error("-env needs a variable name".into()));
                }
                if global { options.genv.push((name, value)) } else { app.env.push((name, value)) }
            }
            Short('l') | Long("l") | Long("tag-output") => options.tag_output = true,
            Long("timeout") => {
                let text = parser.value()?.string()?;
                let seconds: f64 = text
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| Inner::Error(format!("--timeout expects seconds > 0, got {text:?}")))?;
                options.timeout = Some(Duration::from_secs_f64(seconds));
            }
            Long(which @ ("hosts" | "host")) => {
                let which = which.to_owned();
                let list = parser.value()?.string()?;
                options.hosts = parse_host_list(&list, &spelled(&which))?;
            }
            Long(which @ ("f" | "hostfile" | "machinefile")) => {
                let which = which.to_owned();
                let path = parser.value()?;
                let shown = format!("'{}' {}", spelled(&which), path.to_string_lossy());
                let text = std::fs::read_to_string(&path).map_err(|e| Inner::Error(format!("{shown}: {e}")))?;
                options.hosts = parse_host_file(&text).map_err(|e| Inner::Error(format!("{shown}: {e}")))?;
            }
            Long("ppn") => {
                let text = parser.value()?.string()?;
                options.ppn = Some(parse_positive(&text, &spelled("ppn"))?);
            }
            Long("launcher") => {
                let text = parser.value()?.string()?;
                options.launcher_given = true;
                options.launcher = match text.as_str() {
                    "ssh" => Launcher::Ssh,
                    "rsh" => Launcher::Rsh,
                    "fork" => Launcher::Fork,
                    "slurm" => Launcher::Slurm,
                    other => {
                        return Err(Inner::Error(format!(
                            "'{}' {other}: not a launcher of mpiexec (ssh, rsh, slurm or fork)",
                            spelled("launcher")
                        )));
                    }
                };
            }
            Long("launcher-exec") => {
                let text = parser.value()?.string()?;
                if text.trim().is_empty() {
                    return Err(Inner::Error(format!("'{}' needs a command", spelled("launcher-exec"))));
                }
                options.launcher_exec = Some(text);
            }
            Long("iface") => options.iface = Some(parser.value()?.string()?),
            Long("usize") => {
                let text = parser.value()?.string()?;
                options.universe_size = Some(parse_positive(&text, &spelled("usize"))?);
            }
            Long("print-rank-map") => options.print_rank_map = true,
            Long("disable-auto-cleanup") => options.auto_cleanup = false,
            Long("enable-auto-cleanup") => options.auto_cleanup = true,
            Short('h') | Long("h") | Long("help") => return Err(Inner::Help),
            Short('V') | Long("V") | Long("version") => return Err(Inner::Version),
            Value(value) => {
                program = Some(value);
                app.args = parser.raw_args()?.collect();
                break;
            }
            other => return Err(Inner::Error(other.unexpected().to_string())),
        }
    }
    app.program = program.ok_or_else(|| {
        Inner::Error(if options.apps.is_empty() { "no program to run".into() } else { "no program after ':'".into() })
    })?;
    Ok(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<OsString> {
        text.split_whitespace().map(OsString::from).collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter().map(|(n, v)| (n.into(), v.into())).collect()
    }

    fn hosts(list: &[(&str, Option<usize>)]) -> Vec<HostSlots> {
        list.iter().map(|&(name, slots)| HostSlots { name: name.into(), slots }).collect()
    }

    #[test]
    fn mpich_style() {
        let options = parse(args("-np 4 -genv A 1 -env B -x -l prog -n 2 --foo")).unwrap();
        assert_eq!(options.ranks(), 4);
        assert_eq!(options.env_of(0), pairs(&[("A", "1"), ("B", "-x")]));
        assert!(options.tag_output);
        assert_eq!(options.apps[0].program, "prog");
        assert_eq!(options.apps[0].args, args("-n 2 --foo"));
        assert!(options.hosts.is_empty());
    }

    #[test]
    fn auto_cleanup_switch() {
        assert!(parse(args("-n 2 prog")).unwrap().auto_cleanup);
        assert!(!parse(args("-disable-auto-cleanup -n 2 prog")).unwrap().auto_cleanup);
        assert!(!parse(args("--disable-auto-cleanup -n 2 prog")).unwrap().auto_cleanup);
        assert!(parse(args("-disable-auto-cleanup -enable-auto-cleanup -n 2 prog")).unwrap().auto_cleanup);
    }

    #[test]
    fn attached_values_and_timeout() {
        let options = parse(args("-n3 --timeout=1.5 --tag-output -- prog")).unwrap();
        assert_eq!(options.ranks(), 3);
        assert_eq!(options.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(options.apps[0].program, "prog");
        let options = parse(args("--np=2 -timeout 3 prog a")).unwrap();
        assert_eq!((options.ranks(), options.timeout), (2, Some(Duration::from_secs(3))));
        assert_eq!(options.apps[0].args, args("a"));
    }

    fn error_of(text: &str) -> String {
        match parse(args(text)) {
            Err(ParseOutcome::Error(message)) => message,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn genv_name_equals_value() {
        let options = parse(args("-genv A=1 -env B=x=y -genv C 2=3 --genv=D=4 -n 2 prog")).unwrap();
        assert_eq!(options.env_of(0), pairs(&[("A", "1"), ("C", "2=3"), ("D", "4"), ("B", "x=y")]));
        assert_eq!((options.ranks(), options.apps[0].program.to_str()), (2, Some("prog")));
        assert!(error_of("-genv =1 prog").contains("name"));
        assert!(error_of("-genv A").contains("needs a value") || error_of("-genv A").contains("program"));
    }

    #[test]
    fn unknown_options_are_named_as_typed() {
        for (bad, typed) in [
            ("-nolocal prog", "'-nolocal'"),
            ("-n 2 -bind-to core prog", "'-bind-to'"),
            ("--bogus prog", "'--bogus'"),
            ("-q prog", "'-q'"),
            ("-lx prog", "'-lx'"),
            ("--n4 prog", "'--n4'"),
            ("-n 1 a : -bogus b", "'-bogus'"),
        ] {
            let message = error_of(bad);
            assert!(message.contains(typed), "{bad}: {message}");
        }
        let message = error_of("-configfile /nonexistent/c");
        assert!(message.contains("'-configfile' /nonexistent/c: cannot read it"), "{message}");
    }

    #[test]
    fn hosts_lists() {
        for flag in ["-hosts", "-host", "--hosts"] {
            let options = parse(args(&format!("{flag} h1,h2 -n 4 prog"))).unwrap();
            assert_eq!(options.hosts, hosts(&[("h1", None), ("h2", None)]), "{flag}");
        }
        let options = parse(args("-hosts h1:4,h2:2 prog")).unwrap();
        assert_eq!(options.hosts, hosts(&[("h1", Some(4)), ("h2", Some(2))]));
        assert_eq!(parse(args("--hosts=a:1 prog")).unwrap().hosts, hosts(&[("a", Some(1))]));
        for (bad, typed) in [
            ("-hosts h1:x prog", "'-hosts'"),
            ("-host h1:0 prog", "'-host'"),
            ("--hosts=h1,,h2 prog", "'--hosts'"),
            ("-hosts", "'-hosts'"),
        ] {
            let message = error_of(bad);
            assert!(message.contains(typed) || message.contains("missing argument"), "{bad}: {message}");
        }
        assert!(error_of("-hosts a:x prog").contains("a:x"));
        // After the program, options are the program's own.
        assert_eq!(parse(args("prog -hosts x -ppn 2")).unwrap().apps[0].args, args("-hosts x -ppn 2"));
    }

    #[test]
    fn host_files_in_both_formats() {
        let mpich = "# cluster\nh1:2\n\nh2   # one slot\nh3:1\n";
        assert_eq!(parse_host_file(mpich).unwrap(), hosts(&[("h1", Some(2)), ("h2", None), ("h3", Some(1))]));
        let open_mpi = "h1 slots=2\nh2 slots=4 max_slots=8 # big\n  h3\n";
        assert_eq!(parse_host_file(open_mpi).unwrap(), hosts(&[("h1", Some(2)), ("h2", Some(4)), ("h3", None)]));
        for bad in ["h1:x", "h1 slots=0", "h1 two", "# nothing\n\n"] {
            assert!(parse_host_file(bad).is_err(), "{bad:?}");
        }
        assert!(parse_host_file("a\nb slots=z").unwrap_err().contains("line 2"));
        let dir = std::env::temp_dir();
        let file = dir.join(format!("oxmpi-hostfile-{}", std::process::id()));
        std::fs::write(&file, open_mpi).unwrap();
        for flag in ["-f", "-hostfile", "-machinefile", "--hostfile"] {
            let options = parse(args(&format!("{flag} {} -n 3 prog", file.display()))).unwrap();
            assert_eq!(options.hosts.len(), 3, "{flag}");
        }
        std::fs::write(&file, "h1 slots=x\n").unwrap();
        let message = error_of(&format!("-machinefile {} prog", file.display()));
        assert!(message.contains("'-machinefile'") && message.contains("line 1"), "{message}");
        std::fs::remove_file(&file).unwrap();
        let message = error_of(&format!("-f {} prog", file.display()));
        assert!(message.contains("'-f'") && message.contains("No such file"), "{message}");
    }

    #[test]
    fn ppn_launcher_iface_rank_map() {
        let options = parse(args(
            "-ppn 2 -launcher fork -launcher-exec /x/launch -iface oxbr0 -print-rank-map -hosts a,b -n 4 prog",
        ))
        .unwrap();
        assert_eq!(options.ppn, Some(2));
        assert_eq!(options.launcher, Launcher::Fork);
        assert_eq!(options.launcher_exec.as_deref(), Some("/x/launch"));
        assert_eq!(options.iface.as_deref(), Some("oxbr0"));
        assert!(options.print_rank_map);
        assert_eq!(parse(args("prog")).unwrap().launcher, Launcher::Ssh);
        let empty = ["-launcher-exec", " ", "prog"].map(OsString::from).to_vec();
        assert!(matches!(parse(empty), Err(ParseOutcome::Error(m)) if m.contains("'-launcher-exec'")));
        assert_eq!(parse(args("-launcher rsh prog")).unwrap().launcher, Launcher::Rsh);
        let slurm = parse(args("-launcher slurm prog")).unwrap();
        assert_eq!((slurm.launcher, slurm.launcher_given), (Launcher::Slurm, true));
        assert!(!parse(args("prog")).unwrap().launcher_given);
        for (bad, typed) in [
            ("-ppn 0 prog", "'-ppn'"),
            ("-ppn x prog", "'-ppn'"),
            ("--ppn=x prog", "'--ppn'"),
            ("-launcher pbs prog", "'-launcher'"),
        ] {
            let message = error_of(bad);
            assert!(message.contains(typed), "{bad}: {message}");
        }
    }

    #[test]
    fn mpmd_parts() {
        let options = parse(args("-genv G 1 -n 2 -env A x ./a 1 2 : -n 1 -env B y -l ./b : ./c")).unwrap();
        assert_eq!(options.apps.len(), 3);
        assert_eq!(options.ranks(), 4);
        assert_eq!(options.app_of_rank(), [0, 0, 1, 2]);
        assert_eq!((options.apps[0].program.to_str(), &options.apps[0].args), (Some("./a"), &args("1 2")));
        assert_eq!(options.env_of(0), pairs(&[("G", "1"), ("A", "x")]));
        assert_eq!(options.env_of(1), pairs(&[("G", "1"), ("B", "y")]));
        assert_eq!(options.env_of(2), pairs(&[("G", "1")]));
        assert!(options.tag_output);
        assert!(error_of("-n 2 ./a :").contains("no program after ':'"));
        assert!(error_of("-n 2 ./a : -n 0 ./b").contains("at least 1"));
    }

    #[test]
    fn configfile_lines_are_mpmd_parts() {
        let path = std::env::temp_dir().join(format!("oxmpi-configfile-{}", std::process::id()));
        std::fs::write(&path, "# the master\n-n 1 -env ROLE m ./master  a b\n\n  -n 3 ./worker # three\n").unwrap();
        let file = path.to_str().unwrap();
        let options = parse(args(&format!("-genv G 1 -l -configfile {file}"))).unwrap();
        assert_eq!(options.ranks(), 4);
        assert_eq!(options.app_of_rank(), [0, 1, 1, 1]);
        assert_eq!((options.apps[0].program.to_str(), &options.apps[0].args), (Some("./master"), &args("a b")));
        assert_eq!(options.env_of(0), pairs(&[("G", "1"), ("ROLE", "m")]));
        assert_eq!(options.env_of(1), pairs(&[("G", "1")]));
        assert!(options.tag_output);
        assert!(error_of(&format!("-configfile {file} ./x")).contains("found \"./x\" after it"));
        assert!(error_of("-configfile").contains("expects a file"));
        std::fs::write(&path, "# nothing\n\n").unwrap();
        assert!(error_of(&format!("-configfile {file}")).contains("names no program"));
        // A program's own argument is not ours.
        let options = parse(args("-n 1 ./prog -configfile x")).unwrap();
        assert_eq!(options.apps[0].args, args("-configfile x"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn version() {
        assert!(matches!(parse(args("--version")), Err(ParseOutcome::Version)));
        assert!(matches!(parse(args("-V")), Err(ParseOutcome::Version)));
        assert!(matches!(parse(args("-h")), Err(ParseOutcome::Help)));
    }

    #[test]
    fn errors() {
        for bad in ["-n", "-n x prog", "-n 0 prog", "--bogus prog", "-q prog", "-n 2", "--timeout -1 prog"] {
            assert!(matches!(parse(args(bad)), Err(ParseOutcome::Error(_))), "{bad}");
        }
        assert!(matches!(parse(args("--help")), Err(ParseOutcome::Help)));
    }
}
