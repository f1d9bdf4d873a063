//! Reachability between kernels, for the cycle checks of multi-output fusion.
//!
//! Why kernels and not instructions: a kernel runs as a whole, so each of its outputs
//! waits for all of its inputs. Once a group has several outputs, two instructions with no
//! path between them can still depend on each other through it: if group `C` holds `x`
//! (reading `a`) and `y` (read by `b`), then `b` waits for `a` through `C` although no
//! instruction path leads from `a` to `b`. Merging `a` and `b` would make `C` and the
//! merged kernel wait on each other. Producer–consumer fusion makes only single-output
//! groups (every member feeds the group's one output through members), so there
//! instruction paths tell the whole story; multi-output fusion needs this.
//!
//! Nodes are the non-empty groups and, after them, every instruction in no group. Each node has one bit row: bit `y` of row `x` says some path of one or more
//! edges leads from `x` to `y`. Rows are updated as groups merge, so checks stay exact.
//! Built only for at most [`Reach::MAX`] nodes, to bound its memory (`n * n / 8` bytes).

use super::members::Members;
use crate::ir::{InstId, UserLists};
use cranelift_entity::SecondaryMap;
use rustc_hash::FxHashMap as HashMap;

/// The slot of an instruction or group that has no node.
const NO_NODE: u32 = u32::MAX;

/// The node a slot holds, if any.
fn known(node: u32) -> Option<u32> {
    (node != NO_NODE).then_some(node)
}

pub(super) struct Reach {
    /// The node of every instruction of the computation ([`NO_NODE`]: an instruction
    /// not in the order it was built from).
    node: SecondaryMap<InstId, u32>,
    /// The node of each group ([`NO_NODE`] for groups that were empty).
    group_node: Vec<u32>,
    /// Each node's direct successors, by node as built; a merged-away node's entries
    /// are read through `merged_into`.
    succ: Vec<Vec<u32>>,
    /// Where a node went when its group merged into another (itself if it did not).
    merged_into: Vec<u32>,
    nodes: usize,
    words: usize,
    bits: Vec<u64>,
}

impl Reach {
    pub const MAX: usize = 16_384;

    /// Reachability between `groups` (instruction -> group index through `group_of`)
    /// and the instructions of `order` in no group. None if there are too many nodes or
    /// the groups already form a cycle (then callers fall back to a walk).
    pub fn new(order: &[InstId], users: &UserLists, group_of: &HashMap<InstId, usize>, groups: usize) -> Option<Reach> {
        let mut node = SecondaryMap::with_default(NO_NODE);
        let mut group_node = vec![NO_NODE; groups];
        let mut nodes = 0;
        for &id in order {
            if let Some(&g) = group_of.get(&id) {
                if group_node.get(g) == Some(&NO_NODE) {
                    group_node[g] = nodes as u32;
                    nodes += 1;
                }
            }
        }
        for &id in order {
            let n = match group_of.get(&id) {
                Some(&g) => *group_node.get(g)?,
                None => {
                    nodes += 1;
                    nodes as u32 - 1
                }
            };
            node[id] = n;
        }
        if nodes > Reach::MAX {
            return None;
        }
        let mut succ: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        let mut preds = vec![0u32; nodes];
        for &id in order {
            let from = node[id];
            for u in users.get(id) {
                let to = known(node[*u])?;
                if to != from {
                    succ[from as usize].push(to);
                    preds[to as usize] += 1;
                }
            }
        }
        // Kahn's algorithm: a topological order of the nodes, or a cycle.
        let mut topo: Vec<u32> = (0..nodes as u32).filter(|&n| preds[n as usize] == 0).collect();
        let mut next = 0;
        while next < topo.len() {
            let n = topo[next] as usize;
            next += 1;
            for &s in &succ[n] {
                preds[s as usize] -= 1;
                if preds[s as usize] == 0 {
                    topo.push(s);
                }
            }
        }
        if topo.len() != nodes {
            return None;
        }
        for list in &mut succ {
            list.sort_unstable();
            list.dedup();
        }
        let words = nodes.div_ceil(64).max(1);
        let merged_into = (0..nodes as u32).collect();
        let mut reach = Reach { node, group_node, succ, merged_into, nodes, words, bits: vec![0; nodes * words] };
        for &n in topo.iter().rev() {
            for i in 0..reach.succ[n as usize].len() {
                let s = reach.succ[n as usize][i] as usize;
                reach.set(n as usize, s);
                reach.or_row(n as usize, s);
            }
        }
        Some(reach)
    }

    fn get(&self, x: usize, y: usize) -> bool {
        self.bits[x * self.words + y / 64] >> (y % 64) & 1 == 1
    }
    fn set(&mut self, x: usize, y: usize) {
        self.bits[x * self.words + y / 64] |= 1 << (y % 64);
    }
    fn clear(&mut self, x: usize, y: usize) {
        self.bits[x * self.words + y / 64] &= !(1 << (y % 64));
    }
    /// Row `dst` |= row `src` (`dst != src`).
    fn or_row(&mut self, dst: usize, src: usize) {
        let w = self.words;
        let (d, s) = if dst < src {
            let (lo, hi) = self.bits.split_at_mut(src * w);
            (&mut lo[dst * w..(dst + 1) * w], &hi[..w])
        } else {
            let (lo, hi) = self.bits.split_at_mut(dst * w);
            (&mut hi[..w], &lo[src * w..(src + 1) * w])
        };
        for (a, b) in d.iter_mut().zip(s) {
            *a |= b;
        }
    }

