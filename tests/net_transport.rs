//! The network transport's endpoint (`transport::net::Net`) between two endpoints of this
//! process over the provider a job here would choose (libfabric 1.17: `net`): packets keep
//! their order and bytes across more packets than there are buffers, and a direct transfer
//! lands whole, also gathered from and scattered into blocks; a window's memory takes RDMA
//! writes and reads.
//! Needs libfabric (package libfabric1); fails, not skips, without it.

use oxmpi::transport::net::{Net, PAYLOAD_CAPACITY, Way};
use oxmpi::transport::shm::Packet;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(30);

fn pair() -> (Net, Net) {
    let mut a = Net::open(0, 2).unwrap_or_else(|e| panic!("{}", e.msg));
    let mut b = Net::open(1, 2).unwrap_or_else(|e| panic!("{}", e.msg));
    let (name_a, name_b) = (a.address().unwrap(), b.address().unwrap());
    a.connect(&[(1, name_b)]).unwrap();
    b.connect(&[(0, name_a)]).unwrap();
    (a, b)
}

fn payload(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (k * 7 + i * 13) as u8).collect()
}

/// Runs `receiver` with `b` on a thread of its own while `sender` uses `a`: each endpoint
/// needs its own progress (manual progress), as two ranks have.
fn run_pair(sender: impl FnOnce(&mut Net), receiver: impl FnOnce(&mut Net) + Send + 'static) {
    let (mut a, mut b) = pair();
    let other = std::thread::spawn(move || {
        receiver(&mut b);
        b
    });
    sender(&mut a);
    // Keep progressing until the receiver is done (it may still need our acknowledgements).
    let deadline = Instant::now() + PATIENCE;
    while !other.is_finished() {
        assert!(Instant::now() < deadline, "the receiving endpoint did not finish");
        a.read_completions();
    }
    drop(other.join().expect("receiver failed"));
}

/// Packets of the order tests: 300, more than the send or receive buffers (and the slots of
/// a ring), of sizes up to a whole payload.
const COUNT: usize = 300;
fn len_of(i: usize) -> usize {
    [0, 1, 48, 4096, PAYLOAD_CAPACITY][i % 5]
}

/// Takes the `COUNT` packets of the order tests from rank 0, checking their order and bytes.
fn take_in_order(b: &mut Net) {
    let deadline = Instant::now() + PATIENCE;
    let mut got = 0;
    while got < COUNT {
        assert!(Instant::now() < deadline, "{got} of {COUNT} packets arrived");
        b.read_completions();
        while let Some((from, pk, data)) = b.front() {
            assert_eq!(from, 0);
            assert_eq!(pk.tag, got as i32, "packets out of order");
            assert_eq!(data, payload(got, len_of(got)).as_slice(), "bytes of packet {got}");
            b.release_front();
            got += 1;
        }
    }
}

#[test]
fn packets_arrive_in_order_with_their_bytes() {
    run_pair(
        |a| {
            for i in 0..COUNT {
                let deadline = Instant::now() + PATIENCE;
                while !a.can_send(1) {
                    assert!(Instant::now() < deadline, "no send buffer came back");
                    a.read_completions();
                }
                let len = len_of(i);
                let pk = Packet { kind: 1, tag: i as i32, len: len as u64, ..Default::default() };
                let bytes = payload(i, len);
                a.send(1, &pk, len, |out| out[..len].copy_from_slice(&bytes));
            }
        },
        take_in_order,
    );
}

#[test]
fn packets_through_an_rdma_eager_ring_keep_their_order() {
    // The receiver offers a ring after 16 packets; the sender, which sees the offer (and the
    // credits handed back) when it looks at its own arrivals, waits for it after 20 and
    // writes the other 280 there: more than the ring has slots, of sizes up to a whole
    // payload, all in order, the first ring packets possibly before the last tagged ones.
    let (mut a, mut b) = pair();
    assert!(a.can_read(), "the providers here do RMA");
    b.set_eager_rdma(true);
    let receiver = std::thread::spawn(move || {
        take_in_order(&mut b);
        b
    });
    for i in 0..COUNT {
        let deadline = Instant::now() + PATIENCE;
        while !a.can_send(1) {
            assert!(Instant::now() < deadline, "no send buffer or ring slot came back");
            a.read_completions();
            assert!(a.front().is_none(), "the ring's offer and credits are the transport's");
        }
        let len = len_of(i);
        let pk = Packet { kind: 1, tag: i as i32, len: len as u64, ..Default::default() };
        let bytes = payload(i, len);
        a.send(1, &pk, len, |out| out[..len].copy_from_slice(&bytes));
        // After the 20th, wait for the offer: the rest go through the ring.
        while i == 19 && !a.writes_to_ring(1) {
            assert!(Instant::now() < deadline, "no ring offered after 20 packets");
            a.read_completions();
            assert!(a.front().is_none(), "the ring's offer and credits are the transport's");
        }
    }
    let deadline = Instant::now() + PATIENCE;
    while !receiver.is_finished() {
        assert!(Instant::now() < deadline, "the receiving endpoint did not finish");
        a.read_completions();
        assert!(a.front().is_none());
    }
    let b = receiver.join().expect("receiver failed");
    assert_eq!(b.ring_packets(), (COUNT - 20) as u64, "packets that came through the ring");
    drop((a, b));
}

