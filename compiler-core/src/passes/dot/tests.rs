//! Tests of the dot passes: HLO text in, the entry computation's text out; the cases
//! where a pass must not fire leave the module untouched; and every module means the same
//! before and after, bit for bit, on seeded random inputs (NaN, ±0, ±inf included).

use super::{DotMerger, DotStrengthReduction, TransposeFolding};
use crate::ir::Module;
use crate::passes::simplify::tests::{assert_same_results, entry_text, module, normalize};
use crate::passes::{Pass, PassLog};

fn run(pass: &dyn Pass, m: &Module) -> (Module, PassLog, bool) {
    let mut after = m.clone();
    let mut log = PassLog::default();
    let changed = pass.run(&mut after, &mut log);
    crate::verify::verify_structure(&after).unwrap_or_else(|e| panic!("{} broke the module: {e}", pass.name()));
    (after, log, changed)
}

/// `rule` fires on `body`, the entry then reads `want`, the results are the same, and a
/// second run changes nothing.
fn check(pass: &dyn Pass, rule: &str, body: &str, want: &str) -> PassLog {
    let m = module("", body);
    let (after, log, changed) = run(pass, &m);
    assert!(changed, "{rule}: nothing changed");
    assert!(log.rewrites.iter().any(|r| r.rule == rule), "{rule} did not fire: {:?}", log.rewrites);
    assert_eq!(entry_text(&after), normalize(want), "{rule}: unexpected result");
    assert_same_results(&m, &after, 40);
    assert!(!run(pass, &after).2, "{rule}: not a fixed point");
    log
}

fn check_unchanged(pass: &dyn Pass, body: &str) -> PassLog {
    let m = module("", body);
    let (after, log, changed) = run(pass, &m);
    assert!(!changed, "expected no change, got {:?}", log.rewrites);
    assert!(log.rewrites.is_empty());
    assert_eq!(entry_text(&after), entry_text(&m));
    log
}

// ---- transpose folding ----------------------------------------------------------------

#[test]
fn an_operand_transpose_folds_into_the_dot_dims() {
    check(
        &TransposeFolding,
        "transpose-operand-into-dot",
        "%a = f32[3,2] parameter(0)\n %b = f32[3,4] parameter(1)\n %t = f32[2,3] transpose(%a), dimensions={1,0}\n ROOT %d = f32[2,4] dot(%t, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "%a = f32[3,2] parameter(0)\n %b = f32[3,4] parameter(1)\n ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
    );
    check(
        &TransposeFolding,
        "transpose-operand-into-dot",
        "%a = f32[5,2,3] parameter(0)\n %b = f32[5,4,3] parameter(1)\n %t = f32[5,3,4] transpose(%b), dimensions={0,2,1}\n ROOT %d = f32[5,2,4] dot(%a, %t), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
        "%a = f32[5,2,3] parameter(0)\n %b = f32[5,4,3] parameter(1)\n ROOT %d = f32[5,2,4] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}",
    );
    // The lhs free dims (2 and 4) would come out in the other order.
    check_unchanged(
        &TransposeFolding,
        "%a = f32[4,2,3] parameter(0)\n %b = f32[3,5] parameter(1)\n %t = f32[2,4,3] transpose(%a), dimensions={1,0,2}\n ROOT %d = f32[2,4,5] dot(%t, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}",
    );
}

#[test]
fn a_transposed_dot_swaps_its_operands() {
    // JAX's weight gradient: dW = transpose(dot(g, h)) over the batch dim.
    check(
        &TransposeFolding,
        "transposed-dot-swaps-operands",
        "%g = f32[6,2] parameter(0)\n %h = f32[6,8] parameter(1)\n %d = f32[2,8] dot(%g, %h), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n ROOT %t = f32[8,2] transpose(%d), dimensions={1,0}",
        "%g = f32[6,2] parameter(0)\n %h = f32[6,8] parameter(1)\n ROOT %t = f32[8,2] dot(%h, %g), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
    );
    // Batch dims permuted too: [b0, b1, m, n] -> [b1, b0, n, m].
    check(
        &TransposeFolding,
        "transposed-dot-swaps-operands",
        "%a = f32[2,3,4,5] parameter(0)\n %b = f32[2,3,5,6] parameter(1)\n %d = f32[2,3,4,6] dot(%a, %b), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}\n ROOT %t = f32[3,2,6,4] transpose(%d), dimensions={1,0,3,2}",
        "%a = f32[2,3,4,5] parameter(0)\n %b = f32[2,3,5,6] parameter(1)\n ROOT %t = f32[3,2,6,4] dot(%b, %a), lhs_batch_dims={1,0}, lhs_contracting_dims={2}, rhs_batch_dims={1,0}, rhs_contracting_dims={3}",
    );
}

