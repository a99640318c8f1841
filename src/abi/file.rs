//! MPI-IO entry points: decode file handles, pointers and strings, check arguments, call
//! `crate::io`. Errors go to the file's error handler (the generated entries pick it), whose
//! default is MPI_ERRORS_RETURN.
//!
//! The data-access functions are families (src/abi/family.rs): one implementation per file
//! pointer and direction serves the blocking, nonblocking, collective, nonblocking
//! collective and split-begin forms and their `_c` twins, and one per direction the split
//! ends; all go through `data_access`: a position (explicit offset, individual or shared
//! pointer), a direction and a coordination (independent, collective, ordered). Nonblocking
//! forms do their I/O at start and return a completed request (the nonblocking collectives
//! as independent accesses: starting one must not wait for the other ranks, which may still
//! be communicating before they start theirs); split collectives do it in `_begin` and
//! report it in `_end`.

use super::consts::*;
use super::ctypes::{
    MPI_Datarep_conversion_function, MPI_Datarep_conversion_function_c, MPI_Datarep_extent_function, MPI_File,
};
use super::errors::{put, write_c_string};
use super::family::{FileForm, SplitEnd};
use super::p2p::{request_handle, write_status};
use super::types::*;
use crate::errhandler;
use crate::error::{MpiResult, err};
use crate::io::access::{self, Direction, Memory, Position};
use crate::io::background;
use crate::io::collective;
use crate::io::file::{self as io_file, File};
use crate::io::view::View;
use crate::p2p::request::Status;
use crate::runtime;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Arc;

fn file_of(fh: MPI_File) -> MpiResult<Arc<File>> {
    io_file::get(fh as usize)
}

