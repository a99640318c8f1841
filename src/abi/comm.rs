//! Communicator entry points: rank, size, compare, names; construction (dup, split,
//! split_type, create, create_group) and free; attributes and their keyvals; hints.
//!
//! Attribute copy and delete callbacks are user C code that may call MPI, so they run here,
//! between `runtime::with` calls, never inside one.

use super::attr::CommAttrs;
use super::consts::*;
use super::ctypes::{
    MPI_Comm_copy_attr_function, MPI_Comm_delete_attr_function, MPI_Copy_function, MPI_Delete_function,
};
use super::types::*;
use crate::attr::{self, AttrType, AttrValue};
use crate::comm::construct;
use crate::error::{MpiResult, err};
use crate::runtime;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

pub unsafe fn MPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) -> MpiResult {
    if rank.is_null() {
        return err(MPI_ERR_ARG, "invalid rank pointer (NULL)");
    }
    let r = runtime::with(|rt| Ok(rt.comms.get(comm)?.rank))?;
    // SAFETY: checked non-null.
    unsafe { *rank = r as c_int };
    Ok(())
}

pub unsafe fn MPI_Comm_size(comm: MPI_Comm, size: *mut c_int) -> MpiResult {
    if size.is_null() {
        return err(MPI_ERR_ARG, "invalid size pointer (NULL)");
    }
    let n = runtime::with(|rt| Ok(rt.comms.get(comm)?.size()))?;
    // SAFETY: checked non-null.
    unsafe { *size = n as c_int };
    Ok(())
}

fn non_null<T>(p: *const T, what: &str) -> MpiResult<()> {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in parameter {what}")) } else { Ok(()) }
}

/// Hands a newly made communicator (or MPI_COMM_NULL) to C. A new communicator inherits the
/// error handler of its parent.
///
/// # Safety
/// `newcomm` was checked non-null and is writable.
unsafe fn store_new(parent: MPI_Comm, made: Option<MPI_Comm>, newcomm: *mut MPI_Comm) -> MpiResult {
    if let Some(h) = made {
        crate::errhandler::on_comm_dup(parent, h);
    }
    // SAFETY: caller contract.
    unsafe { *newcomm = made.unwrap_or(MPI_COMM_NULL) };
    Ok(())
}

/// Deletes every attribute of `comm`, most recently set first (MPI requires that order for
/// MPI_COMM_SELF at MPI_Finalize), through their delete callbacks.
fn delete_all_attributes(comm: MPI_Comm) -> MpiResult {
    super::attr::delete_all::<CommAttrs>(comm)
}

/// Called first thing in MPI_Finalize: deletes the attributes of MPI_COMM_SELF, then of
/// MPI_COMM_WORLD, running their delete callbacks while MPI is still usable.
pub fn delete_attributes_at_finalize() -> MpiResult {
    delete_all_attributes(MPI_COMM_SELF)?;
    delete_all_attributes(MPI_COMM_WORLD)
}

/// Copies the attributes of `parent` onto its duplicate `child` through their copy callbacks.
/// On a failing callback the duplicate is freed and the callback's error returned.
fn copy_attributes(parent: MPI_Comm, child: MPI_Comm) -> MpiResult {
    super::attr::copy_all::<CommAttrs>(parent, child).inspect_err(|_| {
        let _ = free_communicator(child);
    })
}

/// MPI_Comm_dup's work: a new context, the error handler and copied attributes.
fn duplicate(comm: MPI_Comm) -> MpiResult<MPI_Comm> {
    let h = construct(|rt| rt.comms.dup(&mut rt.engine, comm))?.expect("a duplicate exists on every member");
    crate::errhandler::on_comm_dup(comm, h);
    copy_attributes(comm, h)?;
    Ok(h)
}

/// MPI_Comm_free's work: attribute delete callbacks, then the communicator itself.
pub(super) fn free_communicator(h: MPI_Comm) -> MpiResult {
    runtime::with(|rt| {
        rt.comms.get(h)?;
        if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
            return err(MPI_ERR_COMM, "cannot free a predefined communicator");
        }
        Ok(())
    })?;
    delete_all_attributes(h)?;
    runtime::with(|rt| rt.comms.free(h))?;
    crate::errhandler::on_comm_free(h);
    Ok(())
}

