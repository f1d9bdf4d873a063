//! Scheduling: reorders each computation's `order` to lower its peak memory.
//!
//! Why: `order` is the sequence a runtime executes, and buffer assignment
//! (`passes::buffers`) keeps a value's buffer from its definition to its last use. The
//! same dataflow graph can need very different memory depending on the order: two
//! independent chains that each make large temporaries need one chain's temporaries at
//! a time when run one after the other, and both when interleaved.
//!
//! How: a greedy list scheduler, after XLA's `ListScheduler`. It keeps the set of
//! *ready* instructions (all operands scheduled) and repeatedly schedules the one with
//! the best memory effect:
//!
//! ```text
//! priority = bytes freed - bytes defined
//! ```
//!
//! where *bytes defined* are the new temporary buffers the instruction creates (aliases
//! such as tuple, get-tuple-element and bitcast create none; parameters and constants
//! are not in the arena) and *bytes freed* are the temporaries it reads for the last
//! time (it is their last unscheduled reader, and they are not part of the result). An
//! in-place update (freeing its operand, defining a result of the same size) scores 0.
//! Ties go to the instruction that came first in the old order, so an already good
//! order is kept and the result is deterministic. The logical buffers and aliases are
//! the ones buffer assignment uses, so the scheduler optimizes what it reports.
//!
//! Greedy is not optimal (finding the minimal-memory order is NP-hard), but it finishes
//! one chain of shrinking values before starting an expensive new one, which is the
//! common win.
//!
//! Not scheduled: fusion bodies (a kernel keeps its values in registers, so their order
//! costs no memory; XLA's schedule leaves them out too).
//!
//! Refused: side-effecting instructions (custom calls marked so, `rng`) keep their
//! relative order (each depends on the previous one). A computation whose `order` is
//! not a valid topological order (an operand used before it is defined, which the
//! verifier rejects) is left untouched rather than guessed at.
//!
//! Provenance: none to record; reordering keeps every instruction and its name.

use super::buffers::{AllocationKind, Buffers};
use super::{Changed, Pass, PassLog};
use crate::ir::{CompId, Computation, InstId, Module, Op};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// The scheduler pass (`schedule`).
pub struct Scheduler;

impl Pass for Scheduler {
    fn name(&self) -> &'static str {
        "schedule"
    }
    fn run(&self, module: &mut Module, _log: &mut PassLog) -> Changed {
        // Fusion bodies keep their order (see the module's doc).
        let fusion_bodies = module.fusion_callers();
        let mut changed = false;
        for c in module.post_order() {
            if !fusion_bodies.contains_key(&c) {
                changed |= schedule_computation(module, c);
            }
        }
        changed
    }
}

/// Reorders computation `c`; returns whether its order changed.
pub fn schedule_computation(module: &mut Module, c: CompId) -> bool {
    let Some(comp) = module.comps.get(c) else { return false };
    match list_schedule(comp) {
        Some(order) if order != comp.order => {
            module.comp_mut(c).order = order;
            true
        }
        _ => false,
    }
}

/// A memory-minimizing topological order of `comp`'s instructions, or `None` when the
/// current order is not a valid one.
pub fn list_schedule(comp: &Computation) -> Option<Vec<InstId>> {
    let pos: HashMap<InstId, usize> = comp.order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
    // Refuse an order in which some operand comes after its user (or is not live).
    for (p, &id) in comp.order.iter().enumerate() {
        if comp.inst(id).operands.iter().any(|o| pos.get(o).is_none_or(|&q| q >= p)) {
            return None;
        }
    }
    // Parameters and constants then one instruction (a reducer's body, 72 of them in a
    // 12-layer stack): the parameters and constants score 0 and go first in their
    // order, the last one frees nothing and becomes ready after them, so the order is
    // already the schedule.
    if let Some((_, leaves)) = comp.order.split_last() {
        if leaves.iter().all(|&i| matches!(comp.inst(i).op, Op::Parameter(_) | Op::Constant(_))) {
            return Some(comp.order.clone());
        }
    }
    greedy(comp, &pos)
}

