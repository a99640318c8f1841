//! Dynamic processes at the ABI edge: MPI_Comm_spawn, MPI_Comm_spawn_multiple,
//! MPI_Comm_get_parent, MPI_Comm_disconnect. Decodes the C arguments; the work is in
//! `comm::spawn`.

use super::consts::*;
use super::family::Mode;
use super::types::*;
use crate::error::{MpiResult, err};
use crate::pmi::SpawnCommand;
use crate::runtime;
use std::ffi::{CStr, c_char, c_int};

fn non_null<T>(p: *const T, what: &str) -> MpiResult<()> {
    if p.is_null() { err(MPI_ERR_ARG, format!("null pointer in parameter {what}")) } else { Ok(()) }
}

/// A C string argument.
///
/// # Safety
/// `p` is null (an error) or a NUL-terminated string.
unsafe fn c_string(p: *const c_char, what: &str) -> MpiResult<String> {
    non_null(p, what)?;
    // SAFETY: checked non-null; C passes a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// The arguments of a spawned program: a NULL-terminated array of strings, or
/// MPI_ARGV_NULL (a null pointer): none.
///
/// # Safety
/// `argv` is null or points at string pointers ending with a null one.
unsafe fn c_argv(argv: *const *mut c_char) -> MpiResult<Vec<String>> {
    let mut args = Vec::new();
    if argv.is_null() {
        return Ok(args);
    }
    for i in 0.. {
        // SAFETY: the array ends with a null pointer, not reached yet.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: a non-null entry is a NUL-terminated string.
        args.push(unsafe { c_string(p, "argv") }?);
    }
    Ok(args)
}

/// One command of a spawn, as the root reads it.
///
/// # Safety
/// As for `c_string` and `c_argv`.
unsafe fn command(
    program: *const c_char,
    argv: *const *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
) -> MpiResult<SpawnCommand> {
    // SAFETY: forwarded contract.
    let program = unsafe { c_string(program, "command") }?;
    // SAFETY: forwarded contract.
    let args = unsafe { c_argv(argv) }?;
    if maxprocs <= 0 {
        return err(MPI_ERR_ARG, format!("invalid maxprocs argument ({maxprocs}): at least 1 process"));
    }
    let info = crate::info::get_or_empty(info)?;
    Ok(SpawnCommand { program, args, maxprocs: maxprocs as usize, info: info.entries })
}

/// Runs a spawn whose commands `read` gives at the root, and stores the results.
///
/// # Safety
/// `intercomm` is writable (checked non-null); `errcodes` is null (MPI_ERRCODES_IGNORE) or
/// holds one int per process spawned.
unsafe fn spawn_with(
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    errcodes: *mut c_int,
    read: impl FnOnce() -> MpiResult<Vec<SpawnCommand>>,
) -> MpiResult {
    non_null(intercomm, "intercomm")?;
    let (rank, size) = runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        Ok((c.rank, c.size()))
    })?;
    if root < 0 || root as usize >= size {
        return err(MPI_ERR_ROOT, format!("invalid root argument (root={root}, communicator size {size})"));
    }
    let root = root as usize;
    // Argument errors at the root travel to every parent (they would wait for it otherwise).
    let commands = if rank == root { read() } else { Ok(Vec::new()) };
    let outcome = crate::comm::spawn::spawn(comm, root, commands)?;
    if !errcodes.is_null() {
        for (i, &code) in outcome.errcodes.iter().enumerate() {
            // SAFETY: the caller's array holds one int per process spawned.
            unsafe { *errcodes.add(i) = code };
        }
    }
    // SAFETY: checked non-null.
    unsafe { *intercomm = outcome.intercomm.unwrap_or(MPI_COMM_NULL) };
    if let Some(h) = outcome.intercomm {
        crate::errhandler::on_comm_dup(comm, h);
    }
    match outcome.error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// # Safety
