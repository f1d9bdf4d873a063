//! XLA HLO text parser: what `--xla_dump_to` and JAX's `.compile().as_text()` print.
//!
//! ```text
//! HloModule jit_f, entry_computation_layout={(f32[2]{0})->f32[2]{0}}
//! %add_comp (a: f32[], b: f32[]) -> f32[] { ... }
//! ENTRY %main.3 (x: f32[2]) -> f32[2] {
//!   %x = f32[2]{0} parameter(0), metadata={op_name="x"}
//!   ROOT %neg.1 = f32[2]{0} negate(f32[2]{0} %x), metadata={op_name="jit(f)/neg" source_file="f.py" source_line=3}
//! }
//! ```
//!
//! Parsing runs in two phases. The first reads the text into raw computations (names,
//! types, opcodes, operand names, attribute value spans) without resolving anything, so
//! computations and instructions may appear in any order. The second resolves names,
//! builds typed `Op`s from the attributes (`ops.rs`) and orders each computation so that
//! operands come before users. Attributes the IR has no use for (`sharding`,
//! `frontend_attributes`, `backend_config` outside custom calls, ...) are skipped,
//! never fatal; ops hloscope does not support (collectives, send/recv, ...) are an error
//! at the op's line and column.
//!
//! Source locations: `metadata={op_name=... source_file=... source_line=...}` and, in
//! newer XLA, `stack_frame_id=N` resolved through the `FileNames` / `FileLocations` /
//! `StackFrames` tables that follow the header. `Loc::source` holds
//! `op_name @ file:line` (or either part alone; `file:line:col` with a
//! `source_column`), as the MLIR parser writes it; the HLO printer splits it back.

mod cursor;
mod ops;

use super::ParseError;
use crate::ir::{CompId, InstId, Instruction, Loc, Module, Op, Type};
use cursor::{error_at, Cur};
use std::collections::HashMap;
use std::sync::Arc;

/// One `name=value` attribute; `value` is a span of the text.
pub(super) struct RawAttr<'a> {
    pub name: &'a str,
    pub start: usize,
    pub end: usize,
}

/// What is inside an instruction's parentheses.
pub(super) enum RawArgs<'a> {
    Operands(Vec<(&'a str, usize)>),
    /// `parameter(N)`.
    Param(i64),
    /// `constant(...)`, already parsed against the instruction's shape.
    Constant(crate::ir::Literal),
}

pub(super) struct RawInst<'a> {
    pub name: &'a str,
    pub pos: usize,
    pub is_root: bool,
    pub ty: Type,
    pub opcode: &'a str,
    pub opcode_pos: usize,
    pub args: RawArgs<'a>,
    pub attrs: Vec<RawAttr<'a>>,
}

struct RawComp<'a> {
    name: &'a str,
    pos: usize,
    is_entry: bool,
    insts: Vec<RawInst<'a>>,
}

/// The debug tables newer XLA prints after the header, to resolve `stack_frame_id`.
#[derive(Default)]
struct DebugTables {
    file_names: HashMap<i64, String>,
    /// id -> (file name id, line)
    file_locations: HashMap<i64, (i64, i64)>,
    /// id -> file location id
    stack_frames: HashMap<i64, i64>,
}

impl DebugTables {
    fn frame_source(&self, frame: i64) -> Option<String> {
        let loc = self.stack_frames.get(&frame)?;
        let (file, line) = self.file_locations.get(loc)?;
        let name = self.file_names.get(file)?;
        Some(format!("{name}:{line}"))
    }
}

/// Parses XLA HLO text into a module. Errors carry the line and column of the problem.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    let mut cur = Cur::new(text);
    let mut module_name = None;
    let mut tables = DebugTables::default();
    let mut comps: Vec<RawComp> = Vec::new();
    loop {
        cur.ws();
        if cur.at_end() {
            break;
        }
        let at = cur.pos;
        let mut probe = cur;
        let w = probe.word();
        match w {
            "HloModule" => {
                cur = probe;
                module_name = Some(cur.name("module name")?.to_string());
                // Header attributes (entry_computation_layout, ...) are not needed.
                skip_line(&mut cur)?;
            }
            "FileNames" | "FunctionNames" | "FileLocations" | "StackFrames" => {
                cur = probe;
                parse_table(&mut cur, w, &mut tables)?;
            }
            "ENTRY" => {
                cur = probe;
                comps.push(parse_computation(&mut cur, true)?);
            }
            _ => {
                if cur.peek() != Some(b'%') && w.is_empty() {
                    return Err(error_at(text, at, format!("expected a computation, found {}", cur.describe())));
                }
                comps.push(parse_computation(&mut cur, false)?);
            }
        }
    }
    let Some(module_name) = module_name else {
        return Err(error_at(text, 0, "expected `HloModule name` at the start"));
    };
    build_module(text, module_name, comps, &tables)
}

