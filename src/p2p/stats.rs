//! Counts the engine keeps for the tools interface's performance variables (`crate::tool`):
//! plain integers updated under the runtime's lock where a message is handed to a transport
//! or matched by a receive, so they cost an add each whether or not a tool reads them.

use crate::transport::Route;

/// Messages and bytes of one direction, by route (`Route as usize`: itself, shm, net).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub messages: [u64; 3],
    pub bytes: [u64; 3],
}

impl Traffic {
    #[inline(always)]
    pub fn add(&mut self, route: Route, len: usize) {
        self.messages[route as usize] += 1;
        self.bytes[route as usize] += len as u64;
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages handed to a transport (eager or a request to send), once per send started.
    pub sent: Traffic,
    /// Messages matched by a receive (posted, from the unexpected queue or taken straight
    /// from a ring), once per receive.
    pub received: Traffic,
    /// Sends to other ranks that went by rendezvous (a request to send first); the others
    /// went eagerly.
    pub rendezvous_sent: u64,
    /// Rendezvous messages from other nodes received by an RDMA read of the sender's buffer.
    pub rdma_reads: u64,
    /// One-sided Puts and Gets toward members on other nodes done by RDMA.
    pub rdma_window_accesses: u64,
    /// Packets from other nodes taken from RDMA eager rings (filled in by `Engine::stats`).
    pub ring_packets: u64,
    /// Most messages the unexpected queue held at once.
    pub unexpected_high: u64,
    /// Messages in the unexpected queue now (filled in by `Engine::stats`).
    pub unexpected_now: u64,
}
