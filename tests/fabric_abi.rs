//! The libfabric bindings (src/transport/net/): every struct size, alignment and field offset
//! and every constant they declare matches the installed C headers; and the loader opens the
//! installed libfabric and, over the tcp provider on loopback, an endpoint sends itself tagged
//! messages, cancels a receive, and writes, reads and atomically updates its own memory; and
//! loading fails with a clear message when the library is missing.

use std::ffi::c_void;
use std::path::Path;
use std::time::{Duration, Instant};

use oxmpi::transport::net::fabric::{self, Fabric, sys};

mod bindings_layout;
use bindings_layout::Bindings;

const INSTALL_HEADERS: &str =
    "libfabric's C headers (<rdma/fabric.h>) are missing: install libfabric-dev (apt-get install libfabric-dev)";

/// Rust renames C fields that are Rust keywords.
fn c_field(rust_name: &str) -> &str {
    match rust_name {
        "type_" => "type",
        other => other,
    }
}

/// Every struct of fabric_sys with every field it binds, listed once.
fn structs() -> Vec<bindings_layout::StructLayout> {
    layouts_of! { oxmpi::transport::net::fabric::sys;
        fi_ioc { addr, count },
        fi_tx_attr { caps, mode, op_flags, msg_order, comp_order, inject_size, size, iov_limit, rma_iov_limit, tclass },
        fi_rx_attr { caps, mode, op_flags, msg_order, comp_order, total_buffered_recv, size, iov_limit },
        fi_ep_attr {
            type_, protocol, protocol_version, max_msg_size, msg_prefix_size, max_order_raw_size, max_order_war_size,
            max_order_waw_size, mem_tag_format, tx_ctx_cnt, rx_ctx_cnt, auth_key_size, auth_key,
        },
        fi_domain_attr {
            domain, name, threading, control_progress, data_progress, resource_mgmt, av_type, mr_mode, mr_key_size,
            cq_data_size, cq_cnt, ep_cnt, tx_ctx_cnt, rx_ctx_cnt, max_ep_tx_ctx, max_ep_rx_ctx, max_ep_stx_ctx,
            max_ep_srx_ctx, cntr_cnt, mr_iov_limit, caps, mode, auth_key, auth_key_size, max_err_data, mr_cnt, tclass,
        },
        fi_fabric_attr { fabric, name, prov_name, prov_version, api_version },
        fi_info {
            next, caps, mode, addr_format, src_addrlen, dest_addrlen, src_addr, dest_addr, handle, tx_attr, rx_attr,
            ep_attr, domain_attr, fabric_attr, nic,
        },
        fi_ops { size, close, bind, control, ops_open, tostr, ops_set },
        fid { fclass, context, ops },
        fi_ops_fabric { size, domain, passive_ep, eq_open, wait_open, trywait, domain2 },
        fid_fabric { fid, ops, api_version },
        fid_nic {},
        fi_wait_attr {},
        fid_wait {},
        fi_poll_attr {},
        fid_poll {},
        fi_eq_attr {},
        fid_eq {},
        fi_cq_tagged_entry { op_context, flags, len, buf, data, tag },
        fi_cq_err_entry { op_context, flags, len, buf, data, tag, olen, err, prov_errno, err_data, err_data_size },
        fi_cq_attr { size, flags, format, wait_obj, signaling_vector, wait_cond, wait_set },
        fi_ops_cq { size, read, readfrom, readerr, sread, sreadfrom, signal, strerror },
        fid_cq { fid, ops },
        fi_cntr_attr {},
        fid_cntr {},
        fi_av_attr { type_, rx_ctx_bits, count, ep_per_node, name, map_addr, flags },
        fi_av_set_attr {},
        fi_ops_av { size, insert, insertsvc, insertsym, remove, lookup, straddr, av_set },
        fid_av { fid, ops },
        fid_mr { fid, mem_desc, key },
        fi_mr_attr {},
        fi_ops_domain {
            size, av_open, cq_open, endpoint, scalable_ep, cntr_open, poll_open, stx_ctx, srx_ctx, query_atomic,
            query_collective, endpoint2,
        },
        fi_ops_mr { size, reg, regv, regattr },
        fid_domain { fid, ops, mr },
        fi_ops_ep { size, cancel, getopt, setopt, tx_ctx, rx_ctx, rx_size_left, tx_size_left },
        fi_ops_msg {},
        fid_ep { fid, ops, cm, msg, rma, tagged, atomic, collective },
        fid_pep {},
        fid_stx {},
        fi_msg_tagged { msg_iov, desc, iov_count, addr, tag, ignore, context, data },
        fi_ops_tagged { size, recv, recvv, recvmsg, send, sendv, sendmsg, inject, senddata, injectdata },
        fi_rma_iov { addr, len, key },
        fi_msg_rma { msg_iov, desc, iov_count, addr, rma_iov, rma_iov_count, context, data },
        fi_ops_rma { size, read, readv, readmsg, write, writev, writemsg, inject, writedata, injectdata },
        fi_atomic_attr { count, size },
        fi_msg_atomic {},
        fi_ops_atomic {
            size, write, writev, writemsg, inject, readwrite, readwritev, readwritemsg, compwrite, compwritev,
            compwritemsg, writevalid, readwritevalid, compwritevalid,
        },
        fid_mc {},
        fi_ops_cm { size, setname, getname, getpeer, connect, listen, accept, reject, shutdown, join },
    }
}