/// The list scheduler proper, on an order known to be valid (`pos`: each instruction's
/// place in it).
fn greedy(comp: &Computation, pos: &HashMap<InstId, usize>) -> Option<Vec<InstId>> {
    let n = comp.order.len();
    let b = Buffers::of(comp);
    let live_out: HashSet<usize> = b.live_out(comp).into_iter().collect();
    // Distinct buffers each instruction reads, and how many instructions still read each.
    let mut scratch: Vec<usize> = Vec::new();
    let reads = Rows::build(n, |p, row| {
        scratch.clear();
        scratch.extend(b.reads(comp, comp.order[p]));
        scratch.sort_unstable();
        scratch.dedup();
        row.extend_from_slice(&scratch);
    });
    let mut readers_left = vec![0usize; b.bufs.len()];
    for &buf in &reads.items {
        readers_left[buf] += 1;
    }
    let temp = |buf: usize| b.bufs[buf].kind == AllocationKind::Temp;

    // Dependencies (by position): distinct operands, plus the previous side effect.
    let mut preds_left = vec![0usize; n];
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut last_effect: Option<usize> = None;
    for (p, &id) in comp.order.iter().enumerate() {
        let inst = comp.inst(id);
        scratch.clear();
        scratch.extend(inst.operands.iter().map(|o| pos[o]));
        if inst.op.has_side_effect() {
            scratch.extend(last_effect);
            last_effect = Some(p);
        }
        scratch.sort_unstable();
        scratch.dedup();
        preds_left[p] = scratch.len();
        edges.extend(scratch.iter().map(|&d| (d, p)));
    }
    let succs = Rows::from_pairs(n, &edges);

    // Readers (positions) of each buffer, to find the last one left when a buffer is
    // down to one unscheduled reader.
    edges.clear();
    edges.extend((0..n).flat_map(|p| reads.row(p).iter().map(move |&buf| (buf, p))));
    let readers = Rows::from_pairs(b.bufs.len(), &edges);
    let live_out: Vec<bool> = (0..b.bufs.len()).map(|buf| live_out.contains(&buf)).collect();
    let defined: Vec<i64> = comp
        .order
        .iter()
        .map(|&id| {
            // A buffer is read (or live out) after its definition or never: its count of
            // unscheduled readers is fixed until the instruction defining it runs.
            b.defines(id)
                .iter()
                .filter(|&&d| temp(d) && (readers_left[d] > 0 || live_out[d]))
                .map(|&d| b.bufs[d].size as i64)
                .sum()
        })
        .collect();
    let priority = |p: usize, readers_left: &[usize]| -> i64 {
        let freed: i64 = reads
            .row(p)
            .iter()
            .filter(|&&buf| temp(buf) && readers_left[buf] == 1 && !live_out[buf])
            .map(|&buf| b.bufs[buf].size as i64)
            .sum();
        freed - defined[p]
    };
    // The ready instructions by (priority, earliest in the old order first); a
    // priority changes only when a buffer it reads drops to one unscheduled reader.
    let mut prio: Vec<i64> = vec![0; n];
    let mut ready: BTreeSet<(i64, Reverse<usize>)> = BTreeSet::new();
    for p in (0..n).filter(|&p| preds_left[p] == 0) {
        prio[p] = priority(p, &readers_left);
        ready.insert((prio[p], Reverse(p)));
    }
    let mut scheduled = vec![false; n];
    let mut out = Vec::with_capacity(n);
    while let Some((_, Reverse(p))) = ready.pop_last() {
        scheduled[p] = true;
        out.push(comp.order[p]);
        for &buf in reads.row(p) {
            readers_left[buf] -= 1;
            if readers_left[buf] == 1 {
                if let Some(&q) = readers.row(buf).iter().find(|&&q| !scheduled[q]) {
                    if ready.remove(&(prio[q], Reverse(q))) {
                        prio[q] = priority(q, &readers_left);
                        ready.insert((prio[q], Reverse(q)));
                    }
                }
            }
        }
        for &s in succs.row(p) {
            preds_left[s] -= 1;
            if preds_left[s] == 0 {
                prio[s] = priority(s, &readers_left);
                ready.insert((prio[s], Reverse(s)));
            }
        }
    }
    (out.len() == n).then_some(out)
}

/// One list per row (instruction or buffer) in a single allocation: a computation has
/// thousands of instructions, each of whose short lists would be an allocation of its own.
struct Rows {
    /// Row `r` is `items[start[r]..start[r + 1]]`.
    start: Vec<usize>,
    items: Vec<usize>,
}

impl Rows {
    /// `rows` rows, each filled in turn by `fill(r, items)` appending to `items`.
    fn build(rows: usize, mut fill: impl FnMut(usize, &mut Vec<usize>)) -> Rows {
        let mut start = Vec::with_capacity(rows + 1);
        let mut items = Vec::new();
        start.push(0);
        for r in 0..rows {
            fill(r, &mut items);
            start.push(items.len());
        }
        Rows { start, items }
    }

    /// Rows from `(row, item)` pairs; a row keeps its items in the pairs' order.
    fn from_pairs(rows: usize, pairs: &[(usize, usize)]) -> Rows {
        let mut start = vec![0usize; rows + 1];
        for &(r, _) in pairs {
            start[r + 1] += 1;
        }
        for r in 0..rows {
            start[r + 1] += start[r];
        }
        let mut next = start.clone();
        let mut items = vec![0; pairs.len()];
        for &(r, x) in pairs {
            items[next[r]] = x;
            next[r] += 1;
        }
        Rows { start, items }
    }

