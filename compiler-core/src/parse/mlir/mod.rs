//! StableHLO parser: MLIR text (as JAX's `lower(...).as_text()` prints it, and as the
//! StableHLO conformance files are written) to the IR.
//!
//! Two stages:
//! 1. `reader` (with `lexer`, `types`, `attrs`) reads the text into a syntax tree
//!    (`ast`): functions, ops in generic or pretty form, attributes, `dense<...>`
//!    literals, locations and `#loc` aliases.
//! 2. `lower` and `lower_ops` turn the entry function into IR computations: regions
//!    become sub-computations, implicit captures become explicit operands, calls and
//!    composites are inlined, ops with several results become a tuple value plus
//!    GetTupleElements, and CHLO ops are handed to [`crate::parse::chlo::decompose`].
//!
//! Errors carry the line:col of the offending token or op. Nothing here panics on bad
//! input: nesting is bounded, and sizes are checked before anything is allocated.

mod ast;
mod attrs;
#[cfg(all(any(feature = "cpu", feature = "wasm-run"), not(target_arch = "wasm32")))]
mod beside;
mod dense;
mod lexer;
mod lower;
mod lower_ops;
mod reader;
mod types;

use super::ParseError;
use crate::ir::Module;

/// Parses StableHLO MLIR text. The entry is `@main` if present, else the only
/// function, else the only public one.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    parse_with_entry(text, None)
}

/// Names of the functions defined in the text, in order (a harness can run each
/// zero-argument one through [`parse_with_entry`]).
pub fn function_names(text: &str) -> Result<Vec<String>, ParseError> {
    let mut c = lexer::Cursor::new(text);
    let ast = reader::read_module(&mut c, None)?;
    Ok(ast.funcs.into_iter().map(|f| f.name).collect())
}

/// Parses with an explicit entry function (`None`: the default choice of [`parse`]).
///
/// The entry's body is lowered as its ops are read (`Read::EntryAsLowered`), so that a
/// large `main` never exists whole as a syntax tree. An error found that way may not be
/// the first in the text (an undefined name before a syntax error further down), so a
/// text with an error is read again whole first, as it always was, for the error a
/// reader going from the top meets first.
pub fn parse_with_entry(text: &str, entry: Option<&str>) -> Result<Module, ParseError> {
    parse_read(text, entry, Read::EntryAsLowered).or_else(|_| parse_read(text, entry, Read::Whole))
}

/// How [`parse_read`] reads the text.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Read {
    /// All of it, then lowers the entry.
    Whole,
    /// All but the entry's body (for the default entry: the first `@main`), then the
    /// entry's ops one at a time, each lowered at once.
    EntryAsLowered,
}

fn parse_read(text: &str, entry: Option<&str>, read: Read) -> Result<Module, ParseError> {
    let mut c = lexer::Cursor::new(text);
    let defer = (read == Read::EntryAsLowered).then_some(entry.unwrap_or("main"));
    let ast = reader::read_module(&mut c, defer)?;
    let chosen = match entry {
        Some(name) => Some(
            ast.funcs
                .iter()
                .find(|f| f.name == name)
                .ok_or_else(|| ParseError::new(1, 1, format!("no function @{name}")))?,
        ),
        None => ast.funcs.iter().find(|f| f.name == "main"),
    };
    let entry = match chosen {
        Some(f) => f,
        None => {
            let public: Vec<_> = ast.funcs.iter().filter(|f| f.public).collect();
            match (ast.funcs.len(), public.len()) {
                (0, _) => return Err(ParseError::new(1, 1, "no function to run: expected a `func.func`")),
                (1, _) => &ast.funcs[0],
                (_, 1) => public[0],
                _ => {
                    let (l, col) = c.line_col(ast.funcs[1].pos);
                    return Err(ParseError::new(
                        l,
                        col,
                        "several functions and no @main: cannot tell which one to run",
                    ));
                }
            }
        }
    };
    let name = ast.name.clone().unwrap_or_else(|| entry.name.clone());
    let lines = c.line_index().clone();
    let mut lw = lower::Lowerer::new(text, &lines, &ast, &name);
    lw.lower_entry(entry, &mut c)?;
    Ok(lw.module)
}

