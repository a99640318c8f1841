//! The shared file pointer of a file (MPI-4.1 section 14.4.4): one counter, in etypes of the
//! current view.
//!
//! Members of one node share a page of shared memory holding it and move it with atomic
//! instructions. Its file (`SharedFile`) is released as soon as every member has mapped it,
//! so nothing is left behind. Members on several nodes keep it in
//! a one-sided window of the file's own (8 bytes on rank 0), inside an MPI_Win_lock_all
//! epoch held while the file is open, and move it with Fetch_and_op and a flush (as ROMIO
//! does): rank 0 answers in any MPI call.

use crate::abi::consts::*;
use crate::abi::types::{MPI_Comm, MPI_Op, MPI_Win};
use crate::coll::{self, on_comm};
use crate::error::{MpiResult, err};
use crate::rma::{Local, Rma, TargetSpec};
use crate::transport::shared_file::SharedFile;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes mapped: one page.
const SEGMENT_LEN: usize = 4096;

/// A file's shared pointer.
pub struct SharedPointer(Place);

enum Place {
    /// A shared-memory page mapped here (members of one node).
    Mapped { addr: usize },
    /// An 8-byte window on rank 0 (members on several nodes).
    Window { win: MPI_Win, rma: Arc<Rma> },
}

impl SharedPointer {
    fn counter(addr: usize) -> &'static AtomicU64 {
        // SAFETY: `addr` is a page-aligned shared mapping of SEGMENT_LEN bytes, alive as long
        // as the SharedPointer that holds it (callers borrow it for no longer); every process
        // touches its first 8 bytes only through atomics.
        unsafe { &*(addr as *const AtomicU64) }
    }

    /// Moves the pointer `n` etypes on; returns where it was.
    pub fn fetch_add(&self, n: u64) -> MpiResult<u64> {
        match &self.0 {
            Place::Mapped { addr } => Ok(Self::counter(*addr).fetch_add(n, Ordering::AcqRel)),
            Place::Window { rma, .. } => window_op(rma, n, MPI_SUM, true),
        }
    }

    pub fn load(&self) -> MpiResult<u64> {
        match &self.0 {
            Place::Mapped { addr } => Ok(Self::counter(*addr).load(Ordering::Acquire)),
            Place::Window { rma, .. } => window_op(rma, 0, MPI_NO_OP, true),
        }
    }

    pub fn store(&self, v: u64) -> MpiResult<()> {
        match &self.0 {
            Place::Mapped { addr } => {
                Self::counter(*addr).store(v, Ordering::Release);
                Ok(())
            }
            Place::Window { rma, .. } => window_op(rma, v, MPI_REPLACE, false).map(drop),
        }
    }
}

/// One atomic accumulate of `value` with `op` on the window's counter, completed by a flush;
/// the value before when `fetch`.
fn window_op(rma: &Rma, value: u64, op: MPI_Op, fetch: bool) -> MpiResult<u64> {
    let layout = crate::datatype::layout(MPI_UINT64_T)?;
    let mut old = 0u64;
    let origin = Local { addr: &value as *const u64 as usize, count: 1, layout: &layout };
    let result = Local { addr: &mut old as *mut u64 as usize, count: 1, layout: &layout };
    let target = TargetSpec { rank: 0, disp: 0, count: 1, layout: &layout };
    // SAFETY: `value` and `old` are this frame's, one readable and one writable element each,
    // and the flush below completes the operation before they go.
    unsafe {
        rma.accumulate(&origin, MPI_UINT64_T, fetch.then_some((&result, MPI_UINT64_T)), &target, MPI_UINT64_T, op)?
    };
    rma.flush(Some(0), "the shared file pointer")?;
    Ok(old)
}

