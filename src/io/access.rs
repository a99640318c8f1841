//! Data access (MPI-4.1 section 14.4): where an access starts (an explicit offset, the
//! individual or the shared file pointer), the runs of the file it covers through the view,
//! and the vectored system calls that move the data.
//!
//! An access of `count` elements of a memory datatype is a range of bytes of the view's
//! data stream. The view turns that range into (file offset, length) runs, the memory
//! datatype into (address, length) blocks, and each file run is moved by `preadv` or
//! `pwritev` over the memory blocks it covers: one system call per contiguous run of the
//! file (more only past IOV_MAX blocks or after a partial transfer), never one per element.
//! Reads of runs that fill most of their span read the span at once instead (data sieving).
//!
//! The collective forms are in `collective`. The nonblocking forms are made ready here
//! (`prepare`) and moved by the I/O thread (`background`).

use super::datarep::Conversion;
use super::file::{File, check_not_sequential, check_writable};
use super::hints;
use crate::abi::consts::*;
use crate::abi::types::MPI_Datatype;
use crate::datatype::Layout;
use crate::error::{MpiError, MpiResult, err};
use std::ffi::c_int;
use std::sync::Arc;

/// Where an access starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Position {
    /// An explicit offset, in etypes of the view.
    Explicit(i64),
    Individual,
    Shared,
    /// An offset already taken from the shared file pointer (the ordered collectives).
    Reserved(u64),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Direction {
    Read,
    Write,
}

/// The program's side of an access: `count` elements of `datatype` (laid out as `layout`)
/// at `addr`.
pub struct Memory {
    pub addr: usize,
    pub count: usize,
    pub datatype: MPI_Datatype,
    pub layout: Layout,
}

impl Memory {
    pub fn bytes(&self) -> usize {
        self.count * self.layout.size
    }
}

/// The checks every access makes before touching the file: the access mode, the
/// positioning the file's mode allows, and whole etypes in its `len` bytes of the file.
/// Returns the length in etypes.
pub(super) fn check(file: &File, pos: Position, len: usize, dir: Direction, etype_size: usize) -> MpiResult<u64> {
    match dir {
        Direction::Read if file.is(MPI_MODE_WRONLY) => {
            return err(MPI_ERR_ACCESS, format!("cannot read {}: opened write-only (MPI_MODE_WRONLY)", file.name));
        }
        Direction::Write => check_writable(file)?,
        Direction::Read => {}
    }
    match pos {
        Position::Explicit(o) if o < 0 => return err(MPI_ERR_ARG, format!("invalid offset argument ({o})")),
        Position::Explicit(_) | Position::Individual => check_not_sequential(file)?,
        Position::Shared | Position::Reserved(_) => {}
    }
    if !len.is_multiple_of(etype_size) {
        return err(
            MPI_ERR_IO,
            format!(
                "the data ({len} bytes in the file) is not a whole number of the view's etypes ({etype_size} bytes)"
            ),
        );
    }
    Ok((len / etype_size) as u64)
}

/// An independent access; returns the bytes moved (fewer than asked when a read meets the
/// end of the file).
///
/// # Safety
/// `mem` describes memory of the program valid for reads (writes, for `Read`) of its
/// `count` elements.
pub unsafe fn access(file: &File, pos: Position, mem: &Memory, dir: Direction) -> MpiResult<usize> {
    let mut state = Some(file.state());
    let write = dir == Direction::Write;
    let (view, atomic, sieve) = state
        .as_ref()
        .map(|st| (st.view.clone(), st.atomic, hints::sieve_limit(&st.hints, write)))
        .expect("just taken");
    let conversion = view.repr.conversion(&view.datarep, mem, dir)?;
    let len = conversion.as_ref().map_or(mem.bytes(), Conversion::file_len);
    let etypes = check(file, pos, len, dir, view.etype_size)?;
    let etype = view.etype_size as u64;
    let start = match pos {
        Position::Explicit(o) => o as u64,
        Position::Individual => state.as_ref().expect("just taken").pointer,
        Position::Shared => file.shared_pointer("shared file pointer access")?.fetch_add(etypes)?,
        Position::Reserved(o) => o,
    };
    // Only the individual pointer needs the state until the access is done.
    if pos != Position::Individual {
        state = None;
    }
    if len == 0 {
        return Ok(0);
    }
    let runs = view.runs(start * etype, len);
    // SAFETY: the caller's contract on `mem`.
    let moved = unsafe { perform(file, &runs, mem, dir, conversion.as_ref(), None, atomic, sieve) };
    if let (Some(st), Ok(n)) = (state.as_mut(), &moved) {
        st.pointer = start + (*n as u64).div_ceil(etype);
    }
    moved.map(|n| conversion.map_or(n, |c| c.memory_bytes(n)))
}

