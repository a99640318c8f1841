//! Whether this machine can hold a job of N ranks: checked before anything starts, so that
//! `-n 99999999999` is an error message, not thousands of forks.

use std::ffi::CString;

/// File descriptors mpiexec holds per rank: the PMI socket and the stdout and stderr pipes.
const FDS_PER_RANK: u64 = 3;
/// Descriptors mpiexec needs besides: stdio, the signal pipe, rank 0's stdin, slack.
const FDS_BASE: u64 = 32;

/// The limits a job must fit in; `None` where there is no limit or it cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// RLIMIT_NPROC (soft): processes of this user.
    pub user_processes: Option<u64>,
    /// Threads the kernel has room for: min(pid_max, threads-max) less those running now.
    pub free_threads: Option<u64>,
    /// RLIMIT_NOFILE, hard (mpiexec raises its soft limit up to it when needed).
    pub open_files: Option<u64>,
    /// Bytes free in /dev/shm.
    pub shm_free: Option<u64>,
}

/// Why `ranks` ranks, whose node segment takes `shm_bytes(ranks)` bytes, do not fit in
/// `limits`; `None` when they do. Checked in this order so the shared-memory size is only
/// computed for counts that fit in the process table.
pub fn problem(ranks: u64, limits: &Limits, shm_bytes: impl FnOnce(usize) -> Option<u64>) -> Option<String> {
    if let Some(limit) = limits.user_processes
        && ranks > limit
    {
        return Some(format!("cannot start {ranks} ranks: this user may run at most {limit} processes (ulimit -u)"));
    }
    if let Some(limit) = limits.free_threads
        && ranks > limit
    {
        return Some(format!(
            "cannot start {ranks} ranks: the kernel has room for {limit} more processes \
             (kernel.pid_max, kernel.threads-max)"
        ));
    }
    let fds = ranks.saturating_mul(FDS_PER_RANK).saturating_add(FDS_BASE);
    if let Some(limit) = limits.open_files
        && fds > limit
    {
        return Some(format!(
            "cannot start {ranks} ranks: mpiexec needs {fds} open files ({FDS_PER_RANK} per rank), \
             the limit is {limit} (ulimit -n)"
        ));
    }
    let bytes = usize::try_from(ranks).ok().and_then(shm_bytes);
    if let (Some(free), Some(bytes)) = (limits.shm_free, bytes)
        && bytes > free
    {
        return Some(format!(
            "cannot start {ranks} ranks: their shared memory (segment and collectives area) needs {} MiB, \
             /dev/shm has {} MiB free",
            bytes.div_ceil(1 << 20),
            free / (1 << 20)
        ));
    }
    // A count whose segment size does not even fit in the address space.
    if bytes.is_none() && limits.shm_free.is_some() {
        return Some(format!("cannot start {ranks} ranks: their shared-memory segment would not fit in memory"));
    }
    None
}

fn rlimit(resource: libc::__rlimit_resource_t) -> Option<libc::rlimit> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit struct to a valid pointer.
    (unsafe { libc::getrlimit(resource, &mut limit) } == 0).then_some(limit)
}

fn finite(value: libc::rlim_t) -> Option<u64> {
    (value != libc::RLIM_INFINITY).then_some(value)
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Threads running now: the total of "runnable/total" in /proc/loadavg.
fn threads_now() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().nth(3)?.split_once('/')?.1.parse().ok()
}

