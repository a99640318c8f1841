//! Signals as poll(2) events: a handler writes the signal number into a pipe the main loop
//! watches (the self-pipe trick), so SIGCHLD, SIGINT, SIGTERM and SIGHUP all wake the one
//! event loop without races.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// Write end of the self-pipe, read by the signal handler.
static SIGNAL_PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

/// The signals whose arrival ends the job (forwarded to the ranks).
pub const TERMINATING: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_signal(signo: libc::c_int) {
    let fd = SIGNAL_PIPE_WRITE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = signo as u8;
        // SAFETY: write(2) is async-signal-safe; the buffer is a live local. A full pipe just
        // drops the byte, which is fine: the loop only needs to wake once per kind.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

/// The read side of the self-pipe.
pub struct SignalPipe {
    read_end: File,
}

impl SignalPipe {
    /// Installs the handlers. Call once, before starting children.
    pub fn install() -> io::Result<SignalPipe> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills the two-element array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just created fds[0] and nothing else owns it.
        let read_end = unsafe { File::from_raw_fd(fds[0]) };
        SIGNAL_PIPE_WRITE.store(fds[1], Ordering::Relaxed);
        for signo in TERMINATING.iter().copied().chain([libc::SIGCHLD]) {
            // SAFETY: a zeroed sigaction is a valid starting point; we set handler and flags.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART | if signo == libc::SIGCHLD { libc::SA_NOCLDSTOP } else { 0 };
            // SAFETY: valid action; the handler only calls write(2) on an fd that lives
            // for the rest of the process. Children get default dispositions back at exec.
            if unsafe { libc::sigaction(signo, &action, std::ptr::null_mut()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(SignalPipe { read_end })
    }

    pub fn fd(&self) -> RawFd {
        self.read_end.as_raw_fd()
    }

    /// The signals that arrived since the last call (SIGCHLD included).
    pub fn drain(&mut self) -> Vec<i32> {
        let mut signals = Vec::new();
        let mut buffer = [0u8; 64];
        while let Ok(n) = self.read_end.read(&mut buffer) {
            if n == 0 {
                break;
            }
            signals.extend(buffer[..n].iter().map(|&b| i32::from(b)));
        }
        signals
    }
}

/// A signal's name as `strsignal(3)` gives it ("Killed", "Segmentation fault").
pub fn describe(signo: i32) -> String {
    // SAFETY: strsignal returns a pointer to a static or thread-local string, read at once.
    let text = unsafe { libc::strsignal(signo) };
    if text.is_null() {
        return format!("signal {signo}");
    }
    // SAFETY: non-null result of strsignal is a NUL-terminated C string.
    unsafe { std::ffi::CStr::from_ptr(text) }.to_string_lossy().into_owned()
}