/// Skips the rest of the current line, stepping over bracketed groups whole.
fn skip_line(cur: &mut Cur) -> Result<(), ParseError> {
    while let Some(c) = cur.peek() {
        match c {
            b'\n' => break,
            b'{' | b'(' | b'[' | b'"' => {
                if c == b'"' {
                    cur.string()?;
                } else {
                    cur.skip_group()?;
                }
            }
            _ => cur.pos += 1,
        }
    }
    Ok(())
}

/// One debug table: lines `N "text"` or `N {key=value ...}` until something else.
fn parse_table(cur: &mut Cur, which: &str, tables: &mut DebugTables) -> Result<(), ParseError> {
    loop {
        cur.ws();
        if !matches!(cur.peek(), Some(c) if c.is_ascii_digit()) {
            return Ok(());
        }
        let id = cur.int()?;
        cur.ws();
        if cur.peek() == Some(b'"') {
            let s = cur.string()?;
            if which == "FileNames" {
                tables.file_names.insert(id, s);
            }
            continue;
        }
        cur.expect(b'{')?;
        let mut fields = HashMap::new();
        while !cur.eat(b'}') {
            let key = cur.word();
            if key.is_empty() {
                return Err(cur.err(format!("bad {which} entry near {}", cur.describe())));
            }
            cur.expect(b'=')?;
            fields.insert(key, cur.int()?);
        }
        match which {
            "FileLocations" => {
                if let (Some(&f), Some(&l)) = (fields.get("file_name_id"), fields.get("line")) {
                    tables.file_locations.insert(id, (f, l));
                }
            }
            "StackFrames" => {
                if let Some(&l) = fields.get("file_location_id") {
                    tables.stack_frames.insert(id, l);
                }
            }
            _ => {}
        }
    }
}

/// `[ENTRY] %name [(params) -> type] { instructions }`.
fn parse_computation<'a>(cur: &mut Cur<'a>, is_entry: bool) -> Result<RawComp<'a>, ParseError> {
    cur.ws();
    let pos = cur.pos;
    let name = cur.name("computation name")?;
    cur.ws();
    if cur.peek() == Some(b'(') {
        // The signature repeats the parameter instructions' shapes; skip it.
        cur.skip_group()?;
        cur.expect_str("->")?;
        cur.ty()?;
    }
    cur.expect(b'{')?;
    let mut insts = Vec::new();
    loop {
        cur.ws();
        if cur.eat(b'}') {
            break;
        }
        if cur.at_end() {
            return Err(cur.err(format!("computation `{name}` is not closed with `}}`")));
        }
        insts.push(parse_instruction(cur)?);
    }
    // `}, execution_thread="..."`
    let mut probe = *cur;
    if probe.eat(b',') {
        *cur = probe;
        skip_line(cur)?;
    }
    Ok(RawComp { name, pos, is_entry, insts })
}

/// `[ROOT] %name = type opcode(args), attr=value, ...`
fn parse_instruction<'a>(cur: &mut Cur<'a>) -> Result<RawInst<'a>, ParseError> {
    cur.ws();
    let mut is_root = false;
    let mut probe = *cur;
    if probe.word() == "ROOT" {
        is_root = true;
        *cur = probe;
    }
    cur.ws();
    let pos = cur.pos;
    let name = cur.name("instruction name")?;
    cur.expect(b'=')?;
    let ty = cur.ty()?;
    cur.ws();
    let opcode_pos = cur.pos;
    let opcode = cur.word();
    if opcode.is_empty() {
        return Err(cur.err(format!("expected an opcode, found {}", cur.describe())));
    }
    cur.expect(b'(')?;
    let args = match opcode {
        "parameter" => {
            let n = cur.int()?;
            cur.expect(b')')?;
            RawArgs::Param(n)
        }
        "constant" => {
            let Type::Array(shape) = &ty else {
                return Err(cur.err_at(opcode_pos, "tuple and token constants are not supported"));
            };
            let lit = cur.literal(shape)?;
            cur.expect(b')')?;
            RawArgs::Constant(lit)
        }
        _ => {
            let mut operands = Vec::new();
            if !cur.eat(b')') {
                loop {
                    if cur.at_type() {
                        cur.ty()?;
                    }
                    cur.ws();
                    let at = cur.pos;
                    operands.push((cur.name("an operand name")?, at));
                    if cur.eat(b')') {
                        break;
                    }
                    cur.expect(b',')?;
                }
            }
            RawArgs::Operands(operands)
        }
    };
    let mut attrs = Vec::new();
    loop {
        let mut probe = *cur;
        if !probe.eat(b',') {
            break;
        }
        *cur = probe;
        cur.ws();
        let at = cur.pos;
        let name = cur.word();
        if name.is_empty() {
            return Err(cur.err_at(at, format!("expected an attribute name, found {}", cur.describe())));
        }
        cur.expect(b'=')?;
        let (start, end) = cur.balanced_value()?;
        attrs.push(RawAttr { name, start, end });
    }
    Ok(RawInst { name, pos, is_root, ty, opcode, opcode_pos, args, attrs })
}

