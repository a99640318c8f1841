//! One-sided operations toward members of a window on other nodes by RDMA: the engine's side
//! (`rma` decides which operations go this way and waits for them at synchronisation).
//!
//! A member exposes its window memory on every rail (`expose_window`) and the others write
//! into it or read from it (`window_access`) without its CPU where the NIC does RMA. An
//! access that cannot start now (no free transfer slot, too many blocks for the provider)
//! returns None and the caller sends a message instead: Put and Get have no order to keep.

use super::{Engine, config};
use crate::transport::Route;
use crate::transport::net::{Net, Way, WindowKeys};

/// Token bit of window accesses (`Net::take_finished`), above the request-id tokens'.
pub(super) const WINDOW_ACCESS: u64 = 1 << 34;

/// Whether Put and Get toward members on other nodes go by RDMA: by default wherever the
/// provider does RMA, even emulated over TCP (there the target's provider applies them in
/// its progress, as its agent would apply requests, and they measured as fast or faster:
/// docs/performance.md); `OXMPI_NET_RDMA_RMA` chooses.
pub(super) fn rdma_windows(net: &Net) -> bool {
    net.can_read() && config::switch_var(config::NET_RDMA_RMA).unwrap_or(true)
}

impl Engine {
    /// Whether this process reaches members' windows on other nodes by RDMA.
    pub fn window_rdma(&self) -> bool {
        self.window_rdma
    }

    /// Exposes `len` bytes of window memory at `addr` to the other members' RDMA; returns
    /// the exposure's token (for `withdraw_window`) and what peers need to reach it, or None
    /// when this process has no RDMA for windows or the provider refused the registration.
    ///
    /// # Safety
    /// The memory stays allocated until `withdraw_window`.
    pub unsafe fn expose_window(&mut self, addr: usize, len: usize) -> Option<(u64, WindowKeys)> {
        if !self.window_rdma || len == 0 {
            return None;
        }
        let token = self.new_window_token();
        // SAFETY: the caller's contract.
        let keys = unsafe { self.net.as_mut()?.expose_window(addr, len, token)? };
        Some((token, keys))
    }

    /// Ends an exposure of `expose_window`, once no member accesses the window any more.
    pub fn withdraw_window(&mut self, token: u64) {
        if let Some(net) = self.net.as_mut() {
            net.withdraw(token);
        }
    }

    /// Starts a write (`Way::Out`: from the memory `blocks`, `len` bytes) or a read
    /// (`Way::In`: into them) of the window bytes from `offset` on of world rank `peer`,
    /// which exposed them with `keys`; returns its token for `window_access_done`, or None
    /// when it cannot start now (the caller then sends a request instead).
    ///
    /// # Safety
    /// The blocks stay valid (readable for a write, writable for a read) and untouched
    /// until `window_access_done` says the access is done.
    pub unsafe fn window_access(
        &mut self,
        way: Way,
        peer: usize,
        blocks: &[(usize, usize)],
        len: usize,
        keys: &WindowKeys,
        offset: u64,
    ) -> Option<u64> {
        if !self.window_rdma || peer >= self.nranks || self.route[peer] != Route::Net {
            return None;
        }
        let net = self.net.as_mut()?;
        if !net.can_direct(len, way) || keys.rails < net.stripes(peer, len) {
            return None;
        }
        let split = net.split_for(peer, blocks, len)?;
        let token = self.new_window_token();
        // SAFETY: the caller's contract; the checks above are `window_access`'s.
        unsafe { self.net.as_mut()?.window_access(way, peer, blocks, len, keys, offset, split, token) };
        self.rndv_in_flight += 1;
        self.stats.rdma_window_accesses += 1;
        Some(token)
    }

    /// A token for an exposure or an access, unlike any other in flight.
    fn new_window_token(&mut self) -> u64 {
        self.next_window_token = self.next_window_token.wrapping_add(1);
        WINDOW_ACCESS | u64::from(self.next_window_token)
    }

    /// Whether the window access `token` is done (true once: the token is forgotten).
    pub fn window_access_done(&mut self, token: u64) -> bool {
        self.window_accesses_done.remove(&token)
    }

    /// Whether the window access `token` is done, leaving it for `window_access_done`.
    pub fn window_access_seen(&self, token: u64) -> bool {
        self.window_accesses_done.contains(&token)
    }
}
