//! The PMI-2 wire format, as Slurm's `mpi/pmi2` plugin and MPICH's Hydra speak it.
//!
//! Each message is a 6-character decimal length field (the byte count of what follows, padded
//! with spaces on either side), then `cmd=<name>;key=value;...;` with `;` ending every field.
//! A `;` inside a key or value is doubled (`;;`). There is no newline. The connection starts
//! with one PMI-1 line, `cmd=init pmi_version=2 pmi_subversion=0`, answered in PMI-1 form;
//! everything after it is framed this way.

use std::io;

/// Width of the length field.
pub const LENGTH_FIELD: usize = 6;

/// The largest body the length field can announce.
pub const MAX_BODY: usize = 999_999;

/// One PMI-2 command or response: its fields in order, `cmd` first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Command {
    pub fields: Vec<(String, String)>,
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

impl Command {
    /// A command with `cmd=<name>` as its first field.
    pub fn cmd(name: &str) -> Command {
        Command { fields: vec![("cmd".to_string(), name.to_string())] }
    }

    /// Appends a field (builder style).
    pub fn with(mut self, key: &str, value: impl ToString) -> Command {
        self.fields.push((key.to_string(), value.to_string()));
        self
    }

    /// The value of the first field named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The command name (`cmd=`).
    pub fn command(&self) -> Option<&str> {
        self.get("cmd")
    }

    /// `rc=` as a number; a missing `rc` counts as success.
    pub fn rc(&self) -> i64 {
        self.get("rc").and_then(|v| v.trim().parse().ok()).unwrap_or(0)
    }

    /// A boolean field (`TRUE`/`FALSE`, any case); `None` when absent.
    pub fn flag(&self, key: &str) -> Option<bool> {
        self.get(key).map(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// The body, `cmd=...;k=v;...;`, with `;` in keys and values doubled.
    pub fn body(&self) -> String {
        let mut text = String::new();
        for (key, value) in &self.fields {
            text.push_str(&key.replace(';', ";;"));
            text.push('=');
            text.push_str(&value.replace(';', ";;"));
            text.push(';');
        }
        text
    }

    /// The whole message: length field, then body.
    pub fn encode(&self) -> io::Result<Vec<u8>> {
        let body = self.body();
        if body.len() > MAX_BODY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("PMI-2 {} command of {} bytes is too long", self.command().unwrap_or("?"), body.len()),
            ));
        }
        let mut message = format!("{:<width$}", body.len(), width = LENGTH_FIELD).into_bytes();
        message.extend_from_slice(body.as_bytes());
        Ok(message)
    }

    /// Parses a body (without its length field). Fields are separated by `;` (the last one
    /// may lack it); `;;` is a literal `;`. A field without `=` is an error, as is a body
    /// whose first field is not `cmd`.
    pub fn parse(body: &str) -> io::Result<Command> {
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = body.chars().peekable();
        let finish = |field: &mut String, fields: &mut Vec<(String, String)>| -> io::Result<()> {
            let text = std::mem::take(field);
            // The first `=` splits; an `=` in the key is impossible to tell apart, as with
            // every PMI-2 implementation.
            let Some((key, value)) = text.split_once('=') else {
                return Err(invalid(format!("PMI-2 field {text:?} has no '=' in {body:?}")));
            };
            fields.push((key.to_string(), value.to_string()));
            Ok(())
        };
        while let Some(c) = chars.next() {
            if c == ';' {
                if chars.peek() == Some(&';') {
                    chars.next();
                    field.push(';');
                } else {
                    finish(&mut field, &mut fields)?;
                }
            } else {
                field.push(c);
            }
        }
        if !field.is_empty() {
            finish(&mut field, &mut fields)?;
        }
        let command = Command { fields };
        if command.fields.first().map(|(k, _)| k.as_str()) != Some("cmd") {
            return Err(invalid(format!("PMI-2 message {body:?} does not start with cmd=")));
        }
        Ok(command)
    }
}