/// Progresses `net` until a direct transfer finishes; it must be the one with `token`.
fn wait_finished(net: &mut Net, token: u64, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        assert!(Instant::now() < deadline, "{what} unfinished");
        net.read_completions();
        if let Some(finished) = net.take_finished() {
            assert_eq!(finished, token, "{what}: another transfer finished");
            return;
        }
    }
}

#[test]
fn direct_transfer_lands_whole() {
    const LEN: usize = 3 << 20;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    run_pair(
        move |a| {
            let data = payload(5, LEN);
            // The receive is posted before the send starts (the protocol's clear-to-send).
            rx.recv().unwrap();
            assert!(a.can_direct(LEN, Way::Out));
            // SAFETY: `data` lives, unchanged, until the transfer finished below.
            unsafe { a.send_direct(1, 42, &[(data.as_ptr() as usize, LEN)], LEN, 1, 9) };
            wait_finished(a, 9, "direct send");
        },
        move |b| {
            let mut into = vec![0u8; LEN];
            assert!(b.can_direct(LEN, Way::In));
            // SAFETY: `into` lives, untouched, until the transfer finished below.
            unsafe { b.receive_direct(0, 42, &[(into.as_mut_ptr() as usize, LEN)], LEN, 1, 7) };
            tx.send(()).unwrap();
            wait_finished(b, 7, "direct receive");
            assert!(into == payload(5, LEN), "direct transfer bytes differ");
        },
    );
}

#[test]
fn direct_transfer_gathers_and_scatters_blocks() {
    // 1 MiB sent from two blocks with a hole between them and received into three blocks cut
    // elsewhere, out of order (send-gather, receive-scatter; the providers here allow 4).
    const LEN: usize = 1 << 20;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    run_pair(
        move |a| {
            let data = payload(3, LEN + 4096);
            let (first, second) = (300_000, LEN - 300_000);
            let blocks = [(data.as_ptr() as usize, first), (data.as_ptr() as usize + first + 4096, second)];
            assert!(a.fits(1, &blocks, LEN, 1), "two blocks must fit the provider's iov_limit");
            rx.recv().unwrap();
            // SAFETY: `data` lives, unchanged, until the transfer finished below.
            unsafe { a.send_direct(1, 43, &blocks, LEN, 1, 11) };
            wait_finished(a, 11, "send of blocks");
        },
        move |b| {
            let mut into = vec![0xeeu8; LEN + 100];
            let base = into.as_mut_ptr() as usize;
            let blocks = [(base + 100, 700_000), (base, 100), (base + 700_100, LEN - 700_100)];
            assert_eq!(b.split_for(0, &blocks, LEN), Some(1), "three blocks fit the provider's iov_limit");
            assert!(b.can_direct(LEN, Way::In));
            // A list of more blocks than any cut into MAX_PIECES pieces takes (the data is staged).
            let many: Vec<(usize, usize)> = (0..1024).map(|i| (base + i * 1024, 1024)).collect();
            assert_eq!(b.split_for(0, &many, LEN), None);
            // SAFETY: `into` lives, untouched, until the transfer finished below.
            unsafe { b.receive_direct(0, 43, &blocks, LEN, 1, 12) };
            tx.send(()).unwrap();
            wait_finished(b, 12, "receive into blocks");
            let sent = payload(3, LEN + 4096);
            let sent: Vec<u8> = sent[..300_000].iter().chain(&sent[300_000 + 4096..]).copied().collect();
            let mut got = into[100..700_100].to_vec();
            got.extend_from_slice(&into[..100]);
            got.extend_from_slice(&into[700_100..LEN]);
            assert!(got == sent, "bytes differ");
        },
    );
}