/// Structs the headers only declare (pointed to, never defined in the headers bound), so
/// there is no layout to compare.
const INCOMPLETE_STRUCTS: &[&str] = &["fid_av_set", "fi_collective_attr", "fi_ops_collective"];

/// Every constant of fabric_sys.
fn constant_table() -> Vec<(&'static str, u64)> {
    constants_of! { oxmpi::transport::net::fabric::sys;
        FI_SUCCESS, FI_ENOENT, FI_EINTR, FI_EAGAIN, FI_ENOMEM, FI_EINVAL, FI_ENOSYS, FI_ENODATA, FI_EMSGSIZE,
        FI_ETIMEDOUT, FI_ECANCELED, FI_EOTHER, FI_EAVAIL, FI_ENOCQ, FI_ETRUNC,
        FI_MAJOR_VERSION, FI_MINOR_VERSION,
        FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_READ, FI_WRITE, FI_RECV, FI_SEND, FI_TRANSMIT, FI_REMOTE_READ,
        FI_REMOTE_WRITE, FI_MULTI_RECV, FI_REMOTE_CQ_DATA, FI_MORE, FI_FENCE, FI_COMPLETION, FI_INJECT,
        FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE, FI_HMEM, FI_LOCAL_COMM, FI_REMOTE_COMM,
        FI_PROV_ATTR_ONLY, FI_NUMERICHOST, FI_RMA_EVENT, FI_SOURCE, FI_DIRECTED_RECV,
        FI_MR_LOCAL, FI_MR_RAW, FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT,
        FI_MR_ENDPOINT, FI_MR_HMEM,
        FI_ORDER_RAR, FI_ORDER_RAW, FI_ORDER_WAR, FI_ORDER_WAW, FI_ORDER_SAS,
        FI_CONTEXT, FI_CONTEXT2, FI_SELECTIVE_COMPLETION, FI_GETWAIT, FI_ENABLE,
        FI_FORMAT_UNSPEC, FI_SOCKADDR_IN, FI_SOCKADDR_IN6,
        FI_AV_UNSPEC, FI_AV_MAP, FI_AV_TABLE,
        FI_PROGRESS_UNSPEC, FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL,
        FI_THREAD_UNSPEC, FI_THREAD_SAFE, FI_THREAD_FID, FI_THREAD_DOMAIN, FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT,
        FI_RM_UNSPEC, FI_RM_DISABLED, FI_RM_ENABLED,
        FI_EP_UNSPEC, FI_EP_MSG, FI_EP_DGRAM, FI_EP_RDM, FI_EP_SOCK_STREAM, FI_EP_SOCK_DGRAM,
        FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_SET, FI_WAIT_FD, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD, FI_WAIT_POLLFD,
        FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
        FI_CQ_COND_NONE, FI_CQ_COND_THRESHOLD,
        FI_INT8, FI_UINT8, FI_INT16, FI_UINT16, FI_INT32, FI_UINT32, FI_INT64, FI_UINT64, FI_FLOAT, FI_DOUBLE,
        FI_FLOAT_COMPLEX, FI_DOUBLE_COMPLEX, FI_LONG_DOUBLE, FI_LONG_DOUBLE_COMPLEX, FI_DATATYPE_LAST, FI_INT128,
        FI_UINT128, FI_VOID,
        FI_MIN, FI_MAX, FI_SUM, FI_PROD, FI_LOR, FI_LAND, FI_BOR, FI_BAND, FI_LXOR, FI_BXOR, FI_ATOMIC_READ,
        FI_ATOMIC_WRITE, FI_CSWAP, FI_CSWAP_NE, FI_CSWAP_LE, FI_CSWAP_LT, FI_CSWAP_GE, FI_CSWAP_GT, FI_MSWAP,
        FI_ATOMIC_OP_LAST, FI_NOOP,
        FI_BARRIER, FI_BROADCAST, FI_ALLTOALL, FI_ALLREDUCE, FI_ALLGATHER, FI_REDUCE_SCATTER, FI_REDUCE, FI_SCATTER,
        FI_GATHER,
    }
}

