//! Collective data access (MPI-4.1 sections 14.4.2-14.4.5: `_all`, split collectives and
//! the ordered shared-pointer calls), independent or two-phase.
//!
//! Every member first tells the others what it will access: whether its own checks passed,
//! the file range its runs cover, its byte count, and the collective-buffering hints. From
//! that every member takes the same decision. Two-phase I/O is used under
//! `romio_cb_read/write=enable`, or under `automatic` (the default) when the members' ranges
//! interleave; otherwise each member does its own vectored I/O (`access::perform`).
//!
//! Two-phase: `cb_nodes` members are aggregators (by default one per node, the first rank
//! of each); the file range the members cover is split into one contiguous domain per
//! aggregator, whose bounds are multiples of `cb_buffer_size` when every aggregator gets at
//! least that much, else of a page. Each member sends each aggregator the list of its runs
//! inside that aggregator's domain (one all-to-all of counts, one of lists). The domains are
//! then done in rounds of at most `cb_buffer_size` bytes per aggregator: in each round one
//! all-to-all moves the data of the round between the members' packed data and the
//! aggregators' buffers, and each aggregator does one large read or write. A write only
//! writes the runs of its buffer the members cover (merged), so the holes between them,
//! which another process may be writing at the same time, are never written back; a read
//! reads the whole covered span when the runs fill at least half of it (data sieving), else
//! the runs. Data moves with the library's own collectives on the file's communicator.
//!
//! Errors: a member whose own checks fail (a bad count, a read-only file) gets its error and
//! takes part with no data, so the others neither wait for it nor fail. An I/O error (at an
//! aggregator, or in a member's own I/O) is reported on every member: the call ends with an
//! exchange of every member's outcome, and an aggregator that failed keeps taking part in
//! the remaining rounds without doing more I/O, so no member is left waiting.

use super::access::{self, Direction, Memory, Position, RangeLock};
use super::datarep::Conversion;
use super::file::File;
use super::hints::{self, Buffering};
use super::scratch;
use super::view::View;
use crate::abi::consts::*;
use crate::coll::{self, Block, Blocks, In, Out};
use crate::datatype::BYTE;
use crate::error::{MpiResult, err};
use std::borrow::Cow;
use std::ffi::c_int;

/// Domain bounds go to page multiples when domains are smaller than `cb_buffer_size`.
const PAGE: u64 = 4096;

/// One member's access, prepared before the collective steps.
struct Mine<'m> {
    mem: &'m Memory,
    /// Where it starts, in etypes of the view.
    start: u64,
    /// The (file offset, length) runs of its data, in the order of its data stream.
    runs: Vec<(u64, usize)>,
    view: View,
    atomic: bool,
    sieve: Option<usize>,
    /// How the data is converted when the view's representation is not native, and for a
    /// write the data so converted (before the collective steps, so that a failed conversion
    /// is this member's failed check).
    conversion: Option<Conversion>,
    written: Option<Vec<u8>>,
}

/// Checks an access and finds its runs (what `access::access` does before its I/O).
///
/// # Safety
/// As for `access_all`'s `mem`.
unsafe fn prepare<'m>(file: &File, pos: Position, mem: MpiResult<&'m Memory>, dir: Direction) -> MpiResult<Mine<'m>> {
    let mem = mem?;
    let (view, atomic, sieve, pointer) = {
        let st = file.state();
        (st.view.clone(), st.atomic, hints::sieve_limit(&st.hints, dir == Direction::Write), st.pointer)
    };
    let conversion = view.repr.conversion(&view.datarep, mem, dir)?;
    let len = conversion.as_ref().map_or(mem.bytes(), Conversion::file_len);
    let etypes = access::check(file, pos, len, dir, view.etype_size)?;
    let start = match pos {
        Position::Explicit(o) => o as u64,
        Position::Individual => pointer,
        Position::Shared => file.shared_pointer("shared file pointer access")?.fetch_add(etypes)?,
        Position::Reserved(o) => o,
    };
    let written = match &conversion {
        // SAFETY: the caller's contract on `mem` (`access_all`).
        Some(c) if dir == Direction::Write => Some(unsafe { c.to_file(mem) }?),
        _ => None,
    };
    let runs = view.runs(start * view.etype_size as u64, len);
    Ok(Mine { mem, start, runs, view, atomic, sieve, conversion, written })
}

