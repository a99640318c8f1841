//! Requests: the state of every point-to-point operation, kept in a slab whose indices are
//! the payload of the MPI_Request handles and travel in packets as request ids.

use super::Envelope;
use super::buffers::{RecvBuf, SendBuf};
use crate::abi::consts::*;

/// How a send completes (MPI send modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    /// Completes only once the receive is matched.
    Sync,
    Ready,
    /// Completes locally; the data was copied (accounted against the attached buffer).
    Buffered,
}

/// What a receive or probe reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub bytes: usize,
    pub cancelled: bool,
    pub error: i32,
}

pub enum Op {
    Send {
        dst: usize,
        env: Envelope,
        buf: SendBuf,
        mode: SendMode,
        /// Bytes accounted against the attached bsend buffer, returned on completion.
        bsend_bytes: usize,
    },
    Recv {
        env: Envelope,
        buf: RecvBuf,
        /// For streamed rendezvous: message length and bytes arrived so far.
        expected: usize,
        arrived: usize,
    },
    /// A message taken out of the queues by MPI_Mprobe/Improbe, waiting for MPI_Mrecv.
    Message(super::Unexpected),
    /// A nonblocking or persistent collective in progress (advanced by `Engine::progress`).
    Coll(Box<crate::coll::sched::Schedule>),
    /// MPI_Isendrecv: completes when both its receive and its send have; reports the
    /// receive's status.
    Pair { recv: u32, send: u32 },
    /// A generalized request (MPI_Grequest_start): complete when the program says so.
    Generalized(Generalized),
    /// A library operation driven by the progress engine (MPI_Comm_idup's agreement).
    Task(Box<dyn Task>),
    /// An active cycle of a partitioned request; its state is the engine's (`part`).
    Partitioned,
    /// A request with nothing to do (persistent and inactive, or completed self-contained).
    Nothing,
}

/// The program's callbacks of a generalized request and their state. The engine only keeps
/// them; the ABI layer calls them (query and free on completion, cancel on MPI_Cancel).
#[derive(Clone, Copy)]
pub struct Generalized {
    pub query: crate::abi::ctypes::MPI_Grequest_query_function,
    pub free: crate::abi::ctypes::MPI_Grequest_free_function,
    pub cancel: crate::abi::ctypes::MPI_Grequest_cancel_function,
    /// The program's `extra_state` pointer, passed back to the callbacks untouched.
    pub extra_state: usize,
    /// The callbacks are Fortran subroutines (the request was started from Fortran): every
    /// argument by reference, the result in a trailing IERROR.
    pub fortran: bool,
}

/// A library operation that completes a request, advanced by `Engine::progress`.
pub trait Task {
    /// Runs what can run now; true once finished (an error also finishes it).
    fn advance(&mut self, e: &mut super::Engine) -> Result<bool, crate::error::MpiError>;

    /// Called when the task is ended before it finished (`Engine::end_task`): undoes what it
    /// left in the engine (posted receives).
    fn end(&mut self, _e: &mut super::Engine) {}

    /// The bytes its status reports once it finished.
    fn bytes(&self) -> usize {
        0
    }

    /// Whether another thread finishes it (a background I/O access): nothing rings this
    /// rank's doorbell then, so a rank waiting on it naps briefly instead of sleeping.
    fn external(&self) -> bool {
        false
    }
}

/// Arguments kept by a persistent request to start it again.
pub struct Persistent {
    pub start: Box<dyn Fn() -> Op>,
    /// Each start is one buffered send (MPI_Bsend_init).
    pub buffered: bool,
}

pub struct Request {
    pub op: Op,
    pub complete: bool,
    pub status: Status,
    /// The communicator handle, for error reporting.
    pub comm: i32,
    pub persistent: Option<Persistent>,
    /// MPI_Request_free was called while active: drop the request when it completes.
    pub freed: bool,
    /// False for a persistent request between completions (and before its first start).
    pub active: bool,
}