/// Progresses `net` (the exposing side: the provider may serve the peer's RDMA through it)
/// until `peer` says it is done.
fn progress_until(net: &mut Net, peer: &std::sync::mpsc::Receiver<()>, who: &str) {
    let deadline = Instant::now() + PATIENCE;
    while peer.try_recv().is_err() {
        assert!(Instant::now() < deadline, "{who} did not finish");
        net.read_completions();
    }
}

#[test]
fn rdma_read_of_exposed_memory_lands_whole() {
    // 3 MiB exposed by one endpoint and read by the other into three blocks, out of order
    // (rendezvous by RDMA read, with receive-scatter).
    const LEN: usize = 3 << 20;
    let (offer, offered) = std::sync::mpsc::channel::<Vec<(u64, u64)>>();
    let (done, read) = std::sync::mpsc::channel::<()>();
    run_pair(
        move |a| {
            let data = payload(8, LEN);
            assert!(a.can_read(), "the providers here do RMA");
            // SAFETY: `data` lives, unchanged, until withdrawn below.
            let remote = unsafe { a.expose(1, data.as_ptr() as usize, LEN, 5) }.expect("exposing 3 MiB");
            assert_eq!(remote.len(), a.stripes(1, LEN), "one region per stripe");
            offer.send(remote).unwrap();
            // The exposing side only progresses (the provider may serve reads through it).
            progress_until(a, &read, "the reader");
            a.withdraw(5);
            a.withdraw(5); // a second time: nothing left to do
        },
        move |b| {
            let remote = offered.recv().unwrap();
            let mut into = vec![0xeeu8; LEN + 50];
            let base = into.as_mut_ptr() as usize;
            let blocks = [(base + 50, 1_000_000), (base, 50), (base + 1_000_050, LEN - 1_000_050)];
            assert!(b.fits(0, &blocks, LEN, 1) && b.can_direct(LEN, Way::In));
            // SAFETY: `into` lives, untouched, until the read finished below.
            unsafe { b.read_direct(0, &blocks, LEN, &remote, 1, 21) };
            wait_finished(b, 21, "RDMA read");
            done.send(()).unwrap();
            let mut got = into[50..1_000_050].to_vec();
            got.extend_from_slice(&into[..50]);
            got.extend_from_slice(&into[1_000_050..LEN]);
            assert!(got == payload(8, LEN), "bytes read differ");
        },
    );
}

#[test]
fn rdma_read_of_exposed_blocks_lands_whole() {
    // A message in 40 blocks of 20,000 bytes at every other 20,000-byte space of a buffer
    // (a strided send), exposed as their span and read into two blocks, in as many pieces
    // as the provider's iovec limits need.
    const BLOCK: usize = 20_000;
    const COUNT: usize = 40;
    const LEN: usize = BLOCK * COUNT;
    let (offer, offered) = std::sync::mpsc::channel::<(Vec<(u64, u64)>, Vec<(usize, usize)>)>();
    let (done, read) = std::sync::mpsc::channel::<()>();
    run_pair(
        move |a| {
            let mut memory = payload(10, 2 * LEN);
            let at = memory.as_mut_ptr() as usize;
            let span = 2 * LEN - BLOCK;
            // SAFETY: `memory` lives, unchanged, until withdrawn below.
            let regions = unsafe { a.expose_span(1, at, span, 6) }.expect("exposing the span");
            assert_eq!(regions.len(), 1, "a region per rail the two share");
            let blocks: Vec<(usize, usize)> = (0..COUNT).map(|i| (2 * i * BLOCK, BLOCK)).collect();
            offer.send((regions, blocks)).unwrap();
            progress_until(a, &read, "the reader");
            a.withdraw(6);
        },
        move |b| {
            let (regions, remote) = offered.recv().unwrap();
            let mut into = vec![0u8; LEN];
            let base = into.as_mut_ptr() as usize;
            let local = [(base + 300_000, LEN - 300_000), (base, 300_000)];
            let split = b.split_for_read(0, &local, &remote, LEN).expect("a cut that fits");
            assert!(b.can_direct(LEN, Way::In));
            // SAFETY: `into` lives, untouched, until the read finished below.
            unsafe { b.read_blocks(0, &local, LEN, &regions, &remote, split, 22) };
            wait_finished(b, 22, "RDMA read of blocks");
            done.send(()).unwrap();
            let memory = payload(10, 2 * LEN);
            let sent: Vec<u8> = (0..COUNT).flat_map(|i| memory[2 * i * BLOCK..(2 * i + 1) * BLOCK].to_vec()).collect();
            let mut got = into[300_000..].to_vec();
            got.extend_from_slice(&into[..300_000]);
            assert!(got == sent, "bytes read differ");
        },
    );
}

