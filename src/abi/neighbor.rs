//! Neighbourhood collective entry points (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v,w),
//! their MPI_Ineighbor_* and MPI_Neighbor_*_init forms): check the arguments, decode the
//! buffers into one block per neighbour with the helpers of `abi::coll`, and call
//! `crate::coll::neighbor`.
//!
//! Each family is one impl (`MPI_Neighbor_X_c` with a `Mode`); build.rs generates the
//! `MPI_Ineighbor_X`, `MPI_Neighbor_X_init` and `int` forms from it (`CArray` reads arrays of
//! either width; see `abi::family`).

// The entry points take MPI's C argument lists as they are.
#![allow(clippy::too_many_arguments)]

use super::coll::{
    Region, Spread, Types, alltoall_blocks, borrow_pair, check_count, check_not_in_place, keep_pair, schedule,
};
use super::family::{CArray, Mode};
use super::types::*;
use crate::coll::Group;
use crate::coll::neighbor::{self, Neighbors};
use crate::datatype::{self, Layout};
use crate::error::MpiResult;
use crate::runtime;
use std::ffi::c_void;

/// What a rank sends: the same block to every destination (allgather), or one block per
/// destination (alltoall).
#[derive(Clone, Copy)]
enum Sends {
    Same(i64, MPI_Datatype),
    Each(Spread, Types),
}

fn varying(counts: CArray, displs: CArray) -> Spread {
    Spread::Varying { counts, displs }
}

/// The count and datatype checks that need no neighbour count (MPICH makes them before it
/// looks at the topology).
fn check_uniform(spread: Spread, types: Types, what: &str) -> MpiResult {
    if let Spread::Uniform(c) = spread {
        check_count(c, what)?;
    }
    if let Types::One(dt) = types {
        datatype::layout(dt)?;
    }
    Ok(())
}

/// The blocks of a buffer split among `n` neighbours. A rank without neighbours may pass NULL
/// arrays, so they are read only when `n` > 0.
///
/// # Safety
/// Arrays hold `n` elements (or are NULL).
unsafe fn blocks(spread: Spread, types: Types, n: usize, what: &str) -> MpiResult<Vec<(i64, usize, Layout)>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: forwarded from the caller.
    unsafe { alltoall_blocks(spread, types, n, what) }
}

/// Every neighbourhood collective.
///
/// # Safety
/// The buffers and arrays match the counts and the communicator's neighbour counts, as MPI
/// requires; for the nonblocking and persistent modes they stay valid as long as MPI says.
unsafe fn neighbor_coll(
    sendbuf: *const c_void,
    sends: Sends,
    recvbuf: *mut c_void,
    recv: Spread,
    recvtypes: Types,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    super::coll::in_mode(mode, |mode| {
        runtime::with(|rt| {
            let c = rt.comms.get(comm)?;
            match sends {
                Sends::Same(count, dt) => check_uniform(Spread::Uniform(count), Types::One(dt), "sendcount")?,
                Sends::Each(spread, types) => check_uniform(spread, types, "sendcount")?,
            }
            check_uniform(recv, recvtypes, "recvcount")?;
            let nb = Neighbors::of(c)?;
            check_not_in_place(sendbuf, "sendbuf")?;
            check_not_in_place(recvbuf, "recvbuf")?;
            let send_blocks = match sends {
                Sends::Same(count, dt) => {
                    // SAFETY: a uniform spread reads no array.
                    let one = unsafe { alltoall_blocks(Spread::Uniform(count), Types::One(dt), 1, "sendcount")? };
                    vec![one[0].clone(); nb.outdegree()]
                }
                // SAFETY: the caller's arrays of outdegree elements.
                Sends::Each(spread, types) => unsafe { blocks(spread, types, nb.outdegree(), "sendcounts")? },
            };
            // SAFETY: the caller's arrays of indegree elements.
            let recv_blocks = unsafe { blocks(recv, recvtypes, nb.indegree(), "recvcounts")? };
            let (send, recv) = (Region::new(sendbuf, &send_blocks), Region::new(recvbuf, &recv_blocks));
            send.check_not_null("sendbuf")?;
            recv.check_not_null("recvbuf")?;
            let (send, recv) = (Some(send), Some(recv));
            let mut g = Group::new(&mut rt.engine, c);
            if let Mode::Blocking = mode {
                // SAFETY: the caller's buffers, valid for this call.
                let (send, recv) = unsafe { borrow_pair(send, recv) };
                return neighbor::exchange(&mut g, &nb, send.expect("send buffer"), recv.expect("receive buffer"));
            }
            // SAFETY: the caller's buffers, valid while the operation (or persistent request) lasts.
            let (send, recv) = unsafe { keep_pair(send, recv) };
            let send = send.expect("send buffer");
            schedule(&mut g, comm, mode, None, recv, move |s| {
                let outgoing = (0..send.blocks.len()).map(|i| send.pack(i)).collect();
                neighbor::schedule(s, &nb, outgoing)
            })
        })
    })
}

