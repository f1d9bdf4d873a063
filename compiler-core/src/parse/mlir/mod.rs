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
    let ast = reader::read_module(&mut c)?;
    Ok(ast.funcs.into_iter().map(|f| f.name).collect())
}

/// Parses with an explicit entry function (`None`: the default choice of [`parse`]).
pub fn parse_with_entry(text: &str, entry: Option<&str>) -> Result<Module, ParseError> {
    let mut c = lexer::Cursor::new(text);
    let ast = reader::read_module(&mut c)?;
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
    lw.lower_entry(entry)?;
    Ok(lw.module)
}