impl Drop for SharedPointer {
    fn drop(&mut self) {
        match &self.0 {
            Place::Mapped { addr } => crate::win::unmap(*addr, SEGMENT_LEN),
            // Collective, as the MPI_File_close (or failed open) that drops it.
            Place::Window { win, rma } => {
                if let Err(e) = rma.unlock_all().and_then(|()| crate::win::free(*win)) {
                    log::error!("freeing the shared file pointer's window: {}", e.msg);
                }
            }
        }
    }
}

/// Makes the shared pointer of a file opened on `comm` (collective), starting at `initial`.
pub fn create(comm: MPI_Comm, rank: usize, members: &[usize], initial: u64) -> MpiResult<SharedPointer> {
    let nodes = crate::runtime::with(|rt| Ok(rt.comms.node_ids(&mut crate::runtime::lock_pmi(&rt.pmi))?.to_vec()))?;
    if members.iter().any(|&w| nodes[w] != nodes[members[0]]) {
        return across_nodes(comm, rank, initial);
    }
    // Rank 0 makes, maps and sets the page; its name goes to the others after a status byte.
    const NAME_MAX: usize = 200;
    let mut msg = [0u8; NAME_MAX + 1];
    let mut mine = None;
    // Held until every member has mapped it (`SharedFile`).
    let mut file = None;
    if rank == 0 {
        let label = format!("io-{}-{}", std::process::id(), crate::pmi::random_hex());
        let made = SharedFile::create(&label, SEGMENT_LEN)
            .and_then(|f| crate::win::map_segment(f.name(), SEGMENT_LEN).map(|addr| (f, addr)));
        match made {
            Ok((f, addr)) if f.name().len() <= NAME_MAX => {
                SharedPointer::counter(addr).store(initial, Ordering::Release);
                mine = Some(SharedPointer(Place::Mapped { addr }));
                msg[0] = 1;
                msg[1..1 + f.name().len()].copy_from_slice(f.name().as_bytes());
                file = Some(f);
            }
            Ok((f, addr)) => {
                crate::win::unmap(addr, SEGMENT_LEN);
                log::error!("file shared pointer: the name {} is too long", f.name());
            }
            Err(e) => log::error!("file shared pointer: {}", e.msg),
        }
    }
    on_comm(comm, |g| coll::bcast_bytes(g, &mut msg, 0))?;
    if msg[0] != 1 {
        return err(MPI_ERR_NO_MEM, "cannot create the shared file pointer's page in shared memory");
    }
    if rank != 0 {
        let end = msg[1..].iter().position(|&b| b == 0).unwrap_or(NAME_MAX);
        let name = String::from_utf8_lossy(&msg[1..1 + end]).into_owned();
        mine = crate::win::map_segment(&name, SEGMENT_LEN).ok().map(|addr| SharedPointer(Place::Mapped { addr }));
    }
    let n = members.len();
    let mut votes = vec![0u8; n];
    on_comm(comm, |g| coll::allgather_bytes(g, Some(&[mine.is_some() as u8]), &mut votes, 1))?;
    // Every member has mapped it (or failed): the file is not needed any more.
    drop(file);
    match mine {
        Some(p) if votes.iter().all(|&v| v == 1) => Ok(p),
        _ => err(MPI_ERR_NO_MEM, "cannot map the shared file pointer's page on some rank"),
    }
}

/// The shared pointer of members on several nodes: a window of 8 bytes on rank 0.
fn across_nodes(comm: MPI_Comm, rank: usize, initial: u64) -> MpiResult<SharedPointer> {
    let size = if rank == 0 { 8 } else { 0 };
    let (win, base) = crate::win::create(comm, crate::win::Flavor::Allocate, size, 8, &Default::default())?;
    if rank == 0 {
        // SAFETY: rank 0's 8 bytes of window memory, 8-aligned (MPI_Win_allocate), nobody
        // else's until the barrier below.
        unsafe { (base as *mut u64).write(initial) };
    }
    let rma = crate::win::rma(win)?;
    let pointer = SharedPointer(Place::Window { win, rma: rma.clone() });
    rma.lock_all(0)?;
    on_comm(comm, coll::barrier)?;
    Ok(pointer)
}