#[test]
fn window_writes_and_reads_land_in_the_exposed_memory() {
    // One endpoint exposes 1 MiB as a window; the other writes 600,000 bytes from two blocks
    // at offset 1000, reads them back into one buffer, and tells the owner, which then finds
    // them in its memory and the rest untouched (one-sided Put and Get by RDMA).
    const LEN: usize = 1 << 20;
    const AT: usize = 1000;
    const N: usize = 600_000;
    let (offer, offered) = std::sync::mpsc::channel::<(usize, oxmpi::transport::net::WindowKeys)>();
    let (done, written) = std::sync::mpsc::channel::<()>();
    run_pair(
        move |a| {
            let mut window = vec![0x5au8; LEN];
            let at = window.as_mut_ptr() as usize;
            // SAFETY: `window` lives until withdrawn below; only the peer changes it meanwhile.
            let keys = unsafe { a.expose_window(at, LEN, 7) }.expect("exposing 1 MiB");
            assert_eq!(oxmpi::transport::net::WindowKeys::from_wire(&keys.to_wire()), Some(keys));
            offer.send((at, keys)).unwrap();
            progress_until(a, &written, "the writer");
            // The peer is done with the window (the provider wrote it through `at`).
            let now = &window[..];
            assert!(now[..AT].iter().all(|&b| b == 0x5a), "bytes before the write changed");
            assert!(now[AT..AT + N] == payload(9, N)[..], "the written bytes differ");
            assert!(now[AT + N..].iter().all(|&b| b == 0x5a), "bytes after the write changed");
            a.withdraw(7);
        },
        move |b| {
            let (_, keys) = offered.recv().unwrap();
            let data = payload(9, N);
            let base = data.as_ptr() as usize;
            let blocks = [(base, 250_000), (base + 250_000, N - 250_000)];
            let split = b.split_for(0, &blocks, N).expect("two blocks fit");
            assert!(b.can_direct(N, Way::Out));
            // SAFETY: `data` lives, unchanged, until the write finished below.
            unsafe { b.window_access(Way::Out, 0, &blocks, N, &keys, AT as u64, split, 31) };
            wait_finished(b, 31, "RDMA write");
            let mut back = vec![0u8; N];
            let one = [(back.as_mut_ptr() as usize, N)];
            // SAFETY: `back` lives, untouched, until the read finished below.
            unsafe { b.window_access(Way::In, 0, &one, N, &keys, AT as u64, 1, 32) };
            wait_finished(b, 32, "RDMA read");
            assert!(back == data, "the bytes read back differ");
            done.send(()).unwrap();
        },
    );
}

/// `count` blocks of `block` bytes taking every other block-sized space of `memory`, in
/// reverse order (the last space first).
fn reversed_blocks(memory: &mut [u8], count: usize, block: usize) -> Vec<(usize, usize)> {
    let base = memory.as_mut_ptr() as usize;
    (0..count).rev().map(|i| (base + 2 * i * block, block)).collect()
}

/// The bytes `reversed_blocks` hold, in their order.
fn gathered(memory: &[u8], count: usize, block: usize) -> Vec<u8> {
    (0..count).rev().flat_map(|i| memory[2 * i * block..][..block].iter().copied()).collect()
}