/// A C string argument.
///
/// # Safety
/// `p` is null (rejected) or a NUL-terminated string.
unsafe fn c_str(p: *const c_char, what: &str) -> MpiResult<String> {
    if p.is_null() {
        return err(MPI_ERR_ARG, format!("null pointer in argument {what}"));
    }
    // SAFETY: non-null and NUL-terminated (the caller's contract).
    Ok(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

// ----- opening, closing, deleting -----

/// # Safety
/// `filename` is a NUL-terminated string; `fh` is null or writable.
pub unsafe fn MPI_File_open(
    comm: MPI_Comm,
    filename: *const c_char,
    amode: c_int,
    info: MPI_Info,
    fh: *mut MPI_File,
) -> MpiResult {
    runtime::with(|rt| rt.comms.get(comm)?.check_intra("MPI_File_open"))?;
    // SAFETY: the caller's contract.
    let name = unsafe { c_str(filename, "filename") }?;
    let hints = crate::info::get_or_empty(info)?;
    super::errors::check_out(fh, "fh")?;
    let h = io_file::open(comm, &name, amode, &hints)?;
    errhandler::on_file_open(h);
    // SAFETY: checked non-null; the caller's contract.
    unsafe { *fh = h as MPI_File };
    Ok(())
}

/// # Safety
/// `fh` is null or points at a file handle.
pub unsafe fn MPI_File_close(fh: *mut MPI_File) -> MpiResult {
    super::errors::check_out(fh, "fh")?;
    // SAFETY: checked non-null.
    let h = unsafe { *fh } as usize;
    io_file::close(h)?;
    errhandler::on_file_close(h);
    // SAFETY: checked non-null.
    unsafe { *fh = std::ptr::null_mut() };
    Ok(())
}

/// # Safety
/// `filename` is a NUL-terminated string.
pub unsafe fn MPI_File_delete(filename: *const c_char, info: MPI_Info) -> MpiResult {
    // SAFETY: the caller's contract.
    let name = unsafe { c_str(filename, "filename") }?;
    crate::info::get_or_empty(info)?;
    io_file::delete(&name)
}

// ----- sizes, group, mode, hints, atomicity -----

pub fn MPI_File_set_size(fh: MPI_File, size: MPI_Offset) -> MpiResult {
    io_file::set_size(&*file_of(fh)?, size)
}

pub fn MPI_File_preallocate(fh: MPI_File, size: MPI_Offset) -> MpiResult {
    io_file::preallocate(&*file_of(fh)?, size)
}

/// # Safety
/// `size` is null or writable.
pub unsafe fn MPI_File_get_size(fh: MPI_File, size: *mut MPI_Offset) -> MpiResult {
    let bytes = file_of(fh)?.size()?;
    // SAFETY: the caller's contract.
    unsafe { put(size, bytes as MPI_Offset, "size") }
}

/// # Safety
/// `group` is null or writable.
pub unsafe fn MPI_File_get_group(fh: MPI_File, group: *mut MPI_Group) -> MpiResult {
    let members = file_of(fh)?.members.clone();
    super::errors::check_out(group, "group")?;
    let g = crate::group::insert(crate::group::Group::new(members))?;
    // SAFETY: checked non-null.
    unsafe { put(group, g, "group") }
}

/// # Safety
/// `amode` is null or writable.
pub unsafe fn MPI_File_get_amode(fh: MPI_File, amode: *mut c_int) -> MpiResult {
    let mode = file_of(fh)?.amode;
    // SAFETY: the caller's contract.
    unsafe { put(amode, mode, "amode") }
}

pub fn MPI_File_set_info(fh: MPI_File, info: MPI_Info) -> MpiResult {
    let file = file_of(fh)?;
    io_file::set_info(&file, &crate::info::get_or_empty(info)?);
    Ok(())
}

/// # Safety
/// `info_used` is null or writable.
pub unsafe fn MPI_File_get_info(fh: MPI_File, info_used: *mut MPI_Info) -> MpiResult {
    let hints = file_of(fh)?.state().hints.clone();
    super::errors::check_out(info_used, "info_used")?;
    let h = crate::info::insert(hints)?;
    // SAFETY: checked non-null.
    unsafe { put(info_used, h, "info_used") }
}

pub fn MPI_File_set_atomicity(fh: MPI_File, flag: c_int) -> MpiResult {
    io_file::set_atomicity(&*file_of(fh)?, flag != 0)
}

/// # Safety
/// `flag` is null or writable.
pub unsafe fn MPI_File_get_atomicity(fh: MPI_File, flag: *mut c_int) -> MpiResult {
    let atomic = file_of(fh)?.state().atomic;
    // SAFETY: the caller's contract.
    unsafe { put(flag, atomic as c_int, "flag") }
}

pub fn MPI_File_sync(fh: MPI_File) -> MpiResult {
    io_file::sync(&*file_of(fh)?)
}

/// The extent of `datatype` in the file, in the view's data representation.
fn type_extent(fh: MPI_File, datatype: MPI_Datatype) -> MpiResult<i64> {
    let view = file_of(fh)?.state().view.clone();
    view.repr.type_extent(datatype)
}

/// # Safety
/// `extent` is null or writable.
pub unsafe fn MPI_File_get_type_extent(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Aint) -> MpiResult {
    let e = type_extent(fh, datatype)?;
    // SAFETY: the caller's contract.
    unsafe { put(extent, e as MPI_Aint, "extent") }
}

/// # Safety
/// `extent` is null or writable.
pub unsafe fn MPI_File_get_type_extent_c(fh: MPI_File, datatype: MPI_Datatype, extent: *mut MPI_Count) -> MpiResult {
    let e = type_extent(fh, datatype)?;
    // SAFETY: the caller's contract.
    unsafe { put(extent, e as MPI_Count, "extent") }
}

/// # Safety
/// `datarep` is a NUL-terminated string; the functions are the program's, of these types.
pub unsafe fn MPI_Register_datarep(
    datarep: *const c_char,
    read_conversion_fn: MPI_Datarep_conversion_function,
    write_conversion_fn: MPI_Datarep_conversion_function,
    dtype_file_extent_fn: MPI_Datarep_extent_function,
    extra_state: *mut c_void,
) -> MpiResult {
    let (read, write) = (Converter::Int(read_conversion_fn), Converter::Int(write_conversion_fn));
    // SAFETY: forwarded.
    unsafe { register_datarep(datarep, read, write, dtype_file_extent_fn, extra_state) }
}

/// # Safety
/// As for MPI_Register_datarep.
pub unsafe fn MPI_Register_datarep_c(
    datarep: *const c_char,
    read_conversion_fn: MPI_Datarep_conversion_function_c,
    write_conversion_fn: MPI_Datarep_conversion_function_c,
    dtype_file_extent_fn: MPI_Datarep_extent_function,
    extra_state: *mut c_void,
) -> MpiResult {
    let (read, write) = (Converter::Count(read_conversion_fn), Converter::Count(write_conversion_fn));
    // SAFETY: forwarded.
    unsafe { register_datarep(datarep, read, write, dtype_file_extent_fn, extra_state) }
}

/// # Safety
/// As for MPI_Register_datarep.
unsafe fn register_datarep(
    datarep: *const c_char,
    read: Converter,
    write: Converter,
    extent: MPI_Datarep_extent_function,
    extra_state: *mut c_void,
) -> MpiResult {
    // SAFETY: the caller's contract.
    let name = unsafe { c_str(datarep, "datarep") }?;
    let Some(extent) = extent else {
        return err(MPI_ERR_ARG, "invalid dtype_file_extent_fn argument (NULL)");
    };
    let rep = ProgramDatarep { read, write, extent, extra_state: extra_state as usize };
    crate::io::datarep::register(&name, Arc::new(rep))
}

/// A conversion function of the program (either width), or MPI_CONVERSION_FN_NULL (None).
#[derive(Clone, Copy)]
enum Converter {
    Int(MPI_Datarep_conversion_function),
    Count(MPI_Datarep_conversion_function_c),
}

impl Converter {
    fn is_null(self) -> bool {
        match self {
            Converter::Int(f) => f.is_none(),
            Converter::Count(f) => f.is_none(),
        }
    }

    /// Calls the function on `items` data items from position 0.
    ///
    /// # Safety
    /// `user` and `file` hold those items for the function's direction; `extra_state` is the
    /// program's.
    unsafe fn call(
        self,
        user: usize,
        datatype: MPI_Datatype,
        items: usize,
        file: *mut u8,
        extra_state: usize,
    ) -> MpiResult<()> {
        let (user, file, state) = (user as *mut c_void, file.cast::<c_void>(), extra_state as *mut c_void);
        let code = match self {
            Converter::Int(Some(f)) => {
                let Ok(count) = c_int::try_from(items) else {
                    return err(
                        MPI_ERR_CONVERSION,
                        format!(
                            "{items} data items to convert, more than the int count of a function registered with                              MPI_Register_datarep takes (MPI_Register_datarep_c's functions take any count)"
                        ),
                    );
                };
                // SAFETY: the caller's contract.
                unsafe { f(user, datatype, count, file, 0, state) }
            }
            // SAFETY: the caller's contract.
            Converter::Count(Some(f)) => unsafe { f(user, datatype, items as MPI_Count, file, 0, state) },
            Converter::Int(None) | Converter::Count(None) => {
                unreachable!("MPI_CONVERSION_FN_NULL is never called (`converts`)")
            }
        };
        if code != MPI_SUCCESS {
            return err(
                MPI_ERR_CONVERSION,
                format!("the data representation's conversion function returned error {code}"),
            );
        }
        Ok(())
    }
}

/// A data representation registered by the program: its functions and their state.
struct ProgramDatarep {
    read: Converter,
    write: Converter,
    extent: unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int,
    extra_state: usize,
}

impl crate::io::datarep::UserDatarep for ProgramDatarep {
    fn file_extent(&self, dt: MPI_Datatype) -> MpiResult<usize> {
        let mut extent: MPI_Aint = 0;
        // SAFETY: the program's dtype_file_extent_fn, called with a predefined datatype, a
        // live output and its own state.
        let code = unsafe { (self.extent)(dt, &mut extent, self.extra_state as *mut c_void) };
        if code != MPI_SUCCESS {
            return err(
                MPI_ERR_CONVERSION,
                format!("the data representation's dtype_file_extent_fn returned error {code}"),
            );
        }
        usize::try_from(extent).map_err(|_| {
            crate::error::MpiError::new(
                MPI_ERR_CONVERSION,
                format!("the data representation's dtype_file_extent_fn gave a negative extent ({extent})"),
            )
        })
    }

    fn converts(&self, dir: Direction) -> bool {
        !match dir {
            Direction::Read => self.read,
            Direction::Write => self.write,
        }
        .is_null()
    }

    unsafe fn read(&self, user: usize, datatype: MPI_Datatype, items: usize, file: &[u8]) -> MpiResult<()> {
        // SAFETY: the caller's contract; the function only reads `file`.
        unsafe { self.read.call(user, datatype, items, file.as_ptr().cast_mut(), self.extra_state) }
    }

    unsafe fn write(&self, user: usize, datatype: MPI_Datatype, items: usize, file: &mut [u8]) -> MpiResult<()> {
        // SAFETY: the caller's contract.
        unsafe { self.write.call(user, datatype, items, file.as_mut_ptr(), self.extra_state) }
    }
}

// ----- views and file pointers -----

/// # Safety
/// `datarep` is a NUL-terminated string.
pub unsafe fn MPI_File_set_view(
    fh: MPI_File,
    disp: MPI_Offset,
    etype: MPI_Datatype,
    filetype: MPI_Datatype,
    datarep: *const c_char,
    info: MPI_Info,
) -> MpiResult {
    let file = file_of(fh)?;
    // SAFETY: the caller's contract.
    let datarep = unsafe { c_str(datarep, "datarep") }?;
    io_file::set_view(&file, disp, etype, filetype, &datarep, &crate::info::get_or_empty(info)?)
}

/// # Safety
/// The outputs are null or writable; `datarep` has room for MPI_MAX_DATAREP_STRING characters.
pub unsafe fn MPI_File_get_view(
    fh: MPI_File,
    disp: *mut MPI_Offset,
    etype: *mut MPI_Datatype,
    filetype: *mut MPI_Datatype,
    datarep: *mut c_char,
) -> MpiResult {
    let view = file_of(fh)?.state().view.clone();
    for (p, what) in [(disp.cast::<c_void>(), "disp"), (etype.cast(), "etype"), (filetype.cast(), "filetype")] {
        super::errors::check_out(p, what)?;
    }
    super::errors::check_out(datarep, "datarep")?;
    // SAFETY: checked non-null; the caller's contract on sizes.
    unsafe {
        *disp = view.disp as MPI_Offset;
        *etype = View::handle_of(&view.etype);
        *filetype = View::handle_of(&view.filetype);
        write_c_string(&view.datarep, datarep, MPI_MAX_DATAREP_STRING as usize);
    }
    Ok(())
}

pub fn MPI_File_seek(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> MpiResult {
    io_file::seek(&*file_of(fh)?, offset, whence)
}

pub fn MPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) -> MpiResult {
    io_file::seek_shared(&*file_of(fh)?, offset, whence)
}

/// # Safety
/// `offset` is null or writable.
pub unsafe fn MPI_File_get_position(fh: MPI_File, offset: *mut MPI_Offset) -> MpiResult {
    let file = file_of(fh)?;
    io_file::check_not_sequential(&file)?;
    let p = file.state().pointer;
    // SAFETY: the caller's contract.
    unsafe { put(offset, p as MPI_Offset, "offset") }
}

/// # Safety
/// `offset` is null or writable.
pub unsafe fn MPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) -> MpiResult {
    let file = file_of(fh)?;
    let p = file.shared_pointer("MPI_File_get_position_shared")?.load()?;
    // SAFETY: the caller's contract.
    unsafe { put(offset, p as MPI_Offset, "offset") }
}

/// # Safety
/// `disp` is null or writable.
pub unsafe fn MPI_File_get_byte_offset(fh: MPI_File, offset: MPI_Offset, disp: *mut MPI_Offset) -> MpiResult {
    let file = file_of(fh)?;
    io_file::check_not_sequential(&file)?;
    if offset < 0 {
        return err(MPI_ERR_ARG, format!("invalid offset argument ({offset})"));
    }
    let byte = file.state().view.byte_offset(offset as u64);
    // SAFETY: the caller's contract.
    unsafe { put(disp, byte as MPI_Offset, "disp") }
}

// ----- data access -----
//
// Six implementations serve the data-access functions, one per file pointer and direction
// (`MPI_File_read_at_c`, ...), each taking a `FileForm` (blocking, nonblocking, collective,
// nonblocking collective, split begin), and two the ends of split collectives, taking a
// `SplitEnd`; build.rs generates every member's C entry (family.rs).

/// How the members of the file take part in an access.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Coordination {
    Independent,
    Collective,
    Ordered,
}
use Coordination::*;