/// What each member tells the others at the start of a collective access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    /// Its own checks passed.
    ok: bool,
    /// The file range its runs cover (empty when it moves no data).
    lo: u64,
    hi: u64,
    /// Its runs are in increasing file order and do not overlap (always so for writes).
    ordered: bool,
    buffering: Buffering,
    cb_buffer_size: u64,
    cb_nodes: u64,
}

const HEADER_BYTES: usize = 6 * 8;

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let buffering = match self.buffering {
            Buffering::Disable => 0,
            Buffering::Enable => 1,
            Buffering::Automatic => 2,
        };
        let flags = u64::from(self.ok) | u64::from(self.ordered) << 1 | buffering << 2;
        let words = [flags, self.lo, self.hi, self.cb_buffer_size, self.cb_nodes, 0];
        let mut out = [0u8; HEADER_BYTES];
        for (o, w) in out.chunks_exact_mut(8).zip(words) {
            o.copy_from_slice(&w.to_ne_bytes());
        }
        out
    }

    fn decode(b: &[u8]) -> Header {
        let w = |i: usize| u64::from_ne_bytes(b[8 * i..8 * i + 8].try_into().unwrap());
        let flags = w(0);
        Header {
            ok: flags & 1 != 0,
            ordered: flags & 2 != 0,
            buffering: match flags >> 2 {
                0 => Buffering::Disable,
                1 => Buffering::Enable,
                _ => Buffering::Automatic,
            },
            lo: w(1),
            hi: w(2),
            cb_buffer_size: w(3),
            cb_nodes: w(4),
        }
    }

    fn moves_data(&self) -> bool {
        self.ok && self.hi > self.lo
    }
}

/// Whether the file ranges of the members that move data overlap (ROMIO's `automatic` rule
/// for collective buffering: interleaved accesses gain from it, disjoint ones do not).
fn interleaved(headers: &[Header]) -> bool {
    let mut ranges: Vec<(u64, u64)> = headers.iter().filter(|h| h.moves_data()).map(|h| (h.lo, h.hi)).collect();
    ranges.sort_unstable();
    let mut end = 0;
    for (i, &(lo, hi)) in ranges.iter().enumerate() {
        if i > 0 && lo < end {
            return true;
        }
        end = end.max(hi);
    }
    false
}

/// The decision every member takes alike: two-phase or independent. Rank 0's hints count
/// (the standard asks for the same hints on every member).
fn use_two_phase(headers: &[Header]) -> bool {
    let any_data = headers.iter().any(Header::moves_data);
    let all_ordered = headers.iter().filter(|h| h.moves_data()).all(|h| h.ordered);
    any_data
        && all_ordered
        && match headers[0].buffering {
            Buffering::Enable => true,
            Buffering::Disable => false,
            Buffering::Automatic => interleaved(headers),
        }
}

/// The aggregators among members on the nodes `node_of`: `count` of them, taken a rank per
/// node in turn (the first rank of each node, then the second...), in rank order.
fn aggregators(node_of: &[usize], count: usize) -> Vec<usize> {
    let mut nodes: Vec<(usize, Vec<usize>)> = Vec::new();
    for (rank, &node) in node_of.iter().enumerate() {
        match nodes.iter_mut().find(|(n, _)| *n == node) {
            Some((_, ranks)) => ranks.push(rank),
            None => nodes.push((node, vec![rank])),
        }
    }
    let count = count.clamp(1, node_of.len());
    let mut chosen = Vec::with_capacity(count);
    'turns: for turn in 0.. {
        for (_, ranks) in &nodes {
            if let Some(&r) = ranks.get(turn) {
                chosen.push(r);
                if chosen.len() == count {
                    break 'turns;
                }
            }
        }
    }
    chosen.sort_unstable();
    chosen
}

/// The file domain of each of `aggs` aggregators over the range [lo, hi): contiguous, in
/// order, bounded at multiples of `cb` when each gets at least `cb` bytes, else of a page
/// (some may be empty).
fn domains(lo: u64, hi: u64, aggs: usize, cb: u64) -> Vec<(u64, u64)> {
    let unit = if hi - lo >= aggs as u64 * cb { cb } else { PAGE };
    let base = lo / unit * unit;
    let per = (hi - base).div_ceil(aggs as u64).div_ceil(unit) * unit;
    (0..aggs as u64)
        .map(|a| {
            let start = (base + a * per).clamp(lo, hi);
            (start, (base + (a + 1) * per).clamp(start, hi))
        })
        .collect()
}

