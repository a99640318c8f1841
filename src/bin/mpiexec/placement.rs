//! Where each rank runs: hosts, slots and `-ppn` as Hydra reads them, and the
//! `PMI_process_mapping` value that tells the ranks which of them share a node.

use crate::options::HostSlots;

/// This machine's host name.
pub fn hostname() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer.
    if unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) } != 0 {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&buffer[..end]).into_owned())
}

/// Whether `host` names this machine (localhost, its loopback addresses, its host name with
/// or without the domain).
pub fn is_local(host: &str) -> bool {
    let me = hostname();
    let short = me.as_deref().map(|h| h.split('.').next().unwrap_or(h));
    matches!(host, "localhost" | "127.0.0.1" | "::1") || Some(host) == me.as_deref() || Some(host) == short
}

/// The ranks' placement: the distinct hosts in order of first appearance, and the index of
/// each rank's host in that list (its node id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub hosts: Vec<String>,
    pub node_of_rank: Vec<usize>,
}

/// Places `ranks` ranks as Hydra does: each host entry takes `ppn`, else its own count, else
/// 1 consecutive ranks, entries in order, wrapping around when ranks outnumber slots. So
/// `h1,h2` is round-robin and `h1:2,h2:2` or `-ppn 2` are blocks. No hosts: all here.
pub fn place(hosts: &[HostSlots], ppn: Option<usize>, ranks: usize) -> Placement {
    if hosts.is_empty() {
        let name = hostname().unwrap_or_else(|| "localhost".into());
        return Placement { hosts: vec![name], node_of_rank: vec![0; ranks] };
    }
    let mut names: Vec<String> = Vec::new();
    let mut node_of_entry = Vec::with_capacity(hosts.len());
    for host in hosts {
        let node = match names.iter().position(|n| *n == host.name) {
            Some(node) => node,
            None => {
                names.push(host.name.clone());
                names.len() - 1
            }
        };
        node_of_entry.push(node);
    }
    let mut node_of_rank = Vec::with_capacity(ranks);
    'fill: loop {
        for (entry, host) in hosts.iter().enumerate() {
            for _ in 0..ppn.or(host.slots).unwrap_or(1) {
                if node_of_rank.len() == ranks {
                    break 'fill;
                }
                node_of_rank.push(node_of_entry[entry]);
            }
        }
    }
    Placement { hosts: names, node_of_rank }
}

impl Placement {
    /// The ranks of each host.
    pub fn ranks_of_host(&self) -> Vec<Vec<usize>> {
        let mut ranks = vec![Vec::new(); self.hosts.len()];
        for (rank, &node) in self.node_of_rank.iter().enumerate() {
            ranks[node].push(rank);
        }
        ranks
    }

    /// MPICH's `(vector,(start_node,nodes,ranks_per_node),...)` describing the placement
    /// (decoded by `oxmpi::pmi::mapping`): runs of consecutive ranks on one node, runs of equal
    /// length on consecutive nodes merged; a placement that repeats itself (round-robin)
    /// is given by its first period, since the list repeats when it covers fewer ranks.
    pub fn process_mapping(&self) -> String {
        let nodes = &self.node_of_rank;
        if nodes.iter().all(|&n| n == nodes[0]) {
            return format!("(vector,({},1,{}))", nodes.first().copied().unwrap_or(0), nodes.len());
        }
        let period = (1..=nodes.len())
            .find(|&p| nodes.len() % p == 0 && nodes.chunks(p).all(|c| c == &nodes[..p]))
            .unwrap_or(nodes.len());
        let mut blocks: Vec<(usize, usize, usize)> = Vec::new();
        let mut index = 0;
        while index < period {
            let node = nodes[index];
            let run = nodes[index..period].iter().take_while(|&&n| n == node).count();
            match blocks.last_mut() {
                Some((start, count, per)) if *per == run && *start + *count == node => *count += 1,
                _ => blocks.push((node, 1, run)),
            }
            index += run;
        }
        let body: Vec<String> = blocks.iter().map(|(s, c, r)| format!("({s},{c},{r})")).collect();
        format!("(vector,{})", body.join(","))
    }

    /// Hydra's rank map: `(host:0,2)(other:1,3)`, one group per host.
    pub fn rank_map(&self) -> String {
        self.ranks_of_host()
            .iter()
            .zip(&self.hosts)
            .map(|(ranks, host)| {
                let list: Vec<String> = ranks.iter().map(usize::to_string).collect();
                format!("({host}:{})", list.join(","))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[(&str, Option<usize>)]) -> Vec<HostSlots> {
        list.iter().map(|&(name, slots)| HostSlots { name: name.into(), slots }).collect()
    }

    fn decoded(placement: &Placement) -> Vec<usize> {
        oxmpi::pmi::mapping::node_ids_from_mapping(&placement.process_mapping(), placement.node_of_rank.len()).unwrap()
    }

    #[test]
    fn round_robin_without_counts() {
        let placement = place(&hosts(&[("a", None), ("b", None)]), None, 5);
        assert_eq!(placement.hosts, ["a", "b"]);
        assert_eq!(placement.node_of_rank, [0, 1, 0, 1, 0]);
        assert_eq!(placement.rank_map(), "(a:0,2,4)(b:1,3)");
        assert_eq!(decoded(&placement), placement.node_of_rank);
        assert_eq!(place(&hosts(&[("a", None), ("b", None)]), None, 4).process_mapping(), "(vector,(0,2,1))");
    }

    #[test]
    fn blocks_with_counts_or_ppn() {
        let placement = place(&hosts(&[("a", Some(2)), ("b", Some(2))]), None, 6);
        assert_eq!(placement.node_of_rank, [0, 0, 1, 1, 0, 0]);
        assert_eq!(decoded(&placement), placement.node_of_rank);
        let placement = place(&hosts(&[("a", Some(1)), ("b", Some(3))]), None, 4);
        assert_eq!(placement.node_of_rank, [0, 1, 1, 1]);
        assert_eq!(placement.process_mapping(), "(vector,(0,1,1),(1,1,3))");
        let placement = place(&hosts(&[("a", Some(1)), ("b", None)]), Some(3), 7);
        assert_eq!(placement.node_of_rank, [0, 0, 0, 1, 1, 1, 0]);
        assert_eq!(decoded(&placement), placement.node_of_rank);
        assert_eq!(place(&hosts(&[("a", None), ("b", None)]), Some(2), 4).process_mapping(), "(vector,(0,2,2))");
    }

    #[test]
    fn a_host_named_twice_is_one_node() {
        let placement = place(&hosts(&[("a", Some(1)), ("b", Some(1)), ("a", Some(1))]), None, 3);
        assert_eq!(placement.hosts, ["a", "b"]);
        assert_eq!(placement.node_of_rank, [0, 1, 0]);
        assert_eq!(placement.ranks_of_host(), [vec![0, 2], vec![1]]);
        assert_eq!(decoded(&placement), placement.node_of_rank);
    }

    #[test]
    fn no_hosts_is_this_machine() {
        let placement = place(&[], None, 3);
        assert_eq!(placement.node_of_rank, [0, 0, 0]);
        assert_eq!(placement.process_mapping(), "(vector,(0,1,3))");
        assert!(is_local("localhost") && is_local(&hostname().unwrap()));
    }
}
