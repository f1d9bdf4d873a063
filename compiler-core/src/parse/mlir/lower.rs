//! Lowering the syntax tree to the IR: scopes, regions, implicit captures, inlining.
//!
//! Each region becomes its own computation with one parameter per block argument.
//! MLIR lets a region read values of the enclosing region directly; the IR does not,
//! so such reads are made explicit here:
//! - a captured constant is copied into the region (valid in every kind of region);
//! - `case`/`if` branches and `while` cond/body get one extra parameter per captured
//!   value (see `lower_ops.rs` for how the op passes them in);
//! - any other region (reduce bodies, comparators, ...) refuses non-constant captures.
//!
//! `func.call` and `stablehlo.composite` are inlined: the callee's body is lowered
//! again in the caller's computation, in a scope that only sees the call's arguments.

use super::ast::{FuncAst, LocAst, ModuleAst, OpAst, Operands, Region, ValRef};
use super::lexer::{Cursor, LineIndex, MAX_DEPTH};
use super::reader;
use crate::ir::{CompId, Computation, InstId, Instruction, Loc, Module, Op, Type};
use crate::parse::ParseError;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;

/// The values a name binds (one, mostly): `%name` or `%name#i`.
pub type Bound = SmallVec<[InstId; 1]>;

/// A scope's names, borrowed from the text's syntax tree.
pub type Names<'a> = HashMap<&'a str, Bound, foldhash::fast::RandomState>;

#[derive(Copy, Clone, PartialEq, Eq)]
pub enum Capture {
    /// Non-constant outer values become extra parameters.
    Params,
    /// Only constants may be used from outside (copied in).
    ConstantsOnly,
}

pub struct Scope<'a> {
    pub comp: CompId,
    pub vars: Names<'a>,
    /// A function body: names outside it are not visible.
    pub boundary: bool,
    pub capture: Capture,
    /// The op owning the region (for messages).
    pub owner: String,
    /// (value in the enclosing computation, parameter standing for it here).
    pub captures: Vec<(InstId, InstId)>,
    /// Outer value -> local copy or parameter.
    pub imported: rustc_hash::FxHashMap<InstId, InstId>,
}

/// A lowered region: its computation, the values its terminator returns, and the
/// outer values it captured as parameters (after the block arguments, in order).
pub struct RegionOut {
    pub comp: CompId,
    pub rets: Vec<InstId>,
    pub captures: Vec<(InstId, InstId)>,
}

pub struct Lowerer<'a> {
    pub src: &'a str,
    pub lines: &'a LineIndex,
    pub ast: &'a ModuleAst,
    pub module: Module,
    pub scopes: Vec<Scope<'a>>,
    pub call_stack: Vec<String>,
    loc_aliases: HashMap<&'a str, &'a LocAst, foldhash::fast::RandomState>,
    insts: usize,
}

impl<'a> Lowerer<'a> {
    pub fn new(src: &'a str, lines: &'a LineIndex, ast: &'a ModuleAst, name: &str) -> Lowerer<'a> {
        let loc_aliases = ast.loc_aliases.iter().map(|(n, l)| (n.as_str(), l)).collect();
        Lowerer {
            src,
            lines,
            ast,
            module: Module::new(name),
            scopes: Vec::new(),
            call_stack: Vec::new(),
            loc_aliases,
            insts: 0,
        }
    }

    pub fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        let (l, c) = self.lines.line_col(self.src, pos);
        ParseError::new(l, c, msg)
    }