/// The new communicator of a dup, or MPI_COMM_NULL in `newcomm` when it failed (an attribute
/// copy callback refused, say), as MPICH leaves it.
unsafe fn duplicate_into(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> MpiResult<MPI_Comm> {
    duplicate(comm).inspect_err(|_| {
        // SAFETY: the caller checked newcomm non-null.
        unsafe { *newcomm = MPI_COMM_NULL }
    })
}

pub unsafe fn MPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) -> MpiResult {
    non_null(newcomm, "newcomm")?;
    let h = unsafe { duplicate_into(comm, newcomm)? };
    // SAFETY: checked non-null.
    unsafe { *newcomm = h };
    Ok(())
}

/// The communicator hints this library knows (the assertions of MPI-4 section 7.4.4); as
/// MPICH does, MPI_Comm_set_info and the `_with_info` constructors drop every other key, so
/// MPI_Comm_get_info returns only hints in use.
const COMM_HINTS: [&str; 4] =
    ["mpi_assert_no_any_tag", "mpi_assert_no_any_source", "mpi_assert_exact_length", "mpi_assert_allow_overtaking"];

/// The communicator hints of info object `info` (MPI_INFO_NULL: none).
fn comm_hints(info: MPI_Info) -> MpiResult<crate::info::Info> {
    let mut hints = crate::info::get_or_empty(info)?;
    hints.entries.retain(|(k, _)| COMM_HINTS.contains(&k.as_str()));
    Ok(hints)
}

/// MPI_Comm_dup_with_info: as MPI_Comm_dup, with the hints of `info` instead of the parent's.
pub unsafe fn MPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) -> MpiResult {
    non_null(newcomm, "newcomm")?;
    let hints = comm_hints(info)?;
    let h = unsafe { duplicate_into(comm, newcomm)? };
    runtime::with(|rt| {
        rt.comms.get_mut(h)?.hints = hints;
        Ok(())
    })?;
    // SAFETY: checked non-null.
    unsafe { *newcomm = h };
    Ok(())
}

/// MPI_Comm_idup(_with_info)'s work: the new handle at once (attributes copied, error
/// handler inherited, the hints `hints` if given) and the request of its agreement.
///
/// # Safety
/// `newcomm` and `request` were checked non-null and are writable.
unsafe fn start_idup(
    comm: MPI_Comm,
    hints: Option<crate::info::Info>,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    let (h, req) = runtime::with(|rt| rt.comms.idup(&mut rt.engine, comm))?;
    if let Some(hints) = hints {
        runtime::with(|rt| {
            rt.comms.get_mut(h)?.hints = hints;
            Ok(())
        })?;
    }
    crate::errhandler::on_comm_dup(comm, h);
    // SAFETY: caller contract.
    unsafe {
        *newcomm = h;
        *request = super::p2p::request_handle(req);
    }
    copy_attributes(comm, h)
}

pub unsafe fn MPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    non_null(newcomm, "newcomm")?;
    non_null(request, "request")?;
    // SAFETY: checked non-null.
    unsafe { start_idup(comm, None, newcomm, request) }
}

pub unsafe fn MPI_Comm_idup_with_info(
    comm: MPI_Comm,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    let hints = comm_hints(info)?;
    non_null(newcomm, "newcomm")?;
    non_null(request, "request")?;
    // SAFETY: checked non-null.
    unsafe { start_idup(comm, Some(hints), newcomm, request) }
}

pub unsafe fn MPI_Comm_free(comm: *mut MPI_Comm) -> MpiResult {
    non_null(comm, "comm")?;
    // SAFETY: checked non-null.
    let h = unsafe { *comm };
    free_communicator(h)?;
    // SAFETY: checked non-null.
    unsafe { *comm = MPI_COMM_NULL };
    Ok(())
}

pub unsafe fn MPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    if color < 0 && color != MPI_UNDEFINED {
        return err(MPI_ERR_ARG, format!("invalid color argument (color={color}, must be >= 0 or MPI_UNDEFINED)"));
    }
    non_null(newcomm, "newcomm")?;
    let made = construct(|rt| rt.comms.split(&mut rt.engine, comm, color, key))?;
    // SAFETY: checked non-null.
    unsafe { store_new(comm, made, newcomm) }
}

/// The key of MPI_COMM_TYPE_HW_GUIDED's info that names the kind of hardware resource.
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";
/// Resource types of MPI_COMM_TYPE_HW_GUIDED known here: all of them span one node.
const NODE_RESOURCES: [&str; 2] = ["mpi_shared_memory", "machine"];
/// The key of MPIX_COMM_TYPE_NEIGHBORHOOD's info naming a directory: processes that see it
/// share a file system (all of one node here).
const NBHD_DIRNAME: &str = "nbhd_common_dirname";