#[test]
fn a_transposed_dot_with_other_users_or_a_mixed_permutation_stays() {
    // The dot has another user: swapping would compute it twice.
    check_unchanged(
        &TransposeFolding,
        "%g = f32[6,2] parameter(0)\n %h = f32[6,8] parameter(1)\n %d = f32[2,8] dot(%g, %h), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n %t = f32[8,2] transpose(%d), dimensions={1,0}\n ROOT %r = (f32[8,2], f32[2,8]) tuple(%t, %d)",
    );
    // The lhs free dims [4, 7] would come out reversed, which no dot writes.
    check_unchanged(
        &TransposeFolding,
        "%a = f32[4,7,3] parameter(0)\n %b = f32[3,5] parameter(1)\n %d = f32[4,7,5] dot(%a, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n ROOT %t = f32[5,7,4] transpose(%d), dimensions={2,1,0}",
    );
}

// ---- strength reduction ---------------------------------------------------------------

#[test]
fn a_matrix_vector_dot_becomes_a_multiply_and_a_reduce() {
    let log = check(
        &DotStrengthReduction,
        "dot-to-multiply-reduce",
        "%a = f32[3,4] parameter(0)\n %v = f32[4] parameter(1)\n ROOT %d = f32[3] dot(%a, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "%a = f32[3,4] parameter(0)
         %v = f32[4] parameter(1)
         %broadcast.0 = f32[3,4] broadcast(%a), dimensions={0,1}
         %broadcast.1 = f32[3,4] broadcast(%v), dimensions={1}
         %multiply.2 = f32[3,4] multiply(%broadcast.0, %broadcast.1)
         %constant.3 = f32[] constant(0)
         ROOT %d = f32[3] reduce(%multiply.2, %constant.3), dimensions={1}, to_apply=%add.4",
    );
    assert_eq!(log.rewrites.len(), 1);
}