/// The program's side of an access, its arguments checked.
fn memory(buf: *const c_void, count: MPI_Count, datatype: MPI_Datatype) -> MpiResult<Memory> {
    if count < 0 {
        return err(MPI_ERR_COUNT, format!("invalid count argument (count={count})"));
    }
    let layout = crate::datatype::layout(datatype)?;
    let count = count as usize;
    if buf.is_null() && count > 0 && layout.size > 0 && layout.lower(count) == 0 {
        return err(MPI_ERR_BUFFER, "invalid buffer pointer (NULL with a nonzero count)");
    }
    Ok(Memory { addr: buf as usize, count, datatype, layout })
}

/// Moves the data of an access and returns the status to report.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, writable for reads.
unsafe fn data_access(
    file: &File,
    pos: Position,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dir: Direction,
    how: Coordination,
) -> MpiResult<Status> {
    let mem = memory(buf, count, datatype);
    // SAFETY: the caller's contract on `buf`.
    let bytes = unsafe {
        match how {
            Independent => access::access(file, pos, &mem?, dir),
            // A member with bad arguments still takes part (with no data): the others do not
            // wait for it.
            Collective => collective::access_all(file, pos, mem.as_ref().map_err(Clone::clone), dir),
            Ordered => collective::access_ordered(file, mem.as_ref().map_err(Clone::clone), dir),
        }
    }?;
    Ok(Status { bytes, ..Status::empty() })
}

