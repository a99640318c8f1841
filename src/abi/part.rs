//! Partitioned communication entry points (MPI-4.1 chapter 4): decode and check the
//! arguments, then call the engine (`crate::p2p::part`). Start, wait, test and free go through
//! the persistent-request entries of `p2p`.

use super::consts::*;
use super::p2p::{Peer, check_buffer, check_count, request_handle, request_id, send_args};
use super::types::*;
use crate::error::{MpiResult, err};
use crate::p2p::buffers::{RecvBuf, SendBuf};
use crate::p2p::part::Link;
use crate::runtime::{self, Runtime};
use std::ffi::{c_int, c_void};

/// The checked arguments of a partitioned initialization: the peer, the elements of the whole
/// buffer, the size of one partition.
struct Init {
    link: Option<Link>,
    layout: crate::datatype::Layout,
    elements: usize,
    /// Elements of one partition and bytes of data of one element.
    part: (usize, usize),
}

fn check_init(
    rt: &Runtime,
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    peer: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<Init> {
    if partitions < 1 {
        return err(MPI_ERR_ARG, format!("invalid number of partitions ({partitions}; at least 1)"));
    }
    check_count(count)?;
    // Partitioned operations take no wildcards (MPI-4.1 4.2.2): the send-side checks apply
    // to both sides (a real rank or MPI_PROC_NULL, a tag from 0 to MPI_TAG_UB).
    let a = send_args(rt, count, datatype, peer, tag, comm)?;
    let elements = (partitions as usize)
        .checked_mul(a.count)
        .filter(|n| n.checked_mul(a.layout.size).is_some())
        .ok_or_else(|| crate::error::MpiError::new(MPI_ERR_COUNT, "partitions times count is too large"))?;
    check_buffer(buf, elements, &a.layout)?;
    let link = match a.peer {
        Peer::Rank { rank, world } => Some(Link { world, ctx: a.env.ctx, me: a.env.src, peer: rank, tag: a.env.tag }),
        _ => None,
    };
    Ok(Init { link, part: (a.count, a.layout.size), layout: a.layout, elements })
}

pub unsafe fn MPI_Psend_init(
    buf: *const c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
    _info: MPI_Info,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    runtime::with(|rt| {
        let a = check_init(rt, buf, partitions, count, datatype, dest, tag, comm)?;
        // SAFETY: MPI requires the buffer to stay valid while the request exists and
        // unmodified while a partition marked ready is in flight.
        let sbuf = unsafe { SendBuf::new(buf.cast(), a.layout, a.elements) };
        let id = rt.engine.psend_init(sbuf, partitions as usize, a.part, a.link, comm);
        // SAFETY: checked non-null above.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

pub unsafe fn MPI_Precv_init(
    buf: *mut c_void,
    partitions: c_int,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    _info: MPI_Info,
    request: *mut MPI_Request,
) -> MpiResult {
    if request.is_null() {
        return err(MPI_ERR_ARG, "invalid request pointer (NULL)");
    }
    if source == MPI_ANY_SOURCE {
        return err(MPI_ERR_RANK, "MPI_Precv_init takes no MPI_ANY_SOURCE");
    }
    if tag == MPI_ANY_TAG {
        return err(MPI_ERR_TAG, "MPI_Precv_init takes no MPI_ANY_TAG");
    }
    runtime::with(|rt| {
        let a = check_init(rt, buf, partitions, count, datatype, source, tag, comm)?;
        // SAFETY: MPI requires the buffer to stay valid while the request exists; the library
        // writes it only while the request is active.
        let rbuf = unsafe { RecvBuf::new(buf.cast(), a.layout, a.elements) };
        let id = rt.engine.precv_init(rbuf, partitions as usize, a.part, a.link, comm);
        // SAFETY: checked non-null above.
        unsafe { *request = request_handle(id) };
        Ok(())
    })
}

fn pready(request: MPI_Request, partitions: impl IntoIterator<Item = i64>) -> MpiResult {
    runtime::with(|rt| {
        let id = request_id(&rt.engine, request)?;
        rt.engine.pready(id, partitions)
    })
}

pub unsafe fn MPI_Pready(partition: c_int, request: MPI_Request) -> MpiResult {
    pready(request, [partition as i64])
}

pub unsafe fn MPI_Pready_range(partition_low: c_int, partition_high: c_int, request: MPI_Request) -> MpiResult {
    if partition_low > partition_high {
        return err(MPI_ERR_ARG, format!("invalid partition range ({partition_low} > {partition_high})"));
    }
    pready(request, partition_low as i64..=partition_high as i64)
}

pub unsafe fn MPI_Pready_list(length: c_int, array_of_partitions: *mut c_int, request: MPI_Request) -> MpiResult {
    let n = check_count(length as i64)?;
    if n == 0 {
        return runtime::with(|rt| request_id(&rt.engine, request).map(|_| ()));
    }
    if array_of_partitions.is_null() {
        return err(MPI_ERR_ARG, "invalid array of partitions (NULL)");
    }
    // SAFETY: checked non-null; the caller passes an array of `length` partition numbers.
    let list = unsafe { std::slice::from_raw_parts(array_of_partitions, n) };
    pready(request, list.iter().map(|&p| p as i64))
}

pub unsafe fn MPI_Parrived(request: MPI_Request, partition: c_int, flag: *mut c_int) -> MpiResult {
    if flag.is_null() {
        return err(MPI_ERR_ARG, "invalid flag pointer (NULL)");
    }
    runtime::with(|rt| {
        let arrived = if request == MPI_REQUEST_NULL {
            true
        } else {
            let id = request_id(&rt.engine, request)?;
            rt.engine.progress();
            rt.engine.parrived(id, partition as i64)?
        };
        // SAFETY: checked non-null.
        unsafe { *flag = arrived as c_int };
        Ok(())
    })
}
