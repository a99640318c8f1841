//! Forwarding a rank's stdout/stderr line by line, so lines of different ranks never mix.

use std::fs::File;
use std::io::{self, Read, Write};

/// A partial line longer than this is forwarded anyway rather than buffered without bound.
const MAX_PENDING: usize = 64 * 1024;

/// Which of mpiexec's own streams receives the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    Stdout,
    Stderr,
}

/// One pipe from a rank and the bytes read from it that do not yet end a line.
pub struct OutputStream {
    pub pipe: File,
    /// `Some("[r] ")` when tagging output.
    tag: Option<String>,
    pending: Vec<u8>,
    at_line_start: bool,
}

/// What a read from the pipe found.
pub enum ReadResult {
    Open,
    Closed,
}

impl OutputStream {
    pub fn new(pipe: File, tag: Option<String>) -> OutputStream {
        OutputStream { pipe, tag, pending: Vec::new(), at_line_start: true }
    }

    /// Reads what is available (the caller polled the pipe) and appends the complete lines,
    /// tagged, to `forward` (which the caller writes out or sends to mpiexec).
    pub fn read_available(&mut self, forward: &mut Vec<u8>) -> ReadResult {
        let mut buffer = [0u8; 64 * 1024];
        match self.pipe.read(&mut buffer) {
            Ok(0) => {
                self.flush_all(forward);
                ReadResult::Closed
            }
            Ok(n) => {
                self.pending.extend_from_slice(&buffer[..n]);
                let complete = match self.pending.iter().rposition(|&b| b == b'\n') {
                    Some(last_newline) => last_newline + 1,
                    None if self.pending.len() >= MAX_PENDING => self.pending.len(),
                    None => 0,
                };
                if complete > 0 {
                    let lines: Vec<u8> = self.pending.drain(..complete).collect();
                    self.emit(&lines, forward);
                }
                ReadResult::Open
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::WouldBlock => {
                ReadResult::Open
            }
            Err(_) => {
                self.flush_all(forward);
                ReadResult::Closed
            }
        }
    }

    /// Forwards whatever is left, ending a tagged partial line with a newline so the next
    /// rank's tag starts on its own line.
    pub fn flush_all(&mut self, forward: &mut Vec<u8>) {
        if self.pending.is_empty() {
            return;
        }
        let mut rest = std::mem::take(&mut self.pending);
        if self.tag.is_some() && rest.last() != Some(&b'\n') {
            rest.push(b'\n');
        }
        self.emit(&rest, forward);
    }

    fn emit(&mut self, data: &[u8], forward: &mut Vec<u8>) {
        match &self.tag {
            None => forward.extend_from_slice(data),
            Some(tag) => {
                for piece in data.split_inclusive(|&b| b == b'\n') {
                    if self.at_line_start {
                        forward.extend_from_slice(tag.as_bytes());
                    }
                    forward.extend_from_slice(piece);
                    self.at_line_start = piece.last() == Some(&b'\n');
                }
            }
        }
    }
}

/// Writes forwarded output to mpiexec's own stdout or stderr.
pub fn write(sink: Sink, text: &[u8]) {
    if text.is_empty() {
        return;
    }
    // Errors (a closed terminal, EPIPE) must not stop the job: the output is just lost.
    let _ = match sink {
        Sink::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(text).and_then(|()| out.flush())
        }
        Sink::Stderr => io::stderr().lock().write_all(text),
    };
}