/// The split collective begun by a `_begin` at `pos` in direction `dir` (for `_end`'s check).
fn split_kind(pos: Position, dir: Direction) -> (SplitEnd, Direction) {
    let end = match pos {
        Position::Explicit(_) => SplitEnd::Explicit,
        Position::Individual => SplitEnd::Individual,
        Position::Shared | Position::Reserved(_) => SplitEnd::Shared,
    };
    (end, dir)
}

/// Every data-access function: `form` says how it runs and where its status or request
/// goes. Nonblocking forms do their I/O now and return a completed request (the nonblocking
/// collectives as independent accesses: starting one must not wait for the other ranks);
/// split collectives do it in `_begin` and keep the outcome for `_end`.
///
/// # Safety
/// `buf` holds `count` elements of `datatype`, writable for reads; the output argument of
/// `form` is MPI_STATUS_IGNORE, null or writable.
unsafe fn data_access_in(
    fh: MPI_File,
    pos: Position,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dir: Direction,
    form: FileForm,
) -> MpiResult {
    let file = file_of(fh)?;
    let collective = if pos == Shared { Ordered } else { Collective };
    match form {
        FileForm::Blocking(status) | FileForm::Collective(status) => {
            let how = if matches!(form, FileForm::Blocking(_)) { Independent } else { collective };
            // SAFETY: forwarded.
            let s = unsafe { data_access(&file, pos, buf, count, datatype, dir, how) }?;
            // SAFETY: forwarded.
            unsafe { write_status(status, &s, false) };
            Ok(())
        }
        FileForm::Start(request) | FileForm::StartCollective(request) => {
            super::errors::check_out(request, "request")?;
            // SAFETY: forwarded; the program leaves `buf` alone until the request completes.
            let task = unsafe { background::start(access::prepare(&file, pos, memory(buf, count, datatype)?, dir)?) };
            // The request's errors go to the file's handler (`errhandler::raise`).
            let id = runtime::with(|rt| Ok(rt.engine.start_task(task, fh as usize as c_int)))?;
            // SAFETY: checked non-null.
            unsafe { put(request, request_handle(id), "request") }
        }
        FileForm::Begin => {
            if file.state().split.is_some() {
                return Err(access::split_error(true));
            }
            // SAFETY: forwarded.
            let outcome = unsafe { data_access(&file, pos, buf, count, datatype, dir, collective) }.map(|s| s.bytes);
            let (end, dir) = split_kind(pos, dir);
            file.state().split = Some(io_file::Split { end: end as u8, write: dir == Write, outcome });
            Ok(())
        }
    }
}

