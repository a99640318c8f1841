//! Process groups: ordered sets of processes named by world rank, the table behind MPI_Group
//! handles, and the group algebra of MPI (union, intersection, difference, incl/excl, ranges).
//!
//! Groups do not need the runtime (MPI-4 allows them around sessions), so the table lives in
//! its own lock. A group handle owns a copy of its member list: a group taken from a
//! communicator stays valid after the communicator is freed.

use crate::abi::consts::*;
use crate::abi::types::MPI_Group;
use crate::error::{MpiResult, err};
use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

/// Handles of user groups: kind DIRECT (bits 31..30 = 10), object GROUP (2).
const DIRECT_GROUP: u32 = 0x8800_0000;
/// DIRECT handles index a table of at most this many entries (the 26-bit payload).
const MAX_GROUPS: usize = 0x0400_0000;

/// An ordered set of processes: `members[r]` is the world rank of group rank `r`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Group {
    pub members: Vec<usize>,
}

impl Group {
    pub fn new(members: Vec<usize>) -> Group {
        Group { members }
    }

    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// Group rank of the process with world rank `world`, if it is a member.
    pub fn rank_of(&self, world: usize) -> Option<usize> {
        self.members.iter().position(|&m| m == world)
    }

    /// MPI_Group_compare: IDENT (same members, same order), SIMILAR (same members), UNEQUAL.
    pub fn compare(&self, other: &Group) -> i32 {
        if self.members == other.members {
            return MPI_IDENT;
        }
        let a: HashSet<usize> = self.members.iter().copied().collect();
        let b: HashSet<usize> = other.members.iter().copied().collect();
        if self.size() == other.size() && a == b { MPI_SIMILAR } else { MPI_UNEQUAL }
    }

    /// Members of `self` in order, then those of `other` not in `self`.
    pub fn union(&self, other: &Group) -> Group {
        let mine: HashSet<usize> = self.members.iter().copied().collect();
        let mut members = self.members.clone();
        members.extend(other.members.iter().copied().filter(|m| !mine.contains(m)));
        Group { members }
    }

    /// Members of `self` that are also in `other`, in `self`'s order.
    pub fn intersection(&self, other: &Group) -> Group {
        let theirs: HashSet<usize> = other.members.iter().copied().collect();
        Group { members: self.members.iter().copied().filter(|m| theirs.contains(m)).collect() }
    }

    /// Members of `self` that are not in `other`, in `self`'s order.
    pub fn difference(&self, other: &Group) -> Group {
        let theirs: HashSet<usize> = other.members.iter().copied().collect();
        Group { members: self.members.iter().copied().filter(|m| !theirs.contains(m)).collect() }
    }

    /// Checks a list of distinct ranks of this group (MPI_Group_incl/excl).
    fn check_ranks(&self, ranks: &[i32]) -> MpiResult<()> {
        let mut seen = vec![false; self.size()];
        for (i, &r) in ranks.iter().enumerate() {
            if r < 0 || r as usize >= self.size() {
                return err(
                    MPI_ERR_RANK,
                    format!(
                        "invalid rank in rank array at index {i}; value is {r} but must be in the range 0 to {}",
                        self.size() as i64 - 1
                    ),
                );
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return err(MPI_ERR_RANK, format!("duplicate rank in rank array at index {i} (value {r})"));
            }
        }
        Ok(())
    }

    /// MPI_Group_incl: the members at `ranks`, in that order.
    pub fn incl(&self, ranks: &[i32]) -> MpiResult<Group> {
        self.check_ranks(ranks)?;
        Ok(Group { members: ranks.iter().map(|&r| self.members[r as usize]).collect() })
    }

    /// MPI_Group_excl: the members not at `ranks`, in group order.
    pub fn excl(&self, ranks: &[i32]) -> MpiResult<Group> {
        self.check_ranks(ranks)?;
        let drop: HashSet<usize> = ranks.iter().map(|&r| r as usize).collect();
        Ok(Group {
            members: self.members.iter().enumerate().filter(|(r, _)| !drop.contains(r)).map(|(_, &m)| m).collect(),
        })
    }