/// Constants fabric.rs defines by hand (what bindgen cannot evaluate), as C expressions.
fn hand_written_constants() -> Vec<(&'static str, u64)> {
    vec![
        ("FI_ADDR_UNSPEC", fabric::FI_ADDR_UNSPEC),
        ("FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)", u64::from(fabric::API_VERSION)),
    ]
}

/// Every type alias of fabric_sys with its C spelling, for the size check.
macro_rules! aliases {
    ($($name:ident = $c:literal),* $(,)?) => {
        vec![$((stringify!($name), $c, size_of::<sys::$name>())),*]
    };
}

fn alias_table() -> Vec<(&'static str, &'static str, usize)> {
    aliases! {
        fid_t = "fid_t",
        fi_addr_t = "fi_addr_t",
        fi_av_type = "enum fi_av_type",
        fi_progress = "enum fi_progress",
        fi_threading = "enum fi_threading",
        fi_resource_mgmt = "enum fi_resource_mgmt",
        fi_ep_type = "enum fi_ep_type",
        fi_wait_obj = "enum fi_wait_obj",
        fi_cq_format = "enum fi_cq_format",
        fi_cq_wait_cond = "enum fi_cq_wait_cond",
        fi_datatype = "enum fi_datatype",
        fi_op = "enum fi_op",
        fi_collective_op = "enum fi_collective_op",
    }
}

/// Pointer types of the exported functions: the generator derives them from the functions'
/// own declarations (`__typeof__`), so there is no separate layout to compare.
const FUNCTION_TYPES: &[&str] =
    &["fi_version_fn", "fi_getinfo_fn", "fi_freeinfo_fn", "fi_dupinfo_fn", "fi_fabric_fn", "fi_strerror_fn"];

fn bindings() -> Bindings {
    Bindings {
        source: include_str!("../src/transport/net/fabric_sys.rs"),
        file: "fabric_sys.rs",
        includes: &[
            "rdma/fabric.h",
            "rdma/fi_domain.h",
            "rdma/fi_endpoint.h",
            "rdma/fi_tagged.h",
            "rdma/fi_rma.h",
            "rdma/fi_atomic.h",
            "rdma/fi_cm.h",
            "rdma/fi_eq.h",
            "rdma/fi_errno.h",
        ],
        include_dirs: &[],
        install_headers: INSTALL_HEADERS,
        structs: structs(),
        c_type: |name| format!("struct {name}"),
        c_field,
        incomplete: INCOMPLETE_STRUCTS,
        constants: constant_table().into_iter().chain(hand_written_constants()).collect(),
        strings: Vec::new(),
        aliases: alias_table(),
        function_types: FUNCTION_TYPES,
    }
}

#[test]
fn bindings_match_installed_headers() {
    assert!(Path::new("/usr/include/rdma/fabric.h").exists(), "{INSTALL_HEADERS}");
    bindings().assert_match_headers(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("fabric_abi"));
}

#[test]
fn tables_cover_every_declaration_of_the_bindings() {
    bindings().assert_tables_cover_declarations();
}

#[test]
fn missing_library_gives_one_clear_line() {
    let error = Fabric::load(c"libfabric-not-installed.so.1").expect_err("a library that does not exist loaded");
    let message = error.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    assert!(message.contains("libfabric-not-installed.so.1"), "does not name the library: {message}");
    assert!(message.contains("libfabric1"), "does not name the package: {message}");
    assert!(message.contains("cannot open shared object file"), "lacks dlerror's text: {message}");
}