/// The part of `domain` done in round `round` (empty past its last round).
fn round_range(domain: (u64, u64), round: u64, cb: u64) -> (u64, u64) {
    let start = (domain.0 + round * cb).min(domain.1);
    (start, (start + cb).min(domain.1))
}

/// The pieces of `runs` (increasing, not overlapping) inside [lo, hi): (run index, file
/// offset, length).
fn pieces(runs: &[(u64, usize)], lo: u64, hi: u64) -> impl Iterator<Item = (usize, u64, usize)> + '_ {
    let first = runs.partition_point(|r| r.0 + r.1 as u64 <= lo);
    runs[first..].iter().enumerate().take_while(move |(_, r)| r.0 < hi).filter_map(move |(i, &(o, l))| {
        let (s, e) = (o.max(lo), (o + l as u64).min(hi));
        (e > s).then_some((first + i, s, (e - s) as usize))
    })
}

/// Bytes of `runs` inside [lo, hi).
fn bytes_in(runs: &[(u64, usize)], lo: u64, hi: u64) -> usize {
    pieces(runs, lo, hi).map(|p| p.2).sum()
}

/// Consecutive byte blocks of the given lengths, one per member.
fn byte_blocks(lens: &[usize]) -> Blocks {
    let mut at = 0;
    Blocks::from_fn(lens.len(), |i| {
        let b = Block { offset: at, count: lens[i], layout: BYTE };
        at += lens[i];
        b
    })
}

/// One all-to-all of bytes: `send` holds the blocks for each member one after the other
/// (lengths `send_lens`), `recv` receives theirs (lengths `recv_lens`).
fn exchange(file: &File, send: &[u8], send_lens: &[usize], recv: &mut [u8], recv_lens: &[usize]) -> MpiResult<()> {
    let input = In { mem: Cow::Borrowed(send), blocks: byte_blocks(send_lens) };
    let output = Out { mem: recv, blocks: byte_blocks(recv_lens) };
    file.collective(|g| coll::alltoall(g, Some(input), output))
}

/// A collective access (`_all`, split collectives): independent or two-phase (see the
/// module's comment). `mem` is Err when the caller's own argument checks failed: the member
/// still takes part, with no data, and gets that error.
///
/// # Safety
/// `mem`, when Ok, describes memory of the program valid for reads (writes, for `Read`) of
/// its `count` elements.
pub unsafe fn access_all(file: &File, pos: Position, mem: MpiResult<&Memory>, dir: Direction) -> MpiResult<usize> {
    // SAFETY: forwarded.
    let mine = unsafe { prepare(file, pos, mem, dir) };
    let header = {
        let st = file.state();
        let (lo, hi, ordered) = match &mine {
            Ok(m) => {
                let ordered = m.runs.windows(2).all(|w| w[0].0 + w[0].1 as u64 <= w[1].0);
                let lo = m.runs.iter().map(|r| r.0).min().unwrap_or(0);
                let hi = m.runs.iter().map(|r| r.0 + r.1 as u64).max().unwrap_or(0);
                (lo, hi, ordered)
            }
            Err(_) => (0, 0, true),
        };
        Header {
            ok: mine.is_ok(),
            lo,
            hi,
            ordered,
            buffering: hints::buffering(&st.hints, dir == Direction::Write),
            cb_buffer_size: hints::cb_buffer_size(&st.hints) as u64,
            cb_nodes: hints::cb_nodes(&st.hints) as u64,
        }
    };
    let n = file.members.len();
    let mut all = vec![0u8; HEADER_BYTES * n];
    file.collective(|g| coll::allgather_bytes(g, Some(&header.encode()), &mut all, HEADER_BYTES))?;
    let headers: Vec<Header> = all.chunks_exact(HEADER_BYTES).map(Header::decode).collect();
    let outcome = if use_two_phase(&headers) {
        // SAFETY: the caller's contract on `mem`.
        unsafe { two_phase(file, &headers, mine.as_ref().ok(), dir) }?
    } else {
        match &mine {
            // SAFETY: the caller's contract on `mem`.
            Ok(m) => unsafe {
                let (conversion, written) = (m.conversion.as_ref(), m.written.as_deref());
                access::perform(file, &m.runs, m.mem, dir, conversion, written, m.atomic, m.sieve)
            },
            Err(_) => Ok(0),
        }
    };
    // Every member learns every member's I/O outcome.
    let code = outcome.as_ref().err().map_or(MPI_SUCCESS, |e| e.code);
    let mut codes = vec![0u8; 4 * n];
    file.collective(|g| coll::allgather_bytes(g, Some(&code.to_ne_bytes()), &mut codes, 4))?;
    let mine = mine?;
    let moved = outcome?;
    let failed = codes.chunks_exact(4).map(|c| c_int::from_ne_bytes(c.try_into().unwrap())).enumerate();
    if let Some((r, code)) = failed.into_iter().find(|&(_, c)| c != MPI_SUCCESS) {
        return err(code, format!("the collective access of {} failed on rank {r}", file.name));
    }
    if pos == Position::Individual {
        file.state().pointer = mine.start + (moved as u64).div_ceil(mine.view.etype_size as u64);
    }
    Ok(mine.conversion.as_ref().map_or(moved, |c| c.memory_bytes(moved)))
}