pub unsafe fn MPI_Comm_split_type(
    comm: MPI_Comm,
    split_type: c_int,
    key: c_int,
    info: MPI_Info,
    newcomm: *mut MPI_Comm,
) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    let hints = crate::info::get_or_empty(info)?;
    let known = [
        MPI_UNDEFINED,
        MPI_COMM_TYPE_SHARED,
        MPI_COMM_TYPE_HW_GUIDED,
        MPI_COMM_TYPE_HW_UNGUIDED,
        MPIX_COMM_TYPE_NEIGHBORHOOD,
    ];
    if !known.contains(&split_type) {
        return err(MPI_ERR_ARG, format!("invalid split_type argument ({split_type})"));
    }
    non_null(newcomm, "newcomm")?;
    let made = construct(|rt| {
        let c = rt.comms.get(comm)?;
        let members = c.members.clone();
        let me = c.members[c.rank];
        let nodes = rt.comms.node_ids(&mut crate::runtime::lock_pmi(&rt.pmi))?;
        let my_node = nodes[me] as c_int;
        let color = match split_type {
            MPI_COMM_TYPE_SHARED => my_node,
            // The node is the one resource known here; for any other the standard gives
            // MPI_COMM_NULL.
            MPI_COMM_TYPE_HW_GUIDED if hints.get(HW_RESOURCE_TYPE).is_some_and(|t| NODE_RESOURCES.contains(&t)) => {
                my_node
            }
            // The node is the only level below the whole job known here: use it when it is
            // strictly smaller than the parent, as the standard requires, else MPI_COMM_NULL.
            MPI_COMM_TYPE_HW_UNGUIDED if members.iter().any(|&w| nodes[w] != nodes[me]) => my_node,
            MPIX_COMM_TYPE_NEIGHBORHOOD
                if hints.get(NBHD_DIRNAME).is_some_and(|d| std::path::Path::new(d).is_dir()) =>
            {
                my_node
            }
            _ => MPI_UNDEFINED,
        };
        rt.comms.split(&mut rt.engine, comm, color, key)
    })?;
    if let Some(h) = made {
        // The assertions given with the split belong to the new communicator.
        let asserted = comm_hints(info)?;
        runtime::with(|rt| {
            rt.comms.get_mut(h)?.hints = asserted;
            Ok(())
        })?;
    }
    if split_type == MPI_COMM_TYPE_HW_UNGUIDED && made.is_some() && info != MPI_INFO_NULL {
        // MPI-4: the info object returns the kind of resource the split used.
        crate::info::with(info, |i| {
            i.set(HW_RESOURCE_TYPE, NODE_RESOURCES[0]);
            Ok(())
        })?;
    }
    // SAFETY: checked non-null.
    unsafe { store_new(comm, made, newcomm) }
}

pub unsafe fn MPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    let g = crate::group::get(group)?;
    non_null(newcomm, "newcomm")?;
    let made = construct(|rt| rt.comms.create(&mut rt.engine, comm, &g.members))?;
    // SAFETY: checked non-null.
    unsafe { store_new(comm, made, newcomm) }
}

pub unsafe fn MPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    let g = crate::group::get(group)?;
    if !(0..=super::p2p::TAG_UB).contains(&tag) {
        return err(MPI_ERR_TAG, format!("invalid tag argument (tag={tag})"));
    }
    non_null(newcomm, "newcomm")?;
    let made = construct(|rt| rt.comms.create_group(comm, &g.members, tag))?;
    // SAFETY: checked non-null.
    unsafe { store_new(comm, made, newcomm) }
}

pub unsafe fn MPI_Comm_group(comm: MPI_Comm, group: *mut MPI_Group) -> MpiResult {
    let members = runtime::with(|rt| Ok(rt.comms.get(comm)?.members.clone()))?;
    non_null(group, "group")?;
    let h = crate::group::insert(crate::group::Group::new(members))?;
    // SAFETY: checked non-null.
    unsafe { *group = h };
    Ok(())
}

pub unsafe fn MPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) -> MpiResult {
    let inter = runtime::with(|rt| Ok(rt.comms.get(comm)?.is_inter()))?;
    non_null(flag, "flag")?;
    // SAFETY: checked non-null.
    unsafe { *flag = inter as c_int };
    Ok(())
}

