//! libfabric (OFI), opened with `dlopen` when a job first needs the network, so that the
//! library loads and runs single-node jobs on machines without libfabric.
//!
//! Only a few libfabric functions are exported symbols; `Fabric` resolves them. The rest of
//! the API is `static inline` in the headers, calling through the ops tables of each object
//! (`ep->tagged->send(...)`); the free functions below re-implement those wrappers. They
//! take the raw object pointers libfabric hands out. Where the provider left an operation
//! unset (or the whole table, as for atomics on an endpoint opened without `FI_ATOMIC`), they
//! return `-FI_ENOSYS` where the C wrapper would call through a null pointer.
//!
//! Return values are libfabric's: 0 or a count on success, a negated `FI_E*` code on failure.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::OnceLock;

pub use super::fabric_sys as sys;
use sys::{
    fi_addr_t, fi_atomic_attr, fi_av_attr, fi_cq_attr, fi_cq_err_entry, fi_datatype, fi_fabric_attr, fi_info,
    fi_msg_rma, fi_msg_tagged, fi_op, fid, fid_av, fid_cq, fid_domain, fid_ep, fid_fabric, fid_mr, fid_t, iovec,
};

/// The shared object opened at run time (the soname of libfabric 1.x).
pub const LIBRARY: &CStr = c"libfabric.so.1";

/// `FI_VERSION(major, minor)` of the C headers.
pub const fn fi_version(major: u32, minor: u32) -> u32 {
    (major << 16) | minor
}

/// The API version the bindings were generated from; `fi_getinfo` is asked for it.
pub const API_VERSION: u32 = fi_version(sys::FI_MAJOR_VERSION, sys::FI_MINOR_VERSION);

/// `FI_ADDR_UNSPEC`: `((uint64_t) -1)` in C, a cast bindgen cannot evaluate.
pub const FI_ADDR_UNSPEC: fi_addr_t = u64::MAX;

/// Why libfabric could not be loaded. Its `Display` is one line meant for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoadError {}

/// The exported functions of a loaded libfabric. The library is never unloaded: providers
/// keep state (and threads) for the life of the process.
#[derive(Debug)]
pub struct Fabric {
    version: sys::fi_version_fn,
    getinfo: sys::fi_getinfo_fn,
    freeinfo: sys::fi_freeinfo_fn,
    dupinfo: sys::fi_dupinfo_fn,
    fabric: sys::fi_fabric_fn,
    strerror: sys::fi_strerror_fn,
}

/// Every field of `Fabric` is `Some` once `load` returned it.
const RESOLVED: &str = "libfabric symbol resolved at load";

/// Resolves `name` in `handle` as a function pointer of type `F` (an `Option<unsafe extern
/// "C" fn ...>` from `fabric_sys`).
///
/// # Safety
/// `handle` must come from a successful dlopen, and `F` must be the C type of symbol `name`.
unsafe fn symbol<F: Copy>(handle: *mut c_void, library: &CStr, name: &CStr) -> Result<F, LoadError> {
    // SAFETY: forwarded from the caller.
    unsafe { crate::dl::symbol(handle, name) }.map_err(|why| LoadError {
        message: format!(
            "{} has no symbol {} ({why}): the network transport needs libfabric 1.{} or newer \
             (Debian/Ubuntu package libfabric1)",
            library.to_string_lossy(),
            name.to_string_lossy(),
            sys::FI_MINOR_VERSION
        ),
    })
}

/// Runs `f` and then puts back every signal handler it changed. Provider libraries that
/// libfabric loads and initialises install crash handlers of their own (libpsm2 writes a
/// `*.btr` backtrace file into the working directory on SIGSEGV and SIGTERM); the program's
/// handlers and the defaults must stay in force.
pub fn keeping_signal_handlers<R>(f: impl FnOnce() -> R) -> R {
    const SIGNALS: std::ops::Range<c_int> = 1..32;
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    let saved: Vec<(c_int, libc::sigaction)> = SIGNALS
        .filter_map(|sig| unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(sig, std::ptr::null(), &mut old) == 0).then_some((sig, old))
        })
        .collect();
    let out = f();
    for (sig, old) in &saved {
        // SAFETY: reinstalls an action the process had a moment ago.
        unsafe {
            let mut now: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(*sig, std::ptr::null(), &mut now) == 0 && now.sa_sigaction != old.sa_sigaction {
                libc::sigaction(*sig, old, std::ptr::null_mut());
            }
        }
    }
    out
}

