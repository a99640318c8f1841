//! File objects: the table behind MPI_File handles, opening (collective, with an agreed
//! outcome), closing, deleting, sizes, hints, atomicity and file pointers.
//!
//! Opening is collective: rank 0 opens first (it alone creates, so MPI_MODE_EXCL means what
//! it says), then the others; every rank learns every rank's outcome, so a failed open fails
//! on every rank. Each file takes a duplicate of its communicator, on which its collective
//! steps run, away from the program's traffic. Files are process-local objects: the table
//! has its own lock, never held across a collective step or a system call on a file.

use super::errors::{last_os_error, os_error};
use super::hints;
use super::shared::{self, SharedPointer};
use super::view::View;
use crate::abi::consts::*;
use crate::abi::types::MPI_Comm;
use crate::coll::{self, on_comm};
use crate::error::{MpiError, MpiResult, err};
use crate::info::Info;
use std::ffi::c_int;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex, MutexGuard};

/// File handles are pointers in C (never dereferenced there): this value plus the table slot.
const HANDLE_BASE: usize = 0x4f00_0000;
const MAX_FILES: usize = 0x0010_0000;

/// What a file's collective and individual operations change.
pub struct State {
    pub view: View,
    /// The individual file pointer, in etypes of the view.
    pub pointer: u64,
    pub atomic: bool,
    /// The hints in use (MPI_File_get_info).
    pub hints: Info,
    /// The split collective begun and not yet ended.
    pub split: Option<Split>,
}

/// A split collective between its `_begin` and its `_end`.
pub struct Split {
    /// Which `_end` may end it: the positioning of its `_begin` (the ABI layer's numbering)
    /// and whether it writes.
    pub end: u8,
    pub write: bool,
    /// Its outcome: the bytes moved, or the error.
    pub outcome: MpiResult<usize>,
}

pub struct File {
    /// The file's own duplicate of the communicator it was opened on.
    pub comm: MPI_Comm,
    /// World rank of each member, by rank in the file's group.
    pub members: Vec<usize>,
    /// The node of each member (an index, equal for members on the same node).
    pub node_of: Vec<usize>,
    pub rank: usize,
    /// The path as the program gave it (for messages), and as opened.
    pub name: String,
    path: String,
    pub amode: c_int,
    fd: OwnedFd,
    /// None only while the file is being opened.
    pub shared: Option<SharedPointer>,
    state: Mutex<State>,
    /// Held by a thread's locked independent write (`access::write_group`): the byte-range
    /// lock belongs to the descriptor, which the process's threads share.
    writes: Mutex<()>,
    /// Its nonblocking accesses still running on the I/O thread.
    pub background: Arc<super::background::Running>,
}