    pub fn find_func(&self, name: &str) -> Option<&'a FuncAst> {
        self.ast.funcs.iter().find(|f| f.name == name)
    }

    // ---- locations -------------------------------------------------------------

    pub fn loc(&self, pos: usize, loc: Option<&LocAst>) -> Loc {
        let (line, col) = self.lines.line_col(self.src, pos);
        let source = loc.and_then(|l| self.render_loc(l)).map(Arc::from);
        Loc { line, col, source }
    }

    /// A short readable form of a location: the op path JAX recorded and the first
    /// file position (`jit(f)/mul @ f.py:3:7`).
    fn render_loc(&self, loc: &LocAst) -> Option<String> {
        let mut name = None;
        let mut file = None;
        self.walk_loc(loc, &mut name, &mut file, 0);
        match (name, file) {
            (Some(n), Some(f)) => Some(format!("{n} @ {f}")),
            (Some(n), None) => Some(n),
            (None, Some(f)) => Some(f),
            (None, None) => None,
        }
    }

    fn walk_loc(&self, loc: &LocAst, name: &mut Option<String>, file: &mut Option<String>, depth: u32) {
        if depth > 64 || (name.is_some() && file.is_some()) {
            return;
        }
        match loc {
            LocAst::Unknown => {}
            LocAst::Alias(a) => {
                if let Some(l) = self.loc_aliases.get(a.as_str()) {
                    self.walk_loc(l, name, file, depth + 1);
                }
            }
            LocAst::File { file: f, line, col } => {
                if file.is_none() {
                    *file = Some(format!("{f}:{line}:{col}"));
                }
            }
            LocAst::Name(n, child) => {
                if name.is_none() && !n.is_empty() {
                    *name = Some(n.clone());
                }
                if let Some(c) = child {
                    self.walk_loc(c, name, file, depth + 1);
                }
            }
            LocAst::CallSite(callee, caller) => {
                self.walk_loc(callee, name, file, depth + 1);
                self.walk_loc(caller, name, file, depth + 1);
            }
            LocAst::Fused(parts) => {
                for p in parts {
                    self.walk_loc(p, name, file, depth + 1);
                }
            }
        }
    }

    // ---- instructions ----------------------------------------------------------

    pub fn cur_comp(&self) -> CompId {
        self.scopes.last().map(|s| s.comp).unwrap_or(self.module.entry)
    }

    pub fn ty(&self, id: InstId) -> Type {
        self.module.comp(self.cur_comp()).inst(id).ty.clone()
    }

    pub fn emit_in(
        &mut self,
        comp: CompId,
        op: Op,
        operands: Vec<InstId>,
        ty: Type,
        loc: &Loc,
    ) -> Result<InstId, ParseError> {
        self.insts += 1;
        // The most instructions one text may expand to (inlining can multiply code): the
        // verifier's limit, applied while expanding so that inlining stops early.
        if self.insts as u64 > crate::limits::MAX_INSTRUCTIONS {
            return Err(ParseError::new(
                loc.line,
                loc.col,
                "program expands to too many instructions (deep inlining?)",
            ));
        }
        let name = self.module.fresh_name(op.hlo_name());
        Ok(self.module.comp_mut(comp).push(Instruction { name, op, operands, ty, loc: loc.clone() }))
    }

    pub fn emit(&mut self, op: Op, operands: Vec<InstId>, ty: Type, loc: &Loc) -> Result<InstId, ParseError> {
        let comp = self.cur_comp();
        self.emit_in(comp, op, operands, ty, loc)
    }

    /// Emits an op with `types.len()` results: one value, or one tuple value plus a
    /// GetTupleElement per result (zero results: one empty-tuple value, no results).
    pub fn emit_multi(
        &mut self,
        op: Op,
        operands: Vec<InstId>,
        types: Vec<Type>,
        loc: &Loc,
    ) -> Result<Vec<InstId>, ParseError> {
        if types.len() == 1 {
            let ty = types.into_iter().next().unwrap_or(Type::Tuple(vec![]));
            return Ok(vec![self.emit(op, operands, ty, loc)?]);
        }
        let t = self.emit(op, operands, Type::Tuple(types.clone()), loc)?;
        self.unpack(t, &types, loc)
    }

    /// GetTupleElement for each of `types` out of tuple value `t`.
    pub fn unpack(&mut self, t: InstId, types: &[Type], loc: &Loc) -> Result<Vec<InstId>, ParseError> {
        let mut out = Vec::with_capacity(types.len());
        for (i, ty) in types.iter().enumerate() {
            out.push(self.emit(Op::GetTupleElement { index: i as u32 }, vec![t], ty.clone(), loc)?);
        }
        Ok(out)
    }

    /// Sets a computation's root: the single value, or a tuple of the values.
    pub fn set_root(&mut self, comp: CompId, vals: &[InstId], loc: &Loc) -> Result<(), ParseError> {
        let root = if vals.len() == 1 {
            vals[0]
        } else {
            let c = self.module.comp(comp);
            let tys = vals.iter().map(|&v| c.inst(v).ty.clone()).collect();
            self.emit_in(comp, Op::Tuple, vals.to_vec(), Type::Tuple(tys), loc)?
        };
        self.module.comp_mut(comp).root = root;
        Ok(())
    }

    // ---- names -----------------------------------------------------------------

    pub fn resolve(&mut self, v: &ValRef) -> Result<InstId, ParseError> {
        let k = self.scopes.len().checked_sub(1).ok_or_else(|| self.err(v.pos, "value used outside a function"))?;
        self.resolve_in(k, v)
    }

    pub fn resolve_all(&mut self, vs: &[ValRef]) -> Result<Vec<InstId>, ParseError> {
        vs.iter().map(|v| self.resolve(v)).collect()
    }

    fn resolve_in(&mut self, k: usize, v: &ValRef) -> Result<InstId, ParseError> {
        let name = self.written_name(v.pos, v.len as usize)?;
        if let Some(vals) = self.scopes[k].vars.get(name) {
            return match (v.index, vals.len()) {
                (None, 1) => Ok(vals[0]),
                (None, n) => Err(self.err(v.pos, format!("%{name} has {n} results; use %{name}#N"))),
                (Some(i), n) => vals
                    .get(i as usize)
                    .copied()
                    .ok_or_else(|| self.err(v.pos, format!("%{name} has {n} results, no #{i}"))),
            };
        }
        if self.scopes[k].boundary || k == 0 {
            return Err(self.err(v.pos, format!("undefined value %{name}")));
        }
        let outer = self.resolve_in(k - 1, v)?;
        self.import(k, outer, v)
    }

    /// Makes the outer value `outer` (of scope k-1) usable in scope k.
    fn import(&mut self, k: usize, outer: InstId, v: &ValRef) -> Result<InstId, ParseError> {
        if let Some(&local) = self.scopes[k].imported.get(&outer) {
            return Ok(local);
        }
        let outer_comp = self.scopes[k - 1].comp;
        let inst = self.module.comp(outer_comp).inst(outer).clone();
        let comp = self.scopes[k].comp;
        let local = if let Op::Constant(_) = inst.op {
            self.emit_in(comp, inst.op, vec![], inst.ty, &inst.loc)?
        } else if self.scopes[k].capture == Capture::Params {
            let name = self.module.fresh_name("param");
            let c = self.module.comp_mut(comp);
            let p = c.push_param(name, inst.ty, inst.loc);
            self.scopes[k].captures.push((outer, p));
            p
        } else {
            let owner = self.scopes[k].owner.clone();
            return Err(self.err(
                v.pos,
                format!(
                    "%{} is defined outside this {owner} region; only constants can be used there",
                    self.written_name(v.pos, v.len as usize)?
                ),
            ));
        };
        self.scopes[k].imported.insert(outer, local);
        Ok(local)
    }

    /// Binds an op's result names to `vals`.
    pub fn bind(&mut self, op: &OpAst, vals: Vec<InstId>) -> Result<(), ParseError> {
        let want = op.result_count();
        if want != vals.len() {
            return Err(self.err(op.pos, format!("{} produces {} results but {} are named", op.name, vals.len(), want)));
        }
        let mut it = vals.into_iter();
        for r in &op.results {
            let vs: Bound = it.by_ref().take(r.count as usize).collect();
            let name = self.written_name(r.pos, r.len as usize)?;
            let scope = self.scopes.last_mut().ok_or_else(|| ParseError::new(0, 0, "no scope"))?;
            scope.vars.insert(name, vs);
        }
        Ok(())
    }

    /// The value name the reader read at `pos` (its `%`), `len` bytes long, as the
    /// text's own slice: a scope's names borrow from the text, not from the syntax tree,
    /// so that an op's tree can go as soon as the op is lowered
    /// ([`Lowerer::lower_streamed`]).
    fn written_name(&self, pos: usize, len: usize) -> Result<&'a str, ParseError> {
        let at = pos + 1;
        self.src
            .get(at..at + len)
            .ok_or_else(|| self.err(pos, "internal error: a value name is not where the parser read it"))
    }

    /// [`Lowerer::written_name`] of a block argument, whose tree keeps a copy of its name:
    /// checked against it.
    fn name_in_text(&self, name: &str, pos: usize) -> Result<&'a str, ParseError> {
        match self.written_name(pos, name.len()) {
            Ok(written) if written == name => Ok(written),
            _ => Err(self.err(pos, format!("internal error: %{name} is not where the parser read it"))),
        }
    }

    // ---- regions and functions -------------------------------------------------

    /// Lowers ops up to the terminator, which must be the last; returns its operands.
    pub fn lower_block(&mut self, ops: &[OpAst], region_pos: usize) -> Result<Vec<InstId>, ParseError> {
        let mut terminator = None;
        for op in ops {
            self.lower_in_block(op, &mut terminator)?;
        }
        self.terminator_values(terminator, region_pos)
    }

    /// [`Lowerer::lower_block`] of a body the reader skipped (`start..end`, after its
    /// `{` to after its `}`): each op is read from the text and lowered at once, so the
    /// syntax tree of a deep model's `main` never exists whole (its memory was most of a
    /// parse's page faults).
    fn lower_streamed(
        &mut self,
        c: &mut Cursor,
        (start, end): (usize, usize),
        region_pos: usize,
    ) -> Result<Vec<InstId>, ParseError> {
        c.pos = start;
        let mut terminator = None;
        #[cfg(all(any(feature = "cpu", feature = "wasm-run"), not(target_arch = "wasm32")))]
        if end - start >= super::beside::MIN_BYTES {
            super::beside::read_and_lower(c, |op| self.lower_in_block(op, &mut terminator))?;
            return self.after_block(c, end, terminator, region_pos);
        }
        while let Some(op) = reader::next_op(c)? {
            self.lower_in_block(&op, &mut terminator)?;
        }
        self.after_block(c, end, terminator, region_pos)
    }

    /// The end of a streamed body: where the reading stopped, and the terminator's values.
    fn after_block(
        &mut self,
        c: &Cursor,
        end: usize,
        terminator: Option<Operands>,
        region_pos: usize,
    ) -> Result<Vec<InstId>, ParseError> {
        if c.pos != end {
            return Err(self.err(c.pos, "the body's ops end elsewhere than its braces"));
        }
        self.terminator_values(terminator, region_pos)
    }

    /// Lowers one op of a block; a terminator's operands are kept in `terminator`, to
    /// be resolved once no op follows it.
    fn lower_in_block(&mut self, op: &OpAst, terminator: &mut Option<Operands>) -> Result<(), ParseError> {
        if terminator.is_some() {
            return Err(self.err(op.pos, "op after the region's terminator"));
        }
        if is_terminator(op) {
            *terminator = Some(op.operands.clone());
            return Ok(());
        }
        self.lower_op(op)
    }

    fn terminator_values(
        &mut self,
        terminator: Option<Operands>,
        region_pos: usize,
    ) -> Result<Vec<InstId>, ParseError> {
        match terminator {
            Some(operands) => self.resolve_all(&operands),
            None => Err(self.err(region_pos, "region has no terminator (`stablehlo.return` / `func.return`)")),
        }
    }

    pub fn lower_region(&mut self, region: &Region, owner: &str, capture: Capture) -> Result<RegionOut, ParseError> {
        if self.scopes.len() > MAX_DEPTH as usize {
            return Err(self.err(region.pos, "regions nested too deeply"));
        }
        let base = owner.strip_prefix("stablehlo.").unwrap_or(owner).replace('.', "_");
        let name = self.module.fresh_name(&format!("{base}_region"));
        let comp = self.module.add_computation(Computation::new(name));
        let mut scope = Scope {
            comp,
            vars: Names::default(),
            boundary: false,
            capture,
            owner: owner.to_string(),
            captures: Vec::new(),
            imported: Default::default(),
        };
        for (name, ty, pos) in &region.args {
            let loc = self.loc(*pos, None);
            let pname = self.module.fresh_name("param");
            let p = self.module.comp_mut(comp).push_param(pname, ty.clone(), loc);
            scope.vars.insert(self.name_in_text(name, *pos)?, smallvec::smallvec![p]);
        }
        self.scopes.push(scope);
        let rets = self.lower_block(&region.ops, region.pos)?;
        let scope = self.scopes.pop().ok_or_else(|| self.err(region.pos, "scope stack underflow"))?;
        Ok(RegionOut { comp, rets, captures: scope.captures })
    }

    /// Lowers the entry function into its own computation (a body the reader skipped is
    /// read from `c` as it is lowered).
    pub fn lower_entry(&mut self, f: &'a FuncAst, c: &mut Cursor) -> Result<CompId, ParseError> {
        let comp = self.module.add_computation(Computation::new(f.name.clone()));
        self.module.entry = comp;
        // About an instruction per op (a few expand, a few vanish), and an op per line in
        // a skipped body: grown once, not doubled and copied as the body is lowered. An op
        // takes a dozen bytes of text at the least (`%0 = a.b %x : t`), which bounds the
        // guess for a text of empty lines.
        let ops = match f.deferred {
            Some((start, end)) => (self.lines.line_of(end) - self.lines.line_of(start)).min((end - start) / 12),
            None => f.body.ops.len(),
        };
        let comp_mut = self.module.comp_mut(comp);
        comp_mut.insts.reserve(ops + f.body.args.len());
        comp_mut.order.reserve(ops + f.body.args.len());
        let mut vars = Names::default();
        for (name, ty, pos) in &f.body.args {
            let loc = self.loc(*pos, None);
            let pname = self.module.fresh_name("Arg");
            let p = self.module.comp_mut(comp).push_param(pname, ty.clone(), loc);
            vars.insert(name.as_str(), smallvec::smallvec![p]);
        }
        self.scopes.push(Scope {
            comp,
            vars,
            boundary: true,
            capture: Capture::ConstantsOnly,
            owner: f.name.clone(),
            captures: vec![],
            imported: Default::default(),
        });
        self.call_stack.push(f.name.clone());
        let rets = match f.deferred {
            Some(body) => self.lower_streamed(c, body, f.pos)?,
            None => self.lower_block(&f.body.ops, f.pos)?,
        };
        self.check_returns(f, &rets)?;
        let loc = self.loc(f.pos, None);
        self.set_root(comp, &rets, &loc)?;
        self.scopes.pop();
        self.call_stack.pop();
        Ok(comp)
    }

    fn check_returns(&self, f: &FuncAst, rets: &[InstId]) -> Result<(), ParseError> {
        if rets.len() != f.result_types.len() {
            return Err(self.err(
                f.pos,
                format!("@{} returns {} values but declares {} results", f.name, rets.len(), f.result_types.len()),
            ));
        }
        for (i, (&r, t)) in rets.iter().zip(&f.result_types).enumerate() {
            if !self.ty(r).same_type(t) {
                return Err(self.err(f.pos, format!("@{} result {i} is {} but declared {}", f.name, self.ty(r), t)));
            }
        }
        Ok(())
    }

    /// Inlines a call of `@name` with `args` into the current computation.
    pub fn inline_call(&mut self, name: &str, args: Vec<InstId>, pos: usize) -> Result<Vec<InstId>, ParseError> {
        let f = self.find_func(name).ok_or_else(|| self.err(pos, format!("call to unknown function @{name}")))?;
        if self.call_stack.iter().any(|n| n == name) {
            return Err(self.err(pos, format!("recursive call to @{name} cannot be inlined")));
        }
        if self.call_stack.len() > MAX_DEPTH as usize {
            return Err(self.err(pos, "calls nested too deeply"));
        }
        if args.len() != f.body.args.len() {
            return Err(self.err(pos, format!("@{name} takes {} arguments, {} given", f.body.args.len(), args.len())));
        }
        let mut vars = Names::default();
        for (i, ((an, at, _), &v)) in f.body.args.iter().zip(&args).enumerate() {
            if !self.ty(v).same_type(at) {
                return Err(self.err(pos, format!("argument {i} of @{name} should be {at}, got {}", self.ty(v))));
            }
            vars.insert(an.as_str(), smallvec::smallvec![v]);
        }
        let comp = self.cur_comp();
        self.scopes.push(Scope {
            comp,
            vars,
            boundary: true,
            capture: Capture::ConstantsOnly,
            owner: name.to_string(),
            captures: vec![],
            imported: Default::default(),
        });
        self.call_stack.push(name.to_string());
        let rets = self.lower_block(&f.body.ops, f.pos)?;
        self.check_returns(f, &rets)?;
        self.call_stack.pop();
        self.scopes.pop();
        Ok(rets)
    }
}

/// Whether `op` ends its block.
fn is_terminator(op: &OpAst) -> bool {
    matches!(op.name.as_str(), "stablehlo.return" | "func.return" | "return")
}