impl Fabric {
    /// Loads libfabric once per process (later calls return the same result).
    pub fn open() -> Result<&'static Fabric, LoadError> {
        static LOADED: OnceLock<Result<Fabric, LoadError>> = OnceLock::new();
        LOADED.get_or_init(|| keeping_signal_handlers(|| Fabric::load(LIBRARY))).as_ref().map_err(Clone::clone)
    }

    /// Loads `library` afresh, without the per-process cache of `open`; for tests of the
    /// error path.
    pub fn load(library: &CStr) -> Result<Fabric, LoadError> {
        let handle = crate::dl::open(library).map_err(|why| LoadError {
            message: format!(
                "cannot load {} ({why}): jobs that span nodes need libfabric; install the libfabric1 package \
                 (Debian/Ubuntu: apt-get install libfabric1)",
                library.to_string_lossy()
            ),
        })?;
        // SAFETY: `handle` is live (never closed), and each type is the one fabric_sys derived
        // from the header declaration of that very symbol.
        let fabric = unsafe {
            Fabric {
                version: symbol(handle, library, c"fi_version")?,
                getinfo: symbol(handle, library, c"fi_getinfo")?,
                freeinfo: symbol(handle, library, c"fi_freeinfo")?,
                dupinfo: symbol(handle, library, c"fi_dupinfo")?,
                fabric: symbol(handle, library, c"fi_fabric")?,
                strerror: symbol(handle, library, c"fi_strerror")?,
            }
        };
        let version = fabric.library_version();
        if version < API_VERSION {
            return Err(LoadError {
                message: format!(
                    "{} is libfabric {}.{}; the network transport needs {}.{} or newer \
                     (Debian/Ubuntu package libfabric1)",
                    library.to_string_lossy(),
                    version >> 16,
                    version & 0xffff,
                    sys::FI_MAJOR_VERSION,
                    sys::FI_MINOR_VERSION
                ),
            });
        }
        Ok(fabric)
    }

    /// `fi_version()`: the API version the loaded library implements, as `FI_VERSION` encodes it.
    pub fn library_version(&self) -> u32 {
        // SAFETY: fi_version takes no arguments and only returns a constant.
        unsafe { self.version.expect(RESOLVED)() }
    }

    /// `fi_getinfo`, asking for `API_VERSION`.
    ///
    /// # Safety
    /// `node` and `service` are null or NUL-terminated; `hints` is null or a valid `fi_info`
    /// chain (as from `allocinfo`); `info` is writable. A returned list is freed with `freeinfo`.
    pub unsafe fn getinfo(
        &self,
        node: *const c_char,
        service: *const c_char,
        flags: u64,
        hints: *const fi_info,
        info: *mut *mut fi_info,
    ) -> c_int {
        // SAFETY: arguments as the caller guarantees; the function pointer was resolved at load.
        unsafe { self.getinfo.expect(RESOLVED)(API_VERSION, node, service, flags, hints, info) }
    }

    /// `fi_freeinfo`.
    ///
    /// # Safety
    /// `info` is null or a list from `getinfo`, `dupinfo` or `allocinfo`, not freed before.
    pub unsafe fn freeinfo(&self, info: *mut fi_info) {
        // SAFETY: as the caller guarantees.
        unsafe { self.freeinfo.expect(RESOLVED)(info) }
    }

    /// `fi_dupinfo`: a deep copy of one `fi_info` (not the rest of its list).
    ///
    /// # Safety
    /// `info` is null or points to a valid `fi_info`.
    pub unsafe fn dupinfo(&self, info: *const fi_info) -> *mut fi_info {
        // SAFETY: as the caller guarantees.
        unsafe { self.dupinfo.expect(RESOLVED)(info) }
    }

    /// `fi_allocinfo`: an empty `fi_info` with all its attribute structs allocated, for hints;
    /// null when out of memory. Freed with `freeinfo`.
    pub fn allocinfo(&self) -> *mut fi_info {
        // SAFETY: fi_dupinfo(NULL) allocates a zeroed fi_info; this is the header's fi_allocinfo.
        unsafe { self.dupinfo.expect(RESOLVED)(std::ptr::null()) }
    }

    /// `fi_fabric`.
    ///
    /// # Safety
    /// `attr` is the `fabric_attr` of an `fi_info` from `getinfo`; `fabric` is writable.
    pub unsafe fn fabric(
        &self,
        attr: *mut fi_fabric_attr,
        fabric: *mut *mut fid_fabric,
        context: *mut c_void,
    ) -> c_int {
        // SAFETY: as the caller guarantees.
        unsafe { self.fabric.expect(RESOLVED)(attr, fabric, context) }
    }

    /// `fi_strerror` of a libfabric error code (positive or negated, as calls return them).
    pub fn strerror(&self, code: i64) -> String {
        let errnum = c_int::try_from(code.unsigned_abs()).unwrap_or(c_int::MAX);
        // SAFETY: fi_strerror accepts any int and returns a static NUL-terminated string.
        unsafe {
            let text = self.strerror.expect(RESOLVED)(errnum);
            if text.is_null() { format!("error {errnum}") } else { CStr::from_ptr(text).to_string_lossy().into_owned() }
        }
    }
}