/// MPI_File_read_ordered / MPI_File_write_ordered: the members' accesses one after the other
/// in rank order through the shared file pointer, which ends past all of them; done as a
/// collective access at the offsets so reserved.
///
/// # Safety
/// As for `access_all`.
pub unsafe fn access_ordered(file: &File, mem: MpiResult<&Memory>, dir: Direction) -> MpiResult<usize> {
    let view = file.state().view.clone();
    let etypes = mem.and_then(|m| {
        let len = view.repr.stream_len(m)?;
        let etypes = access::check(file, Position::Shared, len, dir, view.etype_size)?;
        file.shared_pointer("ordered access")?;
        Ok((m, etypes))
    });
    // Every member takes part in the exchanges, a failing one with no data.
    let n = file.members.len();
    let mut all = vec![0u8; 8 * n];
    let own = etypes.as_ref().map_or(0, |e| e.1);
    file.collective(|g| coll::allgather_bytes(g, Some(&own.to_ne_bytes()), &mut all, 8))?;
    let sizes: Vec<u64> = all.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
    let before: u64 = sizes[..file.rank].iter().sum();
    let total: u64 = sizes.iter().sum();
    let mut base = [0u8; 8];
    if file.rank == 0
        && let Some(s) = &file.shared
    {
        base = s.fetch_add(total)?.to_ne_bytes();
    }
    file.collective(|g| coll::bcast_bytes(g, &mut base, 0))?;
    let at = Position::Reserved(u64::from_ne_bytes(base) + before);
    // SAFETY: forwarded.
    unsafe { access_all(file, at, etypes.map(|e| e.0), dir) }
}

/// The data stream of a member's access as packed bytes (in the view's representation):
/// the program's memory itself when it is contiguous in native form, else a buffer packed
/// (converted) before a write or unpacked (converted) after a read.
struct Stream {
    ptr: *mut u8,
    len: usize,
    packed: Option<Vec<u8>>,
}

impl Stream {
    /// # Safety
    /// As for `access_all`'s `mem`.
    unsafe fn new(m: &Mine, dir: Direction) -> Stream {
        let len = m.conversion.as_ref().map_or(m.mem.bytes(), Conversion::file_len);
        if let Some(data) = &m.written {
            // Only read from (a write's stream).
            return Stream { ptr: data.as_ptr().cast_mut(), len, packed: None };
        }
        if m.conversion.is_none()
            && let Some(at) = m.mem.layout.contiguous_at()
        {
            return Stream { ptr: m.mem.addr.wrapping_add_signed(at) as *mut u8, len, packed: None };
        }
        let mut packed = match dir {
            // SAFETY: the caller's contract on `mem`.
            Direction::Write => unsafe { m.mem.layout.pack_to_vec(m.mem.addr as *const u8, m.mem.count, 0..len) },
            Direction::Read => vec![0u8; len],
        };
        Stream { ptr: packed.as_mut_ptr(), len, packed: Some(packed) }
    }

    /// After a read of the stream's first `n` bytes: they go to the program's memory
    /// (converted from the file's representation).
    ///
    /// # Safety
    /// As for `access_all`'s `mem`.
    unsafe fn finish_read(self, m: &Mine, n: usize) -> MpiResult<()> {
        let Some(mut packed) = self.packed else { return Ok(()) };
        match &m.conversion {
            // SAFETY: the caller's contract on `mem`.
            Some(c) => unsafe { c.from_file(m.mem, &mut packed, n) },
            None => {
                // SAFETY: the caller's contract on `mem`.
                unsafe { m.mem.layout.unpack(m.mem.addr as *mut u8, m.mem.count, 0, &packed[..n]) };
                Ok(())
            }
        }
    }
}

