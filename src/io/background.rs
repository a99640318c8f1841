//! Nonblocking independent accesses moved in the background: the calling thread checks and
//! positions the access (`access::prepare`), one I/O thread of the process makes its system
//! calls, and the request completes when the progress engine sees the outcome (a task that
//! another thread finishes: waiting ranks nap briefly, `Task::external`). Computation and
//! communication go on meanwhile. Accesses run one after the other in the order started;
//! closing or syncing a file waits for its accesses still running.

use super::access::Prepared;
use crate::error::MpiResult;
use crate::p2p::Engine;
use crate::p2p::request::Task;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

type Job = Box<dyn FnOnce() + Send>;

/// The I/O thread's queue, the thread started with the first access.
static QUEUE: Mutex<Option<Sender<Job>>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Hands `job` to the I/O thread, starting it if need be; returns it when no thread could
/// be started.
fn queue(job: Job) -> Result<(), Job> {
    let mut q = lock(&QUEUE);
    let sender = match &*q {
        Some(s) => s.clone(),
        None => {
            let (tx, rx) = channel::<Job>();
            let started = std::thread::Builder::new().name("oxmpi-io".into()).spawn(move || {
                for job in rx {
                    job();
                }
            });
            if started.is_err() {
                return Err(job);
            }
            *q = Some(tx.clone());
            tx
        }
    };
    sender.send(job).map_err(|e| e.0)
}

/// The accesses of one file still running (`File::background`).
#[derive(Default)]
pub struct Running {
    count: Mutex<usize>,
    idle: Condvar,
}

impl Running {
    fn begin(&self) {
        *lock(&self.count) += 1;
    }

    fn end(&self) {
        let mut n = lock(&self.count);
        *n -= 1;
        if *n == 0 {
            self.idle.notify_all();
        }
    }

    /// Waits until none is running.
    pub fn wait_idle(&self) {
        let mut n = lock(&self.count);
        while *n > 0 {
            n = self.idle.wait(n).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Where the I/O thread leaves an access's outcome.
type Outcome = Arc<Mutex<Option<MpiResult<usize>>>>;

/// The request's side of a background access.
struct Access {
    outcome: Outcome,
    bytes: usize,
}

impl Task for Access {
    fn advance(&mut self, _e: &mut Engine) -> MpiResult<bool> {
        match lock(&self.outcome).take() {
            None => Ok(false),
            Some(Ok(n)) => {
                self.bytes = n;
                Ok(true)
            }
            Some(Err(e)) => Err(e),
        }
    }

    fn bytes(&self) -> usize {
        self.bytes
    }

    fn external(&self) -> bool {
        true
    }
}

/// Starts `access` in the background (on this thread when it must run in the call,
/// `Prepared::runs_in_call`, or no I/O thread could start); returns the task of its request.
///
/// # Safety
/// The access's memory stays valid until the request completes (the program's contract
/// for a nonblocking access).
pub unsafe fn start(access: Prepared) -> Box<dyn Task> {
    let outcome: Outcome = Arc::new(Mutex::new(None));
    if access.runs_in_call() {
        // SAFETY: the caller's contract.
        *lock(&outcome) = Some(unsafe { access.run() });
        return Box::new(Access { outcome, bytes: 0 });
    }
    // The job holds the file only inside `run`: the last reference to a file must not go on
    // this thread, since dropping a file is collective (MPI_File_close waits for `end`).
    let running = access.file.background.clone();
    running.begin();
    let slot = outcome.clone();
    let job: Job = Box::new(move || {
        // SAFETY: the caller's contract: the memory stays valid until the outcome is seen.
        let moved = unsafe { access.run() };
        *lock(&slot) = Some(moved);
        running.end();
    });
    if let Err(job) = queue(job) {
        job();
    }
    Box::new(Access { outcome, bytes: 0 })
}