/// Defines the wrapper for a header function of the form
/// `static inline R fi_x(struct fid_y *obj, ...) { return obj->table->op(obj, ...); }`.
macro_rules! through_ops {
    ($(
        $(#[$doc:meta])*
        fn $name:ident($obj:ident: *mut $obj_type:ty $(, $arg:ident: $arg_type:ty)* $(,)?) -> $ret:ty
            = $table:ident . $op:ident;
    )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// The object pointer is a live libfabric object (opened, not yet closed), and the other
        /// arguments are valid as the libfabric man page of the C function requires, for as
        /// long as it requires (buffers and descriptors of posted operations until completion).
        #[allow(clippy::too_many_arguments)] // the C signature's
        pub unsafe fn $name($obj: *mut $obj_type $(, $arg: $arg_type)*) -> $ret {
            // SAFETY: the caller guarantees `$obj` is live; its ops tables are set by the
            // provider when it is opened and stay valid until it is closed.
            unsafe {
                match (*$obj).$table.as_ref().and_then(|table| table.$op) {
                    Some(op) => op($obj $(, $arg)*),
                    None => -(sys::FI_ENOSYS as $ret),
                }
            }
        }
    )*};
}

through_ops! {
    /// `fi_domain`.
    fn fi_domain(fabric: *mut fid_fabric, info: *mut fi_info, domain: *mut *mut fid_domain, context: *mut c_void)
        -> c_int = ops.domain;
    /// `fi_endpoint`.
    fn fi_endpoint(domain: *mut fid_domain, info: *mut fi_info, ep: *mut *mut fid_ep, context: *mut c_void)
        -> c_int = ops.endpoint;
    /// `fi_cq_open`.
    fn fi_cq_open(domain: *mut fid_domain, attr: *mut fi_cq_attr, cq: *mut *mut fid_cq, context: *mut c_void)
        -> c_int = ops.cq_open;
    /// `fi_av_open`.
    fn fi_av_open(domain: *mut fid_domain, attr: *mut fi_av_attr, av: *mut *mut fid_av, context: *mut c_void)
        -> c_int = ops.av_open;

    /// `fi_av_insert`: returns the number of addresses inserted.
    fn fi_av_insert(av: *mut fid_av, addr: *const c_void, count: usize, fi_addr: *mut fi_addr_t, flags: u64,
        context: *mut c_void) -> c_int = ops.insert;

    /// `fi_cq_read`: the number of entries read, or `-FI_EAGAIN` if none, or `-FI_EAVAIL` if an
    /// error entry is first (read it with `fi_cq_readerr`). Also drives manual progress.
    fn fi_cq_read(cq: *mut fid_cq, buf: *mut c_void, count: usize) -> isize = ops.read;
    /// `fi_cq_readerr`.
    fn fi_cq_readerr(cq: *mut fid_cq, buf: *mut fi_cq_err_entry, flags: u64) -> isize = ops.readerr;

    /// `fi_tsend`.
    fn fi_tsend(ep: *mut fid_ep, buf: *const c_void, len: usize, desc: *mut c_void, dest_addr: fi_addr_t, tag: u64,
        context: *mut c_void) -> isize = tagged.send;
    /// `fi_tsendv`.
    fn fi_tsendv(ep: *mut fid_ep, iov: *const iovec, desc: *mut *mut c_void, count: usize, dest_addr: fi_addr_t,
        tag: u64, context: *mut c_void) -> isize = tagged.sendv;
    /// `fi_tsendmsg`.
    fn fi_tsendmsg(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> isize = tagged.sendmsg;
    /// `fi_tinject`: buffer reusable on return; no completion.
    fn fi_tinject(ep: *mut fid_ep, buf: *const c_void, len: usize, dest_addr: fi_addr_t, tag: u64)
        -> isize = tagged.inject;
    /// `fi_trecv`: matches tags `t` with `t & !ignore == tag & !ignore`.
    fn fi_trecv(ep: *mut fid_ep, buf: *mut c_void, len: usize, desc: *mut c_void, src_addr: fi_addr_t, tag: u64,
        ignore: u64, context: *mut c_void) -> isize = tagged.recv;
    /// `fi_trecvv`.
    fn fi_trecvv(ep: *mut fid_ep, iov: *const iovec, desc: *mut *mut c_void, count: usize, src_addr: fi_addr_t,
        tag: u64, ignore: u64, context: *mut c_void) -> isize = tagged.recvv;
    /// `fi_trecvmsg`.
    fn fi_trecvmsg(ep: *mut fid_ep, msg: *const fi_msg_tagged, flags: u64) -> isize = tagged.recvmsg;

    /// `fi_read`.
    fn fi_read(ep: *mut fid_ep, buf: *mut c_void, len: usize, desc: *mut c_void, src_addr: fi_addr_t, addr: u64,
        key: u64, context: *mut c_void) -> isize = rma.read;
    /// `fi_readv`.
    fn fi_readv(ep: *mut fid_ep, iov: *const iovec, desc: *mut *mut c_void, count: usize, src_addr: fi_addr_t,
        addr: u64, key: u64, context: *mut c_void) -> isize = rma.readv;
    /// `fi_readmsg`.
    fn fi_readmsg(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize = rma.readmsg;
    /// `fi_write`.
    fn fi_write(ep: *mut fid_ep, buf: *const c_void, len: usize, desc: *mut c_void, dest_addr: fi_addr_t, addr: u64,
        key: u64, context: *mut c_void) -> isize = rma.write;
    /// `fi_writev`.
    fn fi_writev(ep: *mut fid_ep, iov: *const iovec, desc: *mut *mut c_void, count: usize, dest_addr: fi_addr_t,
        addr: u64, key: u64, context: *mut c_void) -> isize = rma.writev;
    /// `fi_writemsg`.
    fn fi_writemsg(ep: *mut fid_ep, msg: *const fi_msg_rma, flags: u64) -> isize = rma.writemsg;
    /// `fi_inject_write`: buffer reusable on return; no completion.
    fn fi_inject_write(ep: *mut fid_ep, buf: *const c_void, len: usize, dest_addr: fi_addr_t, addr: u64, key: u64)
        -> isize = rma.inject;

    /// `fi_atomic`.
    fn fi_atomic(ep: *mut fid_ep, buf: *const c_void, count: usize, desc: *mut c_void, dest_addr: fi_addr_t,
        addr: u64, key: u64, datatype: fi_datatype, op: fi_op, context: *mut c_void) -> isize = atomic.write;
    /// `fi_fetch_atomic`.
    fn fi_fetch_atomic(ep: *mut fid_ep, buf: *const c_void, count: usize, desc: *mut c_void, result: *mut c_void,
        result_desc: *mut c_void, dest_addr: fi_addr_t, addr: u64, key: u64, datatype: fi_datatype, op: fi_op,
        context: *mut c_void) -> isize = atomic.readwrite;
    /// `fi_compare_atomic`.
    fn fi_compare_atomic(ep: *mut fid_ep, buf: *const c_void, count: usize, desc: *mut c_void,
        compare: *const c_void, compare_desc: *mut c_void, result: *mut c_void, result_desc: *mut c_void,
        dest_addr: fi_addr_t, addr: u64, key: u64, datatype: fi_datatype, op: fi_op, context: *mut c_void)
        -> isize = atomic.compwrite;
    /// `fi_atomicvalid`: 0 and the largest element count in `*count` if the endpoint supports
    /// `op` on `datatype`.
    fn fi_atomicvalid(ep: *mut fid_ep, datatype: fi_datatype, op: fi_op, count: *mut usize)
        -> c_int = atomic.writevalid;
    /// `fi_fetch_atomicvalid`.
    fn fi_fetch_atomicvalid(ep: *mut fid_ep, datatype: fi_datatype, op: fi_op, count: *mut usize)
        -> c_int = atomic.readwritevalid;
    /// `fi_compare_atomicvalid`.
    fn fi_compare_atomicvalid(ep: *mut fid_ep, datatype: fi_datatype, op: fi_op, count: *mut usize)
        -> c_int = atomic.compwritevalid;
}

/// `fi_close`: closes any libfabric object through its `fid` (`&mut (*ep).fid` and so on).
///
/// # Safety
/// `fid` is the `fid` of a live object with no live objects bound to or opened from it.
pub unsafe fn fi_close(fid: fid_t) -> c_int {
    // SAFETY: every libfabric object starts with its `fid`, whose ops the provider set at open.
    unsafe {
        match (*fid).ops.as_ref().and_then(|ops| ops.close) {
            Some(close) => close(fid),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_ep_bind`: binds a CQ, AV or counter (`bfid`, its `fid`) to an endpoint.
///
/// # Safety
/// `ep` and `bfid` are live objects of the same domain.
pub unsafe fn fi_ep_bind(ep: *mut fid_ep, bfid: *mut fid, flags: u64) -> c_int {
    // SAFETY: `ep` is live, so its `fid.ops` is the provider's table.
    unsafe {
        let ep_fid = &raw mut (*ep).fid;
        match (*ep_fid).ops.as_ref().and_then(|ops| ops.bind) {
            Some(bind) => bind(ep_fid, bfid, flags),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_enable`: an endpoint takes no traffic until enabled, after its CQs and AV are bound.
///
/// # Safety
/// `ep` is a live endpoint.
pub unsafe fn fi_enable(ep: *mut fid_ep) -> c_int {
    // SAFETY: `ep` is live, so its `fid.ops` is the provider's table; FI_ENABLE takes no argument.
    unsafe { fid_control(&raw mut (*ep).fid, sys::FI_ENABLE, std::ptr::null_mut()) }
}

/// `fi_control`.
///
/// # Safety
/// `fid` is a live object and `arg` what `command` expects for it.
pub unsafe fn fid_control(fid: fid_t, command: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: `fid` is live, so its ops table is the provider's.
    unsafe {
        match (*fid).ops.as_ref().and_then(|ops| ops.control) {
            Some(control) => control(fid, command, arg),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_trywait`: 0 when the wait objects of `fids` (from `FI_GETWAIT`) may be slept on:
/// nothing is pending that reading them would find; `-FI_EAGAIN` otherwise.
///
/// # Safety
/// `fabric` is live and `fids` holds `count` live objects opened from it.
pub unsafe fn fi_trywait(fabric: *mut fid_fabric, fids: *mut *mut fid, count: c_int) -> c_int {
    // SAFETY: `fabric` is live, so `ops` is the provider's table.
    unsafe {
        match (*fabric).ops.as_ref().and_then(|ops| ops.trywait) {
            Some(trywait) => trywait(fabric, fids, count),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_cancel`: cancels a posted operation of an endpoint by its context; the operation then
/// completes with `FI_ECANCELED` in the CQ (if it had not completed already).
///
/// # Safety
/// `fid` is the `fid` of a live endpoint (`&mut (*ep).fid`).
pub unsafe fn fi_cancel(fid: fid_t, context: *mut c_void) -> isize {
    // SAFETY: `fid` is the first field of `fid_ep` (the header's container_of is this cast)
    // and the endpoint is live, so its `ops` is the provider's table.
    unsafe {
        let ep = fid.cast::<fid_ep>();
        match (*ep).ops.as_ref().and_then(|ops| ops.cancel) {
            Some(cancel) => cancel(fid, context),
            None => -(sys::FI_ENOSYS as isize),
        }
    }
}

/// `fi_getname`: the endpoint's own address, to publish for peers' `fi_av_insert`. With
/// `*addrlen` too small it returns `-FI_ETOOSMALL` and the needed length in `*addrlen`.
///
/// # Safety
/// `fid` is the `fid` of a live, enabled endpoint; `addr` has `*addrlen` writable bytes.
pub unsafe fn fi_getname(fid: fid_t, addr: *mut c_void, addrlen: *mut usize) -> c_int {
    // SAFETY: `fid` is the first field of the live endpoint (the header's container_of),
    // whose `cm` table the provider set.
    unsafe {
        let ep = fid.cast::<fid_ep>();
        match (*ep).cm.as_ref().and_then(|cm| cm.getname) {
            Some(getname) => getname(fid, addr, addrlen),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_mr_reg`: registers `len` bytes at `buf` for the `access` bits (`FI_SEND`, `FI_RECV`,
/// `FI_READ`, `FI_WRITE`, `FI_REMOTE_READ`, `FI_REMOTE_WRITE`).
///
/// # Safety
/// `domain` is live; the memory stays allocated until the region is closed; `mr` is writable.
#[allow(clippy::too_many_arguments)] // the C signature's
pub unsafe fn fi_mr_reg(
    domain: *mut fid_domain,
    buf: *const c_void,
    len: usize,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut fid_mr,
    context: *mut c_void,
) -> c_int {
    // SAFETY: `domain` is live, so its `mr` table is the provider's; the header passes the
    // domain's `fid`, as here.
    unsafe {
        match (*domain).mr.as_ref().and_then(|ops| ops.reg) {
            Some(reg) => reg(&raw mut (*domain).fid, buf, len, access, offset, requested_key, flags, mr, context),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_mr_bind`: binds a region to an endpoint, for providers with `FI_MR_ENDPOINT`.
///
/// # Safety
/// `mr` and `bfid` are live.
pub unsafe fn fi_mr_bind(mr: *mut fid_mr, bfid: *mut fid, flags: u64) -> c_int {
    // SAFETY: `mr` is live, so its `fid.ops` is the provider's table.
    unsafe {
        let mr_fid = &raw mut (*mr).fid;
        match (*mr_fid).ops.as_ref().and_then(|ops| ops.bind) {
            Some(bind) => bind(mr_fid, bfid, flags),
            None => -sys::FI_ENOSYS,
        }
    }
}

/// `fi_mr_enable`: for providers with `FI_MR_ENDPOINT`, after `fi_mr_bind`.
///
/// # Safety
/// `mr` is live.
pub unsafe fn fi_mr_enable(mr: *mut fid_mr) -> c_int {
    // SAFETY: `mr` is live; FI_ENABLE takes no argument.
    unsafe { fid_control(&raw mut (*mr).fid, sys::FI_ENABLE, std::ptr::null_mut()) }
}

/// `fi_mr_desc`: the local descriptor to pass with buffers of this region.
///
/// # Safety
/// `mr` is live.
pub unsafe fn fi_mr_desc(mr: *mut fid_mr) -> *mut c_void {
    // SAFETY: `mr` is live, so the read is of initialised memory.
    unsafe { (*mr).mem_desc }
}

/// `fi_mr_key`: the key peers use to reach this region remotely.
///
/// # Safety
/// `mr` is live.
pub unsafe fn fi_mr_key(mr: *mut fid_mr) -> u64 {
    // SAFETY: `mr` is live, so the read is of initialised memory.
    unsafe { (*mr).key }
}

/// `fi_query_atomic`: checks the size of the ops table first, as the header does, since
/// `query_atomic` was added after the table's first version.
///
/// # Safety
/// `domain` is live; `attr` is writable.
pub unsafe fn fi_query_atomic(
    domain: *mut fid_domain,
    datatype: fi_datatype,
    op: fi_op,
    attr: *mut fi_atomic_attr,
    flags: u64,
) -> c_int {
    // SAFETY: `domain` is live, so `ops` is the provider's table, of `size` bytes.
    unsafe {
        let Some(ops) = (*domain).ops.as_ref() else { return -sys::FI_ENOSYS };
        if ops.size <= std::mem::offset_of!(sys::fi_ops_domain, query_atomic) {
            return -sys::FI_ENOSYS;
        }
        match ops.query_atomic {
            Some(query) => query(domain, datatype, op, attr, flags),
            None => -sys::FI_ENOSYS,
        }
    }
}
