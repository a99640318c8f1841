//! MPI-IO (MPI-4.1 chapter 14) over POSIX files, natively: no ROMIO.
//!
//! - `file`: the file objects behind MPI_File handles; open, close, delete, sizes, hints,
//!   atomicity, views and file pointers.
//! - `view`: a view as the filetype's flattened layout; an access's byte range of the view
//!   becomes (file offset, length) runs.
//! - `datarep`: data representations (external32, the program's own) and the conversion
//!   of an access's data.
//! - `access`: positioning and the vectored system calls (`preadv`/`pwritev`) of one rank.
//! - `background`: nonblocking independent accesses moved by an I/O thread.
//! - `collective`: the collective and ordered accesses, independent or two-phase (the
//!   members' data gathered at aggregators, which do large reads and writes).
//! - `shared`: the shared file pointer in a page of shared memory.
//! - `hints`: ROMIO's hint names, accepted and reported.
//! - `errors`: `errno` to MPI-IO error classes, in one place.
//! - `scratch`: byte buffers reused between accesses.
//!
//! Not yet: nonblocking collective accesses that overlap computation (they are done as
//! independent ones when started).

pub mod access;
pub mod background;
pub mod collective;
pub mod datarep;
pub mod errors;
pub mod file;
pub mod hints;
mod scratch;
pub mod shared;
pub mod view;
