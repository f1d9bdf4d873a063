//! Provenance: for every pair of consecutive snapshots A -> B, each node id that appears
//! in B's graph and each one that disappears from A's is explained by a record in B's
//! `provenance`, and every record names ids that exist where its doc says (see
//! `hloscope_core::passes::Provenance`).
//!
//! Checked on the built-in examples (`examples/*.mlir`), the backend's corpus
//! (`backend/tests/corpus/*/module.mlir`), XLA's dumps (`tests/hlo_samples/*.hlo`, which
//! hold fusions and calls already), the StableHLO conformance corpus and random graphs;
//! and on hand-written modules for the exact records of CSE, the simplifier, DCE, fusion
//! and inlining.

use crate::corpus;
use crate::random_graphs;

use hloscope_core::ir::Module;
use hloscope_core::passes::pipeline::{parse_pipeline_spec, run_pipeline, PipelineConfig, Snapshot};
use hloscope_core::passes::Provenance;
use proptest::prelude::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The graph's node ids, which must be distinct (a set would hide a duplicate).
fn node_ids(s: &Snapshot) -> Result<HashSet<&str>, String> {
    let mut ids = HashSet::new();
    for n in &s.graph.nodes {
        if !ids.insert(n.id.as_str()) {
            return Err(format!("snapshot {} ({}): node id {} appears twice", s.index, s.pass, n.id));
        }
    }
    Ok(ids)
}

/// Checks the provenance of `b` against the graphs of `a` (before) and `b` (after).
fn check_pair(a: &Snapshot, b: &Snapshot) -> Result<(), String> {
    let (old, new) = (node_ids(a)?, node_ids(b)?);
    let at = format!("{} -> {} ({})", a.index, b.index, b.pass);
    if !b.changed && !b.provenance.is_empty() {
        return Err(format!("{at}: a pass that changed nothing recorded {:?}", b.provenance));
    }
    // What the records explain: ids that appear, ids that go.
    let mut appears: HashSet<String> = HashSet::new();
    let mut goes: HashSet<&str> = HashSet::new();
    let mut gone: HashSet<&str> = HashSet::new();
    let in_a = |id: &str, field: &str, r: &Provenance| {
        if old.contains(id) {
            Ok(())
        } else {
            Err(format!("{at}: {field} {id} of {r:?} is not in the previous snapshot"))
        }
    };
    let in_b = |id: &str, field: &str, r: &Provenance| {
        if new.contains(id) {
            Ok(())
        } else {
            Err(format!("{at}: {field} {id} of {r:?} is not in this snapshot"))
        }
    };
    let not_in = |set: &HashSet<&str>, id: &str, which: &str, r: &Provenance| {
        if set.contains(id) {
            Err(format!("{at}: {id} of {r:?} is still in the {which} snapshot"))
        } else {
            Ok(())
        }
    };
    for r in &b.provenance {
        match r {
            Provenance::FusedInto { id, fusion, rule } => {
                in_a(id, "id", r)?;
                not_in(&new, id, "this", r)?;
                in_b(fusion, "fusion", r)?;
                let inside = format!("{fusion}/{id}");
                in_b(&inside, "the new id", r)?;
                if !b.decisions.iter().any(|d| d.taken && d.rule == *rule) {
                    return Err(format!("{at}: no taken decision has the rule of {r:?}"));
                }
                goes.insert(id);
                gone.insert(id);
                appears.insert(inside);
            }
            Provenance::ClonedFrom { id, original, .. } => {
                in_b(id, "id", r)?;
                not_in(&old, id, "previous", r)?;
                in_a(original, "original", r)?;
                appears.insert(id.clone());
            }
            Provenance::ReplacedBy { id, by, .. } => {
                in_a(id, "id", r)?;
                in_b(by, "by", r)?;
                goes.insert(id);
                appears.insert(by.clone());
            }
            Provenance::CreatedBy { id, .. } => {
                in_b(id, "id", r)?;
                not_in(&old, id, "previous", r)?;
                appears.insert(id.clone());
            }
            Provenance::Removed { id, .. } => {
                in_a(id, "id", r)?;
                not_in(&new, id, "this", r)?;
                goes.insert(id);
                gone.insert(id);
            }
        }
    }
    for id in new.difference(&old) {
        if !appears.contains(*id) {
            return Err(format!("{at}: {id} is new and nothing records where it came from"));
        }
    }
    for id in old.difference(&new) {
        if !goes.contains(id) {
            return Err(format!("{at}: {id} is gone and nothing records where it went"));
        }
        // Stronger than the above, as the passes promise: every deleted id is `removed`
        // or `fused_into`, replaced or not.
        if !gone.contains(id) {
            return Err(format!("{at}: {id} is gone and has neither a removed nor a fused_into"));
        }
    }
    Ok(())
}

