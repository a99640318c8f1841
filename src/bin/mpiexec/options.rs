//! Command line of `mpiexec`/`mpirun`.

use std::ffi::OsString;
use std::time::Duration;

pub const USAGE: &str = "\
usage: mpiexec -n N [options] program [args...]

Starts N ranks of `program` on this node and serves PMI-1 to them.

options:
  -n N, -np N          number of ranks (default 1)
  -env NAME VALUE      set an environment variable for the ranks
  -genv NAME VALUE     same as -env (one executable per launch)
  -l, --tag-output     prefix each output line with [rank]
  --timeout SECONDS    kill the job after SECONDS and exit with 124
  -h, --help           print this help
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
    Error(String),
}

/// MPICH spells several options with one dash and several letters (`-np`, `-genv`); lexopt
/// would read those as clustered short options, so they are rewritten to `--np` etc. first.
/// Only tokens in option position are rewritten: the walk stops at the program name.
fn normalize_single_dash_long(args: Vec<OsString>) -> Vec<OsString> {
    let value_count = |name: &str| match name {
        "n" | "np" | "timeout" => Some(1),
        "env" | "genv" => Some(2),
        _ => None,
    };
    let mut out = Vec::with_capacity(args.len());
    let mut index = 0;
    while index < args.len() {
        let token = args[index].to_string_lossy().into_owned();
        index += 1;
        if token == "--" || !token.starts_with('-') || token == "-" {
            out.push(args[index - 1].clone());
            break;
        }
        let name = token.trim_start_matches('-');
        let known = value_count(name);
        if !token.starts_with("--") && name.len() > 1 && known.is_some() {
            out.push(OsString::from(format!("--{name}")));
        } else {
            out.push(args[index - 1].clone());
        }
        // `--np=4` and `-n4` carry their value; everything else takes `known` separate values.
        let skip = if name.contains('=') { 0 } else { known.unwrap_or(0) };
        for _ in 0..skip {
            if index < args.len() {
                out.push(args[index].clone());
                index += 1;
            }
        }
    }
    out.extend(args[index..].iter().cloned());
    out
}

fn parse_count(text: &str, what: &str) -> Result<usize, String> {
    text.parse::<usize>().map_err(|_| format!("{what} expects a number, got {text:?}"))
}

/// Parses `args` (without the program name of mpiexec itself).
pub fn parse(args: Vec<OsString>) -> Result<Options, ParseOutcome> {
    parse_inner(args).map_err(|e| match e {
        Inner::Help => ParseOutcome::Help,
        Inner::Error(text) => ParseOutcome::Error(text),
    })
}

enum Inner {
    Help,
    Error(String),
}

impl From<lexopt::Error> for Inner {
    fn from(error: lexopt::Error) -> Inner {
        Inner::Error(error.to_string())
    }
}

fn parse_inner(args: Vec<OsString>) -> Result<Options, Inner> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(normalize_single_dash_long(args));
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
                let value = parser
                    .raw_args()?
                    .next()
                    .ok_or_else(|| Inner::Error(format!("-env {} needs a value", name.to_string_lossy())))?;
                env.push((name, value));
            }
            Short('l') | Long("tag-output") => tag_output = true,
            Long("timeout") => {
                let text = parser.value()?.string()?;
                let seconds: f64 = text
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| Inner::Error(format!("--timeout expects seconds > 0, got {text:?}")))?;
                timeout = Some(Duration::from_secs_f64(seconds));
            }
            Short('h') | Long("help") => return Err(Inner::Help),
            Value(value) => {
                program = Some(value);
                program_args = parser.raw_args()?.collect();
                break;
            }
            other => return Err(Inner::Error(other.unexpected().to_string())),
        }
    }
    let program = program.ok_or_else(|| Inner::Error("no program to run".into()))?;
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

    #[test]
    fn errors() {
        for bad in ["-n", "-n x prog", "-n 0 prog", "--bogus prog", "-q prog", "-n 2", "--timeout -1 prog"] {
            assert!(matches!(parse(args(bad)), Err(ParseOutcome::Error(_))), "{bad}");
        }
        assert!(matches!(parse(args("--help")), Err(ParseOutcome::Help)));
    }
}