/// Two-phase I/O (see the module's comment). Returns Err for a failure that ends the
/// collective at once (communication), else Ok of this member's own outcome: its bytes
/// moved, or the I/O error of its aggregation.
///
/// # Safety
/// As for `access_all`.
unsafe fn two_phase(
    file: &File,
    headers: &[Header],
    mine: Option<&Mine>,
    dir: Direction,
) -> MpiResult<MpiResult<usize>> {
    let n = file.members.len();
    let aggs = aggregators(&file.node_of, headers[0].cb_nodes as usize);
    let cb = headers[0].cb_buffer_size.max(1);
    let lo = headers.iter().filter(|h| h.moves_data()).map(|h| h.lo).min().expect("two-phase moves data");
    let hi = headers.iter().filter(|h| h.moves_data()).map(|h| h.hi).max().expect("two-phase moves data");
    let doms = domains(lo, hi, aggs.len(), cb);
    let me_agg = aggs.iter().position(|&r| r == file.rank);
    let atomic = file.state().atomic;
    // The first I/O error of this member as an aggregator.
    let mut failure: Option<crate::error::MpiError> = None;
    // SAFETY: the caller's contract on `mem`.
    let stream = mine.map(|m| unsafe { Stream::new(m, dir) });
    let runs: &[(u64, usize)] = mine.map_or(&[], |m| &m.runs);
    // Where each run's data starts in the data stream.
    let mut stream_at = Vec::with_capacity(runs.len());
    let mut total = 0usize;
    for r in runs {
        stream_at.push(total);
        total += r.1;
    }

    // The run lists: member -> aggregator, each clipped to the aggregator's domain.
    let mut counts_out = vec![0u8; 8 * n];
    let mut lists_out: Vec<u8> = Vec::new();
    let mut list_lens = vec![0usize; n];
    for (a, &agg) in aggs.iter().enumerate() {
        let before = lists_out.len();
        for (_, off, len) in pieces(runs, doms[a].0, doms[a].1) {
            lists_out.extend_from_slice(&off.to_ne_bytes());
            lists_out.extend_from_slice(&(len as u64).to_ne_bytes());
        }
        list_lens[agg] = lists_out.len() - before;
        counts_out[8 * agg..8 * agg + 8].copy_from_slice(&((list_lens[agg] / 16) as u64).to_ne_bytes());
    }
    let mut counts_in = vec![0u8; 8 * n];
    file.collective(|g| coll::alltoall_bytes(g, Some(&counts_out), &mut counts_in, 8))?;
    let their_lens: Vec<usize> =
        counts_in.chunks_exact(8).map(|c| 16 * u64::from_ne_bytes(c.try_into().unwrap()) as usize).collect();
    let mut lists_in = vec![0u8; their_lens.iter().sum()];
    exchange(file, &lists_out, &list_lens, &mut lists_in, &their_lens)?;
    // At an aggregator: each member's runs in its domain.
    let mut theirs: Vec<Vec<(u64, usize)>> = Vec::with_capacity(n);
    let mut at = 0;
    for &len in &their_lens {
        let list = lists_in[at..at + len]
            .chunks_exact(16)
            .map(|c| {
                let w = |i: usize| u64::from_ne_bytes(c[i..i + 8].try_into().unwrap());
                (w(0), w(8) as usize)
            })
            .collect();
        theirs.push(list);
        at += len;
    }
    drop(lists_in);

    let rounds = doms.iter().map(|d| (d.1 - d.0).div_ceil(cb)).max().unwrap_or(0);
    if file.rank == 0 {
        log::debug!("two-phase {dir:?} of {}: aggregators {aggs:?}, domains {doms:?}, {rounds} rounds", file.name);
    }
    // Where the time goes (logged at debug level): exchanges, I/O, the rest.
    let started = std::time::Instant::now();
    let (mut in_exchange, mut in_io) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    let my_domain = me_agg.map(|a| doms[a]);
    // Scratch memory from the pool: already faulted in after the first call (fresh mappings of
    // this size cost about a page fault per 4 KiB, as much as the copies themselves), and its
    // old bytes are never read: every byte used is written first.
    let mut buffer = scratch::take();
    buffer.resize(my_domain.map_or(0, |d| ((d.1 - d.0).min(cb)) as usize), 0);
    let mut send = scratch::take();
    let mut recv = scratch::take();
    let mut covered: Vec<(u64, usize)> = Vec::new();
    let me = file.rank;
    // The bytes of this member's own pieces in [l, h) go between its stream and the buffer
    // (at file offset `l`) directly, not through the exchange.
    let stream_at = &stream_at;
    let own_pieces = |l: u64, h: u64| {
        pieces(runs, l, h)
            .map(move |(i, off, len)| (stream_at[i] + (off - runs[i].0) as usize, (off - l) as usize, len))
    };
    for round in 0..rounds {
        let ranges: Vec<(u64, u64)> = doms.iter().map(|&d| round_range(d, round, cb)).collect();
        let my_range = my_domain.map(|d| round_range(d, round, cb));
        // What this member sends to / receives from each other aggregator, and the reverse.
        let mut member_lens = vec![0usize; n];
        for (a, &agg) in aggs.iter().enumerate() {
            if agg != me {
                member_lens[agg] = bytes_in(runs, ranges[a].0, ranges[a].1);
            }
        }
        let agg_lens: Vec<usize> = match my_range {
            Some((l, h)) => {
                theirs.iter().enumerate().map(|(s, t)| if s == me { 0 } else { bytes_in(t, l, h) }).collect()
            }
            None => vec![0; n],
        };
        // The runs the aggregator's buffer holds this round, merged.
        covered.clear();
        if let Some((l, h)) = my_range {
            for t in &theirs {
                covered.extend(pieces(t, l, h).map(|p| (p.1, p.2)));
            }
            covered.sort_unstable();
            covered.dedup_by(|next, prev| {
                let end = prev.0 + prev.1 as u64;
                if next.0 <= end {
                    prev.1 = (end.max(next.0 + next.1 as u64) - prev.0) as usize;
                    true
                } else {
                    false
                }
            });
        }
        match dir {
            Direction::Write => {
                send.clear();
                send.reserve(member_lens.iter().sum());
                if let Some(s) = &stream {
                    for (a, r) in ranges.iter().enumerate() {
                        if aggs[a] == me {
                            continue;
                        }
                        for (i, off, len) in pieces(runs, r.0, r.1) {
                            let from = stream_at[i] + (off - runs[i].0) as usize;
                            // SAFETY: the stream holds `s.len` readable bytes; `from + len`
                            // is within this member's data.
                            send.extend_from_slice(unsafe { std::slice::from_raw_parts(s.ptr.add(from), len) });
                        }
                    }
                }
                recv.resize(agg_lens.iter().sum(), 0);
                let t = std::time::Instant::now();
                exchange(file, &send, &member_lens, &mut recv, &agg_lens)?;
                in_exchange += t.elapsed();
                if let Some((l, h)) = my_range {
                    let mut at = 0;
                    for (sender, t) in theirs.iter().enumerate() {
                        if sender == me {
                            if let Some(s) = &stream {
                                for (from, b, len) in own_pieces(l, h) {
                                    // SAFETY: the stream holds `s.len` readable bytes, `from +
                                    // len` among them; `buffer` is ours, `b + len` within it.
                                    unsafe {
                                        std::ptr::copy_nonoverlapping(s.ptr.add(from), buffer.as_mut_ptr().add(b), len)
                                    };
                                }
                            }
                            continue;
                        }
                        for (_, off, len) in pieces(t, l, h) {
                            let b = (off - l) as usize;
                            buffer[b..b + len].copy_from_slice(&recv[at..at + len]);
                            at += len;
                        }
                    }
                    if failure.is_none() && !covered.is_empty() {
                        let t = std::time::Instant::now();
                        failure = write_covered(file, &buffer, l, &covered, atomic).err();
                        in_io += t.elapsed();
                    }
                }
            }
            Direction::Read => {
                send.clear();
                send.reserve(agg_lens.iter().sum());
                if let Some((l, h)) = my_range {
                    if failure.is_none() && !covered.is_empty() {
                        let t = std::time::Instant::now();
                        failure = read_covered(file, &mut buffer, l, &covered, atomic).err();
                        in_io += t.elapsed();
                    }
                    for (sender, t) in theirs.iter().enumerate() {
                        if sender == me {
                            if let Some(s) = &stream {
                                for (to, b, len) in own_pieces(l, h) {
                                    // SAFETY: the stream holds `s.len` writable bytes of this
                                    // member's data, `to + len` among them; `buffer` is ours.
                                    unsafe {
                                        std::ptr::copy_nonoverlapping(buffer.as_ptr().add(b), s.ptr.add(to), len)
                                    };
                                }
                            }
                            continue;
                        }
                        for (_, off, len) in pieces(t, l, h) {
                            let b = (off - l) as usize;
                            send.extend_from_slice(&buffer[b..b + len]);
                        }
                    }
                }
                recv.resize(member_lens.iter().sum(), 0);
                let t = std::time::Instant::now();
                exchange(file, &send, &agg_lens, &mut recv, &member_lens)?;
                in_exchange += t.elapsed();
                if let Some(s) = &stream {
                    let mut at = 0;
                    for (a, r) in ranges.iter().enumerate() {
                        if aggs[a] == me {
                            continue;
                        }
                        for (i, off, len) in pieces(runs, r.0, r.1) {
                            let to = stream_at[i] + (off - runs[i].0) as usize;
                            // SAFETY: the stream holds `s.len` writable bytes of this member's
                            // data, `to + len` among them; `recv` is ours.
                            unsafe { std::ptr::copy_nonoverlapping(recv.as_ptr().add(at), s.ptr.add(to), len) };
                            at += len;
                        }
                    }
                }
            }
        }
    }
    for v in [buffer, send, recv] {
        scratch::give(v);
    }
    log::debug!(
        "two-phase {dir:?} of {}, rank {}: {:?} in all, {in_exchange:?} exchanging, {in_io:?} in I/O",
        file.name,
        file.rank,
        started.elapsed()
    );
    if let Some(e) = failure {
        return Ok(Err(e));
    }
    let (Some(m), Some(s)) = (mine, stream) else { return Ok(Ok(0)) };
    debug_assert_eq!(s.len, total);
    match dir {
        Direction::Write => Ok(Ok(total)),
        Direction::Read => {
            let moved = match file.size() {
                Ok(size) => bytes_before(runs, size),
                Err(e) => return Ok(Err(e)),
            };
            // SAFETY: the caller's contract on `mem`.
            Ok(unsafe { s.finish_read(m, moved) }.map(|()| moved))
        }
    }
}