/// The remote group of an intercommunicator (MPI_ERR_COMM on an intracommunicator).
fn remote_members(comm: MPI_Comm) -> MpiResult<Vec<usize>> {
    runtime::with(|rt| match &rt.comms.get(comm)?.remote {
        Some(r) => Ok(r.clone()),
        None => err(MPI_ERR_COMM, format!("communicator 0x{:08x} is not an intercommunicator", comm as u32)),
    })
}

pub unsafe fn MPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) -> MpiResult {
    let n = remote_members(comm)?.len();
    non_null(size, "size")?;
    // SAFETY: checked non-null.
    unsafe { *size = n as c_int };
    Ok(())
}

pub unsafe fn MPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) -> MpiResult {
    let members = remote_members(comm)?;
    non_null(group, "group")?;
    let h = crate::group::insert(crate::group::Group::new(members))?;
    // SAFETY: checked non-null.
    unsafe { *group = h };
    Ok(())
}

pub unsafe fn MPI_Intercomm_create(
    local_comm: MPI_Comm,
    local_leader: c_int,
    peer_comm: MPI_Comm,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut MPI_Comm,
) -> MpiResult {
    runtime::with(|rt| rt.comms.get(local_comm).map(|_| ()))?;
    if !(0..=super::p2p::TAG_UB).contains(&tag) {
        return err(MPI_ERR_TAG, format!("invalid tag argument (tag={tag})"));
    }
    non_null(newintercomm, "newintercomm")?;
    let made =
        construct(|rt| rt.comms.intercomm_create(&rt.engine, local_comm, local_leader, peer_comm, remote_leader, tag))?;
    // SAFETY: checked non-null.
    unsafe { store_new(local_comm, made, newintercomm) }
}

/// Reads the string tag of the group-based constructors.
///
/// # Safety
/// `stringtag` is null or a NUL-terminated string.
unsafe fn read_stringtag(stringtag: *const c_char) -> MpiResult<String> {
    non_null(stringtag, "stringtag")?;
    // SAFETY: checked non-null; C passes a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(stringtag) }.to_string_lossy().into_owned())
}

/// The error handler a group-based constructor attaches (MPI_ERRHANDLER_NULL: the default).
fn check_new_errhandler(errhandler: MPI_Errhandler) -> MpiResult<Option<MPI_Errhandler>> {
    if errhandler == MPI_ERRHANDLER_NULL {
        return Ok(None);
    }
    crate::errhandler::check(errhandler, crate::errhandler::HandlerKind::Comm)?;
    Ok(Some(errhandler))
}

/// MPI_ERR_RANK unless `leader` is a rank of a group of `size`.
fn check_leader(leader: c_int, size: usize, what: &str) -> MpiResult<usize> {
    if leader < 0 || leader as usize >= size {
        return err(MPI_ERR_RANK, format!("invalid {what} argument (rank={leader}, group size {size})"));
    }
    Ok(leader as usize)
}

pub unsafe fn MPI_Intercomm_create_from_groups(
    local_group: MPI_Group,
    local_leader: c_int,
    remote_group: MPI_Group,
    remote_leader: c_int,
    stringtag: *const c_char,
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    newintercomm: *mut MPI_Comm,
) -> MpiResult {
    let local = crate::group::get(local_group)?;
    let remote = crate::group::get(remote_group)?;
    let local_leader = check_leader(local_leader, local.size(), "local_leader")?;
    let remote_leader = check_leader(remote_leader, remote.size(), "remote_leader")?;
    // SAFETY: C passes a NUL-terminated string.
    let tag = unsafe { read_stringtag(stringtag) }?;
    let hints = comm_hints(info)?;
    let eh = check_new_errhandler(errhandler)?;
    non_null(newintercomm, "newintercomm")?;
    let h = construct(|rt| {
        rt.comms.intercomm_create_from_groups(&local.members, local_leader, &remote.members, remote_leader, &tag)
    })?
    .expect("the caller is a member of local_group");
    runtime::with(|rt| {
        rt.comms.get_mut(h)?.hints = hints;
        Ok(())
    })?;
    if let Some(eh) = eh {
        crate::errhandler::set_comm_errhandler(h, eh);
    }
    // SAFETY: checked non-null.
    unsafe { *newintercomm = h };
    Ok(())
}

pub unsafe fn MPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) -> MpiResult {
    runtime::with(|rt| rt.comms.get(intercomm).map(|_| ()))?;
    non_null(newintracomm, "newintracomm")?;
    let made = construct(|rt| rt.comms.intercomm_merge(&mut rt.engine, intercomm, high != 0))?;
    // SAFETY: checked non-null.
    unsafe { store_new(intercomm, made, newintracomm) }
}

