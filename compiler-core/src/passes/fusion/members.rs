//! A group's members: a set of instructions kept as one sorted vector.
//!
//! Why not a tree set: groups are small (the size budget caps them at a few hundred) and
//! read far more often than changed — every candidate merge walks the group it would
//! join, asks who is inside it and sums its traffic — so contiguous iteration and a
//! binary search beat a B-tree's node hops, and a group is one allocation, not one per
//! eleven members, and none up to four (every instruction starts as a group of its own).
//! Iteration is in id order, as the tree's was.

use crate::ir::InstId;
use smallvec::SmallVec;

/// Up to this many members joining a group are inserted one by one rather than merged.
const INSERTED_IN_PLACE: usize = 4;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Members(SmallVec<[InstId; 4]>);

impl Members {
    /// The group of one instruction.
    pub fn one(id: InstId) -> Members {
        Members(smallvec::smallvec![id])
    }

    pub fn contains(&self, id: &InstId) -> bool {
        self.0.binary_search(id).is_ok()
    }

    /// Where `id` sits among the members (in id order), if it is one.
    pub fn position(&self, id: &InstId) -> Option<usize> {
        self.0.binary_search(id).ok()
    }

    /// Adds `id`; false if it was a member already.
    pub fn insert(&mut self, id: InstId) -> bool {
        match self.0.binary_search(&id) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, id);
                true
            }
        }
    }

    /// Removes `id`; false if it was not a member.
    pub fn remove(&mut self, id: &InstId) -> bool {
        match self.0.binary_search(id) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, InstId> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The member with the smallest id.
    pub fn first(&self) -> Option<&InstId> {
        self.0.first()
    }

    /// The members, in id order (what the cost model reads).
    pub fn as_slice(&self) -> &[InstId] {
        &self.0
    }

    /// The members of both groups.
    pub fn union(&self, other: &Members) -> Members {
        let (a, b) = (&self.0, &other.0);
        let mut out = SmallVec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => {
                    out.push(a[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    out.push(b[j]);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    out.push(a[i]);
                    i += 1;
                    j += 1;
                }
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        Members(out)
    }

    /// Moves every member of `other` into this group. A few are inserted in place, so
    /// the group keeps the spare room its vector grew (a merge mostly adds one member,
    /// and the next candidate's check inserts one more for a moment).
    pub fn extend(&mut self, other: Members) {
        if self.0.is_empty() {
            *self = other;
        } else if other.len() <= INSERTED_IN_PLACE {
            other.0.into_iter().for_each(|id| {
                self.insert(id);
            });
        } else {
            *self = self.union(&other);
        }
    }

    pub fn is_disjoint(&self, other: &Members) -> bool {
        let (small, large) = if self.len() <= other.len() { (self, other) } else { (other, self) };
        small.iter().all(|m| !large.contains(m))
    }
}

impl FromIterator<InstId> for Members {
    fn from_iter<I: IntoIterator<Item = InstId>>(iter: I) -> Members {
        let mut v: SmallVec<[InstId; 4]> = iter.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        Members(v)
    }
}

impl<'a> IntoIterator for &'a Members {
    type Item = &'a InstId;
    type IntoIter = std::slice::Iter<'a, InstId>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;

    fn set(ids: &[usize]) -> Members {
        ids.iter().map(|&i| InstId::new(i)).collect()
    }

    #[test]
    fn a_group_stays_sorted_and_free_of_repeats() {
        let mut m = set(&[5, 1, 3, 1]);
        assert_eq!(m.as_slice(), set(&[1, 3, 5]).as_slice());
        assert!(m.insert(InstId::new(4)) && !m.insert(InstId::new(4)));
        assert!(m.remove(&InstId::new(1)) && !m.remove(&InstId::new(1)));
        assert_eq!(m, set(&[3, 4, 5]));
        assert_eq!(m.union(&set(&[0, 4, 9])), set(&[0, 3, 4, 5, 9]));
        assert!(m.is_disjoint(&set(&[0, 9])) && !m.is_disjoint(&set(&[9, 5])));
        m.extend(set(&[2]));
        assert_eq!((m.first(), m.len()), (Some(&InstId::new(2)), 4));
        // A few members are inserted one by one, more are merged: the same set either way.
        m.extend(set(&[4, 6]));
        assert_eq!(m, set(&[2, 3, 4, 5, 6]));
        m.extend(set(&[0, 1, 5, 7, 8, 9]));
        assert_eq!(m, set(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    }
}