impl Request {
    /// A started operation (nonblocking and not persistent).
    #[inline]
    pub fn started(op: Op, comm: i32) -> Request {
        Request { op, complete: false, status: Status::default(), comm, persistent: None, freed: false, active: true }
    }

    /// A request that is complete from the start (MPI_PROC_NULL peers, buffered sends).
    pub fn completed(status: Status, comm: i32) -> Request {
        Request { op: Op::Nothing, complete: true, status, comm, persistent: None, freed: false, active: true }
    }
}

impl Status {
    /// The status of a request that had nothing to do (MPI's "empty" status).
    pub fn empty() -> Status {
        Status { source: MPI_ANY_SOURCE, tag: MPI_ANY_TAG, bytes: 0, cancelled: false, error: MPI_SUCCESS }
    }

    /// The status of a receive from MPI_PROC_NULL.
    pub fn proc_null() -> Status {
        Status { source: MPI_PROC_NULL, tag: MPI_ANY_TAG, bytes: 0, cancelled: false, error: MPI_SUCCESS }
    }
}

/// The id of the one request shared by every send that completed as it started (an eager
/// message written straight into the peer's ring): such a send has no state left, so it needs
/// no slot of its own. It is complete, never removed, and may be waited on, tested or freed
/// any number of times (MPICH's lightweight requests do the same).
pub const COMPLETED_SEND: u32 = 0;

/// Slab of requests. Ids are reused after `free`; id `COMPLETED_SEND` is reserved.
pub struct Slab {
    slots: Vec<Option<Request>>,
    free: Vec<u32>,
}

impl Default for Slab {
    fn default() -> Slab {
        let done = Request::completed(Status::default(), MPI_COMM_NULL);
        Slab { slots: vec![Some(done)], free: Vec::new() }
    }
}

impl Slab {
    // Inline: the caller builds the request straight into the slot, not on its stack first.
    #[inline(always)]
    pub fn insert(&mut self, r: Request) -> u32 {
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = Some(r);
            id
        } else {
            self.slots.push(Some(r));
            (self.slots.len() - 1) as u32
        }
    }

    #[inline]
    pub fn get(&self, id: u32) -> Option<&Request> {
        self.slots.get(id as usize)?.as_ref()
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut Request> {
        self.slots.get_mut(id as usize)?.as_mut()
    }

    /// Takes request `id` out; None when there is none (and for the shared `COMPLETED_SEND`,
    /// which stays).
    pub fn remove(&mut self, id: u32) -> Option<Request> {
        if id == COMPLETED_SEND {
            return None;
        }
        let r = self.slots.get_mut(id as usize)?.take();
        if r.is_some() {
            self.free.push(id);
        }
        r
    }

    /// Drops request `id` in place (no move out of the slab, unlike `remove`).
    #[inline]
    pub fn discard(&mut self, id: u32) {
        if id != COMPLETED_SEND
            && let Some(slot) = self.slots.get_mut(id as usize)
            && slot.is_some()
        {
            *slot = None;
            self.free.push(id);
        }
    }

    /// Requests in use (the shared `COMPLETED_SEND` not counted).
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dummy() -> Request {
        Request::completed(Status::default(), 0)
    }

    #[test]
    fn slab_reuses_ids() {
        let mut s = Slab::default();
        let a = s.insert(dummy());
        let b = s.insert(dummy());
        assert_ne!(a, b);
        assert!(s.remove(a).is_some());
        assert!(s.remove(a).is_none());
        assert_eq!(s.insert(dummy()), a);
        assert_eq!(s.live(), 2);
    }

    #[test]
    fn the_shared_completed_send_stays() {
        let mut s = Slab::default();
        assert_eq!(s.live(), 0);
        assert!(s.get(COMPLETED_SEND).is_some_and(|r| r.complete));
        assert!(s.remove(COMPLETED_SEND).is_none());
        s.discard(COMPLETED_SEND);
        assert!(s.get(COMPLETED_SEND).is_some());
        assert_ne!(s.insert(dummy()), COMPLETED_SEND);
    }
}
