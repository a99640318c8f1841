//! Transports: every peer has one route, fixed at start-up from the node map. `shm` connects
//! the ranks of one node through a shared segment, `net` connects nodes through libfabric;
//! messages to oneself never leave the process (handled by the point-to-point engine).
//!
//! The point-to-point protocols send packets (`shm::Packet` and a payload) through a
//! `Channel`, the send side of the peer's route, so both kinds of peers share matching,
//! ordering and progress; the engine reads each transport's arrivals in its progress loop.

pub mod net;
pub mod shared_file;
pub mod shm;

use net::Net;
use shm::{Packet, Segment};

/// How this rank reaches a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Itself: messages are matched in place.
    Me,
    /// A rank of the same node: the shared segment.
    Shm,
    /// A rank of another node: the network.
    Net,
}

/// The send side of a route, for one packet or a batch of them.
pub enum Channel<'a> {
    Shm(&'a mut Segment),
    Net(&'a mut Net),
}

/// The channel of `route` (Shm or Net) over the transports the engine holds.
#[inline]
pub fn channel<'a>(route: Route, shm: &'a mut Option<Segment>, net: &'a mut Option<Net>) -> Channel<'a> {
    match route {
        Route::Shm => Channel::Shm(shm.as_mut().expect("a peer on this node without a segment")),
        Route::Net => Channel::Net(net.as_mut().expect("a peer on another node without a network endpoint")),
        Route::Me => unreachable!("packets to oneself never reach a transport"),
    }
}

impl Channel<'_> {
    /// Whether a packet to `dst` can go now (a free slot or send buffer).
    #[inline]
    pub fn can_send(&self, dst: usize) -> bool {
        match self {
            Channel::Shm(s) => s.can_send(dst),
            Channel::Net(n) => n.can_send(dst),
        }
    }

    /// Sends `packet` with `payload` bytes that `fill` writes (it gets `payload_capacity`
    /// bytes). The caller checked `can_send` and calls `notify` after a batch.
    #[inline]
    pub fn send(&mut self, dst: usize, packet: &Packet, payload: usize, fill: impl FnOnce(&mut [u8])) {
        match self {
            Channel::Shm(s) => s.send(dst, packet, payload, fill),
            Channel::Net(n) => n.send(dst, packet, payload, fill),
        }
    }

    /// An eager message of `bytes` (at most `payload_capacity`).
    #[inline]
    pub fn send_eager(&mut self, dst: usize, context: u32, src: i32, tag: i32, bytes: &[u8]) {
        match self {
            Channel::Shm(s) => s.send_eager(dst, context, src, tag, bytes),
            Channel::Net(n) => {
                let pk = eager_packet(context, src, tag, bytes.len());
                n.send(dst, &pk, bytes.len(), |out| out[..bytes.len()].copy_from_slice(bytes))
            }
        }
    }

    /// An eager message of `len` bytes that `fill` writes (it gets exactly `len` bytes).
    #[inline]
    pub fn send_eager_with(
        &mut self,
        dst: usize,
        context: u32,
        src: i32,
        tag: i32,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
    ) {
        match self {
            Channel::Shm(s) => s.send_eager_with(dst, context, src, tag, len, fill),
            Channel::Net(n) => n.send(dst, &eager_packet(context, src, tag, len), len, |out| fill(&mut out[..len])),
        }
    }

    /// Payload bytes one packet carries at most.
    #[inline]
    pub fn payload_capacity(&self) -> usize {
        match self {
            Channel::Shm(s) => s.geometry().payload_capacity(),
            Channel::Net(_) => net::PAYLOAD_CAPACITY,
        }
    }

    /// Whether the receiver can read this process's memory at the addresses a packet names
    /// (single-copy rendezvous offers): only on one node.
    #[inline]
    pub fn reaches_sender_memory(&self) -> bool {
        matches!(self, Channel::Shm(_))
    }

    /// After a batch of sends to `dst`: wakes it if it sleeps (the network needs no doorbell).
    #[inline]
    pub fn notify(&self, dst: usize) {
        if let Channel::Shm(s) = self {
            s.notify(dst)
        }
    }
}

fn eager_packet(context: u32, src: i32, tag: i32, len: usize) -> Packet {
    Packet { kind: shm::EAGER_KIND, context, src, tag, len: len as u64, ..Default::default() }
}