/// A nonblocking independent access, made ready by the calling thread for another to move
/// its data (`background`): checked and positioned (a file pointer moves past the whole
/// access now, as MPI-4.1 section 14.4.3 says), its runs found, a write's data converted.
pub struct Prepared {
    pub file: Arc<File>,
    runs: Vec<(u64, usize)>,
    mem: Memory,
    dir: Direction,
    conversion: Option<Conversion>,
    written: Option<Vec<u8>>,
    atomic: bool,
    sieve: Option<usize>,
}

impl Prepared {
    /// Whether the access must run on the thread that called rather than in the background:
    /// when the program's own functions convert what it reads (they run on its thread), and
    /// in atomic mode (its byte-range locks belong to the open file description, which the
    /// I/O thread shares with the caller's accesses: one thread's unlock would end the
    /// other's lock).
    pub fn runs_in_call(&self) -> bool {
        self.atomic || self.dir == Direction::Read && self.conversion.as_ref().is_some_and(Conversion::by_program)
    }

    /// Moves the data; returns the bytes of memory moved.
    ///
    /// # Safety
    /// The memory the access describes stays valid for it until this returns (the program
    /// leaves a nonblocking access's buffer alone until its request completes).
    pub unsafe fn run(self) -> MpiResult<usize> {
        let conversion = self.conversion.as_ref();
        // SAFETY: the caller's contract on the access's memory.
        let moved = unsafe {
            perform(
                &self.file,
                &self.runs,
                &self.mem,
                self.dir,
                conversion,
                self.written.as_deref(),
                self.atomic,
                self.sieve,
            )
        }?;
        Ok(conversion.map_or(moved, |c| c.memory_bytes(moved)))
    }
}

/// Makes a nonblocking independent access ready (see `Prepared`).
///
/// # Safety
/// As for `access`.
pub unsafe fn prepare(file: &Arc<File>, pos: Position, mem: Memory, dir: Direction) -> MpiResult<Prepared> {
    let mut st = file.state();
    let (view, atomic, sieve) = (st.view.clone(), st.atomic, hints::sieve_limit(&st.hints, dir == Direction::Write));
    let conversion = view.repr.conversion(&view.datarep, &mem, dir)?;
    let len = conversion.as_ref().map_or(mem.bytes(), Conversion::file_len);
    let etypes = check(file, pos, len, dir, view.etype_size)?;
    let start = match pos {
        Position::Explicit(o) => o as u64,
        Position::Individual => {
            let at = st.pointer;
            st.pointer += etypes;
            at
        }
        Position::Shared => file.shared_pointer("shared file pointer access")?.fetch_add(etypes)?,
        Position::Reserved(o) => o,
    };
    drop(st);
    let runs = view.runs(start * view.etype_size as u64, len);
    let written = match &conversion {
        // SAFETY: the caller's contract on `mem`.
        Some(c) if dir == Direction::Write => Some(unsafe { c.to_file(&mem) }?),
        _ => None,
    };
    Ok(Prepared { file: file.clone(), runs, mem, dir, conversion, written, atomic, sieve })
}

