//! PMIx client: `libpmix.so.2` opened with `dlopen` when the process manager speaks PMIx
//! (Slurm's `srun --mpi=pmix`, PRRTE's `prterun`), so that the library loads, and runs under
//! every other launcher, on machines without it.
//!
//! PMIx keeps each process's keys apart (a key is read from the process that put it), where
//! PMI-1 and PMI-2 have one space for the job; [`super::Pmi::get`] therefore names the rank
//! that put a key. A fence collects every process's keys (`PMIX_COLLECT_DATA`), so later
//! reads are answered from the local copy.

use std::ffi::{CStr, CString, c_char};
use std::io;
use std::sync::OnceLock;

pub use super::pmix_sys as sys;

/// The shared object opened at run time (the soname of PMIx 2 to 5).
pub const LIBRARY: &CStr = c"libpmix.so.2";

/// Whether a PMIx server started this process: it gives every client its namespace and rank.
pub fn offered() -> bool {
    std::env::var_os("PMIX_NAMESPACE").is_some() && std::env::var_os("PMIX_RANK").is_some()
}

/// The exported functions of the loaded library (never unloaded).
struct Api {
    init: sys::PMIx_Init_fn,
    finalize: sys::PMIx_Finalize_fn,
    abort: sys::PMIx_Abort_fn,
    put: sys::PMIx_Put_fn,
    commit: sys::PMIx_Commit_fn,
    fence: sys::PMIx_Fence_fn,
    get: sys::PMIx_Get_fn,
    value_destruct: sys::PMIx_Value_destruct_fn,
    error_string: sys::PMIx_Error_string_fn,
}

/// Every field of `Api` is `Some` once `load` returned it.
const RESOLVED: &str = "libpmix symbol resolved at load";

impl Api {
    /// Loads the library once per process (later calls return the same result).
    fn open() -> io::Result<&'static Api> {
        static LOADED: OnceLock<Result<Api, String>> = OnceLock::new();
        LOADED
            .get_or_init(|| Api::load(LIBRARY))
            .as_ref()
            .map_err(|why| io::Error::new(io::ErrorKind::NotFound, why.clone()))
    }

    /// Loads `library` afresh; the error is one line for the user.
    fn load(library: &CStr) -> Result<Api, String> {
        let name = library.to_string_lossy();
        let handle = crate::dl::open(library).map_err(|why| {
            format!(
                "cannot load {name} ({why}): the process manager speaks PMIx, which needs the PMIx library; \
                 install it (Debian/Ubuntu: apt-get install libpmix2), or start the job with PMI-2 \
                 (srun --mpi=pmi2) or oxmpi's mpiexec"
            )
        })?;
        let missing = |symbol: &CStr, why: String| {
            format!("{name} has no symbol {} ({why}): PMIx 4 or newer is needed", symbol.to_string_lossy())
        };
        macro_rules! resolve {
            ($symbol:literal) => {
                // SAFETY: `handle` is live (never closed), and each type is the one pmix_sys
                // derived from the header declaration of that very symbol.
                unsafe { crate::dl::symbol(handle, $symbol) }.map_err(|why| missing($symbol, why))?
            };
        }
        Ok(Api {
            init: resolve!(c"PMIx_Init"),
            finalize: resolve!(c"PMIx_Finalize"),
            abort: resolve!(c"PMIx_Abort"),
            put: resolve!(c"PMIx_Put"),
            commit: resolve!(c"PMIx_Commit"),
            fence: resolve!(c"PMIx_Fence"),
            get: resolve!(c"PMIx_Get"),
            value_destruct: resolve!(c"PMIx_Value_destruct"),
            error_string: resolve!(c"PMIx_Error_string"),
        })
    }

    /// `what` failed with PMIx status `status`, as an error naming both.
    fn failure(&self, what: &str, status: sys::pmix_status_t) -> io::Error {
        // SAFETY: PMIx_Error_string returns a static NUL-terminated string for any status.
        let text = unsafe {
            let s = self.error_string.expect(RESOLVED)(status);
            if s.is_null() { String::from("unknown status") } else { CStr::from_ptr(s).to_string_lossy().into_owned() }
        };
        io::Error::other(format!("{what} failed: {text} ({status})"))
    }
}

/// A value read with `PMIx_Get`, released with the library's destructor.
struct Value<'a> {
    api: &'a Api,
    value: *mut sys::pmix_value_t,
}

