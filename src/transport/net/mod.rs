//! Transport between nodes: one reliable-datagram (`FI_EP_RDM`) endpoint of libfabric per
//! rank, carrying the point-to-point engine's packets (the same header as a shared-memory
//! slot, then the payload) as tagged messages whose tag names the sender in the receiver's
//! table of processes (its world rank within a job; for a process of another job, connected
//! by MPI_Comm_spawn, the index the receiver gave it: `Net::add_other_job`). Matching
//! stays in the engine: every receive buffer takes any packet, so `MPI_ANY_SOURCE`, probes,
//! cancellation and ordering work as they do over shared memory. Packets between two ranks
//! keep their order: they travel on one rail (`packet_rail`; a rank's peers spread over the
//! rails), the provider matches them to receive buffers in the senders' order
//! (`FI_ORDER_SAS`, required) and each rail's buffers are handed to the engine in the order
//! they were posted, whatever order their completions come in.
//!
//! Buffers: `RECV_BUFFERS` receive buffers stay posted (each reposted once the engine has
//! handled its packet) and `SEND_BUFFERS` send buffers carry packets until the provider
//! reports them sent; both live in one allocation, registered once when the provider needs
//! local registration (`FI_MR_LOCAL`). Large messages move as direct transfers: one tagged
//! message (tag bit 63 and the receiver's id for it) from the sender's buffer straight into
//! the receiver's, which posted its receive before telling the sender to go, or an RDMA read
//! by the receiver of the memory the sender exposed (`expose`, `read_direct`). Progress is
//! manual: reading the completion queue drives the provider.
//!
//! RDMA eager channel: a rank offers peers that send it many packets a ring in its memory
//! (`offer_ring`); they then write their packets there with RDMA writes (`write_to_ring`)
//! and this rank polls the ring (`ring_front`), handing slots back with credit packets.
//!
//! `fabric` loads libfabric (OFI) at run time and wraps the calls made here; `fabric_sys`
//! holds the structs and constants generated from libfabric's headers
//! (scripts/gen-fabric-bindings.sh).

pub mod fabric;
pub mod fabric_sys;

use crate::abi::consts::MPI_ERR_OTHER;
use crate::config;
use crate::error::{MpiError, MpiResult};
use crate::transport::shm::Packet;
use fabric::{FI_ADDR_UNSPEC, Fabric, sys};
use libc::iovec;
use std::collections::{HashMap, VecDeque};
use std::ffi::{CStr, c_void};
use std::ptr::null_mut;

/// Kind of the packet that opens the connection to a process of another job
/// (`Net::add_other_job`); never handed to the engine, whose kinds are small numbers.
const HELLO_KIND: u32 = u32::MAX;

/// Bytes of the header in front of every message.
const HEADER: usize = size_of::<Packet>();

/// Payload bytes a message carries at most: eager messages and the chunks of a stream.
pub const PAYLOAD_CAPACITY: usize = 64 * 1024;

/// Bytes of the packet area of one buffer: header and payload, rounded to whole words.
const BUFFER_BYTES: usize = (HEADER + PAYLOAD_CAPACITY).div_ceil(8) * 8;

/// An RDMA eager ring slot: `RING_HEAD` bytes (the slot's sequence number and the packet's
/// length, then how many packets the sender had sent to the receiver by tagged message
/// before it), the packet, and the sequence number again (`RING_TAIL`), after the packet's
/// bytes rounded to whole words. Send buffers have the same layout (the packet area after
/// `RING_HEAD` bytes), so a packet is written to a ring straight from its send buffer.
const RING_HEAD: usize = 16;
const RING_TAIL: usize = 8;
/// Bytes from one buffer (or ring slot) to the next: whole cache lines.
const BUFFER_STRIDE: usize = (RING_HEAD + BUFFER_BYTES + RING_TAIL).div_ceil(64) * 64;

/// Slots of one RDMA eager ring (one per sender that was offered one).
const RING_SLOTS: usize = 16;
/// Packets a rank takes from a peer by tagged message before it offers the peer a ring.
const RING_AFTER: u32 = 16;
/// Rings a rank offers at most (memory: `RING_SLOTS` x `BUFFER_STRIDE` each, about 1 MiB).
const MAX_RINGS: usize = 16;

/// Kinds of the transport's own packets (never handed to the engine): a ring offered to the
/// packet's receiver (`addr` its address, `len` its key), and slots of the receiver's ring
/// free again (`len` of them).
const RING_OFFER_KIND: u32 = u32::MAX - 1;
const RING_CREDIT_KIND: u32 = u32::MAX - 2;

/// Receive buffers kept posted, and send buffers in flight at most.
const RECV_BUFFERS: usize = 64;
const SEND_BUFFERS: usize = 64;
/// Direct transfers (a message straight between the users' buffers) in flight at most: the
/// first half for data coming in (receives and reads), the second for data going out. Were
/// they one pool, two ranks each receiving many messages from the other could fill their
/// slots with receives whose data waits for the other's sends, which would wait for a slot.
const DIRECT_TRANSFERS: usize = 256;
const DIRECT_IN: std::ops::Range<usize> = 0..DIRECT_TRANSFERS / 2;
const DIRECT_OUT: std::ops::Range<usize> = DIRECT_TRANSFERS / 2..DIRECT_TRANSFERS;

/// Which way a direct transfer's data goes, from this rank's side: each has its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    In = 0,
    Out = 1,
}

/// Tag bit of direct transfers; the packets' tags (the sender's rank) never have it, and the
/// posted packet buffers match only tags without it.
const DIRECT_TAG: u64 = 1 << 63;

/// The tag of packets to a process of another job: the receiver's slot for the connection
/// (`Net::reserve_slot`, which it announced) and the sender's position in its group, as the
/// receiver numbers that group from the slot's first index. Packets of the job's own ranks
/// carry the rank alone (slot 0).
pub fn other_job_tag(slot: u64, position: usize) -> u64 {
    debug_assert!(slot > 0 && slot < 1 << 31 && position < 1 << 32);
    slot << 32 | position as u64
}

/// Providers in the order a job prefers them: native high-speed fabrics first, TCP last.
/// Over TCP the native reliable-datagram endpoints (`net` in libfabric 1.17, named `tcp`
/// from 1.18) come before the `ofi_rxm` layer over connected ones: between two hosts here
/// `net` moved 64 KiB in 43 µs where `tcp;ofi_rxm` took 80 (docs/performance.md).
const PREFERRED_PROVIDERS: [&str; 10] =
    ["cxi", "efa", "verbs;ofi_rxm", "psm3", "opx", "psm2", "tcp", "net", "tcp;ofi_rxm", "net;ofi_rxm"];

/// Providers never chosen by default: `shm` duplicates our own shared-memory route, and the
/// others are libfabric's debugging and test providers.
const AVOIDED_PROVIDERS: [&str; 4] = ["shm", "sockets", "udp;ofi_rxd", "ofi_hook_noop"];

/// Memory-registration modes this transport can follow (it registers its buffers, passes
/// descriptors, uses provider keys and virtual addresses, binds regions to the endpoint).
const MR_MODES: i32 =
    sys::FI_MR_LOCAL | sys::FI_MR_VIRT_ADDR | sys::FI_MR_ALLOCATED | sys::FI_MR_PROV_KEY | sys::FI_MR_ENDPOINT;

/// The key asked for the next registration, where the provider takes the caller's keys (no
/// `FI_MR_PROV_KEY`): keys must differ within a domain, and a provider may share one domain
/// among the endpoints of a process.
static NEXT_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Storage the provider may use for each posted operation (`struct fi_context2`), handed in
/// as the operation's context; the completion returns its address.
type Context = [*mut c_void; 8];

fn net_error(what: impl std::fmt::Display) -> MpiError {
    MpiError::new(MPI_ERR_OTHER, format!("network transport: {what}"))
}

/// `Ok` for a libfabric return value that is not an error, else the error naming `call`.
fn check(fabric: &Fabric, call: &str, ret: impl Into<i64>) -> MpiResult<()> {
    let ret = ret.into();
    if ret < 0 {
        return Err(net_error(format!("{call}: {}", fabric.strerror(ret))));
    }
    Ok(())
}

/// A packet that arrived in a receive buffer: `len` bytes in all, from world rank `from`.
#[derive(Clone, Copy)]
struct Arrival {
    len: usize,
    /// The sender's index; None for a process of another job whose connection slot this
    /// process has not mapped yet (`tag` tells who it is).
    from: Option<usize>,
    tag: u64,
    /// A hello (`Net::add_other_job`) or a packet about rings: for the transport alone.
    internal: bool,
}

/// A ring this rank offered to a peer: memory the peer writes its packets into.
struct RingIn {
    memory: Box<[u64]>,
    mr: *mut sys::fid_mr,
    /// Packets taken from it so far: the next is in slot `taken % RING_SLOTS`.
    taken: u64,
    /// Slots handed back to the sender so far (`RING_CREDIT_KIND`).
    credited: u64,
}

/// A ring a peer offered: where this rank writes its packets to the peer.
struct RingOut {
    addr: u64,
    key: u64,
    /// Packets written so far, and slots known to be free.
    sent: u64,
    free: u64,
}

/// The sequence number of the `k`th packet of a ring (never 0, which a cleared slot holds).
fn ring_seq(k: u64) -> u32 {
    (k % (1 << 31)) as u32 + 1
}

/// The provider and domain a job uses, as `oxmpi-info` and the debug log show them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub provider: String,
    pub domain: String,
}

/// One NIC's endpoint and what it needs: its fabric, domain, completion queue and address
/// vector. Rail 0 carries every packet (so they keep their order); large direct transfers
/// are striped over all rails shared with the peer.
struct Rail {
    info: *mut sys::fi_info,
    fabric_fid: *mut sys::fid_fabric,
    domain: *mut sys::fid_domain,
    cq: *mut sys::fid_cq,
    av: *mut sys::fid_av,
    ep: *mut sys::fid_ep,
    /// The registration of the packet buffers with this rail's domain when the provider
    /// needs one (`FI_MR_LOCAL`), and its descriptor.
    mr: *mut sys::fid_mr,
    desc: *mut c_void,
    /// Address of each world rank's endpoint on this rail (unspecified for ranks not
    /// reached through it).
    addr: Vec<sys::fi_addr_t>,
    /// The completion queue's file descriptor, to sleep on (-1: the provider has none).
    wait_fd: i32,
    choice: Choice,
}

impl Rail {
    fn mr_mode(&self) -> i32 {
        // SAFETY: `info` is a valid fi_info (owned by the rail until Drop).
        unsafe { (*(*self.info).domain_attr).mr_mode }
    }
}

/// A direct transfer in flight: the engine's token, the pieces (`pieces`) not
/// finished yet, and the registrations of the user's memory made for it.
struct Direct {
    token: u64,
    pieces_left: usize,
    /// Registrations of the user's memory (one per block of each piece, when the provider
    /// needs them).
    mrs: Vec<*mut sys::fid_mr>,
    /// Each piece's blocks and their descriptors, kept until the transfer finishes.
    iovs: Vec<(Vec<iovec>, Vec<*mut c_void>)>,
}

/// Smallest direct transfer striped over several rails: below it one rail's message costs
/// less than the extra completions.
const STRIPE_MIN: usize = 256 * 1024;

/// Pieces (operations) a direct transfer is cut into at most: its stripes, each cut further
/// when the memory on either side has more blocks than the provider takes in one operation
/// (`Net::split_for`).
pub const MAX_PIECES: usize = 16;