    /// The ranks a list of (first, last, stride) triplets names, in order; checked as MPICH
    /// does (zero stride, ends out of range, a range that does not terminate, duplicates).
    pub fn expand_ranges(&self, ranges: &[[i32; 3]]) -> MpiResult<Vec<i32>> {
        let size = self.size() as i64;
        let mut out = Vec::new();
        let mut owner: HashMap<i32, usize> = HashMap::new();
        for (i, &[first, last, stride]) in ranges.iter().enumerate() {
            if stride == 0 {
                return err(MPI_ERR_ARG, format!("zero stride is invalid (range {i})"));
            }
            for (what, v) in [("starts", first), ("ends", last)] {
                if v < 0 || v as i64 >= size {
                    return err(
                        MPI_ERR_ARG,
                        format!("range {i} {what} at {v} but must be nonnegative and less than {size}"),
                    );
                }
            }
            if (stride > 0 && first > last) || (stride < 0 && first < last) {
                return err(
                    MPI_ERR_ARG,
                    format!("range (start = {first}, end = {last}, stride = {stride}) does not terminate"),
                );
            }
            let (mut r, stride) = (first as i64, stride as i64);
            while (stride > 0 && r <= last as i64) || (stride < 0 && r >= last as i64) {
                if let Some(prev) = owner.insert(r as i32, i) {
                    return err(
                        MPI_ERR_ARG,
                        format!(
                            "the range array specifies duplicate entries; process {r} in range {i} was already in range {prev}"
                        ),
                    );
                }
                out.push(r as i32);
                r += stride;
            }
        }
        Ok(out)
    }

    /// MPI_Group_translate_ranks: for each rank of `self`, the rank of the same process in
    /// `other` (MPI_UNDEFINED if absent); MPI_PROC_NULL maps to itself.
    pub fn translate(&self, ranks: &[i32], other: &Group) -> MpiResult<Vec<i32>> {
        let position: HashMap<usize, usize> = other.members.iter().enumerate().map(|(r, &m)| (m, r)).collect();
        ranks
            .iter()
            .map(|&r| match r {
                MPI_PROC_NULL => Ok(MPI_PROC_NULL),
                r if r >= 0 && (r as usize) < self.size() => {
                    Ok(position.get(&self.members[r as usize]).map_or(MPI_UNDEFINED, |&p| p as i32))
                }
                r => err(
                    MPI_ERR_RANK,
                    format!("invalid rank has value {r} but must be nonnegative and less than {}", self.size()),
                ),
            })
            .collect()
    }
}

static TABLE: Mutex<Vec<Option<Group>>> = Mutex::new(Vec::new());

/// The table, even after a panic elsewhere poisoned the lock.
fn table() -> MutexGuard<'static, Vec<Option<Group>>> {
    TABLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn slot_of(handle: MPI_Group) -> Option<usize> {
    let h = handle as u32;
    (h & 0xfc00_0000 == DIRECT_GROUP).then_some((h & 0x03ff_ffff) as usize)
}

/// A copy of the group behind `handle` (MPI_GROUP_EMPTY included).
pub fn get(handle: MPI_Group) -> MpiResult<Group> {
    if handle == MPI_GROUP_EMPTY {
        return Ok(Group::default());
    }
    if handle == MPI_GROUP_NULL {
        return err(MPI_ERR_GROUP, "invalid group (MPI_GROUP_NULL)");
    }
    match slot_of(handle).and_then(|s| table().get(s).cloned().flatten()) {
        Some(g) => Ok(g),
        None => err(MPI_ERR_GROUP, format!("invalid group (0x{:08x}), perhaps already freed", handle as u32)),
    }
}