#[test]
fn open_loads_the_installed_library_once() {
    let first = Fabric::open().unwrap_or_else(|e| panic!("{e}"));
    let second = Fabric::open().unwrap();
    assert!(std::ptr::eq(first, second));
    assert!(first.library_version() >= fabric::API_VERSION);
    assert_eq!(first.strerror(-i64::from(sys::FI_EAGAIN)), first.strerror(i64::from(sys::FI_EAGAIN)));
    assert!(!first.strerror(i64::from(sys::FI_EAVAIL)).is_empty());
}

/// Panics with libfabric's text unless `ret` is 0 (or a non-negative count).
fn check(fabric: &Fabric, call: &str, ret: impl Into<i64>) {
    let ret = ret.into();
    assert!(ret >= 0, "{call}: {} ({ret})", fabric.strerror(ret));
}

/// What the loopback tests opened, closed in reverse order.
struct Endpoint {
    fabric: &'static Fabric,
    info: *mut sys::fi_info,
    fabric_fid: *mut sys::fid_fabric,
    domain: *mut sys::fid_domain,
    cq: *mut sys::fid_cq,
    av: *mut sys::fid_av,
    ep: *mut sys::fid_ep,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // SAFETY: each object was opened by `open_loopback_endpoint` and is closed once, the
        // endpoint before what it is bound to and the domain before the fabric.
        unsafe {
            for fid in [
                &raw mut (*self.ep).fid,
                &raw mut (*self.av).fid,
                &raw mut (*self.cq).fid,
                &raw mut (*self.domain).fid,
                &raw mut (*self.fabric_fid).fid,
            ] {
                let ret = fabric::fi_close(fid);
                if !std::thread::panicking() {
                    check(self.fabric, "fi_close", ret);
                }
            }
            self.fabric.freeinfo(self.info);
        }
    }
}

/// The provider of RDM endpoints over TCP in libfabric 1.17: the rxm utility provider on the
/// tcp core provider.
const PROVIDER: &std::ffi::CStr = c"tcp;ofi_rxm";

/// How long a loopback test waits for its completions.
const PATIENCE: Duration = Duration::from_secs(30);

/// An RDM endpoint with `caps` from the tcp provider, bound to 127.0.0.1.
fn open_loopback_endpoint(caps: u64) -> Endpoint {
    let fabric = Fabric::open().unwrap_or_else(|e| panic!("{e}"));
    // SAFETY: the hints come from allocinfo, whose attribute structs are allocated, and
    // prov_name is strdup'd so that freeinfo may free it; every object is opened from the
    // one before it and stays open until `Endpoint` is dropped.
    unsafe {
        let hints = fabric.allocinfo();
        assert!(!hints.is_null(), "fi_allocinfo");
        (*hints).caps = caps;
        (*hints).mode = 0;
        (*(*hints).ep_attr).type_ = sys::FI_EP_RDM;
        let domain_attr = &mut *(*hints).domain_attr;
        domain_attr.data_progress = sys::FI_PROGRESS_MANUAL;
        domain_attr.control_progress = sys::FI_PROGRESS_MANUAL;
        domain_attr.av_type = sys::FI_AV_TABLE;
        domain_attr.mr_mode = sys::FI_MR_VIRT_ADDR | sys::FI_MR_ALLOCATED | sys::FI_MR_PROV_KEY | sys::FI_MR_ENDPOINT;
        (*(*hints).fabric_attr).prov_name = libc::strdup(PROVIDER.as_ptr());

        let mut info = std::ptr::null_mut();
        let ret = fabric.getinfo(c"127.0.0.1".as_ptr(), std::ptr::null(), sys::FI_SOURCE, hints, &mut info);
        fabric.freeinfo(hints);
        check(fabric, &format!("fi_getinfo(tcp;ofi_rxm, FI_EP_RDM, caps {caps:#x}, 127.0.0.1)"), ret);
        assert!(!info.is_null());

        let mut endpoint = Endpoint {
            fabric,
            info,
            fabric_fid: std::ptr::null_mut(),
            domain: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            av: std::ptr::null_mut(),
            ep: std::ptr::null_mut(),
        };
        let null = std::ptr::null_mut();
        // Until every object is open, a failure leaks the ones before it: the test fails anyway.
        check(fabric, "fi_fabric", fabric.fabric((*info).fabric_attr, &mut endpoint.fabric_fid, null));
        check(fabric, "fi_domain", fabric::fi_domain(endpoint.fabric_fid, info, &mut endpoint.domain, null));
        let mut cq_attr: sys::fi_cq_attr = std::mem::zeroed();
        cq_attr.format = sys::FI_CQ_FORMAT_TAGGED;
        cq_attr.wait_obj = sys::FI_WAIT_NONE;
        check(fabric, "fi_cq_open", fabric::fi_cq_open(endpoint.domain, &mut cq_attr, &mut endpoint.cq, null));
        let mut av_attr: sys::fi_av_attr = std::mem::zeroed();
        av_attr.type_ = sys::FI_AV_TABLE;
        check(fabric, "fi_av_open", fabric::fi_av_open(endpoint.domain, &mut av_attr, &mut endpoint.av, null));
        check(fabric, "fi_endpoint", fabric::fi_endpoint(endpoint.domain, info, &mut endpoint.ep, null));
        let ep = endpoint.ep;
        let cq = &raw mut (*endpoint.cq).fid;
        check(fabric, "fi_ep_bind(cq)", fabric::fi_ep_bind(ep, cq, sys::FI_TRANSMIT | sys::FI_RECV));
        check(fabric, "fi_ep_bind(av)", fabric::fi_ep_bind(ep, &raw mut (*endpoint.av).fid, 0));
        check(fabric, "fi_enable", fabric::fi_enable(ep));
        endpoint
    }
}