/// The `_end` of a split collective: the outcome of its `_begin`, which must be of the same
/// kind (`end`, `dir`).
///
/// # Safety
/// `status` is MPI_STATUS_IGNORE, null or writable.
unsafe fn split_end(fh: MPI_File, status: *mut MPI_Status, end: SplitEnd, dir: Direction) -> MpiResult {
    let file = file_of(fh)?;
    let mut st = file.state();
    let split = st.split.as_ref().ok_or_else(|| access::split_error(false))?;
    if (split.end, split.write) != (end as u8, dir == Write) {
        return err(MPI_ERR_IO, "this _end does not match the split collective begun on this file (another _begin)");
    }
    let outcome = st.split.take().expect("just checked").outcome;
    drop(st);
    let s = Status { bytes: outcome?, ..Status::empty() };
    // SAFETY: the caller's contract.
    unsafe { write_status(status, &s, false) };
    Ok(())
}

use Direction::{Read, Write};
use Position::{Explicit, Individual, Shared};

/// MPI_File_read_at and its family (`iread_at`, `read_at_all`, `iread_at_all`,
/// `read_at_all_begin`, and their `_c` forms).
///
/// # Safety
/// As for `data_access_in`.
pub unsafe fn MPI_File_read_at_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    form: FileForm,
) -> MpiResult {
    // SAFETY: C passed what the function's prototype promises.
    unsafe { data_access_in(fh, Explicit(offset), buf, count, datatype, Read, form) }
}