/// This rank's network endpoints, one per rail.
pub struct Net {
    fabric: &'static Fabric,
    rails: Vec<Rail>,
    /// Per world rank: the rails it shares with this rank (0 for ranks not reached through
    /// the network).
    peer_rails: Vec<usize>,
    /// Per peer: the tag packets to it carry, which names this process to the peer (this
    /// rank for ranks of its own job; for processes of another job, `other_job_tag` of the
    /// peer's connection slot and this process's position in its group).
    sent_as: Vec<u64>,
    /// Per peer: whether packets may go to it now. False for a process of another job whose
    /// connection the other side opens (`add_other_job`), until its first packet arrives.
    greeted: Vec<bool>,
    /// Per connection slot (`reserve_slot`; 0 is this job's ranks): the index of the first
    /// process of the group it connects to, once `add_other_job` added them.
    slot_first: Vec<Option<usize>>,
    /// Tags of processes of other jobs that greeted this one before it added them.
    early_greetings: Vec<u64>,
    /// Packets of processes of other jobs that came before this process added them (copied
    /// out of the receive buffers, tag and bytes), handed to the engine once they are, before
    /// anything later from the same sender.
    held: VecDeque<(u64, Vec<u8>)>,
    /// The packet `front` returned comes from `held` (at that position).
    serving_held: Option<usize>,
    /// The ranks of this process's job: the first entries of the table (the others are
    /// processes of other jobs, `add_other_job`).
    job_size: usize,
    me: usize,
    /// Receive buffers, then send buffers; never moved while the endpoint is open.
    buffers: Box<[u64]>,
    /// One context per buffer, same order, then `MAX_PIECES` per direct-transfer slot.
    contexts: Box<[Context]>,
    /// Send buffers free to fill (indices into the send half).
    send_free: Vec<usize>,
    /// Per rail, its receive buffers in the order they were posted, which is the order
    /// messages match them (each takes any packet), hence the senders' order on that rail.
    /// Completions may come in another order (a large packet finishes after a small one
    /// behind it), so packets are handed to the engine in this order, each once its buffer
    /// completed (`arrived`). Buffer `b` is posted on rail `b % rails`.
    posted: Vec<VecDeque<usize>>,
    /// The rail whose packet `front` returned (or acts on), for `release_front`.
    front_rail: usize,
    /// Per peer: the rail its packets travel on, both ways (`packet_rail`): peers spread
    /// over the rails two ranks share, each pair keeping to one so its packets stay in order.
    packet_rail: Vec<usize>,
    arrived: Vec<Option<Arrival>>,
    /// Direct transfers in flight, the free slots, and the tokens of finished ones.
    direct: Vec<Option<Direct>>,
    direct_free: [Vec<usize>; 2],
    finished: Vec<u64>,
    /// Largest message the provider moves in one operation, and the largest it sends at
    /// once from the caller's memory (`fi_tinject`: no completion to read).
    max_message: usize,
    inject_size: usize,
    /// Most blocks one direct transfer's piece may have (the provider's `iov_limit` for
    /// sends and receives, the smaller).
    iov_limit: usize,
    /// Most remote blocks one RDMA read may name (the provider's `rma_iov_limit`).
    rma_iov_limit: usize,
    /// The endpoints do RMA (`FI_RMA`): peers may read memory this rank exposes.
    rma: bool,
    /// Memory exposed to a peer's RDMA reads (`expose`), per token, until `withdraw`.
    exposed: HashMap<u64, Vec<*mut sys::fid_mr>>,
    /// This rank offers RDMA eager rings to peers of its job that send it many packets
    /// (`OXMPI_NET_EAGER_RDMA`).
    eager_rdma: bool,
    /// Per peer: the ring offered to it (its packets come there), the ring it offered
    /// (packets to it go there).
    ring_in: Vec<Option<RingIn>>,
    ring_out: Vec<Option<RingOut>>,
    /// The peers with a ring here, in the order they got it.
    ring_peers: Vec<usize>,
    /// Per peer: packets taken from it, and sent to it, by tagged message (the engine's and
    /// the transport's own). A ring packet waits until its sender's earlier tagged ones
    /// were taken.
    tagged_taken: Vec<u32>,
    tagged_sent: Vec<u32>,
    /// The packet `front` returned comes from this peer's ring.
    serving_ring: Option<usize>,
    /// Peers whose ring has slots to hand back for which no send buffer was free.
    credits_due: Vec<usize>,
    /// Packets taken from rings so far.
    ring_packets: u64,
}

// SAFETY: the libfabric objects are used by one thread at a time (the engine is behind the
// runtime's lock) and the domains are opened with FI_THREAD_DOMAIN, which allows that.
unsafe impl Send for Net {}

/// Reads a C string field of an `fi_info` attribute (empty when null).
///
/// # Safety
/// `s` is null or NUL-terminated.
unsafe fn c_text(s: *const std::ffi::c_char) -> String {
    // SAFETY: as the caller guarantees.
    if s.is_null() { String::new() } else { unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned() }
}

/// The providers and domains libfabric offers for our endpoints, in its order (for
/// `oxmpi-info` and for the choice at start-up). Each entry is a `fi_info` of `list`.
///
/// # Safety
/// `list` is a list from `Fabric::getinfo`.
unsafe fn offers(list: *mut sys::fi_info) -> Vec<(*mut sys::fi_info, Choice)> {
    let mut out = Vec::new();
    let mut at = list;
    while !at.is_null() {
        // SAFETY: entries of a getinfo list have their attribute structs.
        let choice = unsafe {
            Choice { provider: c_text((*(*at).fabric_attr).prov_name), domain: c_text((*(*at).domain_attr).name) }
        };
        out.push((at, choice));
        // SAFETY: as above.
        at = unsafe { (*at).next };
    }
    out
}

/// Picks the entry the job uses: the provider named by `OXMPI_NET_PROVIDER` (the hints
/// already asked for it) or the first of `PREFERRED_PROVIDERS` present; among its domains,
/// `OXMPI_NET_DOMAIN`, else the first that is not the loopback interface.
fn choose(entries: &[(*mut sys::fi_info, Choice)], named: bool) -> Option<usize> {
    let wanted_domain = std::env::var(config::NET_DOMAIN).ok();
    let domain_ok = |c: &Choice| match &wanted_domain {
        Some(d) => &c.domain == d,
        None => c.domain != "lo",
    };
    let rank_of = |c: &Choice| {
        if named {
            return Some(0);
        }
        match PREFERRED_PROVIDERS.iter().position(|p| *p == c.provider) {
            Some(i) => Some(i),
            None if AVOIDED_PROVIDERS.contains(&c.provider.as_str()) => None,
            None => Some(PREFERRED_PROVIDERS.len()),
        }
    };
    let best = |accept: &dyn Fn(&Choice) -> bool| {
        entries
            .iter()
            .enumerate()
            .filter(|(_, (_, c))| accept(c))
            .filter_map(|(i, (_, c))| rank_of(c).map(|r| (r, i)))
            .min()
            .map(|(_, i)| i)
    };
    // A lone machine has only the loopback interface: use it rather than nothing.
    best(&|c| domain_ok(c)).or_else(|| if wanted_domain.is_none() { best(&|_| true) } else { None })
}

/// Asks libfabric for RDM endpoints with what the engine needs, with RMA (rendezvous by RDMA
/// read) where providers offer it, else without; returns the list (freed by the caller with
/// `freeinfo`), whether a provider was named, and whether the endpoints do RMA.
fn query(fabric: &Fabric) -> MpiResult<(*mut sys::fi_info, bool, bool)> {
    match query_caps(fabric, sys::FI_TAGGED | sys::FI_RMA) {
        Ok((list, named)) => Ok((list, named, true)),
        Err(_) => query_caps(fabric, sys::FI_TAGGED).map(|(list, named)| (list, named, false)),
    }
}

fn query_caps(fabric: &Fabric, caps: u64) -> MpiResult<(*mut sys::fi_info, bool)> {
    let provider = std::env::var(config::NET_PROVIDER).ok().filter(|p| !p.is_empty());
    let hints = fabric.allocinfo();
    if hints.is_null() {
        return Err(net_error("fi_allocinfo: out of memory"));
    }
    // SAFETY: allocinfo gave a zeroed fi_info with every attribute struct allocated;
    // prov_name is strdup'd so that freeinfo frees it.
    let ret = unsafe {
        (*hints).caps = caps;
        (*hints).mode = sys::FI_CONTEXT | sys::FI_CONTEXT2;
        (*(*hints).ep_attr).type_ = sys::FI_EP_RDM;
        (*(*hints).tx_attr).msg_order = sys::FI_ORDER_SAS;
        (*(*hints).rx_attr).msg_order = sys::FI_ORDER_SAS;
        let d = &mut *(*hints).domain_attr;
        d.threading = sys::FI_THREAD_DOMAIN;
        d.data_progress = sys::FI_PROGRESS_MANUAL;
        d.control_progress = sys::FI_PROGRESS_MANUAL;
        d.av_type = sys::FI_AV_TABLE;
        d.mr_mode = MR_MODES;
        if let Some(p) = &provider {
            let name = std::ffi::CString::new(p.as_str()).map_err(|_| net_error("bad provider name"))?;
            (*(*hints).fabric_attr).prov_name = libc::strdup(name.as_ptr());
        }
        let mut list = null_mut();
        // The first getinfo initialises the providers.
        let ret =
            fabric::keeping_signal_handlers(|| fabric.getinfo(std::ptr::null(), std::ptr::null(), 0, hints, &mut list));
        fabric.freeinfo(hints);
        if ret == 0 { Ok(list) } else { Err(ret) }
    };
    match ret {
        Ok(list) => Ok((list, provider.is_some())),
        Err(code) => Err(net_error(format!(
            "no libfabric provider offers reliable tagged endpoints{}: fi_getinfo: {}",
            provider.map(|p| format!(" from {}={p}", config::NET_PROVIDER)).unwrap_or_default(),
            fabric.strerror(code.into())
        ))),
    }
}

/// Rails a job uses at most (endpoints on as many NICs).
pub const MAX_RAILS: usize = 4;

/// How peers reach a window's memory by RDMA (`Net::expose_window`): its remote address
/// and key on each rail of the member that exposed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowKeys {
    pub rails: usize,
    pub regions: [(u64, u64); MAX_RAILS],
}

impl WindowKeys {
    /// Bytes of the wire form: the rail count, then each rail's address and key.
    pub const WIRE_BYTES: usize = 8 + 16 * MAX_RAILS;

    pub fn to_wire(self) -> [u8; Self::WIRE_BYTES] {
        let mut w = [0u8; Self::WIRE_BYTES];
        w[..8].copy_from_slice(&(self.rails as u64).to_le_bytes());
        for (i, (addr, key)) in self.regions.iter().enumerate() {
            w[8 + 16 * i..16 + 16 * i].copy_from_slice(&addr.to_le_bytes());
            w[16 + 16 * i..24 + 16 * i].copy_from_slice(&key.to_le_bytes());
        }
        w
    }

    /// The keys in wire form; None for a member that exposed nothing (a rail count of 0)
    /// or a malformed entry.
    pub fn from_wire(w: &[u8]) -> Option<WindowKeys> {
        let word = |at: usize| u64::from_le_bytes(w[at..at + 8].try_into().unwrap());
        if w.len() != Self::WIRE_BYTES {
            return None;
        }
        let rails = word(0) as usize;
        if rails == 0 || rails > MAX_RAILS {
            return None;
        }
        let mut regions = [(0, 0); MAX_RAILS];
        for (i, r) in regions.iter_mut().enumerate() {
            *r = (word(8 + 16 * i), word(16 + 16 * i));
        }
        Some(WindowKeys { rails, regions })
    }
}

/// The rails of a job: the chosen entry first, then one entry of each further domain of the
/// same provider, in libfabric's order, up to `OXMPI_NET_RAILS` (default: every NIC of a
/// native fabric; one over sockets, where other interfaces are often networks the peers
/// are not on, such as a container bridge whose address is the same on every host).
fn rails(entries: &[(*mut sys::fi_info, Choice)], first: usize) -> Vec<usize> {
    let provider = &entries[first].1.provider;
    let wanted = config::usize_var(config::NET_RAILS)
        .unwrap_or(if over_sockets(provider) { 1 } else { MAX_RAILS })
        .clamp(1, MAX_RAILS);
    let mut out = vec![first];
    for (i, (_, c)) in entries.iter().enumerate() {
        if out.len() == wanted {
            break;
        }
        if &c.provider == provider && c.domain != "lo" && !out.iter().any(|&o| entries[o].1.domain == c.domain) {
            out.push(i);
        }
    }
    out
}

