//! The syntax tree the MLIR reader builds before lowering to the IR.
//!
//! Pretty (custom assembly) forms and the generic quoted form both read into the same
//! [`OpAst`]: a name, operands, named attributes, regions and types. Lowering then
//! only deals with one shape of op. Functions are kept as trees so that calls and
//! composites can be inlined by lowering the callee's body again at each call site.

use super::lexer::Number;
use crate::ir::{ConvDims, Type};
use smallvec::SmallVec;

// An op's lists are short (one result, one or two operands) and there is one per line
// of a program: inline, so that reading an op allocates none of them.
/// An op's operands.
pub type Operands = SmallVec<[ValRef; 2]>;
/// An op's result types.
pub type Types = SmallVec<[Type; 1]>;

/// A use of a value: `%name` or `%name#index`. Its name is the text's own, the `len`
/// bytes after the `%` at `pos` (not a copy: one per operand of every op).
#[derive(Clone, Debug, PartialEq)]
pub struct ValRef {
    pub len: u32,
    pub index: Option<u32>,
    pub pos: usize,
}

/// Names bound by an op: `%0:2` (count 2) or `%a, %b` (two entries, count 1 each). The
/// name is the `len` bytes after the `%` at `pos`, as in [`ValRef`].
#[derive(Clone, Debug, PartialEq)]
pub struct ResultDef {
    pub len: u32,
    pub count: u32,
    pub pos: usize,
}

/// One element of a `dense<...>` list.
#[derive(Clone, Debug, PartialEq)]
pub enum Elem {
    Num(Number),
    Bool(bool),
    /// `(re, im)`: only valid for complex element types, which are unsupported.
    Complex,
}

/// A `dense<...>` literal as written; the element type comes from its `: type`.
#[derive(Clone, Debug, PartialEq)]
pub enum DenseBody {
    /// `dense<"0x...">`: raw little-endian bytes.
    Blob(Vec<u8>),
    /// A single unbracketed element: every element equal.
    Splat(Elem),
    /// Bracketed lists: the nested shape as written and the elements in row-major order.
    List { shape: Vec<usize>, elems: Vec<Elem> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    pub body: DenseBody,
    pub ty: Type,
    /// Offset of the `dense` keyword (for errors).
    pub pos: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Num(Number),
    Bool(bool),
    Str(String),
    /// A name without value in a dictionary (`{foo}`).
    Unit,
    Array(Vec<Attr>),
    /// `[..] x [..]` in pretty forms (`contracting_dims = [1] x [0]`).
    Pair(Box<Attr>, Box<Attr>),
    /// `array<i64: 1, 2>`.
    DenseArray(Vec<Attr>),
    // The large variants are boxed: an op's attribute list is read for every op of a
    // program, and each entry is as wide as the widest variant.
    Dense(Box<Dense>),
    Dict(Vec<AttrEntry>),
    Symbol(String),
    /// An enum value: `#stablehlo<comparison_direction LT>` or a bare word (`LT`).
    Enum(String),
    /// `#stablehlo.dot<...>`, `#stablehlo.gather<...>`, `#stablehlo.scatter<...>`.
    Struct(Box<(String, Vec<AttrEntry>)>),
    Conv(Box<ConvDims>),
    Type(Box<Type>),
    /// Anything else, kept as text (`#stablehlo.output_operand_alias<...>`, `<...>`).
    Raw(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct AttrEntry {
    pub name: String,
    pub value: Attr,
    /// The value as written, for attributes kept as text (custom calls).
    pub text: String,
}

/// A source location as JAX writes it (`loc(...)`), before alias resolution.
#[derive(Clone, Debug, PartialEq)]
pub enum LocAst {
    Unknown,
    /// `#loc12`.
    Alias(String),
    /// `"f.py":3:7` (an optional `to ...` range is dropped).
    File {
        file: String,
        line: u32,
        col: u32,
    },
    /// `"name"` or `"name"(child)`.
    Name(String, Option<Box<LocAst>>),
    /// `callsite(callee at caller)`.
    CallSite(Box<LocAst>, Box<LocAst>),
    Fused(Vec<LocAst>),
}

/// One block (the only one) of a region: its arguments and ops.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Region {
    pub args: Vec<(String, Type, usize)>,
    pub ops: Vec<OpAst>,
    pub pos: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OpAst {
    pub results: SmallVec<[ResultDef; 1]>,
    /// Full op name (`stablehlo.add`, `func.return`, `check.expect_eq`).
    pub name: String,
    pub operands: Operands,
    pub attrs: Vec<AttrEntry>,
    pub regions: Vec<Region>,
    /// Result types from `-> ...` or from the single type list of pretty forms.
    pub result_types: Types,
    /// The op spells its operand types (a function type after its `:`).
    pub spells_operand_types: bool,
    /// Compact reduce: `applies stablehlo.add`, with the offset of the op name.
    pub applies: Option<(String, usize)>,
    /// Symbol of a call (`func.call @f`), custom call target (`@foo`).
    pub callee: Option<String>,
    pub loc: Option<LocAst>,
    /// Offset of the op name.
    pub pos: usize,
}

impl OpAst {
    pub fn new(name: String, pos: usize) -> OpAst {
        OpAst {
            results: SmallVec::new(),
            name,
            operands: SmallVec::new(),
            attrs: Vec::new(),
            regions: Vec::new(),
            result_types: SmallVec::new(),
            spells_operand_types: false,
            applies: None,
            callee: None,
            loc: None,
            pos,
        }
    }

    pub fn attr(&self, names: &[&str]) -> Option<&AttrEntry> {
        names.iter().find_map(|n| self.attrs.iter().find(|a| a.name == *n))
    }

    /// Number of values the op's result names bind.
    pub fn result_count(&self) -> usize {
        self.results.iter().fold(0usize, |a, r| a.saturating_add(r.count as usize))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FuncAst {
    pub name: String,
    pub public: bool,
    /// The body; without ops when they were left in the text (`deferred`).
    pub body: Region,
    /// Where the body's ops start (after its `{`) and where the body ends (after its
    /// `}`) when the reader skipped them, to be lowered as they are read
    /// ([`super::reader::read_module`]'s `defer`).
    pub deferred: Option<(usize, usize)>,
    pub result_types: Vec<Type>,
    pub pos: usize,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct ModuleAst {
    pub name: Option<String>,
    pub funcs: Vec<FuncAst>,
    pub loc_aliases: Vec<(String, LocAst)>,
}