/// MPI_File_write_at and its family.
///
/// # Safety
/// As for `data_access_in`.
pub unsafe fn MPI_File_write_at_c(
    fh: MPI_File,
    offset: MPI_Offset,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    form: FileForm,
) -> MpiResult {
    // SAFETY: C passed what the function's prototype promises.
    unsafe { data_access_in(fh, Explicit(offset), buf, count, datatype, Write, form) }
}

/// MPI_File_read and its family (the individual file pointer: `iread`, `read_all`,
/// `iread_all`, `read_all_begin`).
///
/// # Safety
/// As for `data_access_in`.
pub unsafe fn MPI_File_read_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    form: FileForm,
) -> MpiResult {
    // SAFETY: C passed what the function's prototype promises.
    unsafe { data_access_in(fh, Individual, buf, count, datatype, Read, form) }
}

/// MPI_File_write and its family.
///
/// # Safety
/// As for `data_access_in`.
pub unsafe fn MPI_File_write_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    form: FileForm,
) -> MpiResult {
    // SAFETY: C passed what the function's prototype promises.
    unsafe { data_access_in(fh, Individual, buf, count, datatype, Write, form) }
}

/// MPI_File_read_shared and its family (the shared file pointer: `iread_shared`,
/// `read_ordered`, `read_ordered_begin`).
///
/// # Safety
/// As for `data_access_in`.
pub unsafe fn MPI_File_read_shared_c(
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    form: FileForm,
) -> MpiResult {
    // SAFETY: C passed what the function's prototype promises.
    unsafe { data_access_in(fh, Shared, buf, count, datatype, Read, form) }
}

/// MPI_File_write_shared and its family.
///
/// # Safety
/// As for `data_access_in`.
pub unsafe fn MPI_File_write_shared_c(
    fh: MPI_File,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    form: FileForm,
) -> MpiResult {
    // SAFETY: C passed what the function's prototype promises.
    unsafe { data_access_in(fh, Shared, buf, count, datatype, Write, form) }
}

/// MPI_File_read_at_all_end, MPI_File_read_all_end, MPI_File_read_ordered_end.
///
/// # Safety
/// `status` is MPI_STATUS_IGNORE, null or writable.
pub unsafe fn MPI_File_read_all_end(
    fh: MPI_File,
    buf: *mut c_void,
    status: *mut MPI_Status,
    end: SplitEnd,
) -> MpiResult {
    // The buffer is the `_begin`'s, whose data moved then.
    let _ = buf;
    // SAFETY: the caller's contract.
    unsafe { split_end(fh, status, end, Read) }
}

/// MPI_File_write_at_all_end, MPI_File_write_all_end, MPI_File_write_ordered_end.
///
/// # Safety
/// `status` is MPI_STATUS_IGNORE, null or writable.
pub unsafe fn MPI_File_write_all_end(
    fh: MPI_File,
    buf: *const c_void,
    status: *mut MPI_Status,
    end: SplitEnd,
) -> MpiResult {
    // The buffer is the `_begin`'s, whose data moved then.
    let _ = buf;
    // SAFETY: the caller's contract.
    unsafe { split_end(fh, status, end, Write) }
}