/// Whether `provider` (a name as libfabric gives it, layers after `;`) runs over the kernel's
/// sockets, where RMA is emulated with messages.
fn over_sockets(provider: &str) -> bool {
    ["tcp", "net", "udp", "sockets"].iter().any(|p| provider.split(';').next() == Some(p))
}

/// What `oxmpi-info` shows of the network.
pub struct Description {
    /// Every provider and domain offered.
    pub offers: Vec<Choice>,
    /// The rails a job would use (empty: none usable).
    pub chosen: Vec<Choice>,
    /// Whether they do RMA: `Some(true)` in the NIC, `Some(false)` emulated over sockets,
    /// `None` not at all.
    pub rma: Option<bool>,
}

/// What a job spanning nodes would use here.
pub fn describe() -> Result<Description, String> {
    let fabric = Fabric::open().map_err(|e| e.to_string())?;
    let (list, named, rma) = query(fabric).map_err(|e| e.msg.clone())?;
    // SAFETY: `list` came from getinfo and is freed once, after its entries were read.
    let entries = unsafe { offers(list) };
    let chosen = match choose(&entries, named) {
        Some(first) => rails(&entries, first).into_iter().map(|i| entries[i].1.clone()).collect(),
        None => Vec::new(),
    };
    // One line per provider and domain (libfabric lists a domain once per address).
    let mut all: Vec<Choice> = Vec::new();
    for (_, c) in entries {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    // SAFETY: as above.
    unsafe { fabric.freeinfo(list) };
    let rma = chosen.first().filter(|_| rma).map(|c| !over_sockets(&c.provider));
    Ok(Description { offers: all, chosen, rma })
}

impl Net {
    /// Opens this rank's endpoints (world rank `me` of `world`); peers are added with
    /// `connect` once every rank published its `address`.
    pub fn open(me: usize, world: usize) -> MpiResult<Net> {
        let fabric = Fabric::open().map_err(|e| MpiError::new(MPI_ERR_OTHER, e.to_string()))?;
        let (list, named, rma) = query(fabric)?;
        // SAFETY: `list` came from getinfo.
        let entries = unsafe { offers(list) };
        let Some(first) = choose(&entries, named) else {
            let seen: Vec<String> = entries.iter().map(|(_, c)| format!("{} ({})", c.provider, c.domain)).collect();
            // SAFETY: freed once; nothing of it is used afterwards.
            unsafe { fabric.freeinfo(list) };
            return Err(net_error(format!(
                "no usable libfabric provider among [{}] ({} names a domain)",
                seen.join(", "),
                config::NET_DOMAIN
            )));
        };
        let mut net = Net {
            fabric,
            rails: Vec::new(),
            peer_rails: vec![0; world],
            sent_as: vec![me as u64; world],
            greeted: vec![true; world],
            slot_first: vec![Some(0)],
            early_greetings: Vec::new(),
            held: VecDeque::new(),
            serving_held: None,
            job_size: world,
            me,
            buffers: vec![0u64; (RECV_BUFFERS + SEND_BUFFERS) * BUFFER_STRIDE / 8].into_boxed_slice(),
            contexts: vec![[null_mut(); 8]; RECV_BUFFERS + SEND_BUFFERS + DIRECT_TRANSFERS * MAX_PIECES]
                .into_boxed_slice(),
            send_free: (RECV_BUFFERS..RECV_BUFFERS + SEND_BUFFERS).rev().collect(),
            posted: Vec::new(),
            front_rail: 0,
            packet_rail: vec![0; world],
            arrived: vec![None; RECV_BUFFERS],
            direct: (0..DIRECT_TRANSFERS).map(|_| None).collect(),
            direct_free: [DIRECT_IN.rev().collect(), DIRECT_OUT.rev().collect()],
            finished: Vec::new(),
            max_message: usize::MAX,
            inject_size: usize::MAX,
            iov_limit: usize::MAX,
            rma_iov_limit: usize::MAX,
            rma,
            exposed: HashMap::new(),
            eager_rdma: false,
            ring_in: (0..world).map(|_| None).collect(),
            ring_out: (0..world).map(|_| None).collect(),
            ring_peers: Vec::new(),
            tagged_taken: vec![0; world],
            tagged_sent: vec![0; world],
            serving_ring: None,
            credits_due: Vec::new(),
            ring_packets: 0,
        };
        for i in rails(&entries, first) {
            // SAFETY: the entry belongs to `list`; the copy outlives it and is freed in Drop.
            let info = unsafe { fabric.dupinfo(entries[i].0) };
            if info.is_null() {
                // SAFETY: freed once; `net` owns deep copies only.
                unsafe { fabric.freeinfo(list) };
                return Err(net_error("fi_dupinfo: out of memory"));
            }
            // SAFETY: `info` is a valid fi_info with its endpoint and transmit attributes.
            let (max_message, inject_size, iov_limit, rma_iov_limit) = unsafe {
                let (tx, rx) = (&*(*info).tx_attr, &*(*info).rx_attr);
                ((*(*info).ep_attr).max_msg_size, tx.inject_size, tx.iov_limit.min(rx.iov_limit), tx.rma_iov_limit)
            };
            net.max_message = net.max_message.min(max_message);
            net.inject_size = net.inject_size.min(inject_size);
            net.iov_limit = net.iov_limit.min(iov_limit.max(1));
            net.rma_iov_limit = net.rma_iov_limit.min(rma_iov_limit.max(1));
            net.rails.push(Rail {
                info,
                fabric_fid: null_mut(),
                domain: null_mut(),
                cq: null_mut(),
                av: null_mut(),
                ep: null_mut(),
                mr: null_mut(),
                desc: null_mut(),
                addr: vec![FI_ADDR_UNSPEC; world],
                wait_fd: -1,
                choice: entries[i].1.clone(),
            });
        }
        // SAFETY: freed once; `net` holds deep copies.
        unsafe { fabric.freeinfo(list) };
        // On failure `net` is dropped, closing what was opened.
        for r in 0..net.rails.len() {
            net.open_rail(r)?;
        }
        net.posted = (0..net.rails.len()).map(|_| VecDeque::with_capacity(RECV_BUFFERS)).collect();
        for b in 0..RECV_BUFFERS {
            net.post_receive(b)?;
        }
        let names: Vec<&str> = net.rails.iter().map(|r| r.choice.domain.as_str()).collect();
        net.eager_rdma = net.rma && config::switch_var(config::NET_EAGER_RDMA).unwrap_or(net.rma_is_native());
        let rma = match (net.rma, net.eager_rdma) {
            (true, true) => "with RMA, RDMA eager rings",
            (true, false) => "with RMA",
            _ => "without RMA",
        };
        log::debug!("network: provider {} on {} ({rma})", net.rails[0].choice.provider, names.join(" + "));
        Ok(net)
    }

    /// Opens rail `r`'s objects and registers the packet buffers with its domain.
    fn open_rail(&mut self, r: usize) -> MpiResult<()> {
        let null = null_mut();
        let f = self.fabric;
        let (base, bytes) = (self.buffers.as_ptr().cast::<c_void>(), self.buffers.len() * 8);
        let rma = self.rma;
        let rail = &mut self.rails[r];
        // SAFETY: each object is opened from the one before it, from `info` (owned until Drop);
        // Drop closes whichever were opened, in reverse order.
        unsafe {
            check(f, "fi_fabric", f.fabric((*rail.info).fabric_attr, &mut rail.fabric_fid, null))?;
            check(f, "fi_domain", fabric::fi_domain(rail.fabric_fid, rail.info, &mut rail.domain, null))?;
            // A queue with a file descriptor lets an idle rank sleep until traffic comes;
            // providers without one get a plain queue (idle ranks then nap).
            let mut cq_attr: sys::fi_cq_attr = std::mem::zeroed();
            cq_attr.format = sys::FI_CQ_FORMAT_TAGGED;
            cq_attr.size = RECV_BUFFERS + SEND_BUFFERS + DIRECT_TRANSFERS * MAX_PIECES;
            cq_attr.wait_obj = sys::FI_WAIT_FD;
            if fabric::fi_cq_open(rail.domain, &mut cq_attr, &mut rail.cq, null) == 0 {
                let mut fd: libc::c_int = -1;
                let ret = fabric::fid_control(&raw mut (*rail.cq).fid, sys::FI_GETWAIT, (&raw mut fd).cast());
                rail.wait_fd = if ret == 0 { fd } else { -1 };
            } else {
                cq_attr.wait_obj = sys::FI_WAIT_NONE;
                check(f, "fi_cq_open", fabric::fi_cq_open(rail.domain, &mut cq_attr, &mut rail.cq, null))?;
            }
            let mut av_attr: sys::fi_av_attr = std::mem::zeroed();
            av_attr.type_ = sys::FI_AV_TABLE;
            av_attr.count = rail.addr.len();
            check(f, "fi_av_open", fabric::fi_av_open(rail.domain, &mut av_attr, &mut rail.av, null))?;
            check(f, "fi_endpoint", fabric::fi_endpoint(rail.domain, rail.info, &mut rail.ep, null))?;
            let cq = &raw mut (*rail.cq).fid;
            check(f, "fi_ep_bind(cq)", fabric::fi_ep_bind(rail.ep, cq, sys::FI_TRANSMIT | sys::FI_RECV))?;
            check(f, "fi_ep_bind(av)", fabric::fi_ep_bind(rail.ep, &raw mut (*rail.av).fid, 0))?;
            check(f, "fi_enable", fabric::fi_enable(rail.ep))?;
            let mr_mode = rail.mr_mode();
            if mr_mode & sys::FI_MR_LOCAL != 0 {
                // Send buffers are also the sources of writes to rings.
                let access = sys::FI_SEND | sys::FI_RECV | if rma { sys::FI_WRITE } else { 0 };
                check(
                    f,
                    "fi_mr_reg",
                    fabric::fi_mr_reg(rail.domain, base, bytes, access, 0, 0, 0, &mut rail.mr, null),
                )?;
                if mr_mode & sys::FI_MR_ENDPOINT != 0 {
                    check(f, "fi_mr_bind", fabric::fi_mr_bind(rail.mr, &raw mut (*rail.ep).fid, 0))?;
                    check(f, "fi_mr_enable", fabric::fi_mr_enable(rail.mr))?;
                }
                rail.desc = fabric::fi_mr_desc(rail.mr);
            }
        }
        Ok(())
    }

    /// This rank's addresses, one per rail, for peers to `connect` to: the number of rails,
    /// then each address as a 16-bit little-endian length and its bytes.
    pub fn address(&self) -> MpiResult<Vec<u8>> {
        let mut out = vec![self.rails.len() as u8];
        for rail in &self.rails {
            let mut name = vec![0u8; 256];
            let mut len = name.len();
            // SAFETY: the endpoint is open and enabled; `name` has `len` writable bytes.
            let ret = unsafe { fabric::fi_getname(&raw mut (*rail.ep).fid, name.as_mut_ptr().cast(), &mut len) };
            check(self.fabric, "fi_getname", ret)?;
            out.extend_from_slice(&(len as u16).to_le_bytes());
            out.extend_from_slice(&name[..len]);
        }
        Ok(out)
    }

    /// Adds the peers reached through the network: for each, its world rank and `address()`.
    /// A peer is reached on the rails both ends have.
    pub fn connect(&mut self, peers: &[(usize, Vec<u8>)]) -> MpiResult<()> {
        for (rank, address) in peers {
            let garbled = || net_error(format!("the network address of rank {rank} is garbled"));
            let (&count, mut rest) = address.split_first().ok_or_else(garbled)?;
            let shared = usize::from(count).min(self.rails.len());
            for r in 0..shared {
                let (len, after) = rest.split_first_chunk::<2>().ok_or_else(garbled)?;
                let len = usize::from(u16::from_le_bytes(*len));
                let name = after.get(..len).ok_or_else(garbled)?;
                rest = &after[len..];
                let rail = &mut self.rails[r];
                let mut fi_addr = FI_ADDR_UNSPEC;
                // SAFETY: the AV is open; `name` is an address of this provider's format.
                let ret =
                    unsafe { fabric::fi_av_insert(rail.av, name.as_ptr().cast(), 1, &mut fi_addr, 0, null_mut()) };
                if ret != 1 {
                    return Err(net_error(format!(
                        "cannot add the address of rank {rank} on {} (fi_av_insert: {ret})",
                        rail.choice.domain
                    )));
                }
                rail.addr[*rank] = fi_addr;
            }
            self.peer_rails[*rank] = shared;
            self.packet_rail[*rank] = packet_rail(self.me, *rank, shared);
        }
        Ok(())
    }

    /// A new connection slot: the number a group of another job puts in the tags of its
    /// packets to this process (`other_job_tag`), so that this process knows them before it
    /// has added them, and whatever else it connects to meanwhile. Slot 1 is the first.
    pub fn reserve_slot(&mut self) -> u64 {
        self.slot_first.push(None);
        (self.slot_first.len() - 1) as u64
    }

    /// Adds processes of another job at the next indices, the group of connection `slot`:
    /// for each, its `address()` and the tag packets to it carry (`other_job_tag` of its slot
    /// and this process's position). Returns the first index.
    ///
    /// Of each pair, only the process with the smaller address opens the connection: it sends
    /// a hello at once, and the other sends nothing to it before a packet from it arrived.
    /// When both open connections at the same time, libfabric's tcp and rxm connection
    /// managers pick one by the processes' ids, which they read from connection records they
    /// recycle without clearing: after an earlier peer went away (a spawned job that ended)
    /// they may keep the connection both sides just closed, and the packets on it are lost.
    /// So processes of other jobs are reached on rail 0 alone (packets of the job's own ranks
    /// spread over rails, and a direct transfer on another rail would open a connection from
    /// either side).
    pub fn add_other_job(&mut self, slot: u64, peers: &[(Vec<u8>, u64)]) -> MpiResult<usize> {
        let first = self.sent_as.len();
        let n = peers.len();
        let entry = self.slot_first.get_mut(slot as usize).expect("a reserved connection slot");
        assert!(entry.is_none(), "connection slot {slot} added twice");
        *entry = Some(first);
        for rail in &mut self.rails {
            rail.addr.resize(first + n, FI_ADDR_UNSPEC);
        }
        self.peer_rails.resize(first + n, 0);
        self.packet_rail.resize(first + n, 0);
        self.ring_in.resize_with(first + n, || None);
        self.ring_out.resize_with(first + n, || None);
        self.tagged_taken.resize(first + n, 0);
        self.tagged_sent.resize(first + n, 0);
        self.sent_as.extend(peers.iter().map(|&(_, tag)| tag));
        let mine = self.address()?;
        let opens: Vec<bool> = peers.iter().map(|(address, _)| mine < *address).collect();
        self.greeted.extend(opens.iter().copied());
        // Some greeted already (`read_rail`).
        let in_slot = |tag: u64| tag >> 32 == slot;
        for tag in self.early_greetings.iter().copied().filter(|&t| in_slot(t)) {
            self.greeted[first + (tag & 0xffff_ffff) as usize] = true;
        }
        self.early_greetings.retain(|&t| !in_slot(t));
        let named: Vec<(usize, Vec<u8>)> = peers.iter().enumerate().map(|(k, (a, _))| (first + k, a.clone())).collect();
        self.connect(&named)?;
        for (k, &open) in opens.iter().enumerate() {
            let peer = first + k;
            self.peer_rails[peer] = self.peer_rails[peer].min(1);
            self.packet_rail[peer] = 0;
            let opener = if open { "this process sends a hello" } else { "it sends a hello" };
            log::debug!("network: process {peer} of another job added (slot {slot}); {opener}");
            if open {
                while !self.can_send(peer) {
                    self.read_completions();
                }
                self.send(peer, &Packet { kind: HELLO_KIND, ..Default::default() }, 0, |_| {});
            }
        }
        Ok(first)
    }

    /// The index of the process that sent a packet with `tag`, if it is known yet.
    #[inline]
    fn sender(&self, tag: u64) -> Option<usize> {
        if tag >> 32 == 0 {
            return Some(tag as usize);
        }
        let first = (*self.slot_first.get((tag >> 32) as usize)?)?;
        Some(first + (tag & 0xffff_ffff) as usize)
    }

    /// The packet area of buffer `i`.
    fn buffer(&mut self, i: usize) -> &mut [u8] {
        let bytes: &mut [u8] = words_as_bytes_mut(&mut self.buffers);
        &mut bytes[i * BUFFER_STRIDE + RING_HEAD..][..BUFFER_BYTES]
    }

    /// The first `len` bytes (at most a buffer) of the packet area of buffer `i`.
    fn packet_bytes(&self, i: usize, len: usize) -> &[u8] {
        let bytes: &[u8] = words_as_bytes(&self.buffers);
        &bytes[i * BUFFER_STRIDE + RING_HEAD..][..len.min(BUFFER_BYTES)]
    }

    /// Calls `post` until the provider takes the operation: while its queues are full
    /// (`-FI_EAGAIN`) completions are read, which empties them. Returns the last result.
    fn post_until_taken(&mut self, mut post: impl FnMut(&mut Net) -> isize) -> isize {
        loop {
            let ret = post(self);
            if ret != -(sys::FI_EAGAIN as isize) {
                return ret;
            }
            self.read_completions();
        }
    }

    fn post_receive(&mut self, b: usize) -> MpiResult<()> {
        let ctx = (&raw mut self.contexts[b]).cast::<c_void>();
        let buf = self.buffer(b).as_mut_ptr().cast::<c_void>();
        let r = b % self.rails.len();
        let ret = self.post_until_taken(|net| {
            let rail = &net.rails[r];
            // SAFETY: the buffer and its context live in boxes that stay put until Drop,
            // which closes the endpoint first; the buffer is not touched until its completion.
            unsafe { fabric::fi_trecv(rail.ep, buf, BUFFER_BYTES, rail.desc, FI_ADDR_UNSPEC, 0, !DIRECT_TAG, ctx) }
        });
        check(self.fabric, "fi_trecv", ret as i64)?;
        self.posted[r].push_back(b);
        Ok(())
    }

    /// Whether a packet can be sent to `dst` now (a send buffer is free, the process greeted
    /// this one if it opens the connection: `add_other_job`, and a slot of the ring `dst`
    /// offered, if it did, is free).
    #[inline]
    pub fn can_send(&self, dst: usize) -> bool {
        !self.send_free.is_empty() && self.greeted[dst] && self.ring_out[dst].as_ref().is_none_or(|r| r.free > 0)
    }

    /// Sends `packet` and `payload` bytes written by `fill` (which gets `PAYLOAD_CAPACITY`
    /// bytes) to world rank `dst`: into the ring it offered, else as a tagged message. The
    /// caller checked `can_send`.
    pub fn send(&mut self, dst: usize, packet: &Packet, payload: usize, fill: impl FnOnce(&mut [u8])) {
        debug_assert!(payload <= PAYLOAD_CAPACITY);
        let b = *self.send_free.last().expect("send without a free buffer (can_send)");
        let buf = self.buffer(b);
        fill(&mut buf[HEADER..HEADER + PAYLOAD_CAPACITY]);
        if self.ring_out[dst].is_some() {
            self.write_to_ring(dst, b, packet, payload);
        } else {
            self.send_tagged(dst, packet, payload);
        }
    }

    /// Sends `packet` and the `payload` bytes after the header in the last free send buffer
    /// as a tagged message to `dst`.
    fn send_tagged(&mut self, dst: usize, packet: &Packet, payload: usize) {
        let b = *self.send_free.last().expect("send without a free buffer (can_send)");
        let buf = self.buffer(b);
        // SAFETY: Packet is plain old data (repr(C) integers), HEADER bytes long.
        let header = unsafe { std::slice::from_raw_parts((packet as *const Packet).cast::<u8>(), HEADER) };
        buf[..HEADER].copy_from_slice(header);
        let ptr = buf.as_ptr().cast::<c_void>();
        let r = self.packet_rail[dst];
        let to = self.rails[r].addr[dst];
        let tag = self.sent_as[dst];
        debug_assert_ne!(to, FI_ADDR_UNSPEC, "rank {dst} is not reached through the network");
        self.tagged_sent[dst] = self.tagged_sent[dst].wrapping_add(1);
        if HEADER + payload <= self.inject_size {
            // The provider copies the message before returning: the buffer stays free.
            let ret = self.post_until_taken(|net| {
                // SAFETY: the endpoint is open; the buffer holds HEADER + payload bytes.
                unsafe { fabric::fi_tinject(net.rails[r].ep, ptr, HEADER + payload, to, tag) }
            });
            if ret < 0 {
                self.fail(&format!("fi_tinject to rank {dst}: {}", self.fabric.strerror(ret as i64)));
            }
            return;
        }
        self.send_free.pop();
        let ctx = (&raw mut self.contexts[b]).cast::<c_void>();
        let ret = self.post_until_taken(|net| {
            let rail = &net.rails[r];
            // SAFETY: as in `post_receive`: buffer and context stay put and untouched until
            // the send completes (the buffer returns to `send_free` then).
            unsafe { fabric::fi_tsend(rail.ep, ptr, HEADER + payload, rail.desc, to, tag, ctx) }
        });
        if ret < 0 {
            self.fail(&format!("fi_tsend to rank {dst}: {}", self.fabric.strerror(ret as i64)));
        }
    }

    /// Writes `packet` and the `payload` bytes after the header in send buffer `b` into the
    /// next slot of the ring `dst` offered, framed as `RING_HEAD` describes, with one RDMA
    /// write; the buffer is free again once the write completes.
    fn write_to_ring(&mut self, dst: usize, b: usize, packet: &Packet, payload: usize) {
        let len = HEADER + payload;
        let before = self.tagged_sent[dst];
        let ring = self.ring_out[dst].as_mut().expect("a ring to write to");
        debug_assert!(ring.free > 0, "a ring write without a free slot (can_send)");
        let seq = ring_seq(ring.sent);
        let remote = ring.addr + ((ring.sent as usize % RING_SLOTS) * BUFFER_STRIDE) as u64;
        let key = ring.key;
        ring.sent += 1;
        ring.free -= 1;
        let frame = RING_HEAD + len.next_multiple_of(8) + RING_TAIL;
        let bytes = words_as_bytes_mut(&mut self.buffers);
        let slot = &mut bytes[b * BUFFER_STRIDE..][..frame];
        slot[..8].copy_from_slice(&(u64::from(seq) | (len as u64) << 32).to_ne_bytes());
        slot[8..16].copy_from_slice(&u64::from(before).to_ne_bytes());
        // SAFETY: Packet is plain old data (repr(C) integers), HEADER bytes long.
        let header = unsafe { std::slice::from_raw_parts((packet as *const Packet).cast::<u8>(), HEADER) };
        slot[RING_HEAD..RING_HEAD + HEADER].copy_from_slice(header);
        slot[frame - RING_TAIL..].copy_from_slice(&u64::from(seq).to_ne_bytes());
        let ptr = slot.as_ptr().cast::<c_void>();
        self.send_free.pop();
        let ctx = (&raw mut self.contexts[b]).cast::<c_void>();
        let to = self.rails[0].addr[dst];
        let ret = self.post_until_taken(|net| {
            let rail = &net.rails[0];
            // SAFETY: the buffer and context stay put and untouched until the write completes
            // (the buffer returns to `send_free` then); the remote slot is free (credits).
            unsafe { fabric::fi_write(rail.ep, ptr, frame, rail.desc, to, remote, key, ctx) }
        });
        if ret < 0 {
            self.fail(&format!("fi_write to the ring of rank {dst}: {}", self.fabric.strerror(ret as i64)));
        }
    }

    /// Reads completions of every rail (which also drives the providers): finished sends
    /// free their buffers, arrivals queue for `front`, finished direct transfers for
    /// `take_finished`. Returns whether anything arrived or finished.
    pub fn read_completions(&mut self) -> bool {
        let mut arrived = false;
        for r in 0..self.rails.len() {
            arrived |= self.read_rail(r);
        }
        if !self.credits_due.is_empty() {
            self.send_credits();
        }
        arrived
    }

    fn read_rail(&mut self, r: usize) -> bool {
        // Not zeroed: this runs on every poll, and the provider writes the entries it returns.
        let mut entries = [const { std::mem::MaybeUninit::<sys::fi_cq_tagged_entry>::uninit() }; 16];
        let mut arrived = false;
        loop {
            // SAFETY: the CQ is open, of FI_CQ_FORMAT_TAGGED, and `entries` holds 16 entries.
            let ret = unsafe { fabric::fi_cq_read(self.rails[r].cq, entries.as_mut_ptr().cast(), entries.len()) };
            if ret == -(sys::FI_EAGAIN as isize) {
                return arrived;
            }
            if ret == -(sys::FI_EAVAIL as isize) {
                self.fail_from_queue(r);
                continue;
            }
            if ret < 0 {
                self.fail(&format!("fi_cq_read: {}", self.fabric.strerror(ret as i64)));
            }
            for e in &entries[..ret as usize] {
                // SAFETY: the provider wrote the first `ret` entries.
                let e = unsafe { e.assume_init_ref() };
                let b = self.buffer_of(e.op_context);
                if b < RECV_BUFFERS {
                    let from = self.sender(e.tag);
                    // Only processes of other jobs greet: the job's own packets are not looked at.
                    // A packet can come before this process adds its sender: the mark waits
                    // for `add_other_job`.
                    // With RMA, the job's ranks may send packets about rings.
                    let mut internal = false;
                    if e.tag >> 32 != 0 {
                        match from {
                            Some(f) => self.greeted[f] = true,
                            None => self.early_greetings.push(e.tag),
                        }
                        internal = e.len >= HEADER && self.packet_kind(b) == HELLO_KIND;
                    } else if self.rma {
                        internal = e.len >= HEADER && self.packet_kind(b) >= RING_CREDIT_KIND;
                    }
                    self.arrived[b] = Some(Arrival { len: e.len, from, tag: e.tag, internal });
                    arrived = true;
                } else if b < RECV_BUFFERS + SEND_BUFFERS {
                    self.send_free.push(b);
                } else {
                    arrived |= self.finish_piece((b - RECV_BUFFERS - SEND_BUFFERS) / MAX_PIECES);
                }
            }
            if (ret as usize) < entries.len() {
                return arrived;
            }
        }
    }

    fn buffer_of(&self, context: *mut c_void) -> usize {
        let first = self.contexts.as_ptr() as usize;
        let at = (context as usize).wrapping_sub(first) / size_of::<Context>();
        assert!(at < self.contexts.len(), "a completion for an operation this transport did not post");
        at
    }

    /// The next packet for the engine, if it arrived: its sender (world rank), header and
    /// payload. It stays until `release_front`. The transport's own packets (hellos of
    /// `add_other_job`, ring offers and credits) are acted on here; packets of processes
    /// not added yet wait in `held` (copied), and come first once they are; then tagged
    /// packets in order, then those written into rings (`ring_front`).
    #[inline]
    pub fn front(&mut self) -> Option<(usize, Packet, &[u8])> {
        if !self.held.is_empty()
            && let Some(at) = self.held.iter().position(|(tag, _)| self.sender(*tag).is_some())
        {
            self.serving_held = Some(at);
            let (tag, bytes) = &self.held[at];
            let from = self.sender(*tag).expect("just checked");
            // SAFETY: the copy holds at least a header (checked when held); Packet is plain
            // old data, read unaligned.
            let packet = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<Packet>()) };
            return Some((from, packet, &bytes[HEADER..]));
        }
        // From the rail served last on (its packets, in order, then the next rail's).
        let rails = self.posted.len();
        for _ in 0..rails {
            while let Some(a) = self.posted[self.front_rail].front().and_then(|&b| self.arrived[b]) {
                if a.internal {
                    self.take_internal();
                    self.release_front();
                } else if a.from.is_none() {
                    self.hold_front(a);
                } else {
                    return self.peek_front();
                }
            }
            self.front_rail = (self.front_rail + 1) % rails;
        }
        if self.ring_peers.is_empty() { None } else { self.ring_front() }
    }

    /// Acts on the transport's own packet at the front (a hello needs nothing).
    fn take_internal(&mut self) {
        let b = *self.posted[self.front_rail].front().expect("a packet at the front");
        let a = self.arrived[b].expect("an arrived packet");
        // SAFETY: internal packets hold at least a header (checked on arrival); Packet is
        // plain old data, read unaligned.
        let pk = unsafe { std::ptr::read_unaligned(self.packet_bytes(b, a.len).as_ptr().cast::<Packet>()) };
        let Some(from) = a.from else { return };
        match pk.kind {
            RING_OFFER_KIND => {
                log::debug!("network: rank {from} offered a ring; packets to it go there");
                self.ring_out[from] = Some(RingOut { addr: pk.addr, key: pk.len, sent: 0, free: RING_SLOTS as u64 });
            }
            RING_CREDIT_KIND => {
                let ring = self.ring_out[from].as_mut().expect("credits for a ring never offered");
                ring.free += pk.len;
            }
            _ => {}
        }
    }

    /// The next packet in one of the rings offered to peers, if one was written whole and
    /// every packet its sender sent before it by tagged message was taken. The ring's memory
    /// is zero but for packets not yet taken (`release_front` clears each), and the provider
    /// writes a packet's bytes in order (as RDMA eager channels assume of NICs; libfabric's
    /// TCP providers copy them in order): so a slot whose head and the word after the
    /// packet (by the head's length) hold its sequence number, the head unchanged after the
    /// tail was seen, was written whole.
    fn ring_front(&mut self) -> Option<(usize, Packet, &[u8])> {
        let n = self.ring_peers.len();
        let found = (0..n).map(|i| self.ring_peers[i]).find(|&p| {
            let ring = self.ring_in[p].as_ref().expect("a peer with a ring");
            let words = ring.memory.as_ptr();
            let base = (ring.taken as usize % RING_SLOTS) * BUFFER_STRIDE / 8;
            let seq = ring_seq(ring.taken);
            // SAFETY (the reads): aligned words of the slot, which the provider may be writing
            // meanwhile: volatile reads.
            let head = unsafe { std::ptr::read_volatile(words.add(base)) };
            let len = (head >> 32) as usize;
            // A head read while its length was still being written may be short or zero.
            if head as u32 != seq || !(HEADER..=BUFFER_BYTES).contains(&len) {
                return false;
            }
            let tail_at = base + (RING_HEAD + len.next_multiple_of(8)) / 8;
            // SAFETY: as above; the tail lies within the slot (len <= BUFFER_BYTES).
            let tail = unsafe { std::ptr::read_volatile(words.add(tail_at)) };
            // The tail is written, so is everything before it: the head read again is whole,
            // and the length read first was the packet's if it is the same.
            // SAFETY: as above.
            let (again, before) =
                unsafe { (std::ptr::read_volatile(words.add(base)), std::ptr::read_volatile(words.add(base + 1))) };
            tail as u32 == seq && again == head && self.tagged_taken[p].wrapping_sub(before as u32) as i32 >= 0
        })?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        self.serving_ring = Some(found);
        let ring = self.ring_in[found].as_ref().unwrap();
        let base = (ring.taken as usize % RING_SLOTS) * BUFFER_STRIDE;
        let bytes: &[u8] = words_as_bytes(&ring.memory);
        let len = u32::from_ne_bytes(bytes[base + 4..base + 8].try_into().unwrap()) as usize;
        let packet = &bytes[base + RING_HEAD..][..len];
        // SAFETY: the packet holds at least HEADER bytes (checked above); plain old data.
        let pk = unsafe { std::ptr::read_unaligned(packet.as_ptr().cast::<Packet>()) };
        Some((found, pk, &packet[HEADER..]))
    }

    /// Copies the first packet, from a process not added yet, into `held`.
    fn hold_front(&mut self, a: Arrival) {
        let b = *self.posted[self.front_rail].front().expect("a packet to hold");
        let packet = self.packet_bytes(b, a.len);
        if packet.len() < HEADER {
            self.fail(&format!("a message of {} bytes (tag {:#x}), shorter than a header", a.len, a.tag));
        }
        log::debug!("network: a packet of a process not added yet (tag {:#x}) waits", a.tag);
        self.held.push_back((a.tag, packet.to_vec()));
        self.release_front();
    }

    /// The kind of the packet in receive buffer `b`, which holds at least a header.
    fn packet_kind(&self, b: usize) -> u32 {
        let at = std::mem::offset_of!(Packet, kind);
        u32::from_ne_bytes(self.packet_bytes(b, HEADER)[at..at + 4].try_into().expect("four bytes"))
    }

    /// The next packet in order, if it arrived.
    #[inline]
    fn peek_front(&self) -> Option<(usize, Packet, &[u8])> {
        let b = *self.posted[self.front_rail].front()?;
        let a = self.arrived[b]?;
        let buf = self.packet_bytes(b, a.len);
        let from = a.from.expect("`front` holds packets of unknown senders");
        if buf.len() < HEADER {
            self.fail(&format!("a message of {} bytes from rank {from}, shorter than a header", a.len));
        }
        // SAFETY: the buffer holds at least HEADER bytes; Packet is plain old data, read
        // unaligned.
        let packet = unsafe { std::ptr::read_unaligned(buf.as_ptr().cast::<Packet>()) };
        Some((from, packet, &buf[HEADER..]))
    }

    /// Done with the packet `front` returned: a held copy is dropped, a receive buffer
    /// handed back to the provider.
    pub fn release_front(&mut self) {
        if let Some(at) = self.serving_held.take() {
            self.held.remove(at);
            return;
        }
        if let Some(p) = self.serving_ring.take() {
            let ring = self.ring_in[p].as_mut().expect("a ring being served");
            let base = (ring.taken as usize % RING_SLOTS) * BUFFER_STRIDE / 8;
            let len = (ring.memory[base] >> 32) as usize;
            // Cleared for the next lap: only packets not taken yet are ever nonzero.
            ring.memory[base..base + (RING_HEAD + len.next_multiple_of(8) + RING_TAIL) / 8].fill(0);
            ring.taken += 1;
            self.ring_packets += 1;
            if ring.taken - ring.credited >= RING_SLOTS as u64 / 2 && !self.credits_due.contains(&p) {
                self.credits_due.push(p);
            }
            self.send_credits();
            return;
        }
        let b = self.posted[self.front_rail].pop_front().expect("release without a packet");
        let a = self.arrived[b].take().expect("release of a packet that has not arrived");
        if let Err(e) = self.post_receive(b) {
            self.fail(&e.msg);
        }
        if let Some(from) = a.from {
            self.tagged_taken[from] = self.tagged_taken[from].wrapping_add(1);
            if self.eager_rdma
                && from < self.job_size
                && self.ring_in[from].is_none()
                && self.ring_peers.len() < MAX_RINGS
                && self.tagged_taken[from] >= RING_AFTER
            {
                self.offer_ring(from);
            }
        }
    }

    /// Offers `peer` a ring for its packets to this rank: registers it for remote writes
    /// and tells the peer where it is. Without a free send buffer, a later packet tries
    /// again; if the provider refuses the registration, the peer keeps to tagged messages.
    fn offer_ring(&mut self, peer: usize) {
        if self.send_free.is_empty() {
            return;
        }
        let memory = vec![0u64; RING_SLOTS * BUFFER_STRIDE / 8].into_boxed_slice();
        let mr = match self.register(0, memory.as_ptr() as usize, memory.len() * 8, sys::FI_REMOTE_WRITE) {
            Ok(mr) => mr,
            Err(e) => {
                log::debug!("network: no ring for rank {peer} ({e})");
                self.eager_rdma = false;
                return;
            }
        };
        let addr = if self.rails[0].mr_mode() & sys::FI_MR_VIRT_ADDR != 0 { memory.as_ptr() as u64 } else { 0 };
        // SAFETY: just registered.
        let key = unsafe { fabric::fi_mr_key(mr) };
        // The memory is boxed: it stays where it was registered until Drop closes the region.
        self.ring_in[peer] = Some(RingIn { memory, mr, taken: 0, credited: 0 });
        self.ring_peers.push(peer);
        log::debug!("network: offering rank {peer} a ring");
        self.send_tagged(peer, &Packet { kind: RING_OFFER_KIND, addr, len: key, ..Default::default() }, 0);
    }

    /// Hands back the slots of rings that `credits_due` names, as send buffers allow.
    fn send_credits(&mut self) {
        while !self.send_free.is_empty()
            && let Some(p) = self.credits_due.pop()
        {
            let ring = self.ring_in[p].as_mut().expect("credits of a ring");
            let n = ring.taken - ring.credited;
            ring.credited = ring.taken;
            self.send_tagged(p, &Packet { kind: RING_CREDIT_KIND, len: n, ..Default::default() }, 0);
        }
    }

    /// The descriptors that become readable when the network has something for this rank,
    /// one per rail; None when a provider has none.
    fn wait_fds(&self) -> Option<Vec<i32>> {
        self.rails.iter().map(|r| (r.wait_fd >= 0).then_some(r.wait_fd)).collect()
    }

    /// Whether this rank may sleep on `wait_fds` now (libfabric's `fi_trywait` on every
    /// rail): false when something is pending, to be read first.
    fn ready_to_sleep(&mut self) -> bool {
        self.rails.iter_mut().all(|rail| {
            let cq = (&raw mut rail.cq).cast::<*mut sys::fid>();
            // SAFETY: the fabric and the CQ are open; `cq` points at one live fid pointer
            // (the `fid` is the first field of `fid_cq`).
            unsafe { fabric::fi_trywait(rail.fabric_fid, cq, 1) == 0 }
        })
    }

    /// Sleeps until the network has something for this rank or `timeout` passes (at once
    /// when something is pending). Without wait descriptors, just the timeout.
    pub fn wait(&mut self, timeout: std::time::Duration) {
        let Some(fds) = self.wait_fds() else {
            std::thread::sleep(timeout);
            return;
        };
        if !self.ready_to_sleep() {
            return;
        }
        let mut pfds: Vec<libc::pollfd> =
            fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `pfds` holds valid pollfds; no signal mask is changed.
        unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    }

    /// Whether a direct transfer of `len` bytes whose data goes `way` can start now (one
    /// operation of the provider per rail, a free slot).
    pub fn can_direct(&self, len: usize, way: Way) -> bool {
        len <= self.max_message && !self.direct_free[way as usize].is_empty()
    }

    /// How finely a direct transfer of `len` bytes with `peer` must be cut (`split`: parts
    /// per stripe) for every piece to span at most the provider's `iov_limit` of the memory
    /// `blocks` (address, length; `len` bytes in all), so that it moves from or into them
    /// where they are: 1 when the stripes fit, more (up to `MAX_PIECES` pieces in all) for
    /// layouts of more blocks; None when no cut fits, and the data goes through one
    /// contiguous buffer (packed, or staged and unpacked).
    pub fn split_for(&self, peer: usize, blocks: &[(usize, usize)], len: usize) -> Option<usize> {
        self.split_for_read(peer, blocks, &[], len)
    }

    /// Whether every piece of a direct transfer of `len` bytes with `peer` cut `split` ways
    /// spans at most the provider's `iov_limit` of the memory `blocks`.
    pub fn fits(&self, peer: usize, blocks: &[(usize, usize)], len: usize, split: usize) -> bool {
        blocks.len() <= self.iov_limit
            || pieces(len, self.peer_rails[peer], split).all(|(_, _, p)| blocks_of(blocks, p).count() <= self.iov_limit)
    }

    /// As `split_for`, for an RDMA read of `len` bytes from the memory `remote` (offset,
    /// length; `read_blocks`) of `peer` into `blocks`: every piece must also name at most
    /// the provider's `rma_iov_limit` of the remote blocks (none: `split_for`).
    pub fn split_for_read(
        &self,
        peer: usize,
        blocks: &[(usize, usize)],
        remote: &[(usize, usize)],
        len: usize,
    ) -> Option<usize> {
        let stripes = stripes(len, self.peer_rails[peer]).count();
        (0..=MAX_PIECES.ilog2()).map(|k| 1 << k).take_while(|&split| stripes * split <= MAX_PIECES).find(|&split| {
            self.fits(peer, blocks, len, split)
                && (remote.len() <= self.rma_iov_limit
                    || pieces(len, self.peer_rails[peer], split)
                        .all(|(_, _, p)| blocks_of(remote, p).count() <= self.rma_iov_limit))
        })
    }

    /// Posts the receive of direct transfer `id` from world rank `from`: `len` bytes into the
    /// memory `blocks` (address, length, in message order: one block, or several for a
    /// receive-scatter, for which the caller found `split` with `split_for`), as pieces cut
    /// `split` ways per stripe; its `token` comes out of `take_finished` once the data is
    /// there. The caller checked `can_direct(len, Way::In)`.
    ///
    /// # Safety
    /// Every block is writable, and stays valid and untouched by anyone else until `token`
    /// comes out of `take_finished` (the provider writes it meanwhile).
    pub unsafe fn receive_direct(
        &mut self,
        from: usize,
        id: u32,
        blocks: &[(usize, usize)],
        len: usize,
        split: usize,
        token: u64,
    ) {
        self.start_direct(Way::In, token, from, blocks, len, split, |_, _, _, rail, iov, desc, ctx| {
            let tag = DIRECT_TAG | u64::from(id);
            // SAFETY: the endpoint is open; the blocks are the caller's contract, the iovec
            // and descriptor arrays live in the transfer's `Direct` until it finishes; the
            // context is a slot of `contexts`, which stays put.
            unsafe {
                if iov.len() == 1 {
                    fabric::fi_trecv(rail.ep, iov[0].iov_base, iov[0].iov_len, desc[0], FI_ADDR_UNSPEC, tag, 0, ctx)
                } else {
                    fabric::fi_trecvv(rail.ep, iov.as_ptr(), desc.as_mut_ptr(), iov.len(), FI_ADDR_UNSPEC, tag, 0, ctx)
                }
            }
        });
    }

    /// Sends direct transfer `id` to world rank `dst`, which posted its receive cut `split`
    /// ways: `len` bytes from the memory `blocks` (as in `receive_direct`: several for a
    /// send-gather, for which the caller checked `fits`); `token` comes out of
    /// `take_finished` once the data has left. The caller checked `can_direct(len, Way::Out)`.
    ///
    /// # Safety
    /// Every block is readable, and stays valid and unchanged until `token` comes out of
    /// `take_finished` (the provider reads it meanwhile).
    pub unsafe fn send_direct(
        &mut self,
        dst: usize,
        id: u32,
        blocks: &[(usize, usize)],
        len: usize,
        split: usize,
        token: u64,
    ) {
        self.start_direct(Way::Out, token, dst, blocks, len, split, |_, _, _, rail, iov, desc, ctx| {
            let (tag, to) = (DIRECT_TAG | u64::from(id), rail.addr[dst]);
            // SAFETY: as in `receive_direct`.
            unsafe {
                if iov.len() == 1 {
                    fabric::fi_tsend(rail.ep, iov[0].iov_base, iov[0].iov_len, desc[0], to, tag, ctx)
                } else {
                    fabric::fi_tsendv(rail.ep, iov.as_ptr(), desc.as_mut_ptr(), iov.len(), to, tag, ctx)
                }
            }
        });
    }

    /// Whether peers can read memory this rank exposes (`expose`), and this rank theirs
    /// (`read_direct`): the endpoints do RMA.
    pub fn can_read(&self) -> bool {
        self.rma
    }

    /// Whether this rank offers RDMA eager rings (the choice `OXMPI_NET_EAGER_RDMA` makes
    /// when the endpoint opens; only where the endpoints do RMA).
    pub fn set_eager_rdma(&mut self, on: bool) {
        self.eager_rdma = on && self.rma;
    }

    /// Whether packets to `dst` go into a ring it offered.
    pub fn writes_to_ring(&self, dst: usize) -> bool {
        self.ring_out[dst].is_some()
    }

    /// Packets taken from RDMA eager rings so far.
    pub fn ring_packets(&self) -> u64 {
        self.ring_packets
    }

    /// Whether the provider does RMA in the NIC (not emulated over sockets): a peer's reads
    /// then take nothing from this rank's CPU.
    pub fn rma_is_native(&self) -> bool {
        self.rma && !over_sockets(&self.rails[0].choice.provider)
    }

    /// Exposes `len` bytes at `addr` to RDMA reads by world rank `peer` (rendezvous by
    /// RDMA read: the peer then calls `read_direct` with what this returns), until
    /// `withdraw(token)`. One region per piece of the transfer (`stripes`, one per rail the
    /// two share); returns each piece's remote address and key, or None when the provider
    /// refuses a registration (the caller then moves the data another way).
    ///
    /// # Safety
    /// The memory is readable and stays valid and unchanged until `withdraw(token)`.
    pub unsafe fn expose(&mut self, peer: usize, addr: usize, len: usize, token: u64) -> Option<Vec<(u64, u64)>> {
        let parts: Vec<(usize, usize, usize)> =
            stripes(len, self.peer_rails[peer]).enumerate().map(|(r, s)| (r, addr + s.start, s.len())).collect();
        // SAFETY: the caller's contract.
        unsafe { self.expose_regions(&parts, sys::FI_REMOTE_READ, token) }
    }

    /// Exposes the `len` bytes at `addr` that hold a non-contiguous message's blocks to RDMA
    /// reads by world rank `peer` (which then calls `read_blocks`), until `withdraw(token)`:
    /// the whole span, once on each rail the two share. Returns each region's remote address
    /// and key, or None when the provider refuses one.
    ///
    /// # Safety
    /// As `expose`.
    pub unsafe fn expose_span(&mut self, peer: usize, addr: usize, len: usize, token: u64) -> Option<Vec<(u64, u64)>> {
        let parts: Vec<(usize, usize, usize)> = (0..self.peer_rails[peer].max(1)).map(|r| (r, addr, len)).collect();
        // SAFETY: the caller's contract.
        unsafe { self.expose_regions(&parts, sys::FI_REMOTE_READ, token) }
    }

    /// Exposes a window's memory, `len` bytes at `addr`, to RDMA writes and reads by every
    /// peer (one-sided operations: peers call `window_access` with what this returns), until
    /// `withdraw(token)`: one region on each rail. None when the provider refuses one (the
    /// window's operations then go by messages).
    ///
    /// # Safety
    /// The memory stays allocated until `withdraw(token)`; peers change it meanwhile.
    pub unsafe fn expose_window(&mut self, addr: usize, len: usize, token: u64) -> Option<WindowKeys> {
        let parts: Vec<(usize, usize, usize)> = (0..self.rails.len()).map(|r| (r, addr, len)).collect();
        // SAFETY: the caller's contract.
        let regions = unsafe { self.expose_regions(&parts, sys::FI_REMOTE_READ | sys::FI_REMOTE_WRITE, token)? };
        let mut keys = WindowKeys { rails: regions.len(), regions: [(0, 0); MAX_RAILS] };
        keys.regions[..regions.len()].copy_from_slice(&regions);
        Some(keys)
    }

    /// Registers each of `parts` (rail, address, length) for remote `access`, kept under
    /// `token`; returns each one's remote address (the address itself, or 0 where the
    /// provider addresses regions by offset) and key, or None (nothing kept) when the
    /// provider refuses one.
    ///
    /// # Safety
    /// The memory stays allocated until `withdraw(token)`.
    unsafe fn expose_regions(
        &mut self,
        parts: &[(usize, usize, usize)],
        access: u64,
        token: u64,
    ) -> Option<Vec<(u64, u64)>> {
        debug_assert!(self.rma && !self.exposed.contains_key(&token));
        let mut mrs = Vec::new();
        let mut remote = Vec::new();
        for &(r, at, len) in parts {
            match self.register(r, at, len, access) {
                Ok(mr) => {
                    // Without FI_MR_VIRT_ADDR, remote addresses are offsets into the region.
                    let base = if self.rails[r].mr_mode() & sys::FI_MR_VIRT_ADDR != 0 { at as u64 } else { 0 };
                    // SAFETY: the region was just registered.
                    remote.push((base, unsafe { fabric::fi_mr_key(mr) }));
                    mrs.push(mr);
                }
                Err(e) => {
                    log::debug!("network: cannot expose {len} bytes ({e}); moving data otherwise");
                    for mr in mrs {
                        // SAFETY: registered above, not handed to anyone.
                        unsafe { fabric::fi_close(&raw mut (*mr).fid) };
                    }
                    return None;
                }
            }
        }
        self.exposed.insert(token, mrs);
        Some(remote)
    }

    /// Ends the exposure `expose` made for `token` (none: nothing to do).
    pub fn withdraw(&mut self, token: u64) {
        if self.exposed.is_empty() {
            return;
        }
        for mr in self.exposed.remove(&token).into_iter().flatten() {
            // SAFETY: the region was registered by `expose`; the peer is done reading it.
            unsafe { fabric::fi_close(&raw mut (*mr).fid) };
        }
    }

    /// Reads `len` bytes that world rank `from` exposed (`remote`: its `expose` result) into
    /// the memory `blocks` (as in `receive_direct`, cut `split` ways per stripe: reads lie
    /// within the stripes `remote` names); `token` comes out of `take_finished` once the data
    /// is there. The caller checked `can_direct(len, Way::In)` and that `remote` has one
    /// entry per stripe (`stripes`).
    ///
    /// # Safety
    /// As `receive_direct`.
    pub unsafe fn read_direct(
        &mut self,
        from: usize,
        blocks: &[(usize, usize)],
        len: usize,
        remote: &[(u64, u64)],
        split: usize,
        token: u64,
    ) {
        debug_assert_eq!(remote.len(), self.stripes(from, len));
        self.start_direct(
            Way::In,
            token,
            from,
            blocks,
            len,
            split,
            |r, stripe_start, piece_start, rail, iov, desc, ctx| {
                let (addr, key) = remote[r];
                let at = addr + (piece_start - stripe_start) as u64;
                // SAFETY: as in `receive_direct`; the peer keeps the region exposed until this
                // rank says it is done.
                unsafe {
                    fabric::fi_readv(rail.ep, iov.as_ptr(), desc.as_mut_ptr(), iov.len(), rail.addr[from], at, key, ctx)
                }
            },
        );
    }

    /// Reads the `len` bytes of a non-contiguous message that world rank `from` exposed with
    /// `expose_span` (`regions`: its result, one per rail; `remote`: the message's blocks as
    /// offsets from the span's start and lengths, in order) into the memory `blocks`, cut
    /// `split` ways per stripe (found with `split_for_read`); `token` comes out of
    /// `take_finished` once the data is here. The caller checked `can_direct(len, Way::In)`
    /// and that `regions` has an entry per stripe.
    ///
    /// # Safety
    /// As `receive_direct`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn read_blocks(
        &mut self,
        from: usize,
        blocks: &[(usize, usize)],
        len: usize,
        regions: &[(u64, u64)],
        remote: &[(usize, usize)],
        split: usize,
        token: u64,
    ) {
        debug_assert!(regions.len() >= self.stripes(from, len));
        self.start_direct(Way::In, token, from, blocks, len, split, |r, _, piece_start, rail, iov, desc, ctx| {
            let (base, key) = regions[r];
            let piece = piece_start..piece_start + iov.iter().map(|v| v.iov_len).sum::<usize>();
            let rma_iov: Vec<sys::fi_rma_iov> = blocks_of(remote, piece)
                .map(|(offset, n)| sys::fi_rma_iov { addr: base + offset as u64, len: n, key })
                .collect();
            let msg = rma_msg(iov, desc, rail.addr[from], &rma_iov, ctx);
            // SAFETY: as in `receive_direct`; the arrays are read during the call; the peer
            // keeps the span exposed until this rank says it is done.
            unsafe { fabric::fi_readmsg(rail.ep, &msg, sys::FI_COMPLETION) }
        });
    }

    /// One-sided access to a window of world rank `peer` (`keys`: its `expose_window`
    /// result): writes (`Way::Out`) the memory `blocks` (`len` bytes, as in `send_direct`,
    /// cut `split` ways per stripe) to the window's bytes from `offset` on, or reads
    /// (`Way::In`) them into `blocks`; `token` comes out of `take_finished` once done: a
    /// write then is in the peer's memory (delivery complete), so a later message (an
    /// unlock, a fence) finds it there. The caller checked `can_direct(len, way)`, `fits`
    /// and that the peer exposed a region on every rail the two share.
    ///
    /// # Safety
    /// As `send_direct` (writes) or `receive_direct` (reads).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn window_access(
        &mut self,
        way: Way,
        peer: usize,
        blocks: &[(usize, usize)],
        len: usize,
        keys: &WindowKeys,
        offset: u64,
        split: usize,
        token: u64,
    ) {
        debug_assert!(keys.rails >= self.peer_rails[peer]);
        self.start_direct(way, token, peer, blocks, len, split, |r, _, piece_start, rail, iov, desc, ctx| {
            let (base, key) = keys.regions[r];
            let at = base + offset + piece_start as u64;
            let to = rail.addr[peer];
            // SAFETY: as in `send_direct` and `receive_direct`; the peer keeps its window
            // exposed until every member is done with it (MPI_Win_free's barrier).
            unsafe {
                match way {
                    Way::In => fabric::fi_readv(rail.ep, iov.as_ptr(), desc.as_mut_ptr(), iov.len(), to, at, key, ctx),
                    Way::Out => {
                        let rma_iov = [sys::fi_rma_iov { addr: at, len: iov.iter().map(|v| v.iov_len).sum(), key }];
                        let msg = rma_msg(iov, desc, to, &rma_iov, ctx);
                        fabric::fi_writemsg(rail.ep, &msg, sys::FI_COMPLETION | sys::FI_DELIVERY_COMPLETE)
                    }
                }
            }
        });
    }

    /// The stripes (one per rail used) of a direct transfer of `len` bytes with `peer`.
    pub fn stripes(&self, peer: usize, len: usize) -> usize {
        stripes(len, self.peer_rails[peer]).count()
    }

    /// Registers `len` bytes at `addr` with rail `r`'s domain for `access`, bound to its
    /// endpoint where the provider wants that.
    fn register(&mut self, r: usize, addr: usize, len: usize, access: u64) -> Result<*mut sys::fid_mr, String> {
        // Keys must differ within a domain where the caller chooses them.
        let key = NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let rail = &self.rails[r];
        let mut mr = null_mut();
        // SAFETY: the domain and endpoint are open; the caller keeps the memory allocated
        // until it closes the region.
        unsafe {
            let ret =
                fabric::fi_mr_reg(rail.domain, addr as *const c_void, len, access, 0, key, 0, &mut mr, null_mut());
            if ret < 0 {
                return Err(format!("fi_mr_reg of {len} bytes: {}", self.fabric.strerror(ret.into())));
            }
            if rail.mr_mode() & sys::FI_MR_ENDPOINT != 0 {
                let ret = fabric::fi_mr_bind(mr, &raw mut (*rail.ep).fid, 0);
                let ret = if ret == 0 { fabric::fi_mr_enable(mr) } else { ret };
                if ret < 0 {
                    fabric::fi_close(&raw mut (*mr).fid);
                    return Err(format!("fi_mr_bind of {len} bytes: {}", self.fabric.strerror(ret.into())));
                }
            }
        }
        Ok(mr)
    }

    /// Starts one direct transfer of the memory `blocks` (`len` bytes) with `peer`, cut into
    /// `pieces(len, rails, split)`, each posted on its rail with `post(rail index, its
    /// stripe's first byte, the piece's first byte, rail, iovecs, descriptors, context)`, registering the
    /// user's memory first when the provider needs it, and retrying while the provider's
    /// queue is full.
    #[allow(clippy::too_many_arguments)]
    fn start_direct(
        &mut self,
        way: Way,
        token: u64,
        peer: usize,
        blocks: &[(usize, usize)],
        len: usize,
        split: usize,
        post: impl Fn(usize, usize, usize, &Rail, &[iovec], &mut [*mut c_void], *mut c_void) -> isize,
    ) {
        let slot = self.direct_free[way as usize].pop().expect("direct transfer without a free slot (can_direct)");
        let cut: Vec<(usize, usize, std::ops::Range<usize>)> = pieces(len, self.peer_rails[peer], split).collect();
        assert!(cut.len() <= MAX_PIECES, "a direct transfer of more than MAX_PIECES pieces (split_for)");
        let mut d = Direct { token, pieces_left: cut.len(), mrs: Vec::new(), iovs: Vec::with_capacity(cut.len()) };
        let access = sys::FI_SEND | sys::FI_RECV | if self.rma { sys::FI_READ | sys::FI_WRITE } else { 0 };
        for (r, _, piece) in &cut {
            let r = *r;
            let mut iov: Vec<iovec> = blocks_of(blocks, piece.clone())
                .map(|(at, n)| iovec { iov_base: at as *mut c_void, iov_len: n })
                .collect();
            if iov.is_empty() {
                // An empty transfer still sends (and matches) one message.
                iov.push(iovec { iov_base: blocks.first().map_or(null_mut(), |b| b.0 as *mut c_void), iov_len: 0 });
            }
            assert!(iov.len() <= self.iov_limit, "a direct transfer's piece over the provider's iov_limit (fits)");
            let mut desc = vec![null_mut(); iov.len()];
            if self.rails[r].mr_mode() & sys::FI_MR_LOCAL != 0 {
                for (v, dsc) in iov.iter().zip(desc.iter_mut()).filter(|(v, _)| v.iov_len > 0) {
                    // The region covers one of the caller's blocks, which stays allocated until
                    // the transfer finishes (the region is closed then).
                    let mr = self.register(r, v.iov_base as usize, v.iov_len, access).unwrap_or_else(|e| self.fail(&e));
                    // SAFETY: just registered.
                    *dsc = unsafe { fabric::fi_mr_desc(mr) };
                    d.mrs.push(mr);
                }
            }
            d.iovs.push((iov, desc));
        }
        self.direct[slot] = Some(d);
        for (i, (r, stripe_start, piece)) in cut.into_iter().enumerate() {
            let ctx = (&raw mut self.contexts[RECV_BUFFERS + SEND_BUFFERS + slot * MAX_PIECES + i]).cast::<c_void>();
            // The arrays stay in `direct[slot]` (heap memory that does not move) until the
            // transfer finishes.
            let (iov, desc) = &mut self.direct[slot].as_mut().unwrap().iovs[i];
            let (iov, desc) = (iov.as_slice() as *const [iovec], desc.as_mut_slice() as *mut [*mut c_void]);
            // SAFETY: the arrays are not touched elsewhere while the post runs (`post` gets
            // the rail only).
            let ret = self.post_until_taken(|net| {
                post(r, stripe_start, piece.start, &net.rails[r], unsafe { &*iov }, unsafe { &mut *desc }, ctx)
            });
            if ret < 0 {
                self.fail(&format!("direct transfer of {len} bytes: {}", self.fabric.strerror(ret as i64)));
            }
        }
    }

    /// One piece of the direct transfer in `slot` finished; returns whether the whole did.
    fn finish_piece(&mut self, slot: usize) -> bool {
        let d = self.direct[slot].as_mut().expect("completion of a direct transfer not in flight");
        d.pieces_left -= 1;
        if d.pieces_left > 0 {
            return false;
        }
        let d = self.direct[slot].take().unwrap();
        for mr in d.mrs.into_iter().filter(|mr| !mr.is_null()) {
            // SAFETY: the region was registered for this transfer, which is over.
            unsafe { fabric::fi_close(&raw mut (*mr).fid) };
        }
        let way = if DIRECT_IN.contains(&slot) { Way::In } else { Way::Out };
        self.direct_free[way as usize].push(slot);
        self.finished.push(d.token);
        true
    }

    /// The tokens of the direct transfers finished since the last call.
    pub fn take_finished(&mut self) -> Option<u64> {
        self.finished.pop()
    }

    /// Reads the error entry at the head of rail `r`'s completion queue and ends the job.
    /// Reads the failed completion of rail `r` and ends the process, except for a packet
    /// that could not go because its peer's connection is gone once this process has
    /// connected to another job: such processes end on their own after MPI_Comm_disconnect
    /// (a peer of this job never leaves before the job's last fence), so the packet (the
    /// last acknowledgement of a disconnect, typically) has no one to go to. Its send buffer,
    /// if it had one (not an injected packet), is free again.
    fn fail_from_queue(&mut self, r: usize) {
        // SAFETY: the CQ is open; the entry is written into zeroed storage.
        let (err, prov, context) = unsafe {
            let mut e: sys::fi_cq_err_entry = std::mem::zeroed();
            fabric::fi_cq_readerr(self.rails[r].cq, &mut e, 0);
            (e.err, e.prov_errno, e.op_context)
        };
        let gone = [libc::ENOTCONN, libc::ECONNRESET, libc::EPIPE, libc::ECONNABORTED, libc::ECONNREFUSED];
        let other_jobs = self.sent_as.len() > self.job_size;
        if other_jobs && gone.contains(&err) {
            // No context: an injected packet, which holds no buffer of ours.
            if context.is_null() {
                log::debug!("network: a packet found its peer gone ({}); dropped", self.fabric.strerror(err.into()));
                return;
            }
            let b = self.buffer_of(context);
            if (RECV_BUFFERS..RECV_BUFFERS + SEND_BUFFERS).contains(&b) {
                log::debug!("network: a packet found its peer gone ({}); dropped", self.fabric.strerror(err.into()));
                self.send_free.push(b);
                return;
            }
        }
        let domain = self.rails[r].choice.domain.clone();
        self.fail(&format!("{} on {domain} (provider error {prov})", self.fabric.strerror(err.into())))
    }

    /// A failed transfer cannot be reported to the MPI call that started it (it may have
    /// returned long ago) and the job's messages can no longer be trusted: end the process
    /// with one line saying why; the process manager ends the rest of the job.
    fn fail(&self, what: &str) -> ! {
        eprintln!("oxmpi: rank {}: network transport failed ({}): {what}", self.me, self.rails[0].choice.provider);
        // SAFETY: fflush(NULL) flushes every open C output stream.
        unsafe { libc::fflush(null_mut()) };
        std::process::exit(70)
    }
}