/// Completions read so far: successful entries and error entries.
#[derive(Default)]
struct Completions {
    done: Vec<sys::fi_cq_tagged_entry>,
    failed: Vec<sys::fi_cq_err_entry>,
}

impl Completions {
    /// The one successful completion of the operation posted with `context`.
    fn of(&self, context: *mut c_void) -> sys::fi_cq_tagged_entry {
        let matching: Vec<_> = self.done.iter().filter(|entry| entry.op_context == context).collect();
        assert_eq!(matching.len(), 1, "one completion per operation");
        *matching[0]
    }
}

impl Endpoint {
    /// The endpoint's own address, inserted into its AV: messages to it go to itself.
    fn own_address(&self) -> sys::fi_addr_t {
        let mut name = [0u8; 128];
        let mut name_len = name.len();
        let mut address = fabric::FI_ADDR_UNSPEC;
        // SAFETY: the endpoint and AV are open; `name` has `name_len` bytes.
        unsafe {
            let ret = fabric::fi_getname(&raw mut (*self.ep).fid, name.as_mut_ptr().cast(), &mut name_len);
            check(self.fabric, "fi_getname", ret);
            let inserted =
                fabric::fi_av_insert(self.av, name.as_ptr().cast(), 1, &mut address, 0, std::ptr::null_mut());
            assert_eq!(inserted, 1, "fi_av_insert of the endpoint's own name");
        }
        assert_ne!(address, fabric::FI_ADDR_UNSPEC);
        address
    }

    /// Reads the CQ once, which also drives the provider's progress.
    fn poll(&self, completions: &mut Completions) {
        let mut entries = [sys::fi_cq_tagged_entry {
            op_context: std::ptr::null_mut(),
            flags: 0,
            len: 0,
            buf: std::ptr::null_mut(),
            data: 0,
            tag: 0,
        }; 8];
        // SAFETY: the CQ is open and of FI_CQ_FORMAT_TAGGED, so it writes up to `entries.len()`
        // fi_cq_tagged_entry; an error entry is read into an fi_cq_err_entry.
        unsafe {
            let ret = fabric::fi_cq_read(self.cq, entries.as_mut_ptr().cast(), entries.len());
            if ret > 0 {
                completions.done.extend_from_slice(&entries[..ret as usize]);
            } else if ret == -(sys::FI_EAVAIL as isize) {
                let mut error: sys::fi_cq_err_entry = std::mem::zeroed();
                let read = fabric::fi_cq_readerr(self.cq, &mut error, 0);
                assert_eq!(read, 1, "fi_cq_readerr: {}", self.fabric.strerror(read as i64));
                completions.failed.push(error);
            } else {
                assert_eq!(ret, -(sys::FI_EAGAIN as isize), "fi_cq_read: {}", self.fabric.strerror(ret as i64));
            }
        }
    }

