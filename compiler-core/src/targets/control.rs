//! Control flow driven from the host, as every target runs it: a while loop's condition
//! and body, and a conditional's branches, are programs of their own, compiled for the
//! target; the host reads the condition's pred or the selector, runs the chosen program
//! and carries the loop state from one iteration to the next. What is target-neutral
//! about that lives here: the limits, which branch a selector picks, and the state.

use crate::ir::{Scalar, Value};

/// Iterations after which a loop driven from the host gives up (an endless loop from a
/// stranger's program must end with an error, not hang).
pub const MAX_LOOP_ITERATIONS: u64 = 10_000_000;

/// Nesting of control flow past which a target interprets the bodies instead of
/// compiling them (each level is a program of its own).
pub const MAX_DEPTH: usize = 16;

/// Counts one more iteration of a loop, or fails past [`MAX_LOOP_ITERATIONS`].
pub fn count_iteration(iterations: &mut u64) -> Result<(), String> {
    *iterations += 1;
    if *iterations > MAX_LOOP_ITERATIONS {
        return Err(format!("gave up after {MAX_LOOP_ITERATIONS} loop iterations (is the loop infinite?)"));
    }
    Ok(())
}

/// Whether a loop's condition, `go` (a pred scalar), lets it run once more.
pub fn loop_continues(go: &Value) -> Result<bool, String> {
    match go.as_array().map(|l| l.get(0)) {
        Some(Scalar::Pred(p)) => Ok(p),
        _ => Err("the while condition is not a pred scalar".into()),
    }
}

/// The loop state after an iteration whose body returned `next`, for a loop of `n`
/// values (one value is the body's whole result; several are its tuple's elements).
pub fn next_state(next: Value, n: usize) -> Result<Vec<Value>, String> {
    if n == 1 {
        return Ok(vec![next]);
    }
    match next {
        Value::Tuple(vs) if vs.len() == n => Ok(vs),
        _ => Err(format!("the while body must return a tuple of {n} values")),
    }
}

/// The loop's result from its final state (the inverse of [`next_state`]).
pub fn loop_result(mut state: Vec<Value>) -> Value {
    if state.len() == 1 {
        state.pop().expect("one value")
    } else {
        Value::Tuple(state)
    }
}

/// The branch of `branches` (at least one) a conditional's `selector` picks: a pred picks
/// branch 0 for true and 1 for false; an integer its branch, the last one when it is out
/// of range (negative included), as HLO says.
pub fn branch_index(selector: &Value, branches: usize) -> Result<usize, String> {
    let last = branches.checked_sub(1).ok_or("a conditional without branches")?;
    match selector.as_array().map(|l| l.get(0)) {
        Some(Scalar::Pred(p)) => Ok(usize::from(!p).min(last)),
        Some(Scalar::S(i)) => Ok(usize::try_from(i).map_or(last, |i| i.min(last))),
        Some(Scalar::U(i)) => Ok(usize::try_from(i).map_or(last, |i| i.min(last))),
        _ => Err("the conditional's selector is not an integer or pred".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ElementType, Literal};

    fn scalar(elem: ElementType, s: Scalar) -> Value {
        Value::Array(Literal::scalar_from(elem, s))
    }

    #[test]
    fn selectors_pick_hlo_s_branches() {
        let pick = |v: Value| branch_index(&v, 3).unwrap();
        assert_eq!(pick(scalar(ElementType::Pred, Scalar::Pred(true))), 0);
        assert_eq!(pick(scalar(ElementType::Pred, Scalar::Pred(false))), 1);
        assert_eq!(pick(scalar(ElementType::S32, Scalar::S(1))), 1);
        assert_eq!(pick(scalar(ElementType::S32, Scalar::S(7))), 2, "out of range: the last");
        assert_eq!(pick(scalar(ElementType::S32, Scalar::S(-1))), 2, "negative: the last");
        assert!(branch_index(&scalar(ElementType::F32, Scalar::F(0.0)), 3).is_err());
    }

    #[test]
    fn loop_state_round_trips_one_value_and_tuples() {
        let one = scalar(ElementType::S32, Scalar::S(4));
        assert_eq!(next_state(one.clone(), 1).unwrap(), vec![one.clone()]);
        let pair = Value::Tuple(vec![one.clone(), one.clone()]);
        assert_eq!(next_state(pair.clone(), 2).unwrap().len(), 2);
        assert!(next_state(one.clone(), 2).is_err());
        assert_eq!(loop_result(vec![one.clone(), one.clone()]), pair);
        assert!(!loop_continues(&scalar(ElementType::Pred, Scalar::Pred(false))).unwrap());
        assert!(loop_continues(&one).is_err());
    }
}