/// An RMA operation's description: local `iov` (with its descriptors) against the
/// `remote` blocks of the peer at `addr`, completing with `ctx`. It points into the arrays,
/// which must outlive the call that takes it.
fn rma_msg(
    iov: &[iovec],
    desc: &mut [*mut c_void],
    addr: sys::fi_addr_t,
    remote: &[sys::fi_rma_iov],
    ctx: *mut c_void,
) -> sys::fi_msg_rma {
    sys::fi_msg_rma {
        msg_iov: iov.as_ptr(),
        desc: desc.as_mut_ptr(),
        iov_count: iov.len(),
        addr,
        rma_iov: remote.as_ptr(),
        rma_iov_count: remote.len(),
        context: ctx,
        data: 0,
    }
}

/// The rail the packets between ranks `a` and `b` travel on when they share `rails` rails:
/// the same both ways, the pairs of a rank spread round robin over the rails.
fn packet_rail(a: usize, b: usize, rails: usize) -> usize {
    if rails > 1 { (a + b) % rails } else { 0 }
}

/// The parts of the memory `blocks` (address, length) that hold bytes `range` of the data
/// they hold one after the other, as (address, length), empty blocks left out.
fn blocks_of(blocks: &[(usize, usize)], range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0usize;
    blocks.iter().filter_map(move |&(addr, n)| {
        let (start, end) = (at, at + n);
        at = end;
        let (from, to) = (start.max(range.start), end.min(range.end));
        (from < to).then(|| (addr + (from - start), to - from))
    })
}