impl File {
    pub fn fd(&self) -> c_int {
        self.fd.as_raw_fd()
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn writes(&self) -> MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is(&self, mode: c_int) -> bool {
        self.amode & mode != 0
    }

    /// The shared file pointer (every open file has one).
    pub fn shared_pointer(&self, what: &str) -> MpiResult<&SharedPointer> {
        self.shared
            .as_ref()
            .ok_or_else(|| MpiError::new(MPI_ERR_INTERN, format!("{what}: the file has no shared pointer")))
    }

    /// The file's size in bytes.
    pub fn size(&self) -> MpiResult<u64> {
        // SAFETY: an all-zero `stat` is a valid value for fstat to fill.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the descriptor is open (owned by `self`) and `st` is writable.
        if unsafe { libc::fstat(self.fd(), &mut st) } != 0 {
            return Err(last_os_error("cannot stat", &self.name));
        }
        Ok(st.st_size as u64)
    }

    /// Runs a collective step on the file's communicator.
    pub fn collective<R>(&self, f: impl FnOnce(&mut coll::Group) -> MpiResult<R>) -> MpiResult<R> {
        on_comm(self.comm, f)
    }

    pub fn barrier(&self) -> MpiResult<()> {
        self.collective(coll::barrier)
    }

    /// Makes every member return the outcome of a step that only rank 0 carries out (a
    /// truncation, a preallocation, a deletion), once it is done.
    pub fn from_rank0(&self, what: &str, step: impl FnOnce() -> MpiResult<()>) -> MpiResult<()> {
        let mine = if self.rank == 0 { step() } else { Ok(()) };
        agree(self.comm, self.members.len(), &mine, what)
    }
}

// ----- the handle table -----

static TABLE: Mutex<Vec<Option<Arc<File>>>> = Mutex::new(Vec::new());

fn table() -> MutexGuard<'static, Vec<Option<Arc<File>>>> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether `value` is in the range of file handles (open or not): told apart from the
/// handles of other objects, which lie elsewhere.
pub fn is_handle(value: usize) -> bool {
    slot_of(value).is_some()
}

fn slot_of(handle: usize) -> Option<usize> {
    handle.checked_sub(HANDLE_BASE).filter(|&s| s < MAX_FILES)
}

/// The open file `handle` (an MPI_File's value); MPI_ERR_FILE for anything else.
pub fn get(handle: usize) -> MpiResult<Arc<File>> {
    let t = table();
    match slot_of(handle).and_then(|s| t.get(s)).and_then(Option::clone) {
        Some(f) => Ok(f),
        None if handle == 0 => err(MPI_ERR_FILE, "invalid file handle (MPI_FILE_NULL)"),
        None => err(MPI_ERR_FILE, format!("invalid file handle (0x{handle:x}), perhaps already closed")),
    }
}

pub fn is_valid(handle: usize) -> bool {
    get(handle).is_ok()
}

fn insert(file: File) -> MpiResult<usize> {
    let mut t = table();
    let slot = match t.iter().position(Option::is_none) {
        Some(s) => s,
        None if t.len() < MAX_FILES => {
            t.push(None);
            t.len() - 1
        }
        None => return err(MPI_ERR_OTHER, "too many open files"),
    };
    t[slot] = Some(Arc::new(file));
    Ok(HANDLE_BASE + slot)
}

// ----- opening and closing -----

/// ROMIO lets a file name start with the file system's name (`ufs:/path`); the prefix goes.
fn strip_fs_prefix(name: &str) -> &str {
    const PREFIXES: [&str; 10] =
        ["ufs:", "nfs:", "lustre:", "gpfs:", "pvfs2:", "testfs:", "panfs:", "xfs:", "daos:", "quobyte:"];
    PREFIXES.iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name)
}

/// The access-mode checks of MPI_File_open (MPI-4.1 section 14.2.1, in ROMIO's order).
pub fn check_amode(amode: c_int) -> MpiResult<()> {
    let known = MPI_MODE_RDONLY
        | MPI_MODE_RDWR
        | MPI_MODE_WRONLY
        | MPI_MODE_CREATE
        | MPI_MODE_EXCL
        | MPI_MODE_DELETE_ON_CLOSE
        | MPI_MODE_UNIQUE_OPEN
        | MPI_MODE_SEQUENTIAL
        | MPI_MODE_APPEND;
    if amode & !known != 0 {
        return err(MPI_ERR_AMODE, format!("invalid amode 0x{amode:x}: unknown bits"));
    }
    let access = [MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY].iter().filter(|&&m| amode & m != 0).count();
    if access != 1 {
        return err(MPI_ERR_AMODE, "exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY must be given");
    }
    if amode & MPI_MODE_RDONLY != 0 && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        return err(MPI_ERR_AMODE, "MPI_MODE_RDONLY cannot go with MPI_MODE_CREATE or MPI_MODE_EXCL");
    }
    if amode & MPI_MODE_RDWR != 0 && amode & MPI_MODE_SEQUENTIAL != 0 {
        return err(MPI_ERR_AMODE, "MPI_MODE_RDWR cannot go with MPI_MODE_SEQUENTIAL");
    }
    Ok(())
}