/// Moves the data of one rank's access, the (file offset, length) `runs` of its view, with
/// the system calls (under a byte-range lock in atomic mode). With a `conversion`, a write
/// takes the data already converted when the caller has it (`written`). Returns the bytes
/// of the file moved.
///
/// # Safety
/// As for `access`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn perform(
    file: &File,
    runs: &[(u64, usize)],
    mem: &Memory,
    dir: Direction,
    conversion: Option<&Conversion>,
    written: Option<&[u8]>,
    atomic: bool,
    sieve: Option<usize>,
) -> MpiResult<usize> {
    if runs.is_empty() {
        return Ok(0);
    }
    // Written data is converted before the lock is taken.
    let converted = match (conversion, written) {
        // SAFETY: the caller's contract on `mem`.
        (Some(c), None) if dir == Direction::Write => Some(unsafe { c.to_file(mem) }?),
        _ => None,
    };
    let written = written.or(converted.as_deref());
    let lock = if atomic { Some(RangeLock::take(file, runs, dir)?) } else { None };
    // SAFETY: the caller's contract on `mem`.
    let moved = unsafe {
        match (conversion, written) {
            (None, _) => transfer_native(file, runs, mem, dir, sieve, atomic),
            (Some(_), Some(data)) => transfer(file, runs, &[(data.as_ptr() as usize, data.len())], dir),
            (Some(c), None) => read_converted(file, runs, mem, c),
        }
    };
    drop(lock);
    moved
}

// ----- the system calls -----

/// The memory blocks of an access, consumed in order as file runs take them.
struct Cursor<'a> {
    blocks: &'a [(usize, usize)],
    index: usize,
    /// Bytes of `blocks[index]` already moved.
    used: usize,
}

impl Cursor<'_> {
    /// The iovecs of the next `want` bytes (at most `max` of them), without consuming them.
    fn peek(&self, want: usize, max: usize, out: &mut Vec<libc::iovec>) -> usize {
        out.clear();
        let (mut i, mut used, mut total) = (self.index, self.used, 0);
        while total < want && i < self.blocks.len() && out.len() < max {
            let (addr, len) = self.blocks[i];
            let n = (len - used).min(want - total);
            out.push(libc::iovec { iov_base: (addr + used) as *mut libc::c_void, iov_len: n });
            total += n;
            used += n;
            if used == len {
                i += 1;
                used = 0;
            }
        }
        total
    }

    fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let left = self.blocks[self.index].1 - self.used;
            if n < left {
                self.used += n;
                return;
            }
            n -= left;
            self.index += 1;
            self.used = 0;
        }
    }
}

/// Moves the data of `runs` straight between the file and the program's memory.
///
/// # Safety
/// As for `access`.
unsafe fn transfer_native(
    file: &File,
    runs: &[(u64, usize)],
    mem: &Memory,
    dir: Direction,
    sieve_limit: Option<usize>,
    atomic: bool,
) -> MpiResult<usize> {
    let len = mem.bytes();
    let blocks = match mem.layout.contiguous_at() {
        Some(at) => vec![(mem.addr.wrapping_add_signed(at), len)],
        None => mem.layout.iovecs(mem.addr as *const u8, mem.count, 0..len),
    };
    let mut cursor = Cursor { blocks: &blocks, index: 0, used: 0 };
    let Some(limit) = sieve_limit else {
        // SAFETY: the caller's contract on `mem`, whose blocks these are.
        return unsafe { transfer_with(file, runs, &mut cursor, dir) };
    };
    // By groups of runs within `limit` bytes: a dense group is one read (and one write).
    let (mut done, mut i) = (0, 0);
    while i < runs.len() {
        let start = runs[i].0;
        let mut j = i + 1;
        while j < runs.len() && runs[j].0 + runs[j].1 as u64 - start <= limit as u64 {
            j += 1;
        }
        let group = &runs[i..j];
        let want: usize = group.iter().map(|r| r.1).sum();
        // SAFETY: the caller's contract on `mem`, whose blocks these are.
        let got = unsafe {
            match dir {
                Direction::Read => match sieve_span(group, limit) {
                    Some(span) => read_sieved(file, group, span, &mut cursor),
                    None => transfer_with(file, group, &mut cursor, dir),
                },
                Direction::Write => write_group(file, group, want, limit, &mut cursor, atomic),
            }
        }?;
        done += got;
        if got < want {
            break; // the end of the file
        }
        i = j;
    }
    Ok(done)
}