    /// Polls until `count` completions (successful or not) have been read.
    fn wait_for(&self, completions: &mut Completions, count: usize) {
        let deadline = Instant::now() + PATIENCE;
        while completions.done.len() + completions.failed.len() < count {
            assert!(Instant::now() < deadline, "timed out with {} of {count} completions", completions.done.len());
            self.poll(completions);
        }
        let errors: Vec<String> =
            completions.failed.iter().map(|e| format!("{} ({})", self.fabric.strerror(e.err.into()), e.err)).collect();
        assert!(errors.is_empty(), "completion errors: {errors:?}");
    }

    /// Posts with `post`, retrying while the provider says `-FI_EAGAIN` (queue full).
    fn post(&self, call: &str, completions: &mut Completions, mut post: impl FnMut() -> isize) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let ret = post();
            if ret != -(sys::FI_EAGAIN as isize) {
                check(self.fabric, call, ret as i64);
                return;
            }
            assert!(Instant::now() < deadline, "{call}: still FI_EAGAIN after {PATIENCE:?}");
            self.poll(completions);
        }
    }
}

/// Distinct addresses that identify operations in their completions.
struct Contexts([u64; 8]);

impl Contexts {
    fn get(&self, i: usize) -> *mut c_void {
        (&raw const self.0[i]).cast_mut().cast()
    }
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32).map(|i| (i ^ (i >> 8) ^ seed).wrapping_mul(31) as u8).collect()
}

fn iovec_of(buf: &[u8]) -> sys::iovec {
    sys::iovec { iov_base: buf.as_ptr().cast_mut().cast(), iov_len: buf.len() }
}