/// Opens `path` on this process; `create` says whether this rank may create it.
fn open_fd(path: &str, name: &str, amode: c_int, create: bool) -> MpiResult<OwnedFd> {
    let mut o = std::fs::OpenOptions::new();
    o.read(amode & MPI_MODE_WRONLY == 0).write(amode & MPI_MODE_RDONLY == 0);
    if create && amode & MPI_MODE_CREATE != 0 {
        if amode & MPI_MODE_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    }
    o.mode(0o644);
    match o.open(path) {
        Ok(f) => Ok(f.into()),
        Err(e) => Err(os_error("cannot open", name, &e)),
    }
}

/// Every member's outcome of a local step: the first failure (by rank) on every member,
/// with the failing rank named to the others.
fn agree(comm: MPI_Comm, n: usize, mine: &MpiResult<()>, what: &str) -> MpiResult<()> {
    let code = mine.as_ref().err().map_or(MPI_SUCCESS, |e| e.code);
    let mut all = vec![0u8; 4 * n];
    on_comm(comm, |g| coll::allgather_bytes(g, Some(&code.to_ne_bytes()), &mut all, 4))?;
    let codes: Vec<c_int> = all.chunks_exact(4).map(|c| c_int::from_ne_bytes(c.try_into().unwrap())).collect();
    if let Err(e) = mine {
        return Err(e.clone());
    }
    match codes.iter().position(|&c| c != MPI_SUCCESS) {
        Some(r) => err(codes[r], format!("{what} failed on rank {r}")),
        None => Ok(()),
    }
}

/// MPI_File_open: collective over `comm` (an intracommunicator); returns the handle.
pub fn open(comm: MPI_Comm, name: &str, amode: c_int, info: &Info) -> MpiResult<usize> {
    let (members, rank) = crate::runtime::with(|rt| {
        let c = rt.comms.get(comm)?;
        c.check_intra("MPI_File_open")?;
        Ok((c.members.clone(), c.rank))
    })?;
    check_amode(amode)?;
    let own = crate::comm::construct(|rt| rt.comms.dup(&mut rt.engine, comm))?
        .expect("a duplicate of an intracommunicator is never MPI_COMM_NULL");
    let opened = open_on(own, name, amode, info, members, rank);
    if opened.is_err() {
        let _ = crate::runtime::with(|rt| rt.comms.free(own));
    }
    opened
}

/// `open`'s work once the file has its communicator `own`.
fn open_on(own: MPI_Comm, name: &str, amode: c_int, info: &Info, members: Vec<usize>, rank: usize) -> MpiResult<usize> {
    let n = members.len();
    let path = strip_fs_prefix(name).to_string();
    // Rank 0 first, alone allowed to create; then the others.
    let first = (rank == 0).then(|| open_fd(&path, name, amode, true));
    let mut code = match &first {
        Some(Err(e)) => e.code,
        _ => MPI_SUCCESS,
    }
    .to_ne_bytes();
    on_comm(own, |g| coll::bcast_bytes(g, &mut code, 0))?;
    let code = c_int::from_ne_bytes(code);
    let fd = match first {
        Some(Err(e)) => return Err(e),
        Some(Ok(fd)) => Ok(fd),
        None if code != MPI_SUCCESS => return err(code, format!("cannot open {name} (failed on rank 0)")),
        None => open_fd(&path, name, amode, false),
    };
    let status = fd.as_ref().map(|_| ()).map_err(Clone::clone);
    agree(own, n, &status, &format!("opening {name}"))?;
    let fd = fd.expect("agreed: opened on every rank");
    let world_nodes =
        crate::runtime::with(|rt| Ok(rt.comms.node_ids(&mut crate::runtime::lock_pmi(&rt.pmi))?.to_vec()))?;
    let node_of: Vec<usize> = members.iter().map(|&w| world_nodes[w]).collect();
    let nodes = {
        let mut distinct = node_of.clone();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len()
    };
    let file = File {
        comm: own,
        members,
        node_of,
        rank,
        name: name.to_string(),
        path,
        amode,
        fd,
        shared: None,
        state: Mutex::new(State {
            view: View::bytes(),
            pointer: 0,
            atomic: false,
            hints: hints::initial(info, nodes, n),
            split: None,
        }),
        writes: Mutex::new(()),
        background: Default::default(),
    };
    // MPI_MODE_APPEND: every file pointer starts at the end (the default view counts bytes).
    let start = if amode & MPI_MODE_APPEND != 0 { file.size()? } else { 0 };
    file.state().pointer = start;
    let shared = shared::create(own, rank, &file.members, start)?;
    insert(File { shared: Some(shared), ..file })
}

