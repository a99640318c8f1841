//! Memory of MPI_Alloc_mem: large enough requests get pages of their own in an anonymous
//! shared file (`memfd_create`), so that a window later made over them (MPI_Win_create) can
//! be mapped by the other members of the node, which then reach it with plain copies instead
//! of a single-copy system call per operation. Nothing has a name in /dev/shm: a member maps
//! the file through `/proc/<pid>/fd/<fd>` (allowed exactly where single copy is), and the
//! file goes when its last mapping does.
//!
//! Smaller requests, and requests beyond `SHARED_MAX_LIVE` live files (each holds a file
//! descriptor), come from the C heap.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Requests from this size up get a shared file (smaller ones would waste most of a page).
const SHARED_MIN: usize = 4096;
/// Shared allocations alive at once (one descriptor each).
const SHARED_MAX_LIVE: usize = 256;

/// A shared allocation: its length (whole pages) and the descriptor of its file.
#[derive(Clone, Copy)]
struct Shared {
    len: usize,
    fd: i32,
}

/// Live shared allocations by address.
static SHARED: Mutex<BTreeMap<usize, Shared>> = Mutex::new(BTreeMap::new());

fn shared() -> std::sync::MutexGuard<'static, BTreeMap<usize, Shared>> {
    SHARED.lock().unwrap_or_else(|p| p.into_inner())
}

/// `size` bytes (at least one), or None when out of memory.
pub fn alloc(size: usize) -> Option<usize> {
    if size >= SHARED_MIN
        && let Some(addr) = alloc_shared(size)
    {
        return Some(addr);
    }
    // malloc(0) may return NULL; one byte gives every call a distinct pointer to free.
    // SAFETY: malloc has no preconditions; the result is checked.
    let mem = unsafe { libc::malloc(size.max(1)) } as usize;
    (mem != 0).then_some(mem)
}

fn alloc_shared(size: usize) -> Option<usize> {
    let mut live = shared();
    if live.len() >= SHARED_MAX_LIVE {
        return None;
    }
    let len = size.next_multiple_of(page_size());
    // SAFETY: a NUL-terminated name; the descriptor is checked and owned here.
    let fd = unsafe { libc::memfd_create(c"oxmpi-alloc-mem".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is our new file; a fresh shared mapping at an address the kernel picks
    // aliases no Rust object.
    let addr = unsafe {
        if libc::ftruncate(fd, len as libc::off_t) != 0 {
            libc::close(fd);
            return None;
        }
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
    };
    if addr == libc::MAP_FAILED {
        // SAFETY: ours, unused.
        unsafe { libc::close(fd) };
        return None;
    }
    live.insert(addr as usize, Shared { len, fd });
    Some(addr as usize)
}

/// Releases memory from `alloc` (0 does nothing).
///
/// # Safety
/// `addr` is 0 or was returned by `alloc` and not freed since; nothing uses it any more.
pub unsafe fn free(addr: usize) {
    if let Some(s) = shared().remove(&addr) {
        // SAFETY: the mapping and descriptor `alloc_shared` made for this address; windows
        // of other processes keep their own mappings of the file.
        unsafe {
            libc::munmap(addr as *mut libc::c_void, s.len);
            libc::close(s.fd);
        }
        return;
    }
    // SAFETY: the caller's promise: a pointer from malloc (or null).
    unsafe { libc::free(addr as *mut libc::c_void) };
}

/// Where `len` bytes at `addr` lie in a shared allocation: (descriptor, offset of `addr` in
/// its file, length of the file).
pub fn find(addr: usize, len: usize) -> Option<(i32, usize, usize)> {
    let live = shared();
    let (&start, s) = live.range(..=addr).next_back()?;
    (addr + len <= start + s.len).then_some((s.fd, addr - start, s.len))
}

/// Maps the shared allocation file `fd` of process `pid` (`len` bytes), read-write; its
/// address here.
pub fn map_peer(pid: u32, fd: i32, len: usize) -> Option<usize> {
    let path = std::ffi::CString::new(format!("/proc/{pid}/fd/{fd}")).ok()?;
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let peer_fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if peer_fd < 0 {
        return None;
    }
    // SAFETY: a new shared mapping of an open file at an address the kernel picks; it
    // aliases no Rust object. The mapping outlives the descriptor.
    let addr = unsafe {
        let a = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, peer_fd, 0);
        libc::close(peer_fd);
        a
    };
    (addr != libc::MAP_FAILED).then_some(addr as usize)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(4096) as usize
}
