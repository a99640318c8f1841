//! Collectives on intercommunicators (MPI-4.1 §6.2.2), as schedules: the nonblocking and
//! persistent forms run them from the progress engine, the blocking forms run them to
//! completion at once (see `abi::coll::schedule`).
//!
//! The algorithms are MPICH's: steps within a group (a local reduce or broadcast, rooted at
//! the group's rank 0, its "leader") reuse the intracommunicator schedules on the local
//! members, and only the leaders, or the root and the remote group, talk across. Traffic
//! between the groups uses phases from `PH_INTER` up, apart from the local phases, because
//! both groups share the internal context and both have a rank 0.
//!
//! Results follow MPICH where the standard leaves room: allreduce and reduce-scatter give each
//! group the reduction of the other group's data; allgather gives each group the other group's
//! blocks.

use super::sched::{self, PH_BCAST, PH_INTER, PH_MAIN, PH_SCATTER, Schedule};

/// The part a process plays in a rooted intercommunicator collective, from its `root`
/// argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// MPI_ROOT: this process is the root (in the root group).
    Here,
    /// MPI_PROC_NULL: another process of the root group is the root; nothing to do.
    Idle,
    /// The root is this rank of the remote group; this process sends or receives data.
    Remote(usize),
}

/// Local barrier, the leaders swap a token, local broadcast of the token: no process leaves
/// before every process of both groups has entered.
pub fn barrier(s: &mut Schedule) {
    sched::barrier(s);
    let token = s.slot(Vec::new());
    if s.rank == 0 {
        let leader = s.remote(0);
        s.recv(leader, PH_INTER, token, 0);
        s.send(leader, PH_INTER, token, true);
        s.fence();
    }
    sched::bcast_slot(s, token, 0, 0, PH_BCAST, None, false);
}

/// The root sends the buffer (the output buffer, packed at the root) to remote rank 0, which
/// broadcasts it in its group.
pub fn bcast(s: &mut Schedule, root: Root) {
    let len = s.out_bytes(0);
    if len == 0 {
        return;
    }
    match root {
        Root::Here => {
            let data = s.out().expect("the root's buffer").pack(0);
            let b = s.slot(data);
            let leader = s.remote(0);
            s.send(leader, PH_INTER, b, false);
        }
        Root::Idle => {}
        Root::Remote(root) => {
            let b = s.slot(Vec::new());
            if s.rank == 0 {
                let from = s.remote(root);
                s.recv(from, PH_INTER, b, len);
                s.fence();
            }
            sched::bcast_slot(s, b, len, 0, PH_BCAST, Some(0), true);
        }
    }
}

/// The remote group reduces to its rank 0 (in rank order), which sends the result to the
/// root. `mine` is this process's packed contribution (empty unless `Root::Remote`).
pub fn reduce(s: &mut Schedule, mine: Vec<u8>, root: Root) {
    match root {
        Root::Here => {
            let len = s.out_bytes(0);
            if len > 0 {
                let b = s.slot(Vec::new());
                let leader = s.remote(0);
                s.recv(leader, PH_INTER, b, len);
                s.fence();
                s.put(b, 0);
            }
        }
        Root::Idle => {}
        Root::Remote(root) => {
            let len = mine.len();
            if len == 0 {
                return;
            }
            let acc = s.slot(mine);
            if sched::reduce_slot(s, acc, len, 0, PH_MAIN) {
                let to = s.remote(root);
                s.send(to, PH_INTER, acc, false);
            }
        }
    }
}

/// Each group reduces to its leader; the leaders swap their results. Returns the slot that
/// holds, at the leader, the other group's reduction (`len` bytes), and whether this process
/// is the leader.
fn reduce_and_swap(s: &mut Schedule, mine: Vec<u8>) -> (usize, bool) {
    let len = mine.len();
    let acc = s.slot(mine);
    let theirs = s.slot(Vec::new());
    let leader = sched::reduce_slot(s, acc, len, 0, PH_MAIN);
    if leader {
        let peer = s.remote(0);
        s.recv(peer, PH_INTER, theirs, len);
        s.send(peer, PH_INTER, acc, false);
        s.fence();
    }
    (theirs, leader)
}

/// Every process gets the reduction of the other group's contributions: local reduce, the
/// leaders swap, local broadcast.
pub fn allreduce(s: &mut Schedule, mine: Vec<u8>) {
    let len = mine.len();
    if len == 0 {
        return;
    }
    let (theirs, _) = reduce_and_swap(s, mine);
    sched::bcast_slot(s, theirs, len, 0, PH_BCAST, Some(0), true);
}