#[test]
fn vector_lhs_outer_products_ints_and_mixed_types_reduce_too() {
    // A vector on the lhs contracting its only dim against a matrix's dim 0: the matrix
    // is transposed so its dims reach the product [n, k] in order.
    check(
        &DotStrengthReduction,
        "dot-to-multiply-reduce",
        "%v = f32[4] parameter(0)\n %b = f32[4,5] parameter(1)\n ROOT %d = f32[5] dot(%v, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
        "%v = f32[4] parameter(0)
         %b = f32[4,5] parameter(1)
         %broadcast.0 = f32[5,4] broadcast(%v), dimensions={1}
         %transpose.1 = f32[5,4] transpose(%b), dimensions={1,0}
         %broadcast.2 = f32[5,4] broadcast(%transpose.1), dimensions={0,1}
         %multiply.3 = f32[5,4] multiply(%broadcast.0, %broadcast.2)
         %constant.4 = f32[] constant(0)
         ROOT %d = f32[5] reduce(%multiply.3, %constant.4), dimensions={1}, to_apply=%add.5",
    );
    // An outer product (contracting size 1), batched: 0 + a*b, as the dot computes it.
    let m = module(
        "",
        "%a = f32[2,3,1] parameter(0)\n %b = f32[2,1,4] parameter(1)\n ROOT %d = f32[2,3,4] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
    );
    let (after, log, _) = run(&DotStrengthReduction, &m);
    assert_eq!(log.rewrites.len(), 1);
    assert!(entry_text(&after).contains("ROOT %d = f32[2,3,4] reduce("), "{}", entry_text(&after));
    assert_same_results(&m, &after, 40);
    // Integers wrap the same way summed in either form; s8 x s32 converts first.
    let m = module(
        "",
        "%a = s8[3,5] parameter(0)\n %v = s32[5] parameter(1)\n ROOT %d = s32[3] dot(%a, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    );
    let (after, _, changed) = run(&DotStrengthReduction, &m);
    assert!(changed && entry_text(&after).contains("s32[3,5] convert(%a)"), "{}", entry_text(&after));
    assert_same_results(&m, &after, 40);
}

#[test]
fn matrix_products_half_floats_and_preds_keep_their_dot() {
    check_unchanged(
        &DotStrengthReduction,
        "%a = f32[2,3] parameter(0)\n %b = f32[3,4] parameter(1)\n ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    );
    // f16 dots sum in wider precision and round once; a reduce would round each step.
    check_unchanged(
        &DotStrengthReduction,
        "%a = f16[3,4] parameter(0)\n %v = f16[4] parameter(1)\n ROOT %d = f16[3] dot(%a, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    );
    check_unchanged(
        &DotStrengthReduction,
        "%a = pred[3,4] parameter(0)\n %v = pred[4] parameter(1)\n ROOT %d = pred[3] dot(%a, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    );
}

// ---- dot merger -----------------------------------------------------------------------

/// Three dots reading `x` (`f32[64,8]`), each through an add to the output.
fn siblings(weights: &str) -> String {
    format!(
        "%x = f32[64,8] parameter(0)\n {weights}\n %q = f32[64,2] dot(%x, %wq), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n %k = f32[64,2] dot(%x, %wk), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n %v = f32[64,3] dot(%x, %wv), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n %qk = f32[64,2] add(%q, %k)\n %vv = f32[64,3] add(%v, %v)\n ROOT %r = (f32[64,2], f32[64,3]) tuple(%qk, %vv)"
    )
}

#[test]
fn sibling_dots_merge_into_one_over_concatenated_weights() {
    let body = siblings("%wq = f32[8,2] parameter(1)\n %wk = f32[8,2] parameter(2)\n %wv = f32[8,3] parameter(3)");
    let m = module("", &body);
    let (after, log, changed) = run(&DotMerger::default(), &m);
    assert!(changed);
    let text = entry_text(&after);
    assert!(text.contains("%concatenate.0 = f32[8,7] concatenate(%wq, %wk, %wv), dimensions={1}"), "{text}");
    assert!(text.contains("%dot.1 = f32[64,7] dot(%x, %concatenate.0)"), "{text}");
    assert!(text.contains("%q = f32[64,2] slice(%dot.1), slice={[0:64], [0:2]}"), "{text}");
    assert!(text.contains("%k = f32[64,2] slice(%dot.1), slice={[0:64], [2:4]}"), "{text}");
    assert!(text.contains("%v = f32[64,3] slice(%dot.1), slice={[0:64], [4:7]}"), "{text}");
    assert_eq!(text.matches(" dot(").count(), 1, "{text}");
    // x is 2 KiB, read twice less; the weights are 224 B, copied once.
    let taken: Vec<_> = log.decisions.iter().filter(|d| d.taken).collect();
    assert_eq!(taken.len(), 2, "{:?}", log.decisions);
    assert!(taken.iter().all(|d| d.rule == "dot-merger" && d.consumer == "q"));
    assert_eq!(taken.iter().map(|d| d.bytes_saved).sum::<i64>(), 2 * 2048 - 2 * 224);
    assert_same_results(&m, &after, 40);
    assert!(!run(&DotMerger::default(), &after).2, "not a fixed point");
}

#[test]
fn a_merge_that_moves_more_than_it_saves_is_refused_with_the_numbers() {
    // Big weights, small shared operand: concatenating the weights costs more than
    // reading x twice more saves.
    let body = "%x = f32[2,64] parameter(0)\n %w1 = f32[64,64] parameter(1)\n %w2 = f32[64,64] parameter(2)\n %a = f32[2,64] dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n %b = f32[2,64] dot(%x, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n ROOT %s = f32[2,64] add(%a, %b)";
    let log = check_unchanged(&DotMerger::default(), body);
    let [d] = log.decisions.as_slice() else { panic!("{:?}", log.decisions) };
    assert_eq!(
        (d.rule, d.taken, d.producer.as_str(), d.consumer.as_str()),
        ("refuse-dot-merger-bytes", false, "b", "a")
    );
    assert!(d.reason.contains("saving 512 B") && d.reason.contains("moves 64.0 KiB"), "{}", d.reason);
    // The size limit refuses too.
    let small = DotMerger { max_bytes: 100, ..DotMerger::default() };
    let log = check_unchanged(
        &small,
        &siblings("%wq = f32[8,2] parameter(1)\n %wk = f32[8,2] parameter(2)\n %wv = f32[8,3] parameter(3)"),
    );
    assert!(log.decisions.iter().all(|d| d.rule == "refuse-dot-merger-size" && !d.taken), "{:?}", log.decisions);
}

#[test]
fn dependent_dots_and_different_dims_do_not_merge() {
    // The second dot reads the first's result: they cannot be one dot.
    check_unchanged(
        &DotMerger::default(),
        "%x = f32[8,8] parameter(0)\n %w = f32[8,8] parameter(1)\n %a = f32[8,8] dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n %b = f32[8,8] dot(%x, %a), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n ROOT %s = f32[8,8] add(%a, %b)",
    );
    // Different contracting dims.
    check_unchanged(
        &DotMerger::default(),
        "%x = f32[8,8] parameter(0)\n %w1 = f32[8,2] parameter(1)\n %w2 = f32[2,8] parameter(2)\n %a = f32[8,2] dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n %b = f32[8,2] dot(%x, %w2), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n ROOT %s = f32[8,2] add(%a, %b)",
    );
}

#[test]
fn weights_defined_after_a_sibling_s_users_are_reordered_before_the_merged_dot() {
    // %wk is computed after %q's user; the merged dot needs it, so the order is rebuilt
    // with operands first, and constants small enough to fold cost nothing to concatenate.
    let body = "%x = f32[64,4] parameter(0)\n %wq = f32[4,2] constant({{1,2},{3,4},{5,6},{7,8}})\n %q = f32[64,2] dot(%x, %wq), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n %e = f32[64,2] exponential(%q)\n %w0 = f32[4,2] constant({{1,0},{0,1},{1,1},{0,0}})\n %wk = f32[4,2] negate(%w0)\n %k = f32[64,2] dot(%x, %wk), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n ROOT %s = f32[64,2] add(%e, %k)";
    let m = module("", body);
    let (after, log, changed) = run(&DotMerger::default(), &m);
    assert!(changed, "{:?}", log.decisions);
    let text = entry_text(&after);
    let pos = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} missing in\n{text}"));
    assert!(
        pos("%wk = ") < pos("concatenate(%wq, %wk)") && pos("concatenate(") < pos("%q = f32[64,2] slice("),
        "{text}"
    );
    assert!(pos("%q = f32[64,2] slice(") < pos("%e = "), "{text}");
    assert_same_results(&m, &after, 40);
}

// ---- canonicalization -----------------------------------------------------------------

#[test]
fn batch_dims_move_first_and_dims_group_into_one_matrix_product() {
    use super::DotCanonicalize;
    // Attention's scores, as JAX writes them: q [b, t, h, d] . k [b, s, h, d] over d,
    // batched over b and h.
    let m = module(
        "",
        "%q = f32[2,3,4,5] parameter(0)\n %k = f32[2,6,4,5] parameter(1)\n ROOT %s = f32[2,4,3,6] dot(%q, %k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}",
    );
    let (after, log, changed) = run(&DotCanonicalize, &m);
    assert!(changed && log.rewrites.iter().all(|r| r.rule == "dot-canonical-form"));
    assert_eq!(
        entry_text(&after),
        normalize(
            "%q = f32[2,3,4,5] parameter(0)
             %k = f32[2,6,4,5] parameter(1)
             %transpose.0 = f32[2,4,3,5] transpose(%q), dimensions={0,2,1,3}
             %transpose.1 = f32[2,4,5,6] transpose(%k), dimensions={0,2,3,1}
             ROOT %s = f32[2,4,3,6] dot(%transpose.0, %transpose.1), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}"
        )
    );
    assert_same_results(&m, &after, 40);
    // Two contracting dims and two free dims: grouped by reshapes, no transpose needed.
    let m = module(
        "",
        "%a = f32[2,3,4,5] parameter(0)\n %b = f32[4,5,6] parameter(1)\n ROOT %d = f32[2,3,6] dot(%a, %b), lhs_contracting_dims={2,3}, rhs_contracting_dims={0,1}",
    );
    let (after, _, changed) = run(&DotCanonicalize, &m);
    let text = entry_text(&after);
    assert!(changed && !text.contains("transpose"), "{text}");
    assert!(text.contains("f32[6,20] reshape(%a)") && text.contains("f32[20,6] reshape(%b)"), "{text}");
    assert!(text.contains("ROOT %d = f32[2,3,6] reshape(%dot."), "{text}");
    assert_same_results(&m, &after, 40);
    assert!(!run(&DotCanonicalize, &after).2, "not a fixed point");
}

#[test]
fn canonical_dots_stay_as_they_are() {
    use super::DotCanonicalize;
    // A matmul, one with its lhs transposed (contracting first), a batched one.
    check_unchanged(
        &DotCanonicalize,
        "%a = f32[2,3] parameter(0)\n %b = f32[3,4] parameter(1)\n ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
    );
    check_unchanged(
        &DotCanonicalize,
        "%a = f32[3,2] parameter(0)\n %b = f32[4,3] parameter(1)\n ROOT %d = f32[2,4] dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={1}",
    );
    check_unchanged(
        &DotCanonicalize,
        "%a = f32[5,2,3] parameter(0)\n %b = f32[5,3,4] parameter(1)\n ROOT %d = f32[5,2,4] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
    );
}