    /// Whether making `members` one kernel creates a cycle; None if a member is unknown.
    pub fn creates_cycle(&self, members: &Members) -> Option<bool> {
        let mut inside: Vec<usize> = Vec::new();
        for m in members {
            let n = self.find(known(self.node[*m])? as usize);
            if !inside.contains(&n) {
                inside.push(n);
            }
        }
        Some(self.nodes_cycle(&inside))
    }

    /// Whether making the groups `groups` one kernel creates a cycle (false if one of
    /// them is unknown).
    pub fn groups_cycle(&self, groups: &[usize]) -> bool {
        let nodes: Option<Vec<usize>> = groups.iter().map(|&g| self.group(g)).collect();
        nodes.is_some_and(|n| self.nodes_cycle(&n))
    }

    fn group(&self, g: usize) -> Option<usize> {
        self.group_node.get(g).and_then(|&n| known(n)).map(|n| self.find(n as usize))
    }

    /// The live node a node's group went to through merges.
    fn find(&self, mut n: usize) -> usize {
        while self.merged_into[n] as usize != n {
            n = self.merged_into[n] as usize;
        }
        n
    }

    /// Whether a direct successor of one of `inside`, outside them, reaches one of them.
    fn nodes_cycle(&self, inside: &[usize]) -> bool {
        inside.iter().any(|&n| {
            self.succ[n].iter().any(|&s| {
                let s = self.find(s as usize);
                !inside.contains(&s) && inside.iter().any(|&t| self.get(s, t))
            })
        })
    }

    /// Group `b` has merged into group `a`: whatever reaches either now reaches all that
    /// either reaches, through the one kernel.
    pub fn merge(&mut self, a: usize, b: usize) {
        let (Some(a), Some(b)) = (self.group(a), self.group(b)) else { return };
        if a == b {
            return;
        }
        self.or_row(a, b);
        self.clear(a, a);
        self.clear(a, b);
        self.bits[b * self.words..(b + 1) * self.words].fill(0);
        self.merged_into[b] = a as u32;
        let moved = std::mem::take(&mut self.succ[b]);
        let mut list: Vec<u32> = std::mem::take(&mut self.succ[a]).into_iter().chain(moved).collect();
        for s in &mut list {
            *s = self.find(*s as usize) as u32;
        }
        list.retain(|&s| s as usize != a);
        list.sort_unstable();
        list.dedup();
        self.succ[a] = list;
        for x in 0..self.nodes {
            if x == a || !(self.get(x, a) || self.get(x, b)) {
                continue;
            }
            self.clear(x, b);
            self.set(x, a);
            self.or_row(x, a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_entity::EntityRef;

    /// Instructions 0..n with the edges (operand, user).
    fn graph(n: usize, edges: &[(usize, usize)]) -> (Vec<InstId>, UserLists) {
        let ids: Vec<InstId> = (0..n).map(InstId::new).collect();
        let mut users = UserLists::default();
        for &(o, u) in edges {
            users.list_mut(ids[o]).push(ids[u]);
        }
        (ids, users)
    }

    #[test]
    fn a_multi_output_group_links_instructions_without_a_path() {
        // 0 -> 1 and 2 -> 3; group {1, 2} makes 0 reach 3 through the kernel.
        let (ids, users) = graph(4, &[(0, 1), (2, 3)]);
        let group_of: HashMap<InstId, usize> = HashMap::from_iter([(ids[0], 0), (ids[1], 1), (ids[2], 1), (ids[3], 2)]);
        let reach = Reach::new(&ids, &users, &group_of, 3).expect("acyclic");
        let set = |xs: &[usize]| xs.iter().map(|&i| ids[i]).collect::<Members>();
        assert_eq!(reach.creates_cycle(&set(&[0, 3])), Some(true));
        assert_eq!(reach.creates_cycle(&set(&[0, 1, 2])), Some(false));
        assert_eq!(reach.creates_cycle(&set(&[1, 2, 3])), Some(false));
    }

    #[test]
    fn merges_carry_paths_through_the_new_kernel() {
        // Groups: 0:{0} 1:{1} 2:{2} 3:{3} with 0 -> 1 and 2 -> 3. Merging 1 and 2 makes
        // 0 reach 3, so merging 0 with 3 afterwards would wait on the middle kernel.
        let (ids, users) = graph(4, &[(0, 1), (2, 3)]);
        // Group 1 is empty: nodes are numbered over the others.
        let group_of: HashMap<InstId, usize> = HashMap::from_iter([(ids[0], 0), (ids[1], 2), (ids[2], 3), (ids[3], 4)]);
        let mut reach = Reach::new(&ids, &users, &group_of, 5).expect("acyclic");
        let set = |xs: &[usize]| xs.iter().map(|&i| ids[i]).collect::<Members>();
        assert_eq!(reach.creates_cycle(&set(&[0, 3])), Some(false));
        reach.merge(2, 3);
        assert!(reach.get(0, 1) && reach.get(1, 3) && reach.get(0, 3));
        assert!(reach.groups_cycle(&[0, 4]) && !reach.groups_cycle(&[0, 2]));
        assert!(!reach.get(0, 2), "the emptied group is no longer a node anyone reaches");
        assert_eq!(reach.creates_cycle(&set(&[0, 3])), Some(true));
    }

    #[test]
    fn a_cycle_between_groups_gives_no_rows() {
        let (ids, users) = graph(4, &[(0, 1), (2, 3)]);
        let group_of: HashMap<InstId, usize> = HashMap::from_iter([(ids[0], 0), (ids[3], 0), (ids[1], 1), (ids[2], 1)]);
        assert!(Reach::new(&ids, &users, &group_of, 2).is_none());
    }
}
