//! The one place where a failed system call on a file becomes an MPI error: `errno` picks
//! the MPI-IO error class, and the message names the operation and the path.

use crate::abi::consts::*;
use crate::error::MpiError;
use std::ffi::c_int;
use std::io;

/// The MPI error class of a system call's `errno` (MPI-4.1 section 14.7, as ROMIO maps them).
pub fn class_of_errno(errno: c_int) -> c_int {
    match errno {
        libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG | libc::ELOOP => MPI_ERR_NO_SUCH_FILE,
        libc::EEXIST => MPI_ERR_FILE_EXISTS,
        libc::EACCES | libc::EPERM => MPI_ERR_ACCESS,
        libc::EROFS => MPI_ERR_READ_ONLY,
        libc::ENOSPC | libc::EFBIG => MPI_ERR_NO_SPACE,
        libc::EDQUOT => MPI_ERR_QUOTA,
        libc::EISDIR | libc::EBADF | libc::EINVAL => MPI_ERR_BAD_FILE,
        libc::ETXTBSY | libc::EBUSY => MPI_ERR_FILE_IN_USE,
        _ => MPI_ERR_IO,
    }
}

/// The error of `what` (e.g. "cannot open") on `path` that failed with `e`.
pub fn os_error(what: &str, path: &str, e: &io::Error) -> MpiError {
    let class = e.raw_os_error().map_or(MPI_ERR_IO, class_of_errno);
    MpiError::new(class, format!("{what} {path}: {e}"))
}

/// As `os_error`, with the calling thread's last `errno`.
pub fn last_os_error(what: &str, path: &str) -> MpiError {
    os_error(what, path, &io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_picks_the_class_and_the_message_names_the_path() {
        assert_eq!(class_of_errno(libc::ENOENT), MPI_ERR_NO_SUCH_FILE);
        assert_eq!(class_of_errno(libc::EEXIST), MPI_ERR_FILE_EXISTS);
        assert_eq!(class_of_errno(libc::EACCES), MPI_ERR_ACCESS);
        assert_eq!(class_of_errno(libc::EROFS), MPI_ERR_READ_ONLY);
        assert_eq!(class_of_errno(libc::ENOSPC), MPI_ERR_NO_SPACE);
        assert_eq!(class_of_errno(libc::EDQUOT), MPI_ERR_QUOTA);
        assert_eq!(class_of_errno(libc::EISDIR), MPI_ERR_BAD_FILE);
        assert_eq!(class_of_errno(libc::ETXTBSY), MPI_ERR_FILE_IN_USE);
        assert_eq!(class_of_errno(libc::EIO), MPI_ERR_IO);
        let e = os_error("cannot open", "/x/y", &io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(e.code, MPI_ERR_NO_SUCH_FILE);
        assert!(e.msg.contains("/x/y"), "{}", e.msg);
    }
}