#[test]
fn tagged_messages_to_self_over_loopback_tcp() {
    let endpoint = open_loopback_endpoint(sys::FI_TAGGED);
    let ep = endpoint.ep;
    let me = endpoint.own_address();

    const SMALL_TAG: u64 = 0x5eed_0001;
    const LARGE_TAG: u64 = 0x5eed_0002;
    const INJECT_TAG: u64 = 0x5eed_0003;
    const NEVER_SENT_TAG: u64 = 0x5eed_0004;
    let small = pattern(300, 1);
    let large = pattern(1 << 20, 2);
    let injected = pattern(32, 3);
    let small_in = vec![0u8; small.len()];
    let large_in = vec![0u8; large.len()];
    let injected_in = vec![0u8; injected.len()];
    let never_in = [0u8; 64];
    let contexts = Contexts([0; 8]);
    let (small_recv, large_recv, inject_recv, small_send, large_send, never_recv) =
        (contexts.get(0), contexts.get(1), contexts.get(2), contexts.get(3), contexts.get(4), contexts.get(5));
    let null = std::ptr::null_mut();
    let mut completions = Completions::default();

    // The large message goes out in three pieces and comes in in two, split elsewhere.
    let send_pieces = [iovec_of(&large[..4097]), iovec_of(&large[4097..700_001]), iovec_of(&large[700_001..])];
    let recv_pieces = [iovec_of(&large_in[..333_333]), iovec_of(&large_in[333_333..])];
    let mut recv_desc = [null; 2];
    let mut send_desc = [null; 3];
    let large_recv_msg = sys::fi_msg_tagged {
        msg_iov: recv_pieces.as_ptr(),
        desc: recv_desc.as_mut_ptr(),
        iov_count: recv_pieces.len(),
        addr: fabric::FI_ADDR_UNSPEC,
        tag: LARGE_TAG,
        ignore: 0,
        context: large_recv,
        data: 0,
    };
    let large_send_msg = sys::fi_msg_tagged {
        msg_iov: send_pieces.as_ptr(),
        desc: send_desc.as_mut_ptr(),
        iov_count: send_pieces.len(),
        addr: me,
        tag: LARGE_TAG,
        ignore: 0,
        context: large_send,
        data: 0,
    };
    let injected_iov = [iovec_of(&injected_in)];

    // SAFETY: the endpoint is open and enabled; every buffer, iovec array, message and
    // context outlives its operation, all of which complete (waited for below) or are
    // cancelled before the end of the test.
    unsafe {
        let any = fabric::FI_ADDR_UNSPEC;
        endpoint.post("fi_trecv", &mut completions, || {
            fabric::fi_trecv(
                ep,
                small_in.as_ptr().cast_mut().cast(),
                small_in.len(),
                null,
                any,
                SMALL_TAG,
                0,
                small_recv,
            )
        });
        endpoint.post("fi_trecvmsg", &mut completions, || fabric::fi_trecvmsg(ep, &large_recv_msg, sys::FI_COMPLETION));
        endpoint.post("fi_trecvv", &mut completions, || {
            fabric::fi_trecvv(ep, injected_iov.as_ptr(), recv_desc.as_mut_ptr(), 1, any, INJECT_TAG, 0, inject_recv)
        });
        endpoint.post("fi_tsend", &mut completions, || {
            fabric::fi_tsend(ep, small.as_ptr().cast(), small.len(), null, me, SMALL_TAG, small_send)
        });
        endpoint.post("fi_tsendmsg", &mut completions, || fabric::fi_tsendmsg(ep, &large_send_msg, sys::FI_COMPLETION));
        endpoint.post("fi_tinject", &mut completions, || {
            fabric::fi_tinject(ep, injected.as_ptr().cast(), injected.len(), me, INJECT_TAG)
        });
        // Three receives and two sends; an inject reports no completion.
        endpoint.wait_for(&mut completions, 5);

        // A receive nobody matches, cancelled: it completes with FI_ECANCELED.
        endpoint.post("fi_trecv", &mut completions, || {
            fabric::fi_trecv(
                ep,
                never_in.as_ptr().cast_mut().cast(),
                never_in.len(),
                null,
                any,
                NEVER_SENT_TAG,
                0,
                never_recv,
            )
        });
        let cancelled = fabric::fi_cancel(&raw mut (*ep).fid, never_recv);
        check(endpoint.fabric, "fi_cancel", cancelled as i64);
        let deadline = Instant::now() + PATIENCE;
        while completions.failed.is_empty() {
            assert!(Instant::now() < deadline, "no completion for the cancelled receive");
            endpoint.poll(&mut completions);
        }
    }
    assert_eq!(completions.done.len(), 5, "no completion beyond the five expected");
    assert_eq!(completions.failed.len(), 1);
    assert_eq!(completions.failed[0].op_context, never_recv);
    assert_eq!(completions.failed[0].err, sys::FI_ECANCELED);

    for (context, tag, len) in
        [(small_recv, SMALL_TAG, small.len()), (large_recv, LARGE_TAG, large.len()), (inject_recv, INJECT_TAG, 32)]
    {
        let entry = completions.of(context);
        assert_ne!(entry.flags & sys::FI_RECV, 0, "receive completion flags {:#x}", entry.flags);
        assert_ne!(entry.flags & sys::FI_TAGGED, 0, "receive completion flags {:#x}", entry.flags);
        assert_eq!(entry.tag, tag);
        assert_eq!(entry.len, len);
    }
    for context in [small_send, large_send] {
        let entry = completions.of(context);
        assert_ne!(entry.flags & sys::FI_SEND, 0, "send completion flags {:#x}", entry.flags);
    }
    assert!(small_in == small, "the small message arrived changed");
    assert!(large_in == large, "the 1 MiB message arrived changed");
    assert!(injected_in == injected, "the injected message arrived changed");
}