impl Value<'_> {
    /// The value as an unsigned number, when it is an integer of any width.
    fn number(&self) -> Option<u64> {
        // SAFETY: `value` is the live value PMIx_Get returned; the union field read is the one
        // its type tag names.
        unsafe {
            let v = &*self.value;
            let d = &v.data;
            Some(match v.type_ {
                sys::PMIX_INT => d.integer as u64,
                sys::PMIX_INT8 => d.int8 as u64,
                sys::PMIX_INT16 => d.int16 as u64,
                sys::PMIX_INT32 => d.int32 as u64,
                sys::PMIX_INT64 => d.int64 as u64,
                sys::PMIX_UINT => u64::from(d.uint),
                sys::PMIX_UINT8 => u64::from(d.uint8),
                sys::PMIX_UINT16 => u64::from(d.uint16),
                sys::PMIX_UINT32 => u64::from(d.uint32),
                sys::PMIX_UINT64 => d.uint64,
                sys::PMIX_SIZE => d.size as u64,
                sys::PMIX_PROC_RANK => u64::from(d.rank),
                _ => return None,
            })
        }
    }

    /// The value as text, when it is a string.
    fn text(&self) -> Option<String> {
        // SAFETY: as in `number`; a PMIX_STRING value holds a NUL-terminated string or null.
        unsafe {
            let v = &*self.value;
            (v.type_ == sys::PMIX_STRING && !v.data.string.is_null())
                .then(|| CStr::from_ptr(v.data.string).to_string_lossy().into_owned())
        }
    }
}

impl Drop for Value<'_> {
    fn drop(&mut self) {
        // SAFETY: PMIx_Get allocated the value with malloc (PMIX_VALUE_RELEASE's contract):
        // its contents are destructed by the library, the struct freed here, once.
        unsafe {
            self.api.value_destruct.expect(RESOLVED)(self.value);
            libc::free(self.value.cast());
        }
    }
}

/// This process's PMIx connection.
pub struct Pmix {
    api: &'static Api,
    me: sys::pmix_proc_t,
    finalized: bool,
}

impl Pmix {
    /// Loads the library and connects to the server named by the environment.
    pub fn init() -> io::Result<Pmix> {
        let api = Api::open()?;
        // SAFETY: pmix_proc_t is plain data (a name and a number): all zeros is valid.
        let mut me: sys::pmix_proc_t = unsafe { std::mem::zeroed() };
        // SAFETY: `me` is writable; no info directives.
        let status = unsafe { api.init.expect(RESOLVED)(&mut me, std::ptr::null_mut(), 0) };
        if status != sys::PMIX_SUCCESS {
            return Err(api.failure("PMIx_Init", status));
        }
        Ok(Pmix { api, me, finalized: false })
    }

    pub fn rank(&self) -> usize {
        self.me.rank as usize
    }

    /// The job's namespace (its name, as the server spells it).
    pub fn namespace(&self) -> String {
        // SAFETY: PMIx_Init wrote a NUL-terminated name into the zeroed array, whose last
        // byte it never writes (PMIX_MAX_NSLEN + 1 bytes).
        unsafe { CStr::from_ptr(self.me.nspace.as_ptr()) }.to_string_lossy().into_owned()
    }

    /// The process `rank` of this job (`PMIX_RANK_WILDCARD`: the job itself).
    fn proc(&self, rank: sys::pmix_rank_t) -> sys::pmix_proc_t {
        sys::pmix_proc_t { nspace: self.me.nspace, rank }
    }