/// A new handle for `group`; an empty group is MPI_GROUP_EMPTY, as in MPICH.
pub fn insert(group: Group) -> MpiResult<MPI_Group> {
    if group.members.is_empty() {
        return Ok(MPI_GROUP_EMPTY);
    }
    let mut t = table();
    let slot = match t.iter().position(Option::is_none) {
        Some(s) => s,
        None if t.len() < MAX_GROUPS => {
            t.push(None);
            t.len() - 1
        }
        None => return err(MPI_ERR_OTHER, "too many groups"),
    };
    t[slot] = Some(group);
    Ok((DIRECT_GROUP | slot as u32) as MPI_Group)
}

/// MPI_Group_free. Freeing MPI_GROUP_EMPTY is allowed (operations hand it out as a result).
pub fn free(handle: MPI_Group) -> MpiResult<()> {
    if handle == MPI_GROUP_EMPTY {
        return Ok(());
    }
    get(handle)?;
    table()[slot_of(handle).unwrap()] = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m: &[usize]) -> Group {
        Group::new(m.to_vec())
    }

    #[test]
    fn algebra_keeps_mpi_order() {
        let a = g(&[4, 1, 3]);
        let b = g(&[3, 5, 4]);
        assert_eq!(a.union(&b).members, vec![4, 1, 3, 5]);
        assert_eq!(a.intersection(&b).members, vec![4, 3]);
        assert_eq!(a.difference(&b).members, vec![1]);
        assert_eq!(b.difference(&a).members, vec![5]);
        assert_eq!(a.compare(&a.clone()), MPI_IDENT);
        assert_eq!(a.compare(&g(&[1, 3, 4])), MPI_SIMILAR);
        assert_eq!(a.compare(&b), MPI_UNEQUAL);
        assert_eq!(a.compare(&g(&[4, 1])), MPI_UNEQUAL);
    }

    #[test]
    fn incl_excl_and_ranges() {
        let w = g(&[10, 11, 12, 13, 14, 15]);
        assert_eq!(w.incl(&[5, 0, 2]).unwrap().members, vec![15, 10, 12]);
        assert_eq!(w.excl(&[5, 0, 2]).unwrap().members, vec![11, 13, 14]);
        assert_eq!(w.incl(&[6]).unwrap_err().code, MPI_ERR_RANK);
        assert_eq!(w.incl(&[1, 1]).unwrap_err().code, MPI_ERR_RANK);
        assert_eq!(w.expand_ranges(&[[0, 4, 2], [5, 1, -4]]).unwrap(), vec![0, 2, 4, 5, 1]);
        assert_eq!(w.expand_ranges(&[[3, 3, 7]]).unwrap(), vec![3]);
        assert_eq!(w.expand_ranges(&[[0, 1, 0]]).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(w.expand_ranges(&[[0, 6, 1]]).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(w.expand_ranges(&[[1, 0, 1]]).unwrap_err().code, MPI_ERR_ARG);
        assert_eq!(w.expand_ranges(&[[0, 2, 1], [2, 3, 1]]).unwrap_err().code, MPI_ERR_ARG);
    }

    #[test]
    fn translate_marks_non_members() {
        let a = g(&[0, 1, 2, 3]);
        let b = g(&[3, 1]);
        assert_eq!(a.translate(&[0, 1, 3, MPI_PROC_NULL], &b).unwrap(), vec![MPI_UNDEFINED, 1, 0, MPI_PROC_NULL]);
        assert_eq!(a.translate(&[4], &b).unwrap_err().code, MPI_ERR_RANK);
    }

    #[test]
    fn handles() {
        assert_eq!(insert(Group::default()).unwrap(), MPI_GROUP_EMPTY);
        let h = insert(g(&[2, 0])).unwrap();
        assert_eq!(h as u32 & 0xfc00_0000, DIRECT_GROUP);
        assert_eq!(get(h).unwrap().members, vec![2, 0]);
        free(h).unwrap();
        assert_eq!(get(h).unwrap_err().code, MPI_ERR_GROUP);
        assert_eq!(get(MPI_GROUP_NULL).unwrap_err().code, MPI_ERR_GROUP);
        assert!(free(MPI_GROUP_EMPTY).is_ok());
        assert_eq!(get(MPI_GROUP_EMPTY).unwrap().size(), 0);
    }
}