/// Takes one complete message off the front of `pending` (bytes read so far), if there is
/// one: `Ok(None)` when more bytes are needed.
pub fn take_message(pending: &mut Vec<u8>) -> io::Result<Option<Command>> {
    if pending.len() < LENGTH_FIELD {
        return Ok(None);
    }
    let field = String::from_utf8_lossy(&pending[..LENGTH_FIELD]).into_owned();
    let length: usize =
        field.trim().parse().map_err(|_| invalid(format!("PMI-2 length field {field:?} is not a number")))?;
    if pending.len() < LENGTH_FIELD + length {
        return Ok(None);
    }
    let body: Vec<u8> = pending.drain(..LENGTH_FIELD + length).skip(LENGTH_FIELD).collect();
    let text = String::from_utf8(body).map_err(|_| invalid("PMI-2 message is not UTF-8".into()))?;
    Command::parse(&text).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_with_length_field() {
        let put = Command::cmd("kvs-put").with("key", "oxmpi-net-0").with("value", "0a0b:1");
        let bytes = put.encode().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, "41    cmd=kvs-put;key=oxmpi-net-0;value=0a0b:1;");
        assert_eq!(text.len() - LENGTH_FIELD, 41);
        let fence = String::from_utf8(Command::cmd("kvs-fence").encode().unwrap()).unwrap();
        assert_eq!(fence, "14    cmd=kvs-fence;");
    }

    #[test]
    fn escapes_semicolons() {
        let abort = Command::cmd("abort").with("isworld", "TRUE").with("msg", "a;b;;c;");
        assert_eq!(abort.body(), "cmd=abort;isworld=TRUE;msg=a;;b;;;;c;;;");
        assert_eq!(Command::parse(&abort.body()).unwrap(), abort);
        let parsed = Command::parse("cmd=x;v=;;;w=1;").unwrap();
        assert_eq!(parsed.get("v"), Some(";"));
        assert_eq!(parsed.get("w"), Some("1"));
    }

    #[test]
    fn parses_server_responses() {
        // Slurm's form.
        let full = Command::parse(
            "cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=3;size=4;appnum=-1;debugged=FALSE;pmiverbose=FALSE;",
        )
        .unwrap();
        assert_eq!(full.command(), Some("fullinit-response"));
        assert_eq!(full.rc(), 0);
        assert_eq!(full.get("rank"), Some("3"));
        assert_eq!(full.get("appnum"), Some("-1"));
        assert_eq!(full.flag("debugged"), Some(false));
        assert_eq!(full.get("spawner-jobid"), None);
        // A value with '=' in it, no final ';', and a missing key.
        let got = Command::parse("cmd=kvs-get-response;rc=0;found=TRUE;value=(vector,(0,1,4))=x").unwrap();
        assert_eq!(got.flag("found"), Some(true));
        assert_eq!(got.get("value"), Some("(vector,(0,1,4))=x"));
        let empty = Command::parse("cmd=info-getjobattr-response;rc=0;found=FALSE;value=;").unwrap();
        assert_eq!(empty.get("value"), Some(""));
        let failed = Command::parse("cmd=kvs-fence-response;rc=-1;errmsg=lost a node;").unwrap();
        assert_eq!(failed.rc(), -1);
        assert_eq!(failed.get("errmsg"), Some("lost a node"));
    }

    #[test]
    fn rejects_malformed_bodies() {
        assert!(Command::parse("rc=0;cmd=x;").is_err());
        assert!(Command::parse("cmd=x;novalue;").is_err());
        assert!(Command::parse("").is_err());
    }

    #[test]
    fn frames_messages_from_a_stream() {
        let mut pending = Vec::new();
        assert_eq!(take_message(&mut pending).unwrap(), None);
        let first = Command::cmd("kvs-put-response").with("rc", 0).encode().unwrap();
        let second = Command::cmd("kvs-fence-response").with("rc", 0).encode().unwrap();
        // Arrives in pieces: a partial length field, then a partial body.
        pending.extend_from_slice(&first[..3]);
        assert_eq!(take_message(&mut pending).unwrap(), None);
        pending.extend_from_slice(&first[3..10]);
        assert_eq!(take_message(&mut pending).unwrap(), None);
        pending.extend_from_slice(&first[10..]);
        pending.extend_from_slice(&second);
        assert_eq!(take_message(&mut pending).unwrap().unwrap().command(), Some("kvs-put-response"));
        assert_eq!(take_message(&mut pending).unwrap().unwrap().command(), Some("kvs-fence-response"));
        assert!(pending.is_empty());
        // Right-aligned length fields (MPICH's client writes them so) read the same.
        pending.extend_from_slice(b"    13cmd=finalize;");
        assert_eq!(take_message(&mut pending).unwrap().unwrap().command(), Some("finalize"));
        pending.extend_from_slice(b"abcdefcmd=x;");
        assert!(take_message(&mut pending).is_err());
    }
}