/// C's contract for MPI_Comm_spawn.
pub unsafe fn MPI_Comm_spawn(
    command: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> MpiResult {
    // SAFETY: forwarded contract; the root reads its arguments.
    unsafe {
        spawn_with(root, comm, intercomm, array_of_errcodes, || Ok(vec![self::command(command, argv, maxprocs, info)?]))
    }
}

/// # Safety
/// C's contract for MPI_Comm_spawn_multiple.
pub unsafe fn MPI_Comm_spawn_multiple(
    count: c_int,
    array_of_commands: *mut *mut c_char,
    array_of_argv: *mut *mut *mut c_char,
    array_of_maxprocs: *const c_int,
    array_of_info: *const MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    intercomm: *mut MPI_Comm,
    array_of_errcodes: *mut c_int,
) -> MpiResult {
    let read = || {
        if count <= 0 {
            return err(MPI_ERR_ARG, format!("invalid count argument ({count})"));
        }
        non_null(array_of_commands, "array_of_commands")?;
        non_null(array_of_maxprocs, "array_of_maxprocs")?;
        non_null(array_of_info, "array_of_info")?;
        (0..count as usize)
            .map(|i| {
                // SAFETY: the arrays hold `count` entries (MPI_ARGVS_NULL: no argv array).
                unsafe {
                    let argv = if array_of_argv.is_null() { std::ptr::null_mut() } else { *array_of_argv.add(i) };
                    command(*array_of_commands.add(i), argv, *array_of_maxprocs.add(i), *array_of_info.add(i))
                }
            })
            .collect::<MpiResult<Vec<_>>>()
    };
    // SAFETY: forwarded contract.
    unsafe { spawn_with(root, comm, intercomm, array_of_errcodes, read) }
}

/// # Safety
/// `parent` is null (an error) or writable.
pub unsafe fn MPI_Comm_get_parent(parent: *mut MPI_Comm) -> MpiResult {
    non_null(parent, "parent")?;
    let h = runtime::with(|rt| Ok(rt.comms.parent))?;
    // SAFETY: checked non-null.
    unsafe { *parent = h };
    Ok(())
}

/// MPI_Comm_disconnect: waits until what this process sent on `comm` has left, meets the
/// other members (a barrier, so their traffic to it has arrived too), then frees it.
///
/// # Safety
/// `comm` is null (an error) or points at a communicator handle, set to MPI_COMM_NULL.
pub unsafe fn MPI_Comm_disconnect(comm: *mut MPI_Comm) -> MpiResult {
    non_null(comm, "comm")?;
    // SAFETY: checked non-null.
    let h = unsafe { *comm };
    runtime::with(|rt| {
        let c = rt.comms.get(h)?;
        if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
            return err(MPI_ERR_COMM, "cannot disconnect a predefined communicator");
        }
        crate::comm::spawn::wait_sent(&mut rt.engine, c);
        Ok(())
    })?;
    // SAFETY: a live communicator handle.
    super::coll::in_mode(Mode::Blocking, |m| unsafe { super::coll::MPI_Barrier(h, m) })?;
    super::comm::free_communicator(h)?;
    // SAFETY: checked non-null.
    unsafe { *comm = MPI_COMM_NULL };
    Ok(())
}

/// # Safety
/// `port_name` is null (an error) or has room for MPI_MAX_PORT_NAME characters.
pub unsafe fn MPI_Open_port(info: MPI_Info, port_name: *mut c_char) -> MpiResult {
    non_null(port_name, "port_name")?;
    crate::info::get_or_empty(info)?;
    let name = crate::comm::spawn::open_port()?;
    // SAFETY: checked non-null; MPI gives it MPI_MAX_PORT_NAME characters.
    unsafe { super::errors::write_c_string(&name, port_name, MPI_MAX_PORT_NAME as usize) };
    Ok(())
}

/// # Safety
/// `port_name` is null (an error) or a NUL-terminated string.
pub unsafe fn MPI_Close_port(port_name: *const c_char) -> MpiResult {
    // SAFETY: forwarded contract.
    let port = unsafe { c_string(port_name, "port_name") }?;
    crate::comm::spawn::close_port(&port)
}