/// Runs `spec` (with snapshots) and checks every pair of consecutive snapshots.
fn run_checked(module: &mut Module, spec: &str) -> Result<Vec<Snapshot>, String> {
    let config = PipelineConfig {
        passes: parse_pipeline_spec(spec).map_err(|e| e.to_string())?,
        snapshots: true,
        verify: true,
        ..PipelineConfig::default()
    };
    let snapshots = run_pipeline(module, &config).map_err(|e| e.to_string())?;
    if !snapshots[0].provenance.is_empty() {
        return Err("the input snapshot has provenance".into());
    }
    for w in snapshots.windows(2) {
        check_pair(&w[0], &w[1])?;
    }
    Ok(snapshots)
}

fn files_in(dir: &Path, pick: impl Fn(&Path) -> Option<PathBuf>) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut out: Vec<PathBuf> = entries.filter_map(|e| pick(&e.unwrap().path())).collect();
    out.sort();
    out
}

fn kind(r: &Provenance) -> &'static str {
    match r {
        Provenance::FusedInto { .. } => "fused_into",
        Provenance::ClonedFrom { .. } => "cloned_from",
        Provenance::ReplacedBy { .. } => "replaced_by",
        Provenance::CreatedBy { .. } => "created_by",
        Provenance::Removed { .. } => "removed",
    }
}