/// Data sieving for reads: the (offset, length) of the file to read in one call instead of
/// one call per run, when there are several runs, in order, within `limit` bytes
/// (`ind_rd_buffer_size`), and they fill at least half of their span.
fn sieve_span(runs: &[(u64, usize)], limit: usize) -> Option<(u64, usize)> {
    let (first, last) = (runs.first()?, runs.last()?);
    let span = (last.0 + last.1 as u64).checked_sub(first.0)? as usize;
    let data: usize = runs.iter().map(|r| r.1).sum();
    let ordered = runs.windows(2).all(|w| w[0].0 + w[0].1 as u64 <= w[1].0);
    (runs.len() > 1 && ordered && span <= limit && 2 * data >= span).then_some((first.0, span))
}

/// Reads `span` of the file in one call, then copies each run's bytes to the memory blocks
/// of `cursor`; returns the bytes of the runs that were in the file.
///
/// # Safety
/// As for `transfer_with`, for reads.
unsafe fn read_sieved(file: &File, runs: &[(u64, usize)], span: (u64, usize), cursor: &mut Cursor) -> MpiResult<usize> {
    // Only the bytes read are copied out: the buffer's old contents are never used.
    let (buf, got) = read_span(file, span)?;
    let mut iov = Vec::new();
    let mut done = 0;
    for &(offset, len) in runs {
        let at = (offset - span.0) as usize;
        let have = got.saturating_sub(at).min(len);
        let mut from = at;
        cursor.peek(have, usize::MAX, &mut iov);
        for v in &iov {
            // SAFETY: the iovec lies in the caller's memory blocks, valid for writes, and
            // `buf[from..from + len]` was read; the two do not overlap (`buf` is ours).
            unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().add(from), v.iov_base.cast::<u8>(), v.iov_len) };
            from += v.iov_len;
        }
        cursor.advance(have);
        done += have;
        if have < len {
            break; // the end of the file
        }
    }
    super::scratch::give(buf);
    Ok(done)
}

/// Reads `span` of the file into a scratch buffer of its length; returns the buffer (give it
/// back to `scratch`) and the bytes read, fewer at the end of the file.
fn read_span(file: &File, span: (u64, usize)) -> MpiResult<(Vec<u8>, usize)> {
    let mut buf = super::scratch::take();
    buf.resize(span.1, 0);
    // SAFETY: `buf` is a live buffer of `span.1` bytes.
    match unsafe { transfer(file, &[span], &[(buf.as_mut_ptr() as usize, span.1)], Direction::Read) } {
        Ok(got) => Ok((buf, got)),
        Err(e) => {
            super::scratch::give(buf);
            Err(e)
        }
    }
}

/// Largest mean run of a write that data sieving may take: a strided write to /dev/shm at
/// 2 ranks (half the span its own) went 1.7x faster sieved with 2 KiB blocks, 1.7x slower
/// with 4 KiB ones (and 11x faster with 64 B ones), since the span is read and written
/// whole where plain writes cost a system call per run.
const WRITE_SIEVE_MAX_RUN: usize = 2048;

/// Writes a group of runs (`data` bytes) within `limit` bytes; returns the bytes written.
/// Small, dense runs (`sieve_span`, `WRITE_SIEVE_MAX_RUN`) of a file open for reading too are
/// written by data sieving: the span read, the runs copied over it, the span written back,
/// two system calls instead of one per run. That must not write back old bytes over what another process writes
/// meanwhile into the holes, so while write sieving is on, every independent write holds an
/// exclusive lock over its group's span (ROMIO's sieving locks only its own writes, and can
/// undo a concurrent plain write); the threads of this process, which share its lock, take
/// `File::writes` too. Where locks fail (a file system without them), the group goes run by
/// run, unlocked: no process can sieve there.
///
/// # Safety
/// As for `transfer_with`, for writes.
unsafe fn write_group(
    file: &File,
    group: &[(u64, usize)],
    data: usize,
    limit: usize,
    cursor: &mut Cursor,
    atomic: bool,
) -> MpiResult<usize> {
    let _threads = file.writes();
    // In atomic mode the whole access holds the lock already (`perform`).
    let lock = if atomic { None } else { RangeLock::take(file, group, Direction::Write).ok() };
    let readable = !file.is(MPI_MODE_WRONLY);
    let small_runs = data <= WRITE_SIEVE_MAX_RUN * group.len();
    // SAFETY: forwarded.
    unsafe {
        match sieve_span(group, limit).filter(|_| small_runs) {
            Some(span) if readable && (atomic || lock.is_some()) => {
                write_sieved(file, group, span, cursor).map(|()| data)
            }
            _ => transfer_with(file, group, cursor, Direction::Write),
        }
    }
}

