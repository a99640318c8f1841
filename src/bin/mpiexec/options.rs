//! Command line of `mpiexec`/`mpirun`.

use std::ffi::OsString;
use std::time::Duration;

pub const USAGE: &str = "\
usage: mpiexec -n N [options] program [args...]

Starts N ranks of `program` on this node and serves PMI-1 to them.

options:
  -n N, -np N          number of ranks (default 1)
  -env NAME VALUE      set an environment variable for the ranks
  -env NAME=VALUE      the same
  -genv NAME VALUE     same as -env (one executable per launch)
  -l, --tag-output     prefix each output line with [rank]
  --timeout SECONDS    kill the job after SECONDS and exit with 124
  -V, --version        print the version
  -h, --help           print this help

Not supported yet (refused): -hosts and -host (unless they name only this machine),
-hostfile/-f/-machinefile, -configfile, and several programs separated by ':' (MPMD).
";

/// What the user asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub ranks: usize,
    pub env: Vec<(OsString, OsString)>,
    pub tag_output: bool,
    pub timeout: Option<Duration>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

/// How parsing ended without a job to run.
#[derive(Debug)]
pub enum ParseOutcome {
    Help,
    Version,
    Error(String),
}

/// Options Hydra has that start ranks elsewhere or run several programs: refused by name
/// until mpiexec launches on several hosts.
const NOT_YET: &[&str] = &["hosts", "host", "hostfile", "f", "machinefile", "configfile"];

/// This machine's host name.
fn hostname() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer.
    if unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } != 0 {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&buffer[..end]).into_owned())
}

/// Whether every host of a Hydra host list (`a,b:2`) is this machine.
fn all_local(list: &str) -> bool {
    let me = hostname();
    let short = me.as_deref().map(|h| h.split('.').next().unwrap_or(h));
    let local = |host: &str| {
        matches!(host, "localhost" | "127.0.0.1" | "::1") || Some(host) == me.as_deref() || Some(host) == short
    };
    !list.is_empty()
        && list.split(',').all(|entry| {
            // `host` or `host:count`.
            local(entry) || entry.rsplit_once(':').is_some_and(|(h, n)| n.parse::<u32>().is_ok() && local(h))
        })
}

/// How many separate values option `name` takes (`None`: no such option).
fn value_count(name: &str, next: Option<&OsString>) -> Option<usize> {
    match name {
        "n" | "np" | "timeout" => Some(1),
        // `-genv NAME VALUE` or, as Hydra also accepts, `-genv NAME=VALUE`.
        "env" | "genv" => Some(if next.is_some_and(|v| v.to_string_lossy().contains('=')) { 1 } else { 2 }),
        "l" | "tag-output" | "h" | "help" | "V" | "version" => Some(0),
        _ => None,
    }
}