#[test]
fn every_id_that_appears_or_disappears_is_explained_on_examples_and_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("compiler-core has a parent folder");
    let mlir = |p: &Path| p.extension().is_some_and(|e| e == "mlir").then(|| p.to_path_buf());
    let mut files = files_in(&root.join("examples"), mlir);
    files.extend(files_in(&root.join("backend/tests/corpus"), |p| {
        let m = p.join("module.mlir");
        m.is_file().then_some(m)
    }));
    let mlir_files = files.len();
    assert!(mlir_files >= 8, "found only {mlir_files} examples and corpus modules under {}", root.display());
    let hlo = |p: &Path| p.extension().is_some_and(|e| e == "hlo").then(|| p.to_path_buf());
    files.extend(files_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hlo_samples"), hlo));
    assert!(files.len() > mlir_files, "no HLO samples in tests/hlo_samples");
    let mut kinds: HashSet<&'static str> = HashSet::new();
    let mut records = 0;
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut module =
            hloscope_core::parse::parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match run_checked(&mut module, "default") {
            Ok(snapshots) => {
                for s in &snapshots {
                    records += s.provenance.len();
                    kinds.extend(s.provenance.iter().map(kind));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(failures.is_empty(), "{} of {} files:\n{}", failures.len(), files.len(), failures.join("\n"));
    // The check above holds trivially for a pipeline that changes nothing: make sure the
    // passes did change the graphs, in every way there is.
    for k in ["fused_into", "cloned_from", "replaced_by", "created_by", "removed"] {
        assert!(kinds.contains(k), "no {k} record in {} files ({records} records)", files.len());
    }
}

#[test]
fn every_id_is_explained_on_the_conformance_corpus() {
    let cases = corpus::collect_cases(&corpus::corpus_dir());
    let (mut checked, mut failures) = (0, Vec::new());
    for case in &cases {
        let Ok(mut module) = hloscope_core::parse::mlir::parse(&case.text) else { continue };
        // Over the limits: the pipeline refuses it before any pass runs.
        if hloscope_core::limits::check_module(&module, &Default::default()).is_err() {
            continue;
        }
        match run_checked(&mut module, "default") {
            Ok(_) => checked += 1,
            Err(e) => failures.push(format!("{}: {e}", case.name)),
        }
    }
    assert!(failures.is_empty(), "{} cases:\n{}", failures.len(), failures.join("\n"));
    assert!(checked > 1700, "only {checked} cases were checked");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_id_is_explained_on_random_graphs((n, steps, _values) in random_graphs::case(random_graphs::Ops::All, 24)) {
        let text = random_graphs::program(n, &steps);
        let mut module = hloscope_core::parse::mlir::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        run_checked(&mut module, "default").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    }
}

/// Parses HLO text, runs `spec`, checks every pair, and returns the snapshots.
fn run_hlo(text: &str, spec: &str) -> Vec<Snapshot> {
    let mut module = hloscope_core::parse::hlo::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    run_checked(&mut module, spec).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn s(x: &str) -> String {
    x.to_string()
}

#[test]
fn cse_replaces_and_removes_a_duplicate_and_dce_removes_dead_code() {
    let snaps = run_hlo(
        "HloModule m
ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %x = f32[4] add(%a, %b)
  %y = f32[4] add(%b, %a)
  %dead = f32[4] exponential(%a)
  ROOT %r = f32[4] multiply(%x, %y)
}
",
        "cse,dce",
    );
    assert_eq!(snaps[1].pass, "cse");
    assert_eq!(
        snaps[1].provenance,
        vec![
            Provenance::ReplacedBy { id: s("y"), by: s("x"), rule: "cse" },
            Provenance::Removed { id: s("y"), rule: "cse" },
        ]
    );
    assert_eq!(snaps[2].pass, "dce");
    assert_eq!(snaps[2].provenance, vec![Provenance::Removed { id: s("dead"), rule: "dce" }]);
    // The wire format: a snake_case `kind` tag beside the fields.
    let json = serde_json::to_value(&snaps[1].provenance[0]).unwrap();
    assert_eq!(json, serde_json::json!({"kind": "replaced_by", "id": "y", "by": "x", "rule": "cse"}));
}

#[test]
fn simplifier_records_the_rule_that_replaced_an_add_of_zero() {
    // `x + 0` is exact for integers (for floats only `x + (-0.0)` is).
    let snaps = run_hlo(
        "HloModule m
ENTRY %main (x: s32[4]) -> s32[4] {
  %x = s32[4] parameter(0)
  %zero = s32[] constant(0)
  %zeros = s32[4] broadcast(%zero), dimensions={}
  %sum = s32[4] add(%x, %zeros)
  ROOT %r = s32[4] multiply(%sum, %sum)
}
",
        "simplify",
    );
    let p = &snaps[1].provenance;
    assert_eq!(p[0], Provenance::ReplacedBy { id: s("sum"), by: s("x"), rule: "add-zero" }, "{p:?}");
    for id in ["sum", "zeros", "zero"] {
        assert!(p.contains(&Provenance::Removed { id: s(id), rule: "dce" }), "{id} removed: {p:?}");
    }
    assert_eq!(p.len(), 4, "{p:?}");
}

#[test]
fn simplifier_records_the_helpers_a_rule_creates() {
    // `x - x -> 0` for integers: `d` becomes a broadcast of a new scalar zero (it keeps
    // its name), which `r = negate(d)` then reads.
    let snaps = run_hlo(
        "HloModule m
ENTRY %main (x: s32[4]) -> (s32[4], s32[4]) {
  %x = s32[4] parameter(0)
  %d = s32[4] subtract(%x, %x)
  ROOT %t = (s32[4], s32[4]) tuple(%d, %x)
}
",
        "simplify",
    );
    let p = &snaps[1].provenance;
    match &p[..] {
        [Provenance::CreatedBy { id, rule: "sub-self-int" }] => assert!(id.starts_with("constant."), "{id}"),
        _ => panic!("one new constant: {p:?}"),
    }
}

#[test]
fn a_fused_elementwise_chain_records_each_member_and_the_fusion() {
    let snaps = run_hlo(
        "HloModule m
ENTRY %main (a: f32[64], b: f32[64]) -> f32[64] {
  %a = f32[64] parameter(0)
  %b = f32[64] parameter(1)
  %m = f32[64] multiply(%a, %b)
  ROOT %e = f32[64] exponential(%m)
}
",
        "fusion",
    );
    let p = &snaps[1].provenance;
    let fusion = match p.first() {
        Some(Provenance::CreatedBy { id, rule: "loop-fusion" }) => id.clone(),
        other => panic!("the fusion first, created by loop-fusion: {other:?} in {p:?}"),
    };
    assert!(fusion.starts_with("fusion."), "{fusion}");
    assert_eq!(
        p[1..],
        [
            Provenance::FusedInto { id: s("m"), fusion: fusion.clone(), rule: "loop-fusion" },
            Provenance::FusedInto { id: s("e"), fusion: fusion.clone(), rule: "loop-fusion" },
            Provenance::ReplacedBy { id: s("e"), by: fusion.clone(), rule: "loop-fusion" },
        ]
    );
    let ids: Vec<&str> = snaps[1].graph.nodes.iter().map(|n| n.id.as_str()).collect();
    assert!(ids.contains(&format!("{fusion}/m").as_str()) && ids.contains(&format!("{fusion}/e").as_str()), "{ids:?}");
}

#[test]
fn a_copy_fused_into_two_kernels_is_cloned_from_its_original() {
    // `n` is cheap and read by two kernels (one per exponential): each gets a copy, and
    // the original goes away.
    let snaps = run_hlo(
        "HloModule m
ENTRY %main (a: f32[64]) -> (f32[64], f32[64]) {
  %a = f32[64] parameter(0)
  %n = f32[64] negate(%a)
  %e1 = f32[64] exponential(%n)
  %e2 = f32[64] log(%n)
  ROOT %t = (f32[64], f32[64]) tuple(%e1, %e2)
}
",
        "fusion",
    );
    let p = &snaps[1].provenance;
    let clones: Vec<&Provenance> = p.iter().filter(|r| matches!(r, Provenance::ClonedFrom { .. })).collect();
    assert_eq!(clones.len(), 2, "{p:?}");
    for c in clones {
        let Provenance::ClonedFrom { id, original, rule } = c else { unreachable!() };
        assert_eq!((original.as_str(), *rule), ("n", "duplicate-into-consumer"));
        assert!(id.starts_with("fusion.") && id.contains("/n.clone"), "{id}");
    }
    assert!(p.contains(&Provenance::Removed { id: s("n"), rule: "duplicate-into-consumer" }), "{p:?}");
}

#[test]
fn inlining_creates_the_copies_and_replaces_the_call() {
    let snaps = run_hlo(
        "HloModule m
%sq (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %s = f32[4] multiply(%x, %x)
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %c = f32[4] call(%a), to_apply=%sq
  ROOT %r = f32[4] negate(%c)
}
",
        "inline",
    );
    let p = &snaps[1].provenance;
    let copy = match p.first() {
        Some(Provenance::CreatedBy { id, rule: "inline-call" }) => id.clone(),
        other => panic!("the copy of the callee's multiply first: {other:?} in {p:?}"),
    };
    assert_eq!(
        p[1..],
        [
            Provenance::ReplacedBy { id: s("c"), by: copy, rule: "inline-call" },
            Provenance::Removed { id: s("c"), rule: "inline-call" },
        ]
    );
}
