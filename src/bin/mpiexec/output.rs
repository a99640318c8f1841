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
    sink: Sink,
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
    pub fn new(pipe: File, sink: Sink, tag: Option<String>) -> OutputStream {
        OutputStream { pipe, sink, tag, pending: Vec::new(), at_line_start: true }
    }

    /// Reads what is available (the caller polled the pipe) and forwards complete lines.
    pub fn read_available(&mut self) -> ReadResult {
        let mut buffer = [0u8; 64 * 1024];
        match self.pipe.read(&mut buffer) {
            Ok(0) => {
                self.flush_all();
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
                    self.emit(&lines);
                }
                ReadResult::Open
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::WouldBlock => {
                ReadResult::Open
            }
            Err(_) => {
                self.flush_all();
                ReadResult::Closed
            }
        }
    }

    /// Forwards whatever is left, ending a tagged partial line with a newline so the next
    /// rank's tag starts on its own line.
    pub fn flush_all(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut rest = std::mem::take(&mut self.pending);
        if self.tag.is_some() && rest.last() != Some(&b'\n') {
            rest.push(b'\n');
        }
        self.emit(&rest);
    }

    fn emit(&mut self, data: &[u8]) {
        let text = match &self.tag {
            None => data.to_vec(),
            Some(tag) => {
                let mut tagged = Vec::with_capacity(data.len() + tag.len() * 4);
                for piece in data.split_inclusive(|&b| b == b'\n') {
                    if self.at_line_start {
                        tagged.extend_from_slice(tag.as_bytes());
                    }
                    tagged.extend_from_slice(piece);
                    self.at_line_start = piece.last() == Some(&b'\n');
                }
                tagged
            }
        };
        // Errors (a closed terminal, EPIPE) must not stop the job: the output is just lost.
        let _ = match self.sink {
            Sink::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(&text).and_then(|()| out.flush())
            }
            Sink::Stderr => io::stderr().lock().write_all(&text),
        };
    }
}
