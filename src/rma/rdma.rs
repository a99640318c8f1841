//! Put and Get toward members on other nodes by RDMA of their registered window memory
//! (`p2p::Engine::window_access`), where the network does RMA and `OXMPI_NET_RDMA_RMA`
//! allows: the target's CPU takes no part where the NIC does RMA.
//!
//! Only operations whose target data is contiguous go this way (one remote region); the
//! origin's data may be in blocks (the provider's iovecs). Accumulates stay with the
//! target's agent (`remote`): they must be atomic with respect to those of the target's
//! node, which are read-modify-writes under its accumulate lock. Put and Get have no order
//! to keep among themselves or with accumulates, so one that cannot start now (no free
//! transfer slot) goes as a request instead.
//!
//! A write's completion says its data is in the target's memory (delivery complete), so
//! synchronisation waits for the accesses before the requests that end an epoch (unlock,
//! flush, complete, fence's barrier): `finish_rdma`, called first by `remote::round_trips`.

use super::{Local, Place, Rma};
use crate::error::MpiResult;
use crate::runtime;
use crate::transport::net::Way;

impl Rma {
    /// Puts (`Way::Out`) or gets (`Way::In`) `origin`'s data to or from target `t`, reached
    /// by messages: by RDMA when it can, else as a request to its agent.
    ///
    /// # Safety
    /// As `access_by_rdma`.
    pub(super) unsafe fn put_or_get_remote(&self, way: Way, t: usize, place: &Place, origin: &Local) -> MpiResult<()> {
        // SAFETY (all three): the caller's contract.
        if unsafe { self.access_by_rdma(way, t, place, origin)? } {
            return Ok(());
        }
        match way {
            Way::Out => unsafe { self.put_by_message(t, place, origin) },
            Way::In => unsafe { self.get_by_message(t, place, origin) },
        }
    }

    /// Puts (`Way::Out`) or gets (`Way::In`) `origin`'s data to or from target `t`'s
    /// `place` by RDMA; false (nothing done) when this cannot be done now or at all that
    /// way, for the caller to send a request instead.
    ///
    /// # Safety
    /// `origin` holds its elements, readable for a Put, writable for a Get, and left alone
    /// until the operation completes (MPI's rule for origin buffers).
    unsafe fn access_by_rdma(&self, way: Way, t: usize, place: &Place, origin: &Local) -> MpiResult<bool> {
        let Some(keys) = self.rdma_keys[t] else { return Ok(false) };
        let len = place.bytes();
        let Some(at) = place.layout.contiguous_at() else { return Ok(false) };
        if len == 0 {
            return Ok(false);
        }
        // Members elsewhere are addressed by offsets from their base (`resolve` checked the
        // range against the window's size).
        let offset = place.addr.wrapping_add_signed(at) as u64;
        let blocks = origin.blocks();
        runtime::with(|rt| {
            // SAFETY: the caller's contract; the blocks are the origin's data.
            let started = unsafe { rt.engine.window_access(way, self.worlds[t], &blocks, len, &keys, offset) };
            let Some(token) = started else { return Ok(false) };
            self.rdma_pending()[t].push(token);
            Ok(true)
        })
    }

    /// Waits until the RDMA accesses toward `targets` issued so far are done.
    pub(super) fn finish_rdma(&self, targets: &[usize]) -> MpiResult<()> {
        let waiting = |p: &[Vec<u64>]| targets.iter().any(|&t| !p[t].is_empty());
        if !waiting(&self.rdma_pending()) {
            return Ok(());
        }
        runtime::blocking(
            |_| Ok(()),
            |e, _| {
                let p = self.rdma_pending();
                targets.iter().all(|&t| p[t].iter().all(|&token| e.window_access_seen(token)))
            },
            |rt, _| {
                // Another thread may have collected some meanwhile: they are done too.
                let mut p = self.rdma_pending();
                for &t in targets {
                    p[t].retain(|&token| !rt.engine.window_access_done(token));
                }
                Ok((!waiting(&p)).then_some(()))
            },
        )
    }
}