fn shm_free() -> Option<u64> {
    let path = CString::new("/dev/shm").ok()?;
    // SAFETY: statvfs is plain data; zeroes are a valid value before the call fills it.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid statvfs to fill.
    (unsafe { libc::statvfs(path.as_ptr(), &mut stat) } == 0).then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

/// This machine's limits, as they apply to this mpiexec.
pub fn this_machine() -> Limits {
    let kernel_threads = [read_number("/proc/sys/kernel/pid_max"), read_number("/proc/sys/kernel/threads-max")]
        .into_iter()
        .flatten()
        .min();
    Limits {
        user_processes: rlimit(libc::RLIMIT_NPROC).and_then(|l| finite(l.rlim_cur)),
        free_threads: kernel_threads.map(|max| max.saturating_sub(threads_now().unwrap_or(0))),
        open_files: rlimit(libc::RLIMIT_NOFILE).and_then(|l| finite(l.rlim_max)),
        // Only files in /dev/shm take its room (`OXMPI_SHM_FILES=1`); anonymous shared
        // memory does not.
        shm_free: if oxmpi::transport::shared_file::named_files() { shm_free() } else { None },
    }
}

/// Raises the soft limit of open files so that `ranks` ranks fit (up to the hard limit,
/// which `problem` checked).
pub fn raise_open_files(ranks: u64) {
    let needed = ranks.saturating_mul(FDS_PER_RANK).saturating_add(FDS_BASE);
    if let Some(mut limit) = rlimit(libc::RLIMIT_NOFILE)
        && limit.rlim_cur != libc::RLIM_INFINITY
        && limit.rlim_cur < needed
    {
        limit.rlim_cur = needed.min(limit.rlim_max);
        // SAFETY: setrlimit reads one valid rlimit struct; a soft limit up to the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            log::warn!("cannot raise the open-file limit to {needed}");
        }
    }
}

/// The shared memory `ranks` ranks on one node reserve: the point-to-point segment and the
/// world communicator's collectives area (made at its first collective).
pub fn shm_segment_bytes(ranks: usize) -> Option<u64> {
    // Far beyond any process table: the size computation would overflow.
    if ranks > 1 << 24 {
        return None;
    }
    let area = if ranks > 1 { oxmpi::coll::shm::area_bytes(ranks) } else { 0 };
    Some((oxmpi::transport::shm::Geometry::for_ranks(ranks).total_bytes() + area) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOMY: Limits = Limits {
        user_processes: Some(1000),
        free_threads: Some(5000),
        open_files: Some(4096),
        shm_free: Some(1 << 30),
    };

    fn shm(ranks: usize) -> Option<u64> {
        Some(ranks as u64 * ranks as u64 * 1000)
    }

    #[test]
    fn counts_that_fit() {
        assert_eq!(problem(1, &ROOMY, shm), None);
        assert_eq!(problem(8, &ROOMY, shm), None);
        assert_eq!(problem(1000, &ROOMY, shm), None);
        let unlimited = Limits { user_processes: None, free_threads: None, open_files: None, shm_free: None };
        assert_eq!(problem(99_999_999_999, &unlimited, |_| None), None);
    }

    #[test]
    fn counts_that_do_not() {
        let message = problem(1001, &ROOMY, shm).unwrap();
        assert!(message.contains("1001 ranks") && message.contains("ulimit -u"), "{message}");
        let limits = Limits { user_processes: None, ..ROOMY };
        let message = problem(99_999_999_999, &limits, |_| panic!("not computed")).unwrap();
        assert!(message.contains("pid_max"), "{message}");
        let limits = Limits { open_files: Some(256), ..ROOMY };
        let message = problem(100, &limits, shm).unwrap();
        assert!(message.contains("332 open files") && message.contains("ulimit -n"), "{message}");
        assert_eq!(problem(74, &limits, shm), None);
        let limits = Limits { shm_free: Some(50_000_000), ..ROOMY };
        let message = problem(300, &limits, shm).unwrap();
        assert!(message.contains("86 MiB") && message.contains("/dev/shm has 47 MiB free"), "{message}");
        assert!(problem(10, &ROOMY, |_| None).unwrap().contains("would not fit"));
    }

    #[test]
    fn the_segment_grows_with_the_ranks() {
        // Quadratic in the ranks, with 1.5 KiB per pair from 32 ranks on (transport::shm).
        let small = shm_segment_bytes(8).unwrap();
        let large = shm_segment_bytes(800).unwrap();
        assert!(small > 0 && large > 30 * small, "{small} {large}");
        assert_eq!(shm_segment_bytes(usize::MAX), None);
    }
}