/// Read-modify-write of `span` for the runs of one group (`write_group`, under its lock).
///
/// # Safety
/// As for `transfer_with`, for writes.
unsafe fn write_sieved(file: &File, runs: &[(u64, usize)], span: (u64, usize), cursor: &mut Cursor) -> MpiResult<()> {
    let (mut buf, got) = read_span(file, span)?;
    // Past the end of the file the holes read as zeros, as they would unwritten.
    buf[got..].fill(0);
    let mut iov = Vec::new();
    for &(offset, len) in runs {
        let mut at = (offset - span.0) as usize;
        cursor.peek(len, usize::MAX, &mut iov);
        for v in &iov {
            // SAFETY: the iovec lies in the caller's memory blocks, valid for reads; the
            // destination is inside `buf` (the run lies in the span), which is ours.
            unsafe { std::ptr::copy_nonoverlapping(v.iov_base.cast::<u8>(), buf.as_mut_ptr().add(at), v.iov_len) };
            at += v.iov_len;
        }
        cursor.advance(len);
    }
    // SAFETY: `buf` is a live buffer of `span.1` bytes.
    let wrote = unsafe { transfer(file, &[span], &[(buf.as_ptr() as usize, span.1)], Direction::Write) };
    super::scratch::give(buf);
    wrote.map(drop)
}

/// Reads the data of `runs` into a buffer in the file's representation and stores it,
/// converted, into the program's memory.
///
/// # Safety
/// As for `access`.
unsafe fn read_converted(
    file: &File,
    runs: &[(u64, usize)],
    mem: &Memory,
    conversion: &Conversion,
) -> MpiResult<usize> {
    let mut data = vec![0u8; conversion.file_len()];
    // SAFETY: `data` is a live buffer of that many bytes.
    let n = unsafe { transfer(file, runs, &[(data.as_mut_ptr() as usize, data.len())], Direction::Read) }?;
    // SAFETY: the caller's contract on `mem`.
    unsafe { conversion.from_file(mem, &mut data, n) }?;
    Ok(n)
}

/// Moves the data of `runs` (file offsets) from or to the memory `blocks` (as many bytes in
/// all); returns the bytes moved, fewer on a read that meets the end of the file.
///
/// # Safety
/// `blocks` are (address, length) pairs of memory valid for the direction's access.
pub(super) unsafe fn transfer(
    file: &File,
    runs: &[(u64, usize)],
    blocks: &[(usize, usize)],
    dir: Direction,
) -> MpiResult<usize> {
    // SAFETY: forwarded.
    unsafe { transfer_with(file, runs, &mut Cursor { blocks, index: 0, used: 0 }, dir) }
}

/// As `transfer`, taking the memory from where `cursor` is and leaving it after the bytes
/// moved.
///
/// # Safety
/// The cursor's blocks are memory valid for the direction's access.
unsafe fn transfer_with(file: &File, runs: &[(u64, usize)], cursor: &mut Cursor, dir: Direction) -> MpiResult<usize> {
    let max_iov = libc::UIO_MAXIOV as usize;
    let mut iov = Vec::new();
    let mut done = 0;
    for &(offset, len) in runs {
        let mut run_done = 0;
        while run_done < len {
            let want = cursor.peek(len - run_done, max_iov, &mut iov);
            let at = (offset + run_done as u64) as libc::off_t;
            // SAFETY: the iovecs lie in the caller's blocks; the descriptor is the file's.
            let n = unsafe {
                match dir {
                    Direction::Read => libc::preadv(file.fd(), iov.as_ptr(), iov.len() as c_int, at),
                    Direction::Write => libc::pwritev(file.fd(), iov.as_ptr(), iov.len() as c_int, at),
                }
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                let what = if dir == Direction::Read { "cannot read" } else { "cannot write" };
                return Err(super::errors::os_error(what, &file.name, &e));
            }
            let n = n as usize;
            if n == 0 {
                if dir == Direction::Read {
                    return Ok(done); // end of file
                }
                return err(MPI_ERR_IO, format!("cannot write {}: the system wrote nothing", file.name));
            }
            debug_assert!(n <= want);
            cursor.advance(n);
            run_done += n;
            done += n;
        }
    }
    Ok(done)
}