/// The byte ranges of a direct transfer of `len` bytes between two ranks that share `rails`
/// rails, one per rail used: both ends cut it alike (they know the same `len` and rails).
fn stripes(len: usize, rails: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let chunk = stripe_chunk(len, rails);
    (0..len.div_ceil(chunk).max(1)).map(move |i| i * chunk..len.min((i + 1) * chunk))
}

/// Bytes of each stripe of a transfer of `len` bytes over `rails` rails but the last: whole
/// pages (so a multiple of every `split`).
fn stripe_chunk(len: usize, rails: usize) -> usize {
    let rails = if len >= STRIPE_MIN { rails.max(1) } else { 1 };
    len.div_ceil(rails).next_multiple_of(4096).max(4096)
}

/// The pieces of a direct transfer of `len` bytes over `rails` rails whose stripes are each
/// cut into `split` parts (a power of two; the last part of a stripe shorter, empty ones
/// left out): (rail, the stripe's first byte, the piece's bytes), in order. One operation
/// each; both ends cut alike (the receiver tells the sender `split`).
fn pieces(len: usize, rails: usize, split: usize) -> impl Iterator<Item = (usize, usize, std::ops::Range<usize>)> {
    let part = stripe_chunk(len, rails) / split;
    stripes(len, rails).enumerate().flat_map(move |(r, s)| {
        let n = s.len().div_ceil(part).max(1);
        (0..n).map(move |i| (r, s.start, s.start + i * part..s.end.min(s.start + (i + 1) * part)))
    })
}

