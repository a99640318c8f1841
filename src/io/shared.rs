//! The shared file pointer of a file (MPI-4.1 section 14.4.4): one counter, in etypes of the
//! current view, in a page of shared memory that every member maps. Its file in /dev/shm is
//! named with the job's prefix and unlinked as soon as every member has mapped it, so
//! nothing is left behind. Members must share a node; across nodes the shared-pointer
//! functions report that they are not implemented yet.

use crate::abi::consts::*;
use crate::abi::types::MPI_Comm;
use crate::coll::{self, on_comm};
use crate::error::{MpiResult, err};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes mapped: one page.
const SEGMENT_LEN: usize = 4096;

/// A mapped shared-pointer page.
pub struct SharedPointer {
    addr: usize,
}

impl SharedPointer {
    fn counter(&self) -> &AtomicU64 {
        // SAFETY: `addr` is a page-aligned shared mapping of SEGMENT_LEN bytes, alive as long
        // as `self`; every process touches its first 8 bytes only through atomics.
        unsafe { &*(self.addr as *const AtomicU64) }
    }

    /// Moves the pointer `n` etypes on; returns where it was.
    pub fn fetch_add(&self, n: u64) -> u64 {
        self.counter().fetch_add(n, Ordering::AcqRel)
    }

    pub fn load(&self) -> u64 {
        self.counter().load(Ordering::Acquire)
    }

    pub fn store(&self, v: u64) {
        self.counter().store(v, Ordering::Release)
    }
}

impl Drop for SharedPointer {
    fn drop(&mut self) {
        crate::win::unmap(self.addr, SEGMENT_LEN);
    }
}

/// Makes the shared pointer of a file opened on `comm` (collective), starting at `initial`.
/// Returns None when the members do not share a node.
pub fn create(comm: MPI_Comm, rank: usize, members: &[usize], initial: u64) -> MpiResult<Option<SharedPointer>> {
    let nodes = crate::runtime::with(|rt| Ok(rt.comms.node_ids(&mut rt.pmi)?.to_vec()))?;
    if members.iter().any(|&w| nodes[w] != nodes[members[0]]) {
        return Ok(None);
    }
    // Rank 0 makes, maps and sets the page; its name goes to the others after a status byte.
    const NAME_MAX: usize = 200;
    let mut msg = [0u8; NAME_MAX + 1];
    let mut mine = None;
    let path =
        format!("/dev/shm/{}io-{}-{}", crate::coll::hier::job_prefix(), std::process::id(), crate::pmi::random_hex());
    if rank == 0 {
        let made =
            crate::win::create_segment(&path, SEGMENT_LEN).and_then(|()| crate::win::map_segment(&path, SEGMENT_LEN));
        match made {
            Ok(addr) => {
                let p = SharedPointer { addr };
                p.store(initial);
                mine = Some(p);
                msg[0] = 1;
                msg[1..1 + path.len()].copy_from_slice(path.as_bytes());
            }
            Err(e) => log::error!("file shared pointer: {}", e.msg),
        }
    }
    on_comm(comm, |g| coll::bcast_bytes(g, &mut msg, 0))?;
    if msg[0] != 1 {
        return err(MPI_ERR_NO_MEM, "cannot create the shared file pointer's page in /dev/shm");
    }
    if rank != 0 {
        let end = msg[1..].iter().position(|&b| b == 0).unwrap_or(NAME_MAX);
        let name = String::from_utf8_lossy(&msg[1..1 + end]).into_owned();
        mine = crate::win::map_segment(&name, SEGMENT_LEN).ok().map(|addr| SharedPointer { addr });
    }
    let n = members.len();
    let mut votes = vec![0u8; n];
    on_comm(comm, |g| coll::allgather_bytes(g, Some(&[mine.is_some() as u8]), &mut votes, 1))?;
    if rank == 0 {
        // Every member has mapped it (or failed): the name is not needed any more.
        let _ = std::fs::remove_file(&path);
    }
    if votes.iter().any(|&v| v != 1) {
        return err(MPI_ERR_NO_MEM, "cannot map the shared file pointer's page on some rank");
    }
    Ok(mine)
}