#[test]
fn transfers_of_more_blocks_than_the_iov_limit_go_in_more_pieces() {
    // 1 MiB sent from 8 blocks of 128 KiB and received into 16 of 64 KiB (more than the
    // providers' iov_limit of 4): the receiver cuts the transfer finer (split 4: pieces of
    // 256 KiB), the sender follows, and both move the bytes where they are.
    const LEN: usize = 1 << 20;
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    run_pair(
        move |a| {
            let mut memory = payload(4, 2 * LEN);
            let blocks = reversed_blocks(&mut memory, 8, 128 << 10);
            let split = rx.recv().unwrap();
            assert!(a.fits(1, &blocks, LEN, split), "the sender's blocks fit the receiver's cut");
            // SAFETY: `memory` lives, unchanged, until the transfer finished below.
            unsafe { a.send_direct(1, 44, &blocks, LEN, split, 13) };
            wait_finished(a, 13, "send of 8 blocks");
        },
        move |b| {
            let mut memory = vec![0xeeu8; 2 * LEN];
            let blocks = reversed_blocks(&mut memory, 16, 64 << 10);
            assert!(!b.fits(0, &blocks, LEN, 1), "16 blocks in one piece");
            let split = b.split_for(0, &blocks, LEN).expect("a cut that fits 16 blocks");
            assert_eq!(split, 4);
            // SAFETY: `memory` lives, untouched, until the transfer finished below.
            unsafe { b.receive_direct(0, 44, &blocks, LEN, split, 14) };
            tx.send(split).unwrap();
            wait_finished(b, 14, "receive into 16 blocks");
            let sent = gathered(&payload(4, 2 * LEN), 8, 128 << 10);
            assert!(gathered(&memory, 16, 64 << 10) == sent, "bytes differ");
            for i in 0..16 {
                assert!(memory[(2 * i + 1) * (64 << 10)..][..64 << 10].iter().all(|&x| x == 0xee), "hole {i} written");
            }
        },
    );
}

#[test]
fn rdma_reads_into_more_blocks_than_the_iov_limit_go_in_more_pieces() {
    // 1 MiB exposed contiguously and read into 16 blocks of 64 KiB, in pieces of 256 KiB.
    const LEN: usize = 1 << 20;
    let (offer, offered) = std::sync::mpsc::channel::<Vec<(u64, u64)>>();
    let (done, read) = std::sync::mpsc::channel::<()>();
    run_pair(
        move |a| {
            let data = payload(9, LEN);
            // SAFETY: `data` lives, unchanged, until withdrawn below.
            let remote = unsafe { a.expose(1, data.as_ptr() as usize, LEN, 6) }.expect("exposing 1 MiB");
            offer.send(remote).unwrap();
            progress_until(a, &read, "the reader");
            a.withdraw(6);
        },
        move |b| {
            let remote = offered.recv().unwrap();
            let mut memory = vec![0xeeu8; 2 * LEN];
            let blocks = reversed_blocks(&mut memory, 16, 64 << 10);
            let split = b.split_for(0, &blocks, LEN).expect("a cut that fits 16 blocks");
            // SAFETY: `memory` lives, untouched, until the read finished below.
            unsafe { b.read_direct(0, &blocks, LEN, &remote, split, 22) };
            wait_finished(b, 22, "RDMA read into 16 blocks");
            done.send(()).unwrap();
            assert!(gathered(&memory, 16, 64 << 10) == payload(9, LEN), "bytes read differ");
        },
    );
}

#[test]
fn incoming_transfers_leave_slots_for_outgoing_ones() {
    // Receives that wait for data take only the incoming half of the slots: a rank whose
    // peer waits the same way can still send (else both would wait for a slot forever).
    let mut into = vec![0u8; 1 << 20];
    let (mut a, _b) = pair();
    let mut posted = 0;
    while a.can_direct(4096, Way::In) {
        let at = into.as_mut_ptr() as usize + (posted % 256) * 4096;
        // SAFETY: `into` outlives `a` (declared first, dropped last); nothing sends to these.
        unsafe { a.receive_direct(1, posted as u32, &[(at, 4096)], 4096, 1, posted as u64) };
        posted += 1;
        assert!(posted <= 256, "receives never run out of slots");
    }
    assert!(posted >= 64, "only {posted} receives in flight");
    assert!(a.can_direct(4096, Way::Out), "receives took the slots of sends");
    drop(a);
}

/// Adds the other endpoint (of a one-process job, position 0 in its group) as the group of
/// this endpoint's first connection slot: index 1 here and there.
fn add_peer(net: &mut Net, peer: Vec<u8>) {
    let slot = net.reserve_slot();
    assert_eq!(slot, 1, "the first connection slot");
    let tag = oxmpi::transport::net::other_job_tag(1, 0);
    assert_eq!(net.add_other_job(slot, &[(peer, tag)]).unwrap_or_else(|e| panic!("{}", e.msg)), 1);
}

