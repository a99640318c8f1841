//! The PMI-1 wire format: one command per line, `key=value` fields separated by spaces.
//!
//! Shared by the client ([`super::Pmi`]) and by our `mpiexec`'s server, so both sides agree on
//! the exact syntax. Field values cannot contain spaces or newlines (Hydra splits on spaces and
//! truncates values at `vallen_max - 1` bytes), so the client rejects such values up front.

use std::fmt::Write as _;

/// One parsed PMI-1 line: its fields in order (`cmd` or `mcmd` is usually the first).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line {
    pub fields: Vec<(String, String)>,
}

impl Line {
    /// A command line with `cmd=<name>` as its first field.
    pub fn cmd(name: &str) -> Line {
        Line { fields: vec![("cmd".to_string(), name.to_string())] }
    }

    /// Appends a field (builder style).
    pub fn with(mut self, key: &str, value: impl ToString) -> Line {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of the first field named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The command name (`cmd=` or, for PMI-1 multi-line commands, `mcmd=`).
    pub fn command(&self) -> Option<&str> {
        self.get("cmd").or_else(|| self.get("mcmd"))
    }

    /// `rc=` as a number; a missing `rc` counts as success, as Hydra omits it on some replies.
    pub fn rc(&self) -> i64 {
        self.get("rc").and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    }

    /// Parses one line (without or with its trailing newline). A token without `=` is kept
    /// as a key with an empty value, so a stray word does not lose the rest of the line.
    pub fn parse(text: &str) -> Line {
        let fields = text
            .trim_end_matches(['\n', '\r'])
            .split(' ')
            .filter(|token| !token.is_empty())
            .map(|token| match token.split_once('=') {
                Some((key, value)) => (key.to_string(), value.to_string()),
                None => (token.to_string(), String::new()),
            })
            .collect();
        Line { fields }
    }

    /// Formats the line, newline included, ready to write.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        for (index, (key, value)) in self.fields.iter().enumerate() {
            if index > 0 {
                text.push(' ');
            }
            let _ = write!(text, "{key}={value}");
        }
        text.push('\n');
        text
    }
}

/// Whether `text` can travel as a PMI-1 field value (or key) unchanged.
pub fn is_wire_safe(text: &str) -> bool {
    !text.bytes().any(|b| b == b' ' || b == b'\n' || b == b'\r' || b == b'\t' || b == 0)
}

/// Percent-encodes free text (an abort message) so it fits in one field value.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_graphic() && byte != b'%' {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Reverses [`escape_text`]; malformed escapes are kept literally.
pub fn unescape_text(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' && index + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[index + 1..index + 3]).ok();
            if let Some(value) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(value);
                index += 3;
                continue;
            }
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hydra_replies() {
        let line = Line::parse("cmd=get_result rc=0 msg=success value=v0=with=eq\n");
        assert_eq!(line.command(), Some("get_result"));
        assert_eq!(line.rc(), 0);
        assert_eq!(line.get("value"), Some("v0=with=eq"));
        let missing = Line::parse("cmd=get_result rc=-1 msg=key_x_not_found value=unknown");
        assert_eq!(missing.rc(), -1);
        let maxes = Line::parse("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024");
        assert_eq!(maxes.get("vallen_max"), Some("1024"));
        assert_eq!(maxes.rc(), 0);
    }

    #[test]
    fn tolerates_stray_tokens_and_spaces() {
        let line = Line::parse("cmd=abort  exitcode=7 stray\r\n");
        assert_eq!(line.get("exitcode"), Some("7"));
        assert_eq!(line.get("stray"), Some(""));
        assert_eq!(Line::parse("").command(), None);
        assert_eq!(Line::parse("mcmd=spawn").command(), Some("spawn"));
    }

    #[test]
    fn encodes_round_trip() {
        let line = Line::cmd("put").with("kvsname", "kvs_1").with("key", "k").with("value", "a=b");
        let text = line.encode();
        assert_eq!(text, "cmd=put kvsname=kvs_1 key=k value=a=b\n");
        assert_eq!(Line::parse(&text), line);
    }

    #[test]
    fn escapes_free_text() {
        let message = "rank 3: bad 100% \n done";
        let escaped = escape_text(message);
        assert!(is_wire_safe(&escaped));
        assert_eq!(unescape_text(&escaped), message);
        assert_eq!(unescape_text("50%"), "50%");
        assert_eq!(unescape_text("%zz%4"), "%zz%4");
        assert!(!is_wire_safe("a b"));
    }
}