#[test]
fn rma_and_atomics_to_self_over_loopback_tcp() {
    let endpoint = open_loopback_endpoint(sys::FI_RMA | sys::FI_ATOMIC);
    let fabric = endpoint.fabric;
    let ep = endpoint.ep;
    let me = endpoint.own_address();
    // SAFETY: `info` stays allocated while the endpoint is open.
    let mr_mode = unsafe { (*(*endpoint.info).domain_attr).mr_mode };

    const LEN: usize = 64 * 1024;
    // The window: LEN bytes, then one u64 for the atomics.
    let mut window = vec![0u64; LEN / 8 + 1];
    let window_ptr = window.as_mut_ptr();
    let written = pattern(LEN, 4);
    let mut read_back = vec![0u8; LEN];
    let contexts = Contexts([0; 8]);
    let mut completions = Completions::default();
    let null = std::ptr::null_mut();

    // SAFETY: the window stays allocated and untouched by Rust (only read through raw
    // pointers after completions) until its region is closed; every buffer, iovec and
    // message outlives its operation, all of which complete before the end of the block.
    unsafe {
        let mut mr = std::ptr::null_mut();
        let access = sys::FI_REMOTE_READ | sys::FI_REMOTE_WRITE;
        let ret = fabric::fi_mr_reg(endpoint.domain, window_ptr.cast(), LEN + 8, access, 0, 1, 0, &mut mr, null);
        check(fabric, "fi_mr_reg", ret);
        if mr_mode & sys::FI_MR_ENDPOINT != 0 {
            check(fabric, "fi_mr_bind", fabric::fi_mr_bind(mr, &raw mut (*ep).fid, 0));
            check(fabric, "fi_mr_enable", fabric::fi_mr_enable(mr));
        }
        let key = fabric::fi_mr_key(mr);
        let _local_descriptor = fabric::fi_mr_desc(mr);
        // Remote addresses are virtual addresses or offsets into the region.
        let base = if mr_mode & sys::FI_MR_VIRT_ADDR != 0 { window_ptr as u64 } else { 0 };

        // Write the pattern in two pieces with one message.
        let pieces = [iovec_of(&written[..1000]), iovec_of(&written[1000..])];
        let mut desc = [null; 2];
        let target = [sys::fi_rma_iov { addr: base, len: LEN, key }];
        let write = sys::fi_msg_rma {
            msg_iov: pieces.as_ptr(),
            desc: desc.as_mut_ptr(),
            iov_count: pieces.len(),
            addr: me,
            rma_iov: target.as_ptr(),
            rma_iov_count: 1,
            context: contexts.get(0),
            data: 0,
        };
        endpoint.post("fi_writemsg", &mut completions, || {
            fabric::fi_writemsg(ep, &write, sys::FI_COMPLETION | sys::FI_DELIVERY_COMPLETE)
        });
        endpoint.wait_for(&mut completions, 1);

        // Read it back into two pieces split elsewhere.
        let (head, tail) = read_back.split_at_mut(40_000);
        let read_pieces = [iovec_of(head), iovec_of(tail)];
        endpoint.post("fi_readv", &mut completions, || {
            fabric::fi_readv(ep, read_pieces.as_ptr(), desc.as_mut_ptr(), 2, me, base, key, contexts.get(1))
        });
        endpoint.wait_for(&mut completions, 2);
        assert_ne!(completions.of(contexts.get(0)).flags & sys::FI_WRITE, 0);
        assert_ne!(completions.of(contexts.get(1)).flags & sys::FI_READ, 0);
        let window_bytes = std::slice::from_raw_parts(window_ptr.cast::<u8>(), LEN);
        assert!(window_bytes == &written[..], "fi_writemsg left other bytes in the window");
        assert!(read_back == written, "fi_readv read other bytes than were written");

        // Atomics on the u64 after the bytes: add 5 to 0 fetching 0, then swap 5 for 9.
        let counter = base + LEN as u64;
        let mut count = 0usize;
        check(fabric, "fi_atomicvalid", fabric::fi_fetch_atomicvalid(ep, sys::FI_UINT64, sys::FI_SUM, &mut count));
        assert!(count >= 1);
        check(
            fabric,
            "fi_compare_atomicvalid",
            fabric::fi_compare_atomicvalid(ep, sys::FI_UINT64, sys::FI_CSWAP, &mut count),
        );
        let addend = 5u64;
        let mut fetched = u64::MAX;
        endpoint.post("fi_fetch_atomic", &mut completions, || {
            fabric::fi_fetch_atomic(
                ep,
                (&raw const addend).cast(),
                1,
                null,
                (&raw mut fetched).cast(),
                null,
                me,
                counter,
                key,
                sys::FI_UINT64,
                sys::FI_SUM,
                contexts.get(2),
            )
        });
        endpoint.wait_for(&mut completions, 3);
        assert_eq!(fetched, 0);
        let (expected, desired) = (5u64, 9u64);
        let mut previous = u64::MAX;
        endpoint.post("fi_compare_atomic", &mut completions, || {
            fabric::fi_compare_atomic(
                ep,
                (&raw const desired).cast(),
                1,
                null,
                (&raw const expected).cast(),
                null,
                (&raw mut previous).cast(),
                null,
                me,
                counter,
                key,
                sys::FI_UINT64,
                sys::FI_CSWAP,
                contexts.get(3),
            )
        });
        endpoint.wait_for(&mut completions, 4);
        assert_eq!(previous, 5);
        assert_eq!(window_ptr.add(LEN / 8).read_volatile(), 9);

        check(fabric, "fi_close(mr)", fabric::fi_close(&raw mut (*mr).fid));
    }
}