/// Phase two: resolve names, build ops, order instructions.
fn build_module(text: &str, name: String, raw: Vec<RawComp>, tables: &DebugTables) -> Result<Module, ParseError> {
    let mut module = Module::new(name);
    let mut comp_ids: HashMap<&str, CompId> = HashMap::new();
    for rc in &raw {
        let id = module.add_computation(crate::ir::Computation::new(rc.name));
        if comp_ids.insert(rc.name, id).is_some() {
            return Err(error_at(text, rc.pos, format!("computation `{}` is defined twice", rc.name)));
        }
    }
    if raw.is_empty() {
        return Err(error_at(text, text.len(), "the module has no computations"));
    }
    let entries: Vec<usize> = (0..raw.len()).filter(|&i| raw[i].is_entry).collect();
    if entries.len() > 1 {
        return Err(error_at(text, raw[entries[1]].pos, "more than one ENTRY computation"));
    }
    // Without an ENTRY marker, XLA takes the last computation.
    let entry = entries.first().copied().unwrap_or(raw.len() - 1);
    module.entry = comp_ids[raw[entry].name];

    let lines = cursor::LineIndex::new(text);
    for rc in &raw {
        let comp_id = comp_ids[rc.name];
        let comp = build_computation(text, &lines, rc, &comp_ids, tables)?;
        *module.comp_mut(comp_id) = comp;
    }
    module.reserve_names();
    uniquify_names(&mut module);
    Ok(module)
}

/// Instruction names are unique within a module (the verifier's invariant, and what
/// keeps pass diffs unambiguous), but hand-written HLO often reuses a name in two
/// computations (`x` in a body and in the entry): the entry keeps its names, and a
/// name seen before gets a fresh suffix.
fn uniquify_names(module: &mut Module) {
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let entry = module.entry;
    let comps: Vec<CompId> = std::iter::once(entry).chain(module.comps.keys().filter(|&c| c != entry)).collect();
    for c in comps {
        let ids: Vec<InstId> = module.comp(c).insts.keys().collect();
        for id in ids {
            let name = module.comp(c).inst(id).name.clone();
            if !seen.insert(name.clone()) {
                let fresh = module.fresh_name(&name);
                seen.insert(fresh.clone());
                module.comp_mut(c).inst_mut(id).name = fresh;
            }
        }
    }
}

fn build_computation(
    text: &str,
    lines: &cursor::LineIndex,
    rc: &RawComp,
    comp_ids: &HashMap<&str, CompId>,
    tables: &DebugTables,
) -> Result<crate::ir::Computation, ParseError> {
    if rc.insts.is_empty() {
        return Err(error_at(text, rc.pos, format!("computation `{}` has no instructions", rc.name)));
    }
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, ri) in rc.insts.iter().enumerate() {
        if index.insert(ri.name, i).is_some() {
            return Err(error_at(text, ri.pos, format!("instruction `{}` is defined twice", ri.name)));
        }
    }
    // Operand indices per instruction.
    let mut operand_idx: Vec<Vec<usize>> = Vec::with_capacity(rc.insts.len());
    for ri in &rc.insts {
        let mut v = Vec::new();
        if let RawArgs::Operands(ops) = &ri.args {
            for &(name, at) in ops {
                match index.get(name) {
                    Some(&i) => v.push(i),
                    None => return Err(error_at(text, at, format!("unknown operand `{name}`"))),
                }
            }
        }
        operand_idx.push(v);
    }
    let order = topological_order(text, rc, &operand_idx)?;

    let mut comp = crate::ir::Computation::new(rc.name);
    let mut ids: Vec<Option<InstId>> = vec![None; rc.insts.len()];
    let mut params: Vec<Option<InstId>> = Vec::new();
    let mut root = None;
    for &i in &order {
        let ri = &rc.insts[i];
        let op = ops::build_op(text, ri, comp_ids)?;
        if let Op::Parameter(n) = op {
            let n = n as usize;
            // Parameters are numbered 0..k without gaps, so a number past the
            // instruction count is an error now, before `params` is sized by it.
            if n >= rc.insts.len() {
                return Err(error_at(
                    text,
                    ri.opcode_pos,
                    format!(
                        "parameter number {n} is out of range: computation `{}` has {} instructions, so its \
                         parameters are numbered below that",
                        rc.name,
                        rc.insts.len()
                    ),
                ));
            }
            if params.len() <= n {
                params.resize(n + 1, None);
            }
            if params[n].is_some() {
                return Err(error_at(text, ri.opcode_pos, format!("parameter {n} is defined twice")));
            }
        }
        let (line, col) = lines.line_col(text, ri.pos);
        let loc = Loc { line, col, source: metadata_source(text, ri, tables).map(Arc::from) };
        let operands = operand_idx[i].iter().map(|&j| ids[j].expect("topological order")).collect();
        let id = comp.push(Instruction { name: ri.name.to_string(), op: op.clone(), operands, ty: ri.ty.clone(), loc });
        if let Op::Parameter(n) = op {
            params[n as usize] = Some(id);
        }
        ids[i] = Some(id);
        if ri.is_root {
            if root.is_some() {
                return Err(error_at(text, ri.pos, format!("computation `{}` has two ROOT instructions", rc.name)));
            }
            root = Some(id);
        }
    }
    for (n, p) in params.iter().enumerate() {
        match p {
            Some(id) => comp.params.push(*id),
            None => return Err(error_at(text, rc.pos, format!("computation `{}` lacks parameter {n}", rc.name))),
        }
    }
    // Without a ROOT marker, the last instruction is the root (as in XLA).
    comp.root = root.unwrap_or_else(|| ids[rc.insts.len() - 1].expect("every instruction was built"));
    Ok(comp)
}