pub unsafe fn MPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm).map(|_| ()))?;
    let hints = comm_hints(info)?;
    runtime::with(|rt| {
        let c = rt.comms.get_mut(comm)?;
        for (k, v) in &hints.entries {
            c.hints.set(k, v);
        }
        Ok(())
    })
}

pub unsafe fn MPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) -> MpiResult {
    let hints = runtime::with(|rt| Ok(rt.comms.get(comm)?.hints.clone()))?;
    non_null(info_used, "info_used")?;
    let h = crate::info::insert(hints)?;
    // SAFETY: checked non-null.
    unsafe { *info_used = h };
    Ok(())
}

pub unsafe fn MPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) -> MpiResult {
    if result.is_null() {
        return err(MPI_ERR_ARG, "invalid result pointer (NULL)");
    }
    let r = runtime::with(|rt| rt.comms.compare(comm1, comm2))?;
    // SAFETY: checked non-null.
    unsafe { *result = r };
    Ok(())
}

pub unsafe fn MPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) -> MpiResult {
    if comm_name.is_null() {
        return err(MPI_ERR_ARG, "invalid name pointer (NULL)");
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(comm_name) }.to_string_lossy();
    let max = MPI_MAX_OBJECT_NAME as usize - 1;
    let name: String = name.chars().take(max).collect();
    runtime::with(|rt| {
        rt.comms.get_mut(comm)?.name = name;
        Ok(())
    })
}

pub unsafe fn MPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) -> MpiResult {
    if comm_name.is_null() || resultlen.is_null() {
        return err(MPI_ERR_ARG, "invalid name or resultlen pointer (NULL)");
    }
    let name = runtime::with(|rt| Ok(rt.comms.get(comm)?.name.clone()))?;
    // SAFETY: MPI requires room for MPI_MAX_OBJECT_NAME characters; names are shorter.
    unsafe { *resultlen = super::errors::write_c_string(&name, comm_name, MPI_MAX_OBJECT_NAME as usize) as c_int };
    Ok(())
}

/// Values of the predefined communicator attributes. MPI hands out pointers to them, so they
/// live in statics; they are set when MPI is initialised.
static ATTR_TAG_UB: AtomicI32 = AtomicI32::new(super::p2p::TAG_UB);
static ATTR_HOST: AtomicI32 = AtomicI32::new(MPI_PROC_NULL);
static ATTR_IO: AtomicI32 = AtomicI32::new(MPI_ANY_SOURCE);
static ATTR_WTIME_IS_GLOBAL: AtomicI32 = AtomicI32::new(0);
static ATTR_UNIVERSE_SIZE: AtomicI32 = AtomicI32::new(1);
static ATTR_APPNUM: AtomicI32 = AtomicI32::new(0);
static ATTR_LASTUSEDCODE: AtomicI32 = AtomicI32::new(0);

fn cell_is(a: &AtomicI32, b: &AtomicI32) -> bool {
    std::ptr::eq(a, b)
}

/// The value cell of a predefined communicator keyval; the Fortran form of a keyval is the C
/// value + 1 and asks for the integer itself rather than a pointer.
fn predefined_attr(keyval: c_int) -> Option<(&'static AtomicI32, bool)> {
    let by_value = keyval & 1 == 0;
    let c_keyval = if by_value { keyval - 1 } else { keyval };
    let cell = match c_keyval {
        MPI_TAG_UB => &ATTR_TAG_UB,
        MPI_HOST => &ATTR_HOST,
        MPI_IO => &ATTR_IO,
        MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_IS_GLOBAL,
        MPI_UNIVERSE_SIZE => &ATTR_UNIVERSE_SIZE,
        MPI_APPNUM => &ATTR_APPNUM,
        MPI_LASTUSEDCODE => &ATTR_LASTUSEDCODE,
        _ => return None,
    };
    Some((cell, by_value))
}

pub unsafe fn MPI_Comm_get_attr(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { get_attr_as(comm, comm_keyval, attribute_val, flag, AttrType::Pointer) }
}

