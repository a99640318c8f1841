//! `PMI_process_mapping`: which node each rank runs on.
//!
//! The value is `(vector,(start_node,node_count,ranks_per_node),...)`. Each block places
//! `ranks_per_node` consecutive ranks on each of the nodes `start_node..start_node+node_count`;
//! when the blocks cover fewer ranks than the job has, the whole list repeats (Hydra sends
//! `(vector,(0,1,1))` for any number of ranks on one node, and MPICH decodes it that way).

use std::io;

/// One `(start_node,node_count,ranks_per_node)` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    start_node: usize,
    node_count: usize,
    ranks_per_node: usize,
}

fn invalid(mapping: &str, why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad PMI_process_mapping {mapping:?}: {why}"))
}

fn parse_blocks(mapping: &str) -> io::Result<Vec<Block>> {
    let compact: String = mapping.chars().filter(|c| !c.is_whitespace()).collect();
    let body = compact
        .strip_prefix("(vector,")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| invalid(mapping, "expected (vector,...)"))?;
    let mut blocks = Vec::new();
    for piece in body.split("),") {
        let inner = piece
            .strip_prefix('(')
            .map(|rest| rest.strip_suffix(')').unwrap_or(rest))
            .ok_or_else(|| invalid(mapping, "expected (start,count,size) blocks"))?;
        let numbers: Vec<usize> = inner
            .split(',')
            .map(|n| n.parse::<usize>().map_err(|_| invalid(mapping, "not a number")))
            .collect::<io::Result<_>>()?;
        let [start_node, node_count, ranks_per_node] = numbers[..] else {
            return Err(invalid(mapping, "a block needs three numbers"));
        };
        blocks.push(Block { start_node, node_count, ranks_per_node });
    }
    Ok(blocks)
}

/// The node index of each of `size` ranks, decoded from a `PMI_process_mapping` value.
pub fn node_ids_from_mapping(mapping: &str, size: usize) -> io::Result<Vec<usize>> {
    let blocks = parse_blocks(mapping)?;
    if blocks.iter().all(|b| b.node_count == 0 || b.ranks_per_node == 0) {
        return Err(invalid(mapping, "places no rank"));
    }
    let mut node_ids = Vec::with_capacity(size);
    'fill: while node_ids.len() < size {
        for block in &blocks {
            for node in block.start_node..block.start_node + block.node_count {
                for _ in 0..block.ranks_per_node {
                    if node_ids.len() == size {
                        break 'fill;
                    }
                    node_ids.push(node);
                }
            }
        }
    }
    Ok(node_ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_node() {
        assert_eq!(node_ids_from_mapping("(vector,(0,1,4))", 4).unwrap(), vec![0; 4]);
        // Hydra's form: one rank per node-slot, repeated.
        assert_eq!(node_ids_from_mapping("(vector,(0,1,1))", 3).unwrap(), vec![0; 3]);
    }

    #[test]
    fn blocks_and_cyclic_repeat() {
        assert_eq!(node_ids_from_mapping("(vector,(0,2,2),(2,1,1))", 5).unwrap(), vec![0, 0, 1, 1, 2]);
        // Round-robin over two nodes.
        assert_eq!(node_ids_from_mapping("(vector,(0,2,1))", 5).unwrap(), vec![0, 1, 0, 1, 0]);
        assert_eq!(node_ids_from_mapping(" (vector, (1,1,2)) ", 2).unwrap(), vec![1, 1]);
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "vector", "(vector,)", "(vector,(0,1))", "(vector,(a,1,1))", "(vector,(0,0,1))"] {
            assert!(node_ids_from_mapping(bad, 2).is_err(), "{bad}");
        }
    }
}