/// MPICH spells several options with one dash and several letters (`-np`, `-genv`); lexopt
/// would read those as clustered short options (`-ppn` as `-p -p -n`), so every token in
/// option position is checked here and rewritten to `--np` etc.; one that is no option of
/// ours is refused as typed. The walk stops at the program name.
fn normalize_single_dash_long(args: Vec<OsString>) -> Result<Vec<OsString>, Inner> {
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
        // `-hosts localhost` and the like: this node is where the ranks run anyway.
        if name == "hosts" || name == "host" {
            let list = match body.split_once('=') {
                Some((_, list)) => Some(list.to_string()),
                None => args.get(index).map(|v| v.to_string_lossy().into_owned()),
            };
            if let Some(list) = list
                && all_local(&list)
            {
                index += usize::from(!attached);
                continue;
            }
        }
        if NOT_YET.contains(&name) {
            return Err(Inner::Error(format!(
                "option '{token}' is not supported yet: mpiexec starts every rank on this node \
                 (to launch on several hosts use MPICH's mpiexec.hydra)"
            )));
        }
        let count = match value_count(name, args.get(index)) {
            Some(count) => {
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

fn parse_count(text: &str, what: &str) -> Result<usize, String> {
    text.parse::<usize>().map_err(|_| format!("{what} expects a number, got {text:?}"))
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
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(normalize_single_dash_long(args)?);
    let mut ranks = 1;
    let mut env = Vec::new();
    let mut tag_output = false;
    let mut timeout = None;
    let mut program = None;
    let mut program_args = Vec::new();
    while let Some(arg) = parser.next()? {
        match arg {
            Short('n') | Long("np") | Long("n") => {
                let text = parser.value()?.string()?;
                ranks = parse_count(&text, "-n").map_err(Inner::Error)?;
                if ranks == 0 {
                    return Err(Inner::Error("-n must be at least 1".into()));
                }
            }
            Long("env") | Long("genv") => {
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
                env.push((name, value));
            }
            Short('l') | Long("l") | Long("tag-output") => tag_output = true,
            Long("timeout") => {
                let text = parser.value()?.string()?;
                let seconds: f64 = text
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| Inner::Error(format!("--timeout expects seconds > 0, got {text:?}")))?;
                timeout = Some(Duration::from_secs_f64(seconds));
            }
            Short('h') | Long("h") | Long("help") => return Err(Inner::Help),
            Short('V') | Long("V") | Long("version") => return Err(Inner::Version),
            Value(value) => {
                program = Some(value);
                program_args = parser.raw_args()?.collect();
                break;
            }
            other => return Err(Inner::Error(other.unexpected().to_string())),
        }
    }
    let program = program.ok_or_else(|| Inner::Error("no program to run".into()))?;
    // Hydra reads `-n 2 ./a : -n 1 ./b` as two programs; passing `: -n 1 ./b` to ./a instead
    // would run the wrong job.
    if program_args.iter().any(|a| a == ":") {
        return Err(Inner::Error(
            "':' (several programs in one job, MPMD) is not supported yet: mpiexec runs one program".into(),
        ));
    }
    Ok(Options { ranks, env, tag_output, timeout, program, args: program_args })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<OsString> {
        text.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn mpich_style() {
        let options = parse(args("-np 4 -genv A 1 -env B -x -l prog -n 2 --foo")).unwrap();
        assert_eq!(options.ranks, 4);
        assert_eq!(options.env, vec![("A".into(), "1".into()), ("B".into(), "-x".into())]);
        assert!(options.tag_output);
        assert_eq!(options.program, "prog");
        assert_eq!(options.args, args("-n 2 --foo"));
    }

    #[test]
    fn attached_values_and_timeout() {
        let options = parse(args("-n3 --timeout=1.5 --tag-output -- prog")).unwrap();
        assert_eq!(options.ranks, 3);
        assert_eq!(options.timeout, Some(Duration::from_millis(1500)));
        assert_eq!(options.program, "prog");
        let options = parse(args("--np=2 -timeout 3 prog a")).unwrap();
        assert_eq!((options.ranks, options.timeout), (2, Some(Duration::from_secs(3))));
        assert_eq!(options.args, args("a"));
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
        let want: Vec<(OsString, OsString)> =
            [("A", "1"), ("B", "x=y"), ("C", "2=3"), ("D", "4")].iter().map(|(n, v)| (n.into(), v.into())).collect();
        assert_eq!(options.env, want);
        assert_eq!((options.ranks, options.program.to_str()), (2, Some("prog")));
        assert!(error_of("-genv =1 prog").contains("name"));
        assert!(error_of("-genv A").contains("needs a value") || error_of("-genv A").contains("program"));
    }

    #[test]
    fn unknown_options_are_named_as_typed() {
        for (bad, typed) in [
            ("-ppn 2 prog", "'-ppn'"),
            ("-nolocal prog", "'-nolocal'"),
            ("-n 2 -bind-to core prog", "'-bind-to'"),
            ("--bogus prog", "'--bogus'"),
            ("-q prog", "'-q'"),
            ("-lx prog", "'-lx'"),
            ("--n4 prog", "'--n4'"),
        ] {
            let message = error_of(bad);
            assert!(message.contains(typed), "{bad}: {message}");
        }
    }

    #[test]
    fn multi_host_and_mpmd_are_refused_by_name() {
        for (bad, typed) in [
            ("-hosts a,b -n 2 prog", "'-hosts'"),
            ("-hosts localhost,b prog", "'-hosts'"),
            ("-host a prog", "'-host'"),
            ("-hostfile hf prog", "'-hostfile'"),
            ("-f hf prog", "'-f'"),
            ("-machinefile hf prog", "'-machinefile'"),
            ("--hosts=a prog", "'--hosts=a'"),
            ("-configfile c", "'-configfile'"),
        ] {
            let message = error_of(bad);
            assert!(message.contains(typed) && message.contains("not supported yet"), "{bad}: {message}");
        }
        let message = error_of("-n 2 ./a : -n 1 ./b");
        assert!(message.contains("':'") && message.contains("not supported yet"), "{message}");
        // After the program, options are the program's own.
        assert_eq!(parse(args("prog -hosts x -ppn 2")).unwrap().args, args("-hosts x -ppn 2"));
    }

    #[test]
    fn host_lists_naming_only_this_machine_are_accepted() {
        let me = hostname().unwrap();
        for ok in [
            "-hosts localhost -n 2 prog".to_string(),
            "-host localhost:4,127.0.0.1,::1 prog".to_string(),
            format!("-hosts {me},localhost:2 -n 3 prog"),
            "--hosts=localhost prog".to_string(),
        ] {
            let options = parse(args(&ok)).unwrap_or_else(|e| panic!("{ok}: {e:?}"));
            assert_eq!(options.program, "prog", "{ok}");
        }
        assert_eq!(parse(args("-hosts localhost -n 2 prog")).unwrap().ranks, 2);
        for bad in ["-hosts localhost,elsewhere prog", "-host other:2 prog", "-hosts localhost:x prog"] {
            assert!(error_of(bad).contains("not supported yet"), "{bad}");
        }
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