/// The bytes of a buffer of words (for alignment the buffers are allocated as `u64`).
fn words_as_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: u8 has no alignment or validity requirements; same memory, 8x the length.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 8) }
}

fn words_as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: as `words_as_bytes_mut`.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), words.len() * 8) }
}

impl Drop for Net {
    fn drop(&mut self) {
        for ring in self.ring_in.iter_mut().filter_map(Option::take) {
            // SAFETY: registered by `offer_ring`, closed once, before the domains; the
            // memory is freed after (it is dropped with `ring`).
            unsafe { fabric::fi_close(&raw mut (*ring.mr).fid) };
        }
        for mr in self.exposed.drain().flat_map(|(_, mrs)| mrs) {
            // SAFETY: registered by `expose`, closed once, before the domains.
            unsafe { fabric::fi_close(&raw mut (*mr).fid) };
        }
        for rail in &mut self.rails {
            // SAFETY: each object is closed once, the endpoint before what it is bound to,
            // the region before its domain and the domain before the fabric; null ones were
            // never opened. Posted receives die with the endpoint, before the buffers are
            // freed (the rails are dropped before `buffers`: fields drop after this).
            unsafe {
                if !rail.ep.is_null() {
                    fabric::fi_close(&raw mut (*rail.ep).fid);
                }
                if !rail.mr.is_null() {
                    fabric::fi_close(&raw mut (*rail.mr).fid);
                }
                if !rail.av.is_null() {
                    fabric::fi_close(&raw mut (*rail.av).fid);
                }
                if !rail.cq.is_null() {
                    fabric::fi_close(&raw mut (*rail.cq).fid);
                }
                if !rail.domain.is_null() {
                    fabric::fi_close(&raw mut (*rail.domain).fid);
                }
                if !rail.fabric_fid.is_null() {
                    fabric::fi_close(&raw mut (*rail.fabric_fid).fid);
                }
                self.fabric.freeinfo(rail.info);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_cover_the_transfer_once_in_order() {
        for rails in 1..=MAX_RAILS {
            for len in [0, 1, 4096, STRIPE_MIN - 1, STRIPE_MIN, STRIPE_MIN + 1, 3 << 20, (3 << 20) + 4095, 1 << 30] {
                let pieces: Vec<_> = stripes(len, rails).collect();
                let expected = if len < STRIPE_MIN { 1 } else { rails };
                assert_eq!(pieces.len(), expected, "{len} bytes over {rails} rails");
                assert_eq!(pieces[0].start, 0);
                assert_eq!(pieces.last().unwrap().end, len);
                for w in pieces.windows(2) {
                    assert_eq!(w[0].end, w[1].start, "{len} bytes over {rails} rails: a gap or overlap");
                    assert_eq!(w[0].len() % 4096, 0, "pieces but the last are whole pages");
                    assert!(!w[1].is_empty());
                }
            }
        }
    }

    #[test]
    fn pieces_cut_each_stripe_and_cover_the_transfer_once_in_order() {
        for rails in 1..=MAX_RAILS {
            for len in [1, 4096, STRIPE_MIN - 1, STRIPE_MIN, 3 << 20, (3 << 20) + 4095] {
                let stripes: Vec<_> = stripes(len, rails).collect();
                for split in [1, 2, 4, 8, 16] {
                    let cut: Vec<_> = pieces(len, rails, split).collect();
                    assert!(cut.len() <= stripes.len() * split, "{len} bytes, {rails} rails, split {split}");
                    assert_eq!(cut[0].2.start, 0);
                    assert_eq!(cut.last().unwrap().2.end, len);
                    for w in cut.windows(2) {
                        assert_eq!(w[0].2.end, w[1].2.start, "{len} bytes, split {split}: a gap or overlap");
                    }
                    for (r, start, piece) in &cut {
                        let stripe = &stripes[*r];
                        assert_eq!(*start, stripe.start);
                        assert!(stripe.start <= piece.start && piece.end <= stripe.end, "a piece crosses stripes");
                        assert!(!piece.is_empty());
                    }
                }
                let whole: Vec<_> = pieces(len, rails, 1).map(|(_, _, p)| p).collect();
                assert_eq!(whole, stripes, "split 1 is the stripes");
            }
        }
    }

    #[test]
    fn packet_rails_are_symmetric_and_spread_a_ranks_peers() {
        for rails in 1..=MAX_RAILS {
            for a in 0..12 {
                let mut used = vec![0; rails];
                for b in 0..12 {
                    let r = packet_rail(a, b, rails);
                    assert!(r < rails);
                    assert_eq!(r, packet_rail(b, a, rails), "ranks {a} and {b}: one rail both ways");
                    used[r] += 1;
                }
                // 12 peers over `rails` rails: each rail carries as many.
                assert!(used.iter().all(|&u| u == 12 / rails), "rank {a} over {rails} rails: {used:?}");
            }
        }
    }

    #[test]
    fn window_keys_survive_their_wire_form() {
        let mut keys = WindowKeys { rails: 2, regions: [(0, 0); MAX_RAILS] };
        keys.regions[0] = (0x7f00_1234_5000, 17);
        keys.regions[1] = (0, u64::MAX);
        assert_eq!(WindowKeys::from_wire(&keys.to_wire()), Some(keys));
        assert_eq!(WindowKeys::from_wire(&[0u8; WindowKeys::WIRE_BYTES]), None, "no rails: nothing exposed");
        let mut too_many = keys.to_wire();
        too_many[0] = MAX_RAILS as u8 + 1;
        assert_eq!(WindowKeys::from_wire(&too_many), None);
        assert_eq!(WindowKeys::from_wire(&keys.to_wire()[1..]), None, "a short entry");
    }

    #[test]
    fn blocks_of_a_range_are_the_parts_holding_its_bytes() {
        // Blocks of 10, 0, 5 and 20 bytes at scattered addresses: bytes 0..10, 10..15, 15..35.
        let blocks = [(1000, 10), (5000, 0), (2000, 5), (100, 20)];
        let of = |r: std::ops::Range<usize>| blocks_of(&blocks, r).collect::<Vec<_>>();
        assert_eq!(of(0..35), vec![(1000, 10), (2000, 5), (100, 20)]);
        assert_eq!(of(3..12), vec![(1003, 7), (2000, 2)]);
        assert_eq!(of(10..15), vec![(2000, 5)]);
        assert_eq!(of(14..16), vec![(2004, 1), (100, 1)]);
        assert_eq!(of(20..20), vec![]);
        assert_eq!(of(30..100), vec![(115, 5)]);
    }
}