    /// `PMIx_Get` of `key` from process `rank`; `None` when it is not there.
    fn get_value(&self, rank: sys::pmix_rank_t, key: &CStr) -> io::Result<Option<Value<'static>>> {
        let proc = self.proc(rank);
        let mut value: *mut sys::pmix_value_t = std::ptr::null_mut();
        // SAFETY: `proc` and `key` are valid for the call; the library allocates `*value`.
        let status = unsafe { self.api.get.expect(RESOLVED)(&proc, key.as_ptr(), std::ptr::null(), 0, &mut value) };
        match status {
            sys::PMIX_SUCCESS if !value.is_null() => Ok(Some(Value { api: self.api, value })),
            sys::PMIX_SUCCESS | sys::PMIX_ERR_NOT_FOUND => Ok(None),
            _ => Err(self.api.failure(&format!("PMIx_Get({})", key.to_string_lossy()), status)),
        }
    }

    /// A number the server gives about the job (`PMIX_JOB_SIZE`, ...).
    pub fn job_number(&self, key: &CStr) -> io::Result<Option<u64>> {
        Ok(self.get_value(RANK_WILDCARD, key)?.and_then(|v| v.number()))
    }

    /// A number the server gives about process `rank` (`PMIX_NODEID`, `PMIX_APPNUM`).
    pub fn proc_number(&self, rank: usize, key: &CStr) -> io::Result<Option<u64>> {
        Ok(self.get_value(rank as sys::pmix_rank_t, key)?.and_then(|v| v.number()))
    }

    /// Publishes `key=value` to every process (after the next fence).
    pub fn put(&mut self, key: &str, value: &str) -> io::Result<()> {
        let key = c_text(key)?;
        let text = c_text(value)?;
        // SAFETY: pmix_value_t is plain data: all zeros is valid (PMIX_UNDEF).
        let mut v: sys::pmix_value_t = unsafe { std::mem::zeroed() };
        v.type_ = sys::PMIX_STRING;
        v.data.string = text.as_ptr().cast_mut();
        // SAFETY: PMIx_Put copies the key and the value (the string included) before it returns.
        let status = unsafe { self.api.put.expect(RESOLVED)(sys::PMIX_GLOBAL, key.as_ptr(), &mut v) };
        if status != sys::PMIX_SUCCESS {
            return Err(self.api.failure("PMIx_Put", status));
        }
        Ok(())
    }

    /// Commits this process's keys and waits for every process of the job to do the same,
    /// collecting all their keys.
    pub fn fence(&mut self) -> io::Result<()> {
        // SAFETY: no arguments.
        let status = unsafe { self.api.commit.expect(RESOLVED)() };
        if status != sys::PMIX_SUCCESS {
            return Err(self.api.failure("PMIx_Commit", status));
        }
        // SAFETY: pmix_info_t is plain data; the key fits (checked by the compiler: the
        // constant is shorter than PMIX_MAX_KEYLEN).
        let mut collect: sys::pmix_info_t = unsafe { std::mem::zeroed() };
        for (dst, &src) in collect.key.iter_mut().zip(sys::PMIX_COLLECT_DATA.iter()) {
            *dst = src as c_char;
        }
        collect.value.type_ = sys::PMIX_BOOL;
        collect.value.data.flag = true;
        // SAFETY: null procs with 0 means the whole namespace; `collect` lives for the call.
        let status = unsafe { self.api.fence.expect(RESOLVED)(std::ptr::null(), 0, &collect, 1) };
        if status != sys::PMIX_SUCCESS {
            return Err(self.api.failure("PMIx_Fence", status));
        }
        Ok(())
    }

    /// `key` as process `rank` put it; `None` when it did not.
    pub fn get(&mut self, rank: usize, key: &str) -> io::Result<Option<String>> {
        let key = c_text(key)?;
        match self.get_value(rank as sys::pmix_rank_t, &key)? {
            None => Ok(None),
            Some(v) => v
                .text()
                .map(Some)
                .ok_or_else(|| io::Error::other(format!("PMIx key {key:?} of rank {rank} is not a string"))),
        }
    }

    /// Asks the server to end the job with `code`; returns when it did not.
    pub fn abort(&mut self, code: i32, msg: &str) {
        let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: `msg` is NUL-terminated; null procs mean the whole job.
        let status = unsafe { self.api.abort.expect(RESOLVED)(code, msg.as_ptr(), std::ptr::null_mut(), 0) };
        if status != sys::PMIX_SUCCESS {
            log::debug!("{}", self.api.failure("PMIx_Abort", status));
        }
    }

    /// Disconnects from the server (MPI_Finalize).
    pub fn finalize(&mut self) -> io::Result<()> {
        if std::mem::replace(&mut self.finalized, true) {
            return Ok(());
        }
        // SAFETY: no info directives.
        let status = unsafe { self.api.finalize.expect(RESOLVED)(std::ptr::null(), 0) };
        if status != sys::PMIX_SUCCESS {
            return Err(self.api.failure("PMIx_Finalize", status));
        }
        Ok(())
    }
}

/// `PMIX_RANK_WILDCARD` (`UINT32_MAX-1` in C, which bindgen does not evaluate): the job itself.
pub const RANK_WILDCARD: sys::pmix_rank_t = u32::MAX - 1;

fn c_text(s: &str) -> io::Result<CString> {
    CString::new(s)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("PMIx key or value with a NUL: {s:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_names_the_package() {
        let err = Api::load(c"libpmix-not-there.so.2").err().expect("no such library");
        assert!(err.contains("libpmix-not-there.so.2") && err.contains("libpmix2"), "{err}");
    }
}