/// Bytes of a read's data stream before the first byte past the end of a file of `size`
/// bytes (what an independent read of `runs` would report).
fn bytes_before(runs: &[(u64, usize)], size: u64) -> usize {
    let mut done = 0;
    for &(off, len) in runs {
        let have = size.saturating_sub(off).min(len as u64) as usize;
        done += have;
        if have < len {
            break;
        }
    }
    done
}

/// An aggregator's write of the `covered` runs of its buffer (which starts at file offset
/// `base`): each run by one system call, the holes left alone.
fn write_covered(file: &File, buffer: &[u8], base: u64, covered: &[(u64, usize)], atomic: bool) -> MpiResult<()> {
    let blocks: Vec<(usize, usize)> =
        covered.iter().map(|&(off, len)| (buffer.as_ptr() as usize + (off - base) as usize, len)).collect();
    let _lock = if atomic { Some(RangeLock::take(file, covered, Direction::Write)?) } else { None };
    // SAFETY: the blocks lie in `buffer`, readable for the call.
    unsafe { access::transfer(file, covered, &blocks, Direction::Write) }.map(drop)
}

/// An aggregator's read of the `covered` runs into its buffer (which starts at file offset
/// `base`): the whole span in one call when the runs fill at least half of it, else run by
/// run. Bytes past the end of the file read as zeros.
fn read_covered(file: &File, buffer: &mut [u8], base: u64, covered: &[(u64, usize)], atomic: bool) -> MpiResult<()> {
    let (first, last) = (covered[0], covered[covered.len() - 1]);
    let span = (first.0, (last.0 + last.1 as u64 - first.0) as usize);
    let data: usize = covered.iter().map(|r| r.1).sum();
    let runs: Vec<(u64, usize)> = if 2 * data >= span.1 { vec![span] } else { covered.to_vec() };
    let ptr = buffer.as_mut_ptr() as usize;
    let blocks: Vec<(usize, usize)> = runs.iter().map(|&(off, len)| (ptr + (off - base) as usize, len)).collect();
    let _lock = if atomic { Some(RangeLock::take(file, &runs, Direction::Read)?) } else { None };
    // SAFETY: the blocks lie in `buffer`, writable for the call.
    let got = unsafe { access::transfer(file, &runs, &blocks, Direction::Read) }?;
    // Past the end of the file: zeros, not an earlier round's bytes.
    let mut skip = got;
    for &(off, len) in &runs {
        let b = (off - base) as usize;
        let kept = skip.min(len);
        buffer[b + kept..b + len].fill(0);
        skip -= kept;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(lo: u64, hi: u64) -> Header {
        Header {
            ok: true,
            lo,
            hi,
            ordered: true,
            buffering: Buffering::Automatic,
            cb_buffer_size: 16 << 20,
            cb_nodes: 1,
        }
    }

    #[test]
    fn headers_survive_the_exchange() {
        let h = Header { ok: false, ordered: false, buffering: Buffering::Enable, ..header(5, 900) };
        assert_eq!(Header::decode(&h.encode()), h);
        let h = Header { buffering: Buffering::Disable, ..header(0, u64::MAX) };
        assert_eq!(Header::decode(&h.encode()), h);
    }

    #[test]
    fn only_overlapping_ranges_interleave() {
        assert!(!interleaved(&[header(0, 100), header(100, 200)]));
        assert!(!interleaved(&[header(100, 200), header(0, 100)]), "rank order does not matter");
        assert!(interleaved(&[header(0, 150), header(100, 200)]));
        assert!(interleaved(&[header(0, 1000), header(10, 20), header(30, 40)]));
        let failed = Header { ok: false, ..header(0, 1000) };
        assert!(!interleaved(&[failed, header(10, 20), header(30, 40)]), "a failed member moves nothing");
        assert!(use_two_phase(&[header(0, 150), header(100, 200)]));
        let enable = Header { buffering: Buffering::Enable, ..header(0, 100) };
        assert!(use_two_phase(&[enable, header(100, 200)]));
        let disable = Header { buffering: Buffering::Disable, ..header(0, 150) };
        assert!(!use_two_phase(&[disable, header(100, 200)]));
        let unordered = Header { ordered: false, ..header(100, 200) };
        assert!(!use_two_phase(&[enable, unordered]), "overlapping reads stay independent");
        assert!(!use_two_phase(&[enable, Header { ok: false, ..enable }].map(|h| Header { hi: h.lo, ..h })));
    }

    #[test]
    fn aggregators_go_one_per_node_first() {
        // Ranks 0-3 on node 0, 4-7 on node 1.
        let nodes = [0, 0, 0, 0, 1, 1, 1, 1];
        assert_eq!(aggregators(&nodes, 2), [0, 4]);
        assert_eq!(aggregators(&nodes, 3), [0, 1, 4]);
        assert_eq!(aggregators(&nodes, 1), [0]);
        assert_eq!(aggregators(&nodes, 100), [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(aggregators(&[3, 1, 3, 1], 2), [0, 1]);
    }

    #[test]
    fn domains_cover_the_range_in_aligned_pieces() {
        let mib = 1u64 << 20;
        // Large: multiples of cb.
        assert_eq!(domains(100, 10 * mib, 2, 4 * mib), [(100, 8 * mib), (8 * mib, 10 * mib)]);
        // Small: page multiples.
        assert_eq!(domains(0, 10_000, 2, mib), [(0, 8192), (8192, 10_000)]);
        // More aggregators than pages: the last ones are empty.
        assert_eq!(domains(0, 100, 3, mib), [(0, 100), (100, 100), (100, 100)]);
        for (lo, hi, a, cb) in [(7, 99_999, 3, 1000), (0, 1 << 30, 4, 16 << 20), (5000, 5001, 2, 4096)] {
            let d = domains(lo, hi, a, cb);
            assert_eq!(d[0].0, lo);
            assert_eq!(d[a - 1].1, hi);
            assert!(d.windows(2).all(|w| w[0].1 == w[1].0));
        }
        assert_eq!(round_range((100, 350), 0, 100), (100, 200));
        assert_eq!(round_range((100, 350), 2, 100), (300, 350));
        assert_eq!(round_range((100, 350), 3, 100), (350, 350));
    }

    #[test]
    fn pieces_clip_runs_to_a_range() {
        let runs = [(0, 10), (20, 10), (40, 10)];
        assert_eq!(pieces(&runs, 5, 25).collect::<Vec<_>>(), [(0, 5, 5), (1, 20, 5)]);
        assert_eq!(pieces(&runs, 10, 20).count(), 0);
        assert_eq!(pieces(&runs, 45, 1000).collect::<Vec<_>>(), [(2, 45, 5)]);
        assert_eq!(bytes_in(&runs, 0, 1000), 30);
        assert_eq!(bytes_before(&runs, 25), 15);
        assert_eq!(bytes_before(&runs, 1000), 30);
        assert_eq!(bytes_before(&runs, 0), 0);
    }
}
