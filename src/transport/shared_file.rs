//! Files of shared memory that the ranks of a node map: the point-to-point segment, the
//! collectives areas, shared windows, the shared file pointer's page.
//!
//! By default a file is anonymous (`memfd_create`): the others open it as
//! `/proc/<creator's pid>/fd/<fd>` while the creator holds it open, which it does until every
//! user has mapped it. So nothing is ever left behind, however a job ends (a launcher that
//! kills ranks mid-`MPI_Init` included), and the size of `/dev/shm` (64 MiB in a container by
//! default) does not limit jobs. With `OXMPI_SHM_FILES=1` the files are named in `/dev/shm`
//! instead (for ranks of one node that cannot see each other's `/proc`, such as ranks in
//! separate containers sharing `/dev/shm`), with the job's prefix, and unlinked as soon as
//! every user has mapped them; our `mpiexec` removes the job's files should it end first.

use crate::abi::consts::MPI_ERR_NO_MEM;
use crate::error::{MpiError, MpiResult};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};

/// A file of shared memory made by this rank, all of its bytes reserved. Dropping it (once
/// every user has mapped it) closes it, or unlinks it in `/dev/shm`.
pub struct SharedFile {
    file: File,
    /// What the other ranks open (`open`).
    name: String,
    /// A name in `/dev/shm`, unlinked on drop.
    named: bool,
}

/// Whether shared files are named in `/dev/shm` (`OXMPI_SHM_FILES=1`).
pub fn named_files() -> bool {
    std::env::var(crate::config::SHM_FILES).is_ok_and(|v| v.trim() == "1")
}

impl SharedFile {
    /// Makes a file of `len` bytes. `label` ends its name in `/dev/shm` (after the job's
    /// prefix) when files are named; anonymous files get it as their debugging name.
    /// Every byte is reserved here, so a lack of memory (or of room in `/dev/shm`) is an
    /// error now, not a SIGBUS at the first touch of a page.
    pub fn create(label: &str, len: usize) -> MpiResult<SharedFile> {
        let (file, name, named) = if named_files() {
            let path = format!("/dev/shm/{}{label}", crate::coll::hier::job_prefix());
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| error(format!("cannot create {path}"), e))?;
            (file, path, true)
        } else {
            let label = std::ffi::CString::new(format!("oxmpi-{label}")).expect("labels have no NUL");
            // SAFETY: a NUL-terminated name; the descriptor returned is new and ours.
            let fd = unsafe { libc::memfd_create(label.as_ptr(), libc::MFD_CLOEXEC) };
            if fd < 0 {
                return Err(error("cannot create anonymous shared memory".into(), io::Error::last_os_error()));
            }
            // SAFETY: `fd` is a new open descriptor nothing else owns.
            let file = unsafe { File::from_raw_fd(fd) };
            let name = format!("/proc/{}/fd/{fd}", std::process::id());
            (file, name, false)
        };
        let shared = SharedFile { file, name, named };
        // SAFETY: an open regular file; posix_fallocate only reads its arguments.
        let rc = unsafe { libc::posix_fallocate(shared.file.as_raw_fd(), 0, len as libc::off_t) };
        if rc != 0 {
            let room = if named { "is /dev/shm too small?" } else { "is memory short?" };
            return Err(error(
                format!("cannot reserve {} KiB for {} ({room})", len.div_ceil(1024), shared.name),
                io::Error::from_raw_os_error(rc),
            ));
        }
        Ok(shared)
    }

    /// The name the other ranks of the node open (`open`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for SharedFile {
    fn drop(&mut self) {
        if self.named {
            let _ = std::fs::remove_file(&self.name);
        }
    }
}

/// Opens a file another rank of the node made (`SharedFile::name`), for reading and writing.
pub fn open(name: &str) -> MpiResult<File> {
    OpenOptions::new().read(true).write(true).open(name).map_err(|e| {
        let hint = if name.starts_with("/proc/") {
            " (ranks of one node that cannot open each other's /proc entries, such as ranks in \
             separate containers, need OXMPI_SHM_FILES=1 and a shared /dev/shm)"
        } else {
            ""
        };
        error(format!("cannot open {name}{hint}"), e)
    })
}

fn error(what: String, e: io::Error) -> MpiError {
    MpiError::new(MPI_ERR_NO_MEM, format!("shared memory: {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    #[test]
    fn another_open_sees_the_same_bytes() {
        let shared = SharedFile::create("unittest", 8192).unwrap();
        assert_eq!(shared.file().metadata().unwrap().len(), 8192);
        let mut other = open(shared.name()).unwrap();
        other.write_all(b"hello").unwrap();
        let mut back = [0u8; 5];
        let mut mine = shared.file();
        mine.seek(std::io::SeekFrom::Start(0)).unwrap();
        mine.read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hello");
    }
}