/// A byte-range lock over the span of an access (atomic mode, sieved writes): shared for
/// reads, exclusive for writes, released when dropped. An open file description lock
/// (`F_OFD_SETLKW`): it belongs to this handle's descriptor, so it orders the accesses of
/// different ranks and of different handles of one process, and closing another
/// descriptor of the file does not drop it (as it would a process's POSIX lock).
pub(super) struct RangeLock<'a> {
    file: &'a File,
    start: u64,
    len: u64,
}

impl<'a> RangeLock<'a> {
    pub(super) fn take(file: &'a File, runs: &[(u64, usize)], dir: Direction) -> MpiResult<RangeLock<'a>> {
        let start = runs.first().map_or(0, |r| r.0);
        let end = runs.last().map_or(0, |r| r.0 + r.1 as u64);
        let kind = if dir == Direction::Read { libc::F_RDLCK } else { libc::F_WRLCK };
        let lock = RangeLock { file, start, len: end - start };
        lock.fcntl(kind).map_err(|e| super::errors::os_error("cannot lock a range of", &file.name, &e))?;
        Ok(lock)
    }

    fn fcntl(&self, kind: c_int) -> std::io::Result<()> {
        // SAFETY: an all-zero flock is valid; the fields that matter are set below.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = kind as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = self.start as libc::off_t;
        fl.l_len = self.len as libc::off_t;
        loop {
            // SAFETY: the descriptor is open and `fl` a valid flock.
            if unsafe { libc::fcntl(self.file.fd(), libc::F_OFD_SETLKW, &fl) } == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Drop for RangeLock<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.fcntl(libc::F_UNLCK) {
            log::error!("cannot unlock a range of {}: {e}", self.file.name);
        }
    }
}

/// The error of the split-collective functions used out of turn.
pub fn split_error(begun: bool) -> MpiError {
    if begun {
        MpiError::new(MPI_ERR_IO, "a split collective is already active on this file (call its _end first)")
    } else {
        MpiError::new(MPI_ERR_IO, "no split collective is active on this file (call its _begin first)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dense_ordered_runs_within_the_buffer_are_sieved() {
        let dense = [(100, 4), (108, 4), (116, 4)];
        assert_eq!(sieve_span(&dense, 64), Some((100, 20)));
        assert_eq!(sieve_span(&dense, 16), None, "span larger than the buffer");
        assert_eq!(sieve_span(&[(0, 4), (100, 4)], 1 << 20), None, "sparse");
        assert_eq!(sieve_span(&[(0, 4)], 1 << 20), None, "one run needs no sieve");
        assert_eq!(sieve_span(&[(8, 4), (0, 4)], 1 << 20), None, "out of order");
    }

    #[test]
    fn the_cursor_splits_memory_blocks_at_run_boundaries() {
        let blocks = [(1000, 6), (2000, 4)];
        let mut c = Cursor { blocks: &blocks, index: 0, used: 0 };
        let mut iov = Vec::new();
        assert_eq!(c.peek(4, 16, &mut iov), 4);
        assert_eq!(iov.iter().map(|v| (v.iov_base as usize, v.iov_len)).collect::<Vec<_>>(), [(1000, 4)]);
        c.advance(4);
        assert_eq!(c.peek(5, 16, &mut iov), 5);
        assert_eq!(iov.iter().map(|v| (v.iov_base as usize, v.iov_len)).collect::<Vec<_>>(), [(1004, 2), (2000, 3)]);
        assert_eq!(c.peek(5, 1, &mut iov), 2, "at most `max` iovecs");
    }
}