/// MPI_Comm_get_attr for a caller of form `reader`: a Fortran reader (or the Fortran form of
/// a predefined keyval) gets the value of a predefined attribute rather than a pointer to it.
///
/// # Safety
/// `attribute_val` is null (rejected) or points at 8 writable bytes; `flag` null or writable.
pub(super) unsafe fn get_attr_as(
    comm: MPI_Comm,
    comm_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
    reader: AttrType,
) -> MpiResult {
    let Some((cell, fortran_keyval)) = predefined_attr(comm_keyval) else {
        // SAFETY: forwarded contract.
        return unsafe { super::attr::get_attr::<CommAttrs>(comm, comm_keyval, attribute_val, flag, reader) };
    };
    let (universe, appnum) = runtime::with(|rt| {
        rt.comms.get(comm)?;
        Ok((rt.universe_size, rt.pmi().appnum()))
    })?;
    if attribute_val.is_null() || flag.is_null() {
        return err(MPI_ERR_ARG, "invalid attribute_val or flag pointer (NULL)");
    }
    if cell_is(cell, &ATTR_UNIVERSE_SIZE) {
        // Unset when the process manager gives none (as MPICH under Hydra without -usize):
        // any number of processes may be spawned.
        let Some(universe) = universe else {
            // SAFETY: flag checked non-null.
            unsafe { *flag = 0 };
            return Ok(());
        };
        ATTR_UNIVERSE_SIZE.store(universe.min(c_int::MAX as usize) as c_int, Ordering::Relaxed);
    }
    ATTR_APPNUM.store(appnum, Ordering::Relaxed);
    ATTR_LASTUSEDCODE.store(crate::errhandler::last_used_code(), Ordering::Relaxed);
    // SAFETY: attribute_val points at a `void *` (C) or an address-sized integer (Fortran),
    // both 8 bytes; flag checked non-null.
    unsafe {
        if fortran_keyval || reader.is_fortran() {
            *(attribute_val as *mut MPI_Aint) = cell.load(Ordering::Relaxed) as MPI_Aint;
        } else {
            *(attribute_val as *mut *const AtomicI32) = cell;
        }
        *flag = 1;
    }
    Ok(())
}

pub unsafe fn MPI_Comm_set_attr(comm: MPI_Comm, comm_keyval: c_int, attribute_val: *mut c_void) -> MpiResult {
    super::attr::set_attr::<CommAttrs>(comm, comm_keyval, AttrValue::pointer(attribute_val as usize))
}

pub unsafe fn MPI_Comm_delete_attr(comm: MPI_Comm, comm_keyval: c_int) -> MpiResult {
    super::attr::delete_attr::<CommAttrs>(comm, comm_keyval)
}

pub unsafe fn MPI_Comm_create_keyval(
    comm_copy_attr_fn: MPI_Comm_copy_attr_function,
    comm_delete_attr_fn: MPI_Comm_delete_attr_function,
    comm_keyval: *mut c_int,
    extra_state: *mut c_void,
) -> MpiResult {
    non_null(comm_keyval, "comm_keyval")?;
    let k = attr::create(comm_copy_attr_fn, comm_delete_attr_fn, extra_state as usize)?;
    // SAFETY: checked non-null.
    unsafe { *comm_keyval = k };
    Ok(())
}

pub unsafe fn MPI_Comm_free_keyval(comm_keyval: *mut c_int) -> MpiResult {
    non_null(comm_keyval, "comm_keyval")?;
    // SAFETY: checked non-null.
    attr::free(unsafe { *comm_keyval })?;
    // SAFETY: checked non-null.
    unsafe { *comm_keyval = MPI_KEYVAL_INVALID };
    Ok(())
}

/// MPI-1 name of `MPI_Comm_create_keyval` (the callback types have the same shape).
pub unsafe fn MPI_Keyval_create(
    copy_fn: MPI_Copy_function,
    delete_fn: MPI_Delete_function,
    keyval: *mut c_int,
    extra_state: *mut c_void,
) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state) }
}

/// MPI-1 name of `MPI_Comm_free_keyval`.
pub unsafe fn MPI_Keyval_free(keyval: *mut c_int) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { MPI_Comm_free_keyval(keyval) }
}

/// MPI-1 name of `MPI_Comm_set_attr`.
pub unsafe fn MPI_Attr_put(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { MPI_Comm_set_attr(comm, keyval, attribute_val) }
}

/// MPI-1 name of `MPI_Comm_get_attr`.
pub unsafe fn MPI_Attr_get(comm: MPI_Comm, keyval: c_int, attribute_val: *mut c_void, flag: *mut c_int) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { MPI_Comm_get_attr(comm, keyval, attribute_val, flag) }
}

/// MPI-1 name of `MPI_Comm_delete_attr`.
pub unsafe fn MPI_Attr_delete(comm: MPI_Comm, keyval: c_int) -> MpiResult {
    // SAFETY: forwarded contract.
    unsafe { MPI_Comm_delete_attr(comm, keyval) }
}