#[cfg(test)]
mod tests {
    use super::{parse_read, parse_with_entry, Read};

    /// Both ways of reading, as the modules' debug text (names, locations, computations).
    fn both(text: &str) -> (String, String) {
        let read = |how| format!("{:?}", parse_read(text, None, how).unwrap_or_else(|e| panic!("{how:?}: {e}")));
        (read(Read::EntryAsLowered), read(Read::Whole))
    }

    /// JAX's own output (regions of while, cond, scan, sort; locations), lowered as it is
    /// read, is the module that reading the whole text first gives.
    #[test]
    fn the_entry_lowered_as_it_is_read_is_the_entry_read_whole() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mlir_samples");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).expect("the JAX samples") {
            let path = entry.expect("a sample").path();
            if path.extension().is_some_and(|e| e == "mlir") {
                let text = std::fs::read_to_string(&path).expect("a readable sample");
                let (streamed, whole) = both(&text);
                assert_eq!(streamed, whole, "{}", path.display());
                files += 1;
            }
        }
        assert!(files >= 14, "{files} samples");
    }

    /// The skipped body ends at its own `}`: not at one in a string or a comment, and a
    /// function after it (called from it) is read as usual.
    #[test]
    fn braces_in_strings_and_comments_do_not_end_a_skipped_body() {
        let text = r#"
module @m {
  func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    // a comment with a brace } and a quote "
    stablehlo.custom_call @check.expect_eq(%a, %a) {backend_config = "}{ \" }}", has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    %1 = func.call @twice(%a) : (tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
  func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %x, %x : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}"#;
        let (streamed, whole) = both(text);
        assert_eq!(streamed, whole);
        assert!(streamed.contains("Add"), "{streamed}");
    }

    /// A text with two errors reports the first one in the text, as reading it whole
    /// did: lowering as it reads would meet the undefined name (line 3) before the
    /// malformed op (line 2 is fine, line 4 is not) only if it read on, so it is read
    /// again whole.
    #[test]
    fn of_two_errors_the_first_in_the_text_is_reported() {
        let text = "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a, %a : tensor<f32>\n  %1 = stablehlo.add %nope, %a : tensor<f32>\n  %2 = stablehlo.add %a, : tensor<f32>\n  return %2 : tensor<f32>\n}";
        let streamed = parse_read(text, None, Read::EntryAsLowered).expect_err("an undefined name");
        assert_eq!((streamed.line, streamed.message.contains("undefined value %nope")), (3, true), "{streamed}");
        let e = parse_with_entry(text, None).expect_err("a malformed op");
        assert_eq!(e.line, 4, "{e}");
    }

    /// A body whose `{` never closes is an error at the end of the text, as before.
    #[test]
    fn an_unclosed_body_is_an_error() {
        let text = "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a, %a : tensor<f32>\n  return %0 : tensor<f32>\n";
        assert!(parse_read(text, None, Read::EntryAsLowered).is_err());
        let e = parse_with_entry(text, None).expect_err("unclosed");
        assert!(e.message.contains("expected `}`"), "{e}");
    }

    /// A `main` long enough to be read on a second core (`beside::MIN_BYTES`): a chain
    /// of `n` ops with a reduce and its region every tenth op. `bad` replaces op `k`'s
    /// line.
    fn long_main(n: usize, bad: &[(usize, &str)]) -> String {
        let mut text = String::from(
            "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %v0 = stablehlo.add %a, %a : tensor<4xf32>\n",
        );
        for k in 1..n {
            if let Some((_, line)) = bad.iter().find(|(at, _)| *at == k) {
                text += line;
                text += "\n";
                continue;
            }
            if k % 10 == 0 {
                let p = k - 1;
                text += &format!("  %c{k} = stablehlo.constant dense<0.0> : tensor<f32>\n");
                text += &format!("  %s{k} = stablehlo.reduce(%v{p} init: %c{k}) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n");
                text += "     reducer(%x: tensor<f32>, %y: tensor<f32>)  {\n";
                text += "      %m = stablehlo.maximum %x, %y : tensor<f32>\n";
                text += "      stablehlo.return %m : tensor<f32>\n    }\n";
                text += &format!(
                    "  %v{k} = stablehlo.broadcast_in_dim %s{k}, dims = [] : (tensor<f32>) -> tensor<4xf32>\n"
                );
            } else {
                text += &format!("  %v{k} = stablehlo.multiply %v{}, %a : tensor<4xf32>\n", k - 1);
            }
        }
        text += &format!("  return %v{} : tensor<4xf32>\n}}\n", n - 1);
        text
    }

    /// Read on a second core and lowered on this one, a long `main` is the module read
    /// whole; its errors are the ones one thread reading and lowering in turn meets.
    #[test]
    #[cfg(all(any(feature = "cpu", feature = "wasm-run"), not(target_arch = "wasm32")))]
    fn a_long_main_read_beside_its_lowering_is_the_main_read_whole() {
        let text = long_main(3000, &[]);
        assert!(text.len() > 3 * super::beside::MIN_BYTES, "{} bytes", text.len());
        let (streamed, whole) = both(&text);
        assert_eq!(streamed, whole);
        assert!(streamed.matches("Reduce").count() >= 299, "the reduces are lowered");

        // A syntax error late in the body: every op before it is lowered first, so an
        // undefined name earlier wins; alone, the syntax error is the answer.
        let undefined = "  %v100 = stablehlo.multiply %nope, %a : tensor<4xf32>";
        let malformed = "  %v2500 = stablehlo.multiply %v2499, : tensor<4xf32>";
        let line_of = |text: &str, needle: &str| text.lines().position(|l| l == needle).map(|i| i + 1);
        for (bad, first) in [
            (vec![(100, undefined), (2500, malformed)], undefined),
            (vec![(2500, malformed)], malformed),
            (vec![(2999, undefined)], undefined),
        ] {
            let text = long_main(3000, &bad);
            let e = parse_read(&text, None, Read::EntryAsLowered).expect_err("an error");
            assert_eq!(Some(e.line as usize), line_of(&text, first), "{e}");
        }
        // An op after the terminator, far down the body.
        let text = long_main(3000, &[]).replace(
            "  return %v2999 : tensor<4xf32>\n}",
            "  return %v2999 : tensor<4xf32>\n  %after = stablehlo.add %a, %a : tensor<4xf32>\n}",
        );
        let e = parse_read(&text, None, Read::EntryAsLowered).expect_err("an op after the return");
        assert!(e.message.contains("after the region's terminator"), "{e}");
    }

    /// Nesting as deep as the reader allows (an attribute past the limit, regions just
    /// within it), far down a long body: read on a pool worker, it gives the answer one
    /// thread gives (the limit's error; the unknown op's), and never overflows the
    /// worker's stack.
    #[test]
    #[cfg(all(any(feature = "cpu", feature = "wasm-run"), not(target_arch = "wasm32")))]
    fn the_deepest_nesting_read_beside_is_an_answer_not_a_crash() {
        let depth = super::lexer::MAX_DEPTH as usize - 2;
        let attribute = format!("{}0{}", "[".repeat(depth), "]".repeat(depth));
        // A region takes two levels (its braces and its op): the deepest nest that reads.
        let regions = format!("{}{}", "\"x.y\"() ({ ".repeat(depth / 2), "}) : () -> () ".repeat(depth / 2));
        for deep in [
            format!("  %v2900 = stablehlo.multiply %v2899, %a {{deep = {attribute}}} : tensor<4xf32>"),
            format!("  {regions}"),
        ] {
            let text = long_main(3000, &[(2900, deep.as_str())]);
            let streamed = parse_read(&text, None, Read::EntryAsLowered).map(|m| format!("{m:?}"));
            let whole = parse_read(&text, None, Read::Whole).map(|m| format!("{m:?}"));
            assert_eq!(streamed.map_err(|e| e.to_string()), whole.map_err(|e| e.to_string()));
        }
    }
}