/// MPI_File_close (collective): waits for every member, deletes the file when opened with
/// MPI_MODE_DELETE_ON_CLOSE, and releases the handle.
pub fn close(handle: usize) -> MpiResult<()> {
    let file = get(handle)?;
    // Every member's accesses are done before the file may go away (nonblocking ones too,
    // which the program should have completed).
    file.background.wait_idle();
    file.barrier()?;
    let deleted = if file.is(MPI_MODE_DELETE_ON_CLOSE) {
        file.from_rank0(&format!("deleting {}", file.name), || {
            std::fs::remove_file(&file.path).map_err(|e| os_error("cannot delete", &file.name, &e))
        })
    } else {
        Ok(())
    };
    if let Some(s) = slot_of(handle) {
        table()[s] = None;
    }
    let comm = file.comm;
    drop(file);
    crate::runtime::with(|rt| rt.comms.free(comm))?;
    deleted
}

/// MPI_File_delete.
pub fn delete(name: &str) -> MpiResult<()> {
    std::fs::remove_file(strip_fs_prefix(name)).map_err(|e| os_error("cannot delete", name, &e))
}

// ----- sizes -----

/// MPI_File_set_size (collective): rank 0 truncates or extends.
pub fn set_size(file: &File, size: i64) -> MpiResult<()> {
    if size < 0 {
        return err(MPI_ERR_ARG, format!("invalid size argument ({size}, must be non-negative)"));
    }
    check_writable(file)?;
    file.from_rank0(&format!("setting the size of {}", file.name), || {
        // SAFETY: the descriptor is open (owned by `file`).
        if unsafe { libc::ftruncate(file.fd(), size as libc::off_t) } != 0 {
            return Err(last_os_error("cannot set the size of", &file.name));
        }
        Ok(())
    })
}

/// MPI_File_preallocate (collective): reserves storage for the first `size` bytes; the file
/// grows to `size` bytes if it was smaller.
pub fn preallocate(file: &File, size: i64) -> MpiResult<()> {
    if size < 0 {
        return err(MPI_ERR_ARG, format!("invalid size argument ({size}, must be non-negative)"));
    }
    check_writable(file)?;
    file.from_rank0(&format!("preallocating {}", file.name), || {
        if size == 0 {
            return Ok(());
        }
        // SAFETY: the descriptor is open (owned by `file`).
        let rc = unsafe { libc::posix_fallocate(file.fd(), 0, size as libc::off_t) };
        match rc {
            0 => Ok(()),
            // File systems without allocation (some network ones): grow the file at least.
            libc::EOPNOTSUPP if file.size()? < size as u64 => {
                // SAFETY: as above.
                if unsafe { libc::ftruncate(file.fd(), size as libc::off_t) } != 0 {
                    return Err(last_os_error("cannot preallocate", &file.name));
                }
                Ok(())
            }
            libc::EOPNOTSUPP => Ok(()),
            e => Err(os_error("cannot preallocate", &file.name, &std::io::Error::from_raw_os_error(e))),
        }
    })
}

/// MPI_ERR_READ_ONLY for a file opened MPI_MODE_RDONLY.
pub fn check_writable(file: &File) -> MpiResult<()> {
    if file.is(MPI_MODE_RDONLY) {
        return err(MPI_ERR_READ_ONLY, format!("{} was opened read-only (MPI_MODE_RDONLY)", file.name));
    }
    Ok(())
}

/// MPI_File_sync (collective): the data this process wrote reaches storage.
pub fn sync(file: &File) -> MpiResult<()> {
    file.background.wait_idle();
    // SAFETY: the descriptor is open (owned by `file`).
    let rc = unsafe { libc::fsync(file.fd()) };
    let mine = if rc != 0 { Err(last_os_error("cannot sync", &file.name)) } else { Ok(()) };
    agree(file.comm, file.members.len(), &mine, &format!("syncing {}", file.name))
}