/// MPI_Comm_accept / MPI_Comm_connect.
///
/// # Safety
/// As for those: `port_name` read at the root only; `newcomm` writable.
unsafe fn accept_or_connect(
    port_name: *const c_char,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    accept: bool,
) -> MpiResult {
    non_null(newcomm, "newcomm")?;
    let (rank, size) = runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        Ok((c.rank, c.size()))
    })?;
    if root < 0 || root as usize >= size {
        return err(MPI_ERR_ROOT, format!("invalid root argument (root={root}, communicator size {size})"));
    }
    let root = root as usize;
    // SAFETY: forwarded contract (the root's string).
    let port = if rank == root { unsafe { c_string(port_name, "port_name") } } else { Ok(String::new()) };
    let made = crate::comm::spawn::accept_or_connect(comm, root, port, accept);
    // SAFETY: checked non-null.
    unsafe { *newcomm = *made.as_ref().unwrap_or(&MPI_COMM_NULL) };
    let h = made?;
    crate::errhandler::on_comm_dup(comm, h);
    Ok(())
}

/// # Safety
/// See `accept_or_connect`.
pub unsafe fn MPI_Comm_accept(
    port_name: *const c_char,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> MpiResult {
    crate::info::get_or_empty(info)?;
    // SAFETY: forwarded contract.
    unsafe { accept_or_connect(port_name, root, comm, newcomm, true) }
}

/// # Safety
/// See `accept_or_connect`.
pub unsafe fn MPI_Comm_connect(
    port_name: *const c_char,
    info: MPI_Info,
    root: c_int,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
) -> MpiResult {
    crate::info::get_or_empty(info)?;
    // SAFETY: forwarded contract.
    unsafe { accept_or_connect(port_name, root, comm, newcomm, false) }
}

/// # Safety
/// `service_name` and `port_name` are null (an error) or NUL-terminated strings.
pub unsafe fn MPI_Publish_name(service_name: *const c_char, info: MPI_Info, port_name: *const c_char) -> MpiResult {
    // SAFETY: forwarded contract.
    let (service, port) = unsafe { (c_string(service_name, "service_name")?, c_string(port_name, "port_name")?) };
    crate::info::get_or_empty(info)?;
    crate::comm::spawn::publish_name(&service, &port)
}

/// # Safety
/// `service_name` is null (an error) or a NUL-terminated string.
pub unsafe fn MPI_Unpublish_name(service_name: *const c_char, info: MPI_Info, port_name: *const c_char) -> MpiResult {
    // SAFETY: forwarded contract.
    let service = unsafe { c_string(service_name, "service_name") }?;
    non_null(port_name, "port_name")?;
    crate::info::get_or_empty(info)?;
    crate::comm::spawn::unpublish_name(&service)
}

/// # Safety
/// `service_name` is null (an error) or a NUL-terminated string; `port_name` has room for
/// MPI_MAX_PORT_NAME characters.
pub unsafe fn MPI_Lookup_name(service_name: *const c_char, info: MPI_Info, port_name: *mut c_char) -> MpiResult {
    // SAFETY: forwarded contract.
    let service = unsafe { c_string(service_name, "service_name") }?;
    non_null(port_name, "port_name")?;
    crate::info::get_or_empty(info)?;
    let port = crate::comm::spawn::lookup_name(&service)?;
    // SAFETY: checked non-null; MPI gives it MPI_MAX_PORT_NAME characters.
    unsafe { super::errors::write_c_string(&port, port_name, MPI_MAX_PORT_NAME as usize) };
    Ok(())
}

/// # Safety
/// `intercomm` is null (an error) or writable; `fd` is the caller's connected socket.
pub unsafe fn MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> MpiResult {
    non_null(intercomm, "intercomm")?;
    runtime::with(|_| Ok(()))?;
    // SAFETY: dup(2) of a descriptor the caller owns; the copy is ours and closed on drop,
    // the caller's stays open.
    let copy = unsafe { libc::dup(fd) };
    if copy < 0 {
        return err(MPI_ERR_ARG, format!("invalid fd argument ({fd}): {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `copy` is a fresh descriptor owned by nobody else.
    let mut socket = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(copy) };
    let made = crate::comm::spawn::join(&mut socket);
    // SAFETY: checked non-null.
    unsafe { *intercomm = *made.as_ref().unwrap_or(&MPI_COMM_NULL) };
    made.map(drop)
}