    fn row(&self, r: usize) -> &[usize] {
        &self.items[self.start[r]..self.start[r + 1]]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::testutil::*;
    use crate::ir::{BinaryOp, CustomCallAttrs, ElementType::*, Op, UnaryOp};
    use crate::passes::buffers::assign_buffers;
    use crate::passes::simplify::tests::assert_same_results;

    /// Two independent chains from p and q (f32[16], 64 B): X1 = broadcast to f32[64,16]
    /// (4096 B), X2 = reduce over dim 0 (f32[16], 64 B), X3 = broadcast, X4 = reduce;
    /// root = A4 + B4. Built interleaved: p q zero A1 B1 A2 B2 A3 B3 A4 B4 root.
    fn two_chains() -> crate::ir::Module {
        let mut m = TestModule::new();
        let add = m.binary_body(BinaryOp::Add, F32);
        let small = arr(F32, &[16]);
        let big = arr(F32, &[64, 16]);
        m.finish_with_entry(&[small.clone(), small.clone()], |b, p| {
            let zero = b.constant(f32s(&[], &[0.0]));
            let bcast = Op::BroadcastInDim { dims: vec![1] };
            let reduce = Op::Reduce { dims: vec![0], body: add };
            let a1 = b.op(bcast.clone(), &[p[0]], big.clone());
            let b1 = b.op(bcast.clone(), &[p[1]], big.clone());
            let a2 = b.op(reduce.clone(), &[a1, zero], small.clone());
            let b2 = b.op(reduce.clone(), &[b1, zero], small.clone());
            let a3 = b.op(bcast.clone(), &[a2], big.clone());
            let b3 = b.op(bcast.clone(), &[b2], big.clone());
            let a4 = b.op(reduce.clone(), &[a3, zero], small.clone());
            let b4 = b.op(reduce.clone(), &[b3, zero], small.clone());
            b.op(Op::Binary(BinaryOp::Add), &[a4, b4], small.clone())
        })
    }

    /// Interleaved, two 4096-byte temporaries are live at once: at A2, A1 + B1 + A2 =
    /// 8256 B. The scheduler runs chain A to its end, then chain B: the most live is
    /// then A4 + B1 + B2 = 64 + 4096 + 64 = 4224 B.
    #[test]
    fn finishing_one_chain_first_halves_the_peak() {
        let before = two_chains();
        assert_eq!(assign_buffers(&before).peak_bytes, 8256);
        let mut after = before.clone();
        assert!(Scheduler.run(&mut after, &mut PassLog::default()));
        crate::verify::verify(&after).expect("the schedule keeps every dependency");
        let names: Vec<usize> = after.entry_comp().order.iter().map(|i| i.as_u32() as usize).collect();
        // Arena ids: p 0, q 1, zero 2, A1 3, B1 4, A2 5, B2 6, A3 7, B3 8, A4 9, B4 10, root 11.
        assert_eq!(names, vec![0, 1, 2, 3, 5, 7, 9, 4, 6, 8, 10, 11]);
        let ba = assign_buffers(&after);
        assert_eq!(ba.peak_bytes, 4224);
        assert_eq!(ba.temp_allocation_count(), 3);
        assert_same_results(&before, &after, 5);
        // A second run keeps the order.
        assert!(!Scheduler.run(&mut after, &mut PassLog::default()));
    }

    /// Side effects keep their order even when swapping them would save memory: e1
    /// makes 4096 B, e2 64 B. Without side effects the greedy choice runs e2 (and its
    /// user x, which frees it) first: p e2 x e1 root; with them, e1 stays first.
    #[test]
    fn side_effects_keep_their_order() {
        let build = |effects: bool| {
            let call = |name: &str| {
                Op::CustomCall(CustomCallAttrs {
                    target: name.into(),
                    has_side_effect: effects,
                    backend_config: String::new(),
                    attrs: vec![],
                })
            };
            TestModule::new().finish_with_entry(&[arr(F32, &[16])], |b, p| {
                let e1 = b.op(call("big"), &[p[0]], arr(F32, &[1024]));
                let e2 = b.op(call("small"), &[p[0]], arr(F32, &[16]));
                let x = b.op(Op::Unary(UnaryOp::Neg), &[e2], arr(F32, &[16]));
                b.tuple(&[e1, x])
            })
        };
        let ids = |m: &crate::ir::Module| -> Vec<u32> {
            list_schedule(m.entry_comp()).unwrap().iter().map(|i| i.as_u32()).collect()
        };
        assert_eq!(ids(&build(false)), vec![0, 2, 3, 1, 4]);
        assert_eq!(ids(&build(true)), vec![0, 1, 2, 3, 4]);
    }

    /// A reducer's body (parameters and constants, then one instruction) keeps its order
    /// without running the scheduler proper, which would keep it too.
    #[test]
    fn leaves_then_one_instruction_keep_their_order() {
        let text = r#"
HloModule m
add {
  b = f32[8] parameter(1)
  c = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
  a = f32[8] parameter(0)
  ROOT s = f32[8] add(a, c)
}
ENTRY main {
  p = f32[8] parameter(0)
  q = f32[8] parameter(1)
  ROOT r = f32[8] call(p, q), to_apply=add
}
"#;
        let m = crate::parse::hlo::parse(text).unwrap();
        let body = m.comps.keys().find(|&c| m.comp(c).name == "add").unwrap();
        let comp = m.comp(body);
        let pos: HashMap<InstId, usize> = comp.order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
        assert_eq!(list_schedule(comp).as_ref(), Some(&comp.order));
        assert_eq!(greedy(comp, &pos).as_ref(), Some(&comp.order));
        // The entry's parameters then a call: the same.
        let entry = m.entry_comp();
        let pos: HashMap<InstId, usize> = entry.order.iter().enumerate().map(|(p, &i)| (i, p)).collect();
        assert_eq!(greedy(entry, &pos), list_schedule(entry));
    }

    /// A while loop with tuples and a token schedules without trouble, and a computation
    /// whose order is broken is left alone.
    #[test]
    fn odd_modules() {
        let text = r#"
HloModule m
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  bs = (s32[], f32[4]) parameter(0)
  bi = s32[] get-tuple-element(bs), index=0
  x = f32[4] get-tuple-element(bs), index=1
  one = s32[] constant(1)
  j = s32[] add(bi, one)
  y = f32[4] exponential(x)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY main {
  p = f32[4] parameter(0)
  tok = token[] after-all()
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, p)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
"#;
        let before = crate::parse::hlo::parse(text).unwrap();
        let mut after = before.clone();
        Scheduler.run(&mut after, &mut PassLog::default());
        crate::verify::verify(&after).unwrap();
        assert_same_results(&before, &after, 3);
        let ba = assign_buffers(&after);
        // The while result is one new f32[4] (16 B) and an s32 (4 B): peak 20.
        assert_eq!(ba.peak_bytes, 20);

        let mut broken = before.clone();
        let entry = broken.entry;
        broken.comp_mut(entry).order.reverse();
        assert_eq!(list_schedule(broken.entry_comp()), None);
        assert!(!schedule_computation(&mut broken, entry));
    }

    /// Two chains interleaved, as in `two_chains`: inside a fusion their order costs no
    /// memory and stays; the same instructions in the entry are reordered.
    #[test]
    fn fusion_bodies_keep_their_order() {
        let body = |name: &str| {
            format!(
                "{name} {{
  p = f32[16] parameter(0)
  q = f32[16] parameter(1)
  zero = f32[] constant(0)
  a1 = f32[64,16] broadcast(p), dimensions={{1}}
  b1 = f32[64,16] broadcast(q), dimensions={{1}}
  a2 = f32[16] reduce(a1, zero), dimensions={{0}}, to_apply=add
  b2 = f32[16] reduce(b1, zero), dimensions={{0}}, to_apply=add
  ROOT r = f32[16] add(a2, b2)
}}"
            )
        };
        let add = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}";
        let names = |m: &crate::ir::Module, c: CompId| -> Vec<String> {
            let comp = m.comp(c);
            comp.order.iter().map(|&i| comp.inst(i).name.clone()).collect()
        };
        let interleaved = ["p", "q", "zero", "a1", "b1", "a2", "b2", "r"];
        let one_chain_first = ["p", "q", "zero", "a1", "a2", "b1", "b2", "r"];

        let fused = format!(
            "HloModule m\n{add}\n{}\nENTRY main {{\n  x = f32[16] parameter(0)\n  y = f32[16] parameter(1)\n  ROOT f = f32[16] fusion(x, y), kind=kInput, calls=fused\n}}",
            body("fused")
        );
        let before = crate::parse::hlo::parse(&fused).unwrap();
        let body_id = before.comps.keys().find(|&c| before.comp(c).name == "fused").unwrap();
        assert_eq!(names(&before, body_id), interleaved);
        // The scheduler would reorder it were it not a fusion body.
        let order = list_schedule(before.comp(body_id)).unwrap();
        let comp = before.comp(body_id);
        assert_eq!(order.iter().map(|&i| comp.inst(i).name.as_str()).collect::<Vec<_>>(), one_chain_first);
        let mut after = before.clone();
        Scheduler.run(&mut after, &mut PassLog::default());
        assert_eq!(names(&after, body_id), interleaved);

        let entry = format!("HloModule m\n{add}\n{}", body("ENTRY main"));
        let mut m = crate::parse::hlo::parse(&entry).unwrap();
        assert!(Scheduler.run(&mut m, &mut PassLog::default()));
        assert_eq!(names(&m, m.entry), one_chain_first);
    }
}