/// The other group's reduction (of `sum(counts)` elements) is scattered in this group,
/// `counts[i]` elements (`elem` bytes each) to member i: local reduce, the leaders swap, the
/// leader sends each member its piece.
pub fn reduce_scatter(s: &mut Schedule, mine: Vec<u8>, counts: &[usize], elem: usize) {
    let (n, r) = (s.size(), s.rank);
    if mine.is_empty() {
        return;
    }
    let (theirs, leader) = reduce_and_swap(s, mine);
    if leader {
        let first = s.split(theirs, counts[..n].iter().map(|c| c * elem).collect());
        for (i, &c) in counts.iter().enumerate().take(n).skip(1) {
            if c > 0 {
                s.send(i, PH_SCATTER, first + i, false);
            }
        }
        s.put(first, 0);
    } else if counts[r] > 0 {
        let piece = s.slot(Vec::new());
        s.recv(0, PH_SCATTER, piece, counts[r] * elem);
        s.fence();
        s.put(piece, 0);
    }
}

/// Posts a receive of output block i from remote rank i, for every nonempty block; returns
/// (block, slot) pairs.
fn recv_from_remotes(s: &mut Schedule) -> Vec<(usize, usize)> {
    let mut got = Vec::new();
    for i in 0..s.remote_size() {
        let len = s.out_bytes(i);
        if len > 0 {
            let b = s.slot(Vec::new());
            let from = s.remote(i);
            s.recv(from, PH_INTER, b, len);
            got.push((i, b));
        }
    }
    got
}

/// Linear: the root receives block i from remote rank i. `mine` is this process's packed
/// contribution (`Root::Remote` only).
pub fn gather(s: &mut Schedule, mine: Vec<u8>, root: Root) {
    match root {
        Root::Here => {
            let got = recv_from_remotes(s);
            s.fence();
            for (i, b) in got {
                s.put(b, i);
            }
        }
        Root::Idle => {}
        Root::Remote(root) => {
            if !mine.is_empty() {
                let b = s.slot(mine);
                let to = s.remote(root);
                s.send(to, PH_INTER, b, false);
            }
        }
    }
}

/// Linear: the root sends remote rank i its block (`pieces[i]`, packed; root only).
pub fn scatter(s: &mut Schedule, pieces: Vec<Vec<u8>>, root: Root) {
    match root {
        Root::Here => {
            for (i, data) in pieces.into_iter().enumerate() {
                if !data.is_empty() {
                    let b = s.slot(data);
                    let to = s.remote(i);
                    s.send(to, PH_INTER, b, false);
                }
            }
        }
        Root::Idle => {}
        Root::Remote(root) => {
            let len = s.out_bytes(0);
            if len > 0 {
                let b = s.slot(Vec::new());
                let from = s.remote(root);
                s.recv(from, PH_INTER, b, len);
                s.fence();
                s.put(b, 0);
            }
        }
    }
}

/// Each process sends `outgoing[i]` to remote rank i and receives block i of its output from
/// remote rank i: every receive posted, every send started, one fence.
pub fn alltoall(s: &mut Schedule, outgoing: Vec<Vec<u8>>) {
    let nremote = s.remote_size();
    let got = recv_from_remotes(s);
    // Start with the remote rank matching this one, to spread the load.
    let r = s.rank;
    let mut outgoing = outgoing;
    for k in 0..nremote {
        let i = (r + k) % nremote;
        let data = std::mem::take(&mut outgoing[i]);
        if !data.is_empty() {
            let b = s.slot(data);
            let to = s.remote(i);
            s.send(to, PH_INTER, b, false);
        }
    }
    if !got.is_empty() {
        s.fence();
    }
    for (i, b) in got {
        s.put(b, i);
    }
}

/// Each process receives every remote process's block and sends its own (`mine`) to every
/// remote process.
pub fn allgather(s: &mut Schedule, mine: Vec<u8>) {
    let outgoing = vec![mine; s.remote_size()];
    alltoall(s, outgoing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::sched::Target;
    use crate::p2p::Engine;

    #[test]
    fn idle_processes_of_the_root_group_do_nothing() {
        let mut e = Engine::new(0, 1, None);
        let t = Target { ctx: 0, rank: 0, members: vec![0], remote: vec![1, 2], tag: crate::coll::tag::NBC_BASE };
        let mut s = Schedule::new(&t, None, None);
        gather(&mut s, Vec::new(), Root::Idle);
        scatter(&mut s, Vec::new(), Root::Idle);
        reduce(&mut s, Vec::new(), Root::Idle);
        assert_eq!(s.remote_size(), 2);
        assert_eq!(s.remote(1), 2);
        let id = e.reqs.insert(crate::p2p::request::Request::started(
            crate::p2p::request::Op::Coll(Box::new(s)),
            crate::abi::consts::MPI_COMM_NULL,
        ));
        sched::kick(&mut e, id);
        assert!(e.is_complete(id));
    }
}