/// Instruction indices with operands before users; the text order when it already is one.
fn topological_order(text: &str, rc: &RawComp, operands: &[Vec<usize>]) -> Result<Vec<usize>, ParseError> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; rc.insts.len()];
    let mut order = Vec::with_capacity(rc.insts.len());
    for start in 0..rc.insts.len() {
        if state[start] != 0 {
            continue;
        }
        // Iterative DFS: (node, next operand to visit).
        let mut stack = vec![(start, 0usize)];
        state[start] = 1;
        while let Some(top) = stack.last_mut() {
            let (node, k) = *top;
            if k < operands[node].len() {
                top.1 += 1;
                let next = operands[node][k];
                match state[next] {
                    0 => {
                        state[next] = 1;
                        stack.push((next, 0));
                    }
                    1 => {
                        let ri = &rc.insts[next];
                        return Err(error_at(text, ri.pos, format!("instruction `{}` depends on itself", ri.name)));
                    }
                    _ => {}
                }
            } else {
                state[node] = 2;
                order.push(node);
                stack.pop();
            }
        }
    }
    Ok(order)
}

/// `op_name @ file:line[:col]` from the `metadata` attribute, when it has either.
fn metadata_source(text: &str, ri: &RawInst, tables: &DebugTables) -> Option<String> {
    let attr = ri.attrs.iter().find(|a| a.name == "metadata")?;
    let mut cur = Cur::sub(text, attr.start, attr.end);
    if !cur.eat(b'{') {
        return None;
    }
    let (mut op_name, mut file, mut line, mut column, mut frame) = (None, None, None, None, None);
    loop {
        cur.ws();
        if cur.eat(b'}') || cur.at_end() {
            break;
        }
        let key = cur.word();
        if key.is_empty() || !cur.eat(b'=') {
            return None;
        }
        cur.ws();
        if cur.peek() == Some(b'"') {
            let v = cur.string().ok()?;
            match key {
                "op_name" => op_name = Some(v),
                "source_file" => file = Some(v),
                _ => {}
            }
        } else {
            let start = cur.pos;
            while matches!(cur.peek(), Some(c) if !c.is_ascii_whitespace() && c != b'}') {
                cur.pos += 1;
            }
            let v = &text[start..cur.pos];
            match key {
                "source_line" => line = v.parse::<i64>().ok(),
                "source_column" => column = v.parse::<i64>().ok(),
                "stack_frame_id" => frame = v.parse::<i64>().ok(),
                _ => {}
            }
        }
    }
    let place = match (file, line, column) {
        (Some(f), Some(l), Some(c)) => Some(format!("{f}:{l}:{c}")),
        (Some(f), Some(l), None) => Some(format!("{f}:{l}")),
        (Some(f), None, _) => Some(f),
        _ => frame.and_then(|f| tables.frame_source(f)),
    };
    match (op_name.filter(|s| !s.is_empty()), place) {
        (Some(o), Some(p)) => Some(format!("{o} @ {p}")),
        (Some(o), None) => Some(o),
        (None, p) => p,
    }
}