/// One side of `processes_of_another_job_connect_from_one_side`: adds the other endpoint as
/// a process of another job, then sends it 3 packets and takes 3. `before`: until it says
/// go (and 200 ms more), progress without having added the other, whose hello (and packets)
/// come first then: nothing reaches the engine, and once added, the other counts as
/// greeted and its packets come in order.
fn meet_and_exchange(
    net: &mut Net,
    peer: Vec<u8>,
    opens: bool,
    before: Option<(std::sync::mpsc::Receiver<()>, std::sync::mpsc::Sender<()>)>,
) {
    if let Some((go, added)) = before {
        let deadline = Instant::now() + PATIENCE;
        let mut until = None;
        while until.is_none_or(|t| Instant::now() < t) {
            assert!(Instant::now() < deadline, "the other side did not add this one");
            if until.is_none() && go.try_recv().is_ok() {
                until = Some(Instant::now() + Duration::from_millis(200));
            }
            net.read_completions();
            assert!(net.front().is_none(), "a hello reached the engine");
        }
        add_peer(net, peer);
        assert!(net.can_send(1), "the hello that came first was lost");
        added.send(()).unwrap();
        return exchange(net, 0);
    }
    add_peer(net, peer);
    // The side that does not open the connection sends nothing before a packet came.
    assert_eq!(net.can_send(1), opens, "may send before hearing from the other side");
    exchange(net, 0);
}

/// The exchange of `meet_and_exchange` once the other side is added: sends the packets from
/// `sent` on (those before went already), takes 3.
fn exchange(net: &mut Net, mut sent: i32) {
    let deadline = Instant::now() + PATIENCE;
    let mut got = 0;
    while sent < 3 || got < 3 {
        assert!(Instant::now() < deadline, "sent {sent} and took {got} of 3 packets");
        net.read_completions();
        if sent < 3 && net.can_send(1) {
            let pk = Packet { kind: 1, tag: sent, ..Default::default() };
            net.send(1, &pk, 0, |_| {});
            sent += 1;
        }
        while let Some((from, pk, _)) = net.front() {
            // The hello never shows.
            assert_eq!((from, pk.kind, pk.tag), (1, 1, got), "packet {got}");
            net.release_front();
            got += 1;
        }
    }
}

/// Two jobs of one process each meet; with `late`, the side that does not open adds the
/// other only after the opener has added it and sent its hello, and with `early` its 3
/// packets too.
fn two_jobs_meet(late: bool, early: bool) {
    let mut a = Net::open(0, 1).unwrap_or_else(|e| panic!("{}", e.msg));
    let mut b = Net::open(0, 1).unwrap_or_else(|e| panic!("{}", e.msg));
    let (name_a, name_b) = (a.address().unwrap(), b.address().unwrap());
    // `a` is the opener.
    if name_b < name_a {
        std::mem::swap(&mut a, &mut b);
    }
    let (name_a, name_b) = (a.address().unwrap(), b.address().unwrap());
    let (go, wait) = std::sync::mpsc::channel();
    let (added, b_added) = std::sync::mpsc::channel();
    let other = std::thread::spawn(move || {
        meet_and_exchange(&mut b, name_a, false, late.then_some((wait, added)));
        b
    });
    add_peer(&mut a, name_b);
    let mut sent = 0;
    while early && sent < 3 {
        a.read_completions();
        if a.can_send(1) {
            a.send(1, &Packet { kind: 1, tag: sent, ..Default::default() }, 0, |_| {});
            sent += 1;
        }
    }
    if late {
        // Nothing but the hello (and the early packets) before the other side added this one.
        go.send(()).unwrap();
        let deadline = Instant::now() + PATIENCE;
        while b_added.try_recv().is_err() {
            assert!(Instant::now() < deadline, "the other side did not add this one");
            a.read_completions();
        }
    }
    assert!(a.can_send(1), "the opener may send at once");
    exchange(&mut a, sent);
    let deadline = Instant::now() + PATIENCE;
    while !other.is_finished() {
        assert!(Instant::now() < deadline, "the other endpoint did not finish");
        a.read_completions();
    }
    drop(other.join().expect("the other endpoint failed"));
}

#[test]
fn processes_of_another_job_connect_from_one_side() {
    two_jobs_meet(false, false);
}

#[test]
fn a_hello_may_come_before_its_sender_is_added() {
    two_jobs_meet(true, false);
}

#[test]
fn packets_that_come_before_their_sender_is_added_wait_and_keep_their_order() {
    two_jobs_meet(true, true);
}