// ----- hints, atomicity -----

/// MPI_File_set_info.
pub fn set_info(file: &File, info: &Info) {
    hints::apply(&mut file.state().hints, info, file.members.len());
}

/// MPI_File_set_atomicity (collective).
pub fn set_atomicity(file: &File, atomic: bool) -> MpiResult<()> {
    file.state().atomic = atomic;
    file.barrier()
}

// ----- views and pointers -----

/// MPI_File_set_view (collective): the new view; both file pointers go back to 0.
pub fn set_view(file: &File, disp: i64, etype: c_int, filetype: c_int, datarep: &str, info: &Info) -> MpiResult<()> {
    let disp = if disp == i64::from(MPI_DISPLACEMENT_CURRENT) {
        if !file.is(MPI_MODE_SEQUENTIAL) {
            return err(MPI_ERR_ARG, "MPI_DISPLACEMENT_CURRENT is only valid with MPI_MODE_SEQUENTIAL");
        }
        let st = file.state();
        let offset = file.shared_pointer("MPI_File_set_view")?.load()?;
        st.view.byte_offset(offset)
    } else if disp < 0 {
        return err(MPI_ERR_ARG, format!("invalid displacement ({disp}, must be non-negative)"));
    } else {
        disp as u64
    };
    let view = View::new(disp, etype, filetype, datarep, file.is(MPI_MODE_RDONLY))?;
    // Every member is done with the old view's shared pointer before it goes back to 0.
    file.barrier()?;
    {
        let mut st = file.state();
        st.view = view;
        st.pointer = 0;
        hints::apply(&mut st.hints, info, file.members.len());
    }
    if file.rank == 0
        && let Some(s) = &file.shared
    {
        s.store(0)?;
    }
    file.barrier()
}

/// Where MPI_File_seek / MPI_File_seek_shared put a pointer now at `current` (etypes).
pub fn seek_target(file: &File, view: &View, current: u64, offset: i64, whence: c_int) -> MpiResult<u64> {
    let origin = match whence {
        MPI_SEEK_SET => 0,
        MPI_SEEK_CUR => current as i64,
        MPI_SEEK_END => view.end_offset(file.size()?) as i64,
        _ => return err(MPI_ERR_ARG, format!("invalid whence argument ({whence})")),
    };
    match origin.checked_add(offset) {
        Some(p) if p >= 0 => Ok(p as u64),
        _ => err(MPI_ERR_ARG, format!("the seek would move the file pointer before the view's start ({offset})")),
    }
}

/// MPI_ERR_UNSUPPORTED_OPERATION for the individual-pointer and explicit-offset functions
/// on a file opened with MPI_MODE_SEQUENTIAL.
pub fn check_not_sequential(file: &File) -> MpiResult<()> {
    if file.is(MPI_MODE_SEQUENTIAL) {
        return err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{} was opened with MPI_MODE_SEQUENTIAL: only the shared file pointer may be used", file.name),
        );
    }
    Ok(())
}

/// MPI_File_seek.
pub fn seek(file: &File, offset: i64, whence: c_int) -> MpiResult<()> {
    check_not_sequential(file)?;
    let mut st = file.state();
    let target = seek_target(file, &st.view, st.pointer, offset, whence)?;
    st.pointer = target;
    Ok(())
}

/// MPI_File_seek_shared (collective; every member passes the same arguments).
pub fn seek_shared(file: &File, offset: i64, whence: c_int) -> MpiResult<()> {
    let shared = file.shared_pointer("MPI_File_seek_shared")?;
    let view = file.state().view.clone();
    // Every member's earlier accesses through the shared pointer are done.
    file.barrier()?;
    let target = seek_target(file, &view, shared.load()?, offset, whence);
    let mine = target.as_ref().map(|_| ()).map_err(Clone::clone);
    if file.rank == 0
        && let Ok(t) = target
    {
        shared.store(t)?;
    }
    // The others see the new value only after rank 0 stored it.
    file.barrier()?;
    mine
}