/// Allgather(v): the send block to every destination, `recv` split among the sources.
///
/// # Safety
/// As `neighbor_coll`.
unsafe fn allgather(
    sendbuf: *const c_void,
    sendcount: i64,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recv: Spread,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let sends = Sends::Same(sendcount, sendtype);
    // SAFETY: forwarded from the caller.
    unsafe { neighbor_coll(sendbuf, sends, recvbuf, recv, Types::One(recvtype), comm, mode) }
}

/// Alltoall(v,w): one block per destination and per source.
///
/// # Safety
/// As `neighbor_coll`.
unsafe fn alltoall(
    sendbuf: *const c_void,
    send: Spread,
    sendtypes: Types,
    recvbuf: *mut c_void,
    recv: Spread,
    recvtypes: Types,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    // SAFETY: forwarded from the caller.
    unsafe { neighbor_coll(sendbuf, Sends::Each(send, sendtypes), recvbuf, recv, recvtypes, comm, mode) }
}

// ----- the five families (build.rs generates their MPI_I..., ..._init and int forms) -----

pub unsafe fn MPI_Neighbor_allgather_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let r = Spread::Uniform(recvcount);
    // SAFETY: forwarded from the caller.
    unsafe { allgather(sendbuf, sendcount, sendtype, recvbuf, r, recvtype, comm, mode) }
}

pub unsafe fn MPI_Neighbor_allgatherv_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    displs: CArray,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let r = varying(recvcounts, displs);
    // SAFETY: forwarded from the caller.
    unsafe { allgather(sendbuf, sendcount, sendtype, recvbuf, r, recvtype, comm, mode) }
}

pub unsafe fn MPI_Neighbor_alltoall_c(
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (s, r) = (Spread::Uniform(sendcount), Spread::Uniform(recvcount));
    let (st, rt) = (Types::One(sendtype), Types::One(recvtype));
    // SAFETY: forwarded from the caller.
    unsafe { alltoall(sendbuf, s, st, recvbuf, r, rt, comm, mode) }
}

pub unsafe fn MPI_Neighbor_alltoallv_c(
    sendbuf: *const c_void,
    sendcounts: CArray,
    sdispls: CArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    rdispls: CArray,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (s, r) = (varying(sendcounts, sdispls), varying(recvcounts, rdispls));
    let (st, rt) = (Types::One(sendtype), Types::One(recvtype));
    // SAFETY: forwarded from the caller.
    unsafe { alltoall(sendbuf, s, st, recvbuf, r, rt, comm, mode) }
}

/// Byte displacements, `MPI_Aint` in both forms (only the counts differ in width).
pub unsafe fn MPI_Neighbor_alltoallw_c(
    sendbuf: *const c_void,
    sendcounts: CArray,
    sdispls: CArray,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CArray,
    rdispls: CArray,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
    mode: Mode,
) -> MpiResult {
    let (s, r) = (varying(sendcounts, sdispls), varying(recvcounts, rdispls));
    let (st, rt) = (Types::PerRank(sendtypes), Types::PerRank(recvtypes));
    // SAFETY: forwarded from the caller.
    unsafe { alltoall(sendbuf, s, st, recvbuf, r, rt, comm, mode) }
}
