//! Running a compiled module: one arena holding every buffer of the plan at the offsets
//! of its arena assignment (allocated on the first run, reused by the next), kernels in
//! program order reading and writing it (a large native kernel split across threads
//! along its parallel variable; a row chain's members interleaved chunk by chunk of
//! rows, see [`run_chain`]), the interpreter for opaque kernels, and the small runtime
//! for while loops and conditionals.

use super::{dot, pool, scatter, sort, Code, CpuExecutable, CustomCalls, KernelFn, KernelInfo, ScopedWrap, Wrap};
use crate::interp::Interpreter;
use crate::ir::{Literal, Value};
use crate::kernel::{self, BufferId, KernelPlan, ValueBufs};
use std::sync::atomic::Ordering;
use std::sync::TryLockError;

use crate::targets::control;
use crate::targets::split::{Split, PARALLEL_WORK};

/// Tasks per pool thread of a split kernel (see [`run_native`]).
const CHUNKS_PER_THREAD: usize = 4;

/// The buffer table, shared by the threads of one kernel (each writes only the output
/// elements of its own range).
#[derive(Clone, Copy)]
struct Table(*const *mut u8);
// SAFETY: see above; the table and buffers outlive the job (`pool::run` waits).
unsafe impl Send for Table {}
unsafe impl Sync for Table {}

impl Table {
    /// The table (a method, so closures capture the shareable whole).
    fn ptr(self) -> *const *mut u8 {
        self.0
    }
}

/// Runs kernel `f` over `0..par_extent` of its parallel variable, in chunks on the pool
/// when `work` is large.
fn run_native(f: KernelFn, table: *const *mut u8, par_extent: i64, work: usize) {
    let threads = pool::threads() as u64;
    let Some(split) = Split::of(par_extent.max(0) as u64, work as u64, threads, CHUNKS_PER_THREAD as u64) else {
        f(table, 0, par_extent);
        return;
    };
    let table = Table(table);
    pool::run(split.count as usize, &|t| {
        let (begin, end) = split.piece(t as u64);
        f(table.ptr(), begin as i64, end as i64);
    });
}

/// Working set of one chunk of a row chain when none is set: half of a core's L2 (read
/// once from Linux's sysfs), between 128 KiB and 1 MiB; 256 KiB where the size cannot be
/// read. Measured on a 1 MiB-L2 AMD EPYC, alternating: softmax over 4096x1024 ran 5%
/// faster with 512 KiB chunks than with 256 KiB ones, layernorm the same.
pub fn default_chain_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| l2_bytes().map_or(256 << 10, |l2| (l2 / 2).clamp(128 << 10, 1 << 20)))
}

/// The size of the first CPU's level-2 data (or unified) cache, where Linux says it.
fn l2_bytes() -> Option<usize> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    (0..8).find_map(|i| {
        let read = |f: &str| std::fs::read_to_string(dir.join(format!("index{i}/{f}"))).ok();
        if read("level")?.trim() != "2" || read("type")?.trim() == "Instruction" {
            return None;
        }
        cache_size(&read("size")?)
    })
}

/// Bytes of a sysfs cache size (`1024K`, `2M`, `512`).
fn cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, scale) = match (text.strip_suffix('K'), text.strip_suffix('M')) {
        (Some(d), _) => (d, 1 << 10),
        (_, Some(d)) => (d, 1 << 20),
        _ => (text, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// A row chain of the plan ([`crate::kernel::chains`]) that this executable runs
/// interleaved: every member is native code split along its first loop variable (the
/// rows), `rows` long.
#[derive(Clone, Debug)]
pub(super) struct Chain {
    pub kernels: std::ops::Range<usize>,
    pub rows: i64,
    /// Bytes one row of all members touches.
    pub bytes_per_row: usize,
    /// Loop iterations of all members together.
    pub work: usize,
    /// Chain-local buffers: written by a member, read only by later members (always at
    /// the row being computed), by nothing outside the chain, and not a result. A chunk
    /// keeps their rows in scratch memory of its thread instead of the arena, so they
    /// never travel to main memory: `(member, table slot, local index)` per use, and
    /// the bytes per row of each.
    pub local_uses: Vec<(usize, usize, usize)>,
    pub local_row_bytes: Vec<usize>,
    /// Per member: how many buffers its table holds.
    pub table_lens: Vec<usize>,
}

/// The parts of the plan's chains that this code can run interleaved: maximal runs of at
/// least two members that were compiled natively with the rows as their parallel
/// variable (a sub-run of a chain is a chain).
pub(super) fn runnable_chains(plan: &KernelPlan, code: &[Code]) -> Vec<Chain> {
    let fits = |j: usize, rows: i64| {
        splits_along_rows(plan, code, j, rows) && kernel::chains::chain_rows(plan, &plan.kernels[j]) == Some(rows)
    };
    let mut out = Vec::new();
    let mut facts = None;
    for c in plan.chains.iter().filter(|c| c.end <= plan.kernels.len() && c.end <= code.len()) {
        let Some(rows) = kernel::chains::chain_rows(plan, &plan.kernels[c.start]) else { continue };
        let mut j = c.start;
        while j < c.end {
            let start = j;
            while j < c.end && fits(j, rows) {
                j += 1;
            }
            if j - start >= 2 {
                let work = (start..j)
                    .map(|m| match &code[m] {
                        Code::Native { work, .. } => *work,
                        _ => 0,
                    })
                    .sum();
                let bytes_per_row = kernel::chains::bytes_per_row(plan, start..j, rows);
                let facts = facts.get_or_insert_with(|| BufferFacts::new(plan));
                let (local_uses, local_row_bytes) = chain_locals(plan, facts, start..j, rows);
                let table_lens =
                    (start..j).map(|m| plan.kernels[m].inputs.len() + plan.kernels[m].outputs.len()).collect();
                out.push(Chain {
                    kernels: start..j,
                    rows,
                    bytes_per_row,
                    work,
                    local_uses,
                    local_row_bytes,
                    table_lens,
                });
            }
            j = j.max(start + 1);
        }
    }
    out
}

/// Per kernel: the dots whose epilogue this code can run inside the dot's tasks (the
/// plan's permission, [`kernel::chains::tile_epilogue`], for a dot computed in its own
/// type, f32 or f64, and an epilogue that is native code split along its rows).
pub(super) fn runnable_epilogues(plan: &KernelPlan, code: &[Code]) -> Vec<Option<kernel::chains::TileEpilogue>> {
    (0..code.len())
        .map(|i| match &code[i] {
            Code::Dot(spec) if matches!(spec.elem, crate::ir::ElementType::F32 | crate::ir::ElementType::F64) => {
                kernel::chains::tile_epilogue(plan, i).filter(|e| splits_along_rows(plan, code, i + 1, e.rows as i64))
            }
            _ => None,
        })
        .collect()
}

/// Whether kernel `j` is native code whose range (the runtime's split) is its rows: its
/// first loop variable, of extent `rows`, is the parallel one. Then running it on rows
/// `r0..r1` is calling it with that range, as row chains and tile epilogues do.
fn splits_along_rows(plan: &KernelPlan, code: &[Code], j: usize, rows: i64) -> bool {
    match (plan.kernels.get(j).map(|k| &k.body), code.get(j)) {
        (Some(kernel::KernelBody::Elemental(e)), Some(Code::Native { par_extent, .. })) => {
            super::codegen::parallel_var(e) == Some(0) && *par_extent == rows
        }
        _ => false,
    }
}

/// Whether a dot's epilogue may write where it does while the dot still runs: none of
/// its outputs shares bytes with the dot's operands, and each either shares none with
/// the dot's result or is that result's bytes exactly (in place, where each of its rows
/// overwrites only the block that row read).
fn epilogue_writes_apart(bufs: &mut Arena, dot: &kernel::Kernel, epilogue: &kernel::Kernel) -> bool {
    let mut span = |b: BufferId| {
        let at = bufs.addr(b) as usize;
        (at, at + bufs.spans[b.index()].1)
    };
    let operands: Vec<(usize, usize)> = dot.inputs.iter().map(|&b| span(b)).collect();
    let result = span(dot.outputs[0]);
    let apart = |x: (usize, usize), y: (usize, usize)| x.1 <= y.0 || y.1 <= x.0;
    epilogue.outputs.iter().all(|&o| {
        let out = span(o);
        operands.iter().all(|&x| apart(out, x)) && (apart(out, result) || out == result)
    })
}

/// What [`chain_locals`] asks of every buffer, found once for all chains.
struct BufferFacts {
    /// Per buffer: whether it may live outside the arena's plan (pinned, or the arena
    /// is stale) or is a result.
    kept: Vec<bool>,
    /// Per buffer: the first and last kernel that reads or writes it.
    touched: Vec<Option<(usize, usize)>>,
}

impl BufferFacts {
    fn new(plan: &KernelPlan) -> BufferFacts {
        let results: std::collections::HashSet<BufferId> = plan.result.leaves().into_iter().collect();
        let current = plan.arena.is_current(plan);
        let kept = plan
            .buffers
            .keys()
            .map(|b| !current || plan.arena.pinned.get(b.index()).copied().unwrap_or(true) || results.contains(&b))
            .collect();
        let mut touched: Vec<Option<(usize, usize)>> = vec![None; plan.buffers.len()];
        for (i, k) in plan.kernels.iter().enumerate() {
            for b in k.inputs.iter().chain(&k.outputs) {
                let t = &mut touched[b.index()];
                *t = Some(t.map_or((i, i), |(first, _)| (first, i)));
            }
        }
        BufferFacts { kept, touched }
    }
}

/// The chain-local buffers of chain `kernels` (see [`Chain::local_uses`]).
fn chain_locals(
    plan: &KernelPlan,
    facts: &BufferFacts,
    kernels: std::ops::Range<usize>,
    rows: i64,
) -> (Vec<(usize, usize, usize)>, Vec<usize>) {
    // Used by a kernel outside the chain.
    let outside = |b: BufferId| {
        facts.touched[b.index()].is_some_and(|(first, last)| first < kernels.start || last >= kernels.end)
    };
    let mut locals: Vec<BufferId> = Vec::new();
    for k in &plan.kernels[kernels.clone()] {
        for &b in &k.outputs {
            let size = plan.buffers[b].shape.byte_size();
            if !facts.kept[b.index()]
                && !outside(b)
                && size.is_multiple_of(rows.max(1) as usize)
                && !locals.contains(&b)
            {
                locals.push(b);
            }
        }
    }
    let mut uses = Vec::new();
    for (m, k) in plan.kernels[kernels].iter().enumerate() {
        for (slot, b) in k.inputs.iter().chain(&k.outputs).enumerate() {
            if let Some(l) = locals.iter().position(|x| x == b) {
                uses.push((m, slot, l));
            }
        }
    }
    let row_bytes = locals.iter().map(|&b| plan.buffers[b].shape.byte_size() / rows.max(1) as usize).collect();
    (uses, row_bytes)
}

thread_local! {
    /// Scratch rows of chain-local buffers, per thread (grown as needed, kept).
    static SCRATCH: std::cell::RefCell<Vec<Line>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs the members of a chain (`(function, buffer table)` each) over their rows,
/// chunk by chunk: every member on rows `[b, e)` before any on the next chunk; chunks of
/// about `budget` bytes of working set, at least [`CHUNKS_PER_THREAD`] per pool thread
/// when the chain is large enough to split.
fn run_chain(members: &[(KernelFn, Table)], chain: &Chain, budget: usize) {
    let rows = chain.rows.max(0) as usize;
    let mut per = (budget / chain.bytes_per_row.max(1)).clamp(1, rows.max(1));
    let threads = pool::threads();
    let parallel = chain.work as u64 >= PARALLEL_WORK && threads >= 2;
    if parallel {
        per = per.min(rows.div_ceil(threads * CHUNKS_PER_THREAD)).max(1);
    }
    // Chunks of whole vector steps where they are long (a 1-D chain vectorizes its rows).
    if per >= 64 {
        per = per / 32 * 32;
    }
    let chunks = rows.div_ceil(per);
    // Where each chain-local buffer's chunk starts in the scratch, in lines.
    let mut local_at = Vec::with_capacity(chain.local_row_bytes.len());
    let mut lines = 0;
    for &rb in &chain.local_row_bytes {
        local_at.push(lines);
        lines += (rb * per).div_ceil(64);
    }
    let task = |t: usize| {
        let begin = (t * per) as i64;
        let end = ((t + 1) * per).min(rows) as i64;
        if begin >= end {
            return;
        }
        if chain.local_uses.is_empty() {
            for (f, table) in members {
                f(table.0, begin, end);
            }
            return;
        }
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            if scratch.len() < lines {
                scratch.resize(lines, Line([0; 64]));
            }
            let base = scratch.as_mut_ptr() as *mut u8;
            for (m, (f, table)) in members.iter().enumerate() {
                let n = chain.local_uses.iter().filter(|u| u.0 == m).count();
                if n == 0 {
                    f(table.0, begin, end);
                    continue;
                }
                let len = chain.table_lens[m];
                // SAFETY: the member's table holds `len` pointers (its inputs and outputs).
                let mut own: Vec<*mut u8> = unsafe { std::slice::from_raw_parts(table.0, len) }.to_vec();
                for &(_, slot, l) in chain.local_uses.iter().filter(|u| u.0 == m) {
                    // Row `r` of the buffer lives at scratch row `r - begin`: the kernel
                    // only addresses rows `begin..end` of it (the chain's row rule), so
                    // the shifted base is never dereferenced outside the scratch.
                    // SAFETY: in bounds of the scratch (`lines` lines).
                    let chunk = unsafe { base.add(local_at[l] * 64) };
                    own[slot] = chunk.wrapping_sub(begin as usize * chain.local_row_bytes[l]);
                }
                f(own.as_ptr(), begin, end);
            }
        });
    };
    if parallel && chunks >= 2 {
        pool::run(chunks, &task);
    } else {
        (0..chunks).for_each(task);
    }
}

/// One cache line: the arena's unit, so that its base (and every buffer, at offsets
/// that are multiples of 64) is 64-byte aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// The memory of every buffer of a plan, at the offsets of its arena assignment
/// ([`crate::kernel::arena`]). Constants are written once, when it is made (nothing
/// else shares their bytes); parameters on every run, unless a run on caller memory
/// ([`CpuExecutable::run_bytes`]) points them at the caller's bytes instead.
pub(super) struct Arena {
    lines: Vec<Line>,
    /// Per buffer: its offset and size in bytes.
    spans: Vec<(usize, usize)>,
    /// Per buffer, for the current run: caller memory standing in for its arena bytes.
    external: Vec<Option<*mut u8>>,
}

// SAFETY: the external pointers are only set for the duration of one run, during which
// the caller's borrows keep them valid; between runs they are cleared.
unsafe impl Send for Arena {}

impl Arena {
    fn new(exe: &CpuExecutable) -> Arena {
        let plan = &exe.plan;
        // A plan whose kernels were rewritten after planning gets a fresh assignment.
        let assignment = &*exe.arena_assignment();
        let lines = vec![Line([0; 64]); (assignment.arena_bytes as usize).div_ceil(64).max(1)];
        let spans: Vec<(usize, usize)> =
            plan.buffers.iter().map(|(b, buf)| (assignment.offset(b) as usize, buf.shape.byte_size())).collect();
        let external = vec![None; spans.len()];
        let mut arena = Arena { lines, spans, external };
        for (b, l) in &plan.constants {
            arena.bytes_mut(*b).copy_from_slice(&l.to_le_bytes());
        }
        arena
    }

    /// Where buffer `b` lives in this run.
    fn addr(&mut self, b: BufferId) -> *mut u8 {
        match self.external[b.index()] {
            Some(p) => p,
            // SAFETY: the assignment places every buffer inside the arena's bytes.
            None => unsafe { (self.lines.as_mut_ptr() as *mut u8).add(self.spans[b.index()].0) },
        }
    }

    fn bytes(&self, b: BufferId) -> &[u8] {
        let (at, len) = self.spans[b.index()];
        let p = match self.external[b.index()] {
            Some(p) => p as *const u8,
            // SAFETY: as in `addr`.
            None => unsafe { (self.lines.as_ptr() as *const u8).add(at) },
        };
        // SAFETY: `len` bytes live at `p` (arena bytes, or caller memory of the buffer's size).
        unsafe { std::slice::from_raw_parts(p, len) }
    }

    fn bytes_mut(&mut self, b: BufferId) -> &mut [u8] {
        let len = self.spans[b.index()].1;
        let p = self.addr(b);
        // SAFETY: as above, uniquely borrowed; kernels never write a parameter's buffer,
        // the only kind pointed at read-only caller memory.
        unsafe { std::slice::from_raw_parts_mut(p, len) }
    }

    /// The addresses of `bufs`, for a native kernel (which may write its outputs: the
    /// assignment lets an output share bytes with another buffer it touches only in
    /// place, over an input read at the same positions before they are written).
    fn pointers(&mut self, bufs: impl Iterator<Item = BufferId>) -> Vec<*mut u8> {
        bufs.map(|b| self.addr(b)).collect()
    }
}

impl CpuExecutable {
    /// Runs row chains interleaved, each chunk's members together, with chunks of about
    /// `bytes` of working set (`Some(default_chain_bytes())`, the default), or kernel by
    /// kernel (`None`). A setting of the executable rather than a compile option, so the
    /// same code can be measured both ways; either way gives the same results bit for bit.
    pub fn set_row_chains(&self, bytes: Option<usize>) {
        self.chain_bytes.store(bytes.map_or(0, |b| b.max(1)), Ordering::Relaxed);
    }

    /// The current setting of [`CpuExecutable::set_row_chains`].
    pub fn row_chains(&self) -> Option<usize> {
        Some(self.chain_bytes.load(Ordering::Relaxed)).filter(|&b| b > 0)
    }

    /// Runs a dot fusion's epilogue inside the dot's tasks, each block of the dot's rows
    /// followed by the epilogue rows that read it while it is in cache (`true`, the
    /// default, where the plan allows it), or after the whole dot (`false`). Like
    /// [`CpuExecutable::set_row_chains`] a setting of the executable, so the same code can
    /// be measured both ways; both give the same results bit for bit.
    pub fn set_tile_epilogues(&self, on: bool) {
        self.tile_epilogues.store(on, Ordering::Relaxed);
    }

    /// The scope of a run of this executable as the top level.
    fn top_scope<'w>(&self, nested: Option<&'w ScopedWrap<'w>>) -> Scope<'w> {
        Scope {
            path: String::new(),
            nested,
            chain_bytes: self.row_chains(),
            tile_epilogues: self.tile_epilogues.load(Ordering::Relaxed),
        }
    }

    pub fn plan(&self) -> &KernelPlan {
        &self.plan
    }

    /// The module it runs (the optimized module, plus one wrapper computation per
    /// interpreted kernel); its entry takes the same parameters as the source module.
    pub fn module(&self) -> &crate::ir::Module {
        &self.module
    }

    /// The arena assignment the runs use: the plan's, or a fresh one when compiling
    /// rewrote kernels after planning.
    pub fn arena_assignment(&self) -> std::borrow::Cow<'_, kernel::ArenaAssignment> {
        if self.plan.arena.is_current(&self.plan) {
            std::borrow::Cow::Borrowed(&self.plan.arena)
        } else {
            std::borrow::Cow::Owned(kernel::assign_arena(&self.plan))
        }
    }

    /// How kernel `i`'s code runs, as [`KernelInfo::code`] says.
    pub fn code_summary(&self, i: usize) -> &str {
        self.summaries.get(i).map_or("", String::as_str)
    }

    /// Kernel `i`'s Cranelift IR, if it was JIT-compiled.
    pub fn clif(&self, i: usize) -> Option<&str> {
        self.listings.get(i).map(|l| &*l.0).filter(|s| !s.is_empty())
    }

    /// Kernel `i`'s machine code listing, if it was JIT-compiled.
    pub fn asm(&self, i: usize) -> Option<&str> {
        self.listings.get(i).map(|l| &*l.1).filter(|s| !s.is_empty())
    }

    /// Runs the module on `args` (one value per entry parameter).
    pub fn run(&self, args: &[Value]) -> Result<Value, String> {
        self.run_with(args, &mut |_, exec| exec())
    }

    /// Like `run`, calling `wrap(kernel, exec)` for each kernel; `wrap` must call `exec`
    /// once (to time it, for instance) and return its result.
    pub fn run_with(&self, args: &[Value], wrap: &mut Wrap) -> Result<Value, String> {
        self.execute(args, wrap, &self.top_scope(None), None)
    }

    /// Like `run`, with a hook for the custom calls the interpreter does not know (the
    /// conformance corpus's `check.*` ops), as `Interpreter::with_custom_call_hook`.
    pub fn run_with_custom_calls(&self, args: &[Value], hook: &mut CustomCalls) -> Result<Value, String> {
        self.execute(args, &mut |_, exec| exec(), &self.top_scope(None), Some(hook))
    }

    /// Runs on caller memory, in the buffers' byte encoding (`Literal::to_le_bytes`):
    /// `inputs[i]` is leaf parameter i (tuples flattened), `outputs[j]` result leaf j.
    /// Parameters are read in place and results written in place when their bytes are
    /// 8-byte aligned (copied otherwise), so a run moves no more memory than its kernels
    /// do — what a benchmark should time. `wrap` as in [`CpuExecutable::run_with`].
    pub fn run_bytes(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]], wrap: &mut Wrap) -> Result<(), String> {
        self.run_bytes_in(inputs, outputs, wrap, None)
    }

    /// Like `run_bytes`, with `wrap` also called for every kernel of a while loop's
    /// condition and body (each iteration) and of a conditional's branch taken, nested
    /// at any depth; [`KernelInfo::scope`] says where each runs.
    pub fn run_bytes_scoped(
        &self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
        wrap: &ScopedWrap,
    ) -> Result<(), String> {
        self.run_bytes_in(inputs, outputs, &mut |k, exec| wrap(k, exec), Some(wrap))
    }

    fn run_bytes_in(
        &self,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
        wrap: &mut Wrap,
        nested: Option<&ScopedWrap>,
    ) -> Result<(), String> {
        let params: Vec<BufferId> = self.plan.params.iter().flat_map(|p| p.leaves()).collect();
        let results = self.plan.result.leaves();
        if inputs.len() != params.len() || outputs.len() != results.len() {
            return Err(format!(
                "the module takes {} input buffers and gives {} outputs, got {} and {}",
                params.len(),
                results.len(),
                inputs.len(),
                outputs.len()
            ));
        }
        let size = |b: BufferId| self.plan.buffers[b].shape.byte_size();
        for (i, (&b, x)) in params.iter().zip(inputs).enumerate() {
            if x.len() != size(b) {
                return Err(format!("input {i} holds {} bytes, parameter buffer {b} needs {}", x.len(), size(b)));
            }
        }
        for (j, (&b, y)) in results.iter().zip(outputs.iter()).enumerate() {
            if y.len() != size(b) {
                return Err(format!("output {j} holds {} bytes, result buffer {b} needs {}", y.len(), size(b)));
            }
        }
        let aligned = |p: *const u8| (p as usize).is_multiple_of(8);
        let pinned: std::collections::HashSet<BufferId> =
            params.iter().copied().chain(self.plan.constants.iter().map(|c| c.0)).collect();
        self.with_arena(|bufs| {
            bufs.external.iter_mut().for_each(|e| *e = None);
            for (&b, x) in params.iter().zip(inputs) {
                if aligned(x.as_ptr()) {
                    bufs.external[b.index()] = Some(x.as_ptr() as *mut u8);
                } else {
                    bufs.bytes_mut(b).copy_from_slice(x);
                }
            }
            // A result computed by a kernel is written straight into the caller's
            // buffer (unless the same buffer is returned twice).
            let mut direct = vec![false; results.len()];
            for (j, (&b, y)) in results.iter().zip(outputs.iter_mut()).enumerate() {
                let unique = results.iter().filter(|&&r| r == b).count() == 1;
                if unique && !pinned.contains(&b) && aligned(y.as_ptr()) {
                    bufs.external[b.index()] = Some(y.as_mut_ptr());
                    direct[j] = true;
                }
            }
            let ran = pool::as_caller(|| self.run_kernels(bufs, wrap, &self.top_scope(nested), None));
            for (j, (&b, y)) in results.iter().zip(outputs.iter_mut()).enumerate() {
                if ran.is_ok() && !direct[j] {
                    y.copy_from_slice(bufs.bytes(b));
                }
            }
            bufs.external.iter_mut().for_each(|e| *e = None);
            ran
        })
    }

    /// Calls `f` with the executable's cached arena (made on first use), or with a
    /// fresh one while another run holds it.
    fn with_arena<T>(&self, f: impl FnOnce(&mut Arena) -> T) -> T {
        let mut slot = match self.arena.try_lock() {
            Ok(guard) => Some(guard),
            // A kernel that failed half-way leaves only buffers every run rewrites.
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        };
        match slot.as_deref_mut() {
            Some(cached) => f(cached.get_or_insert_with(|| Arena::new(self))),
            None => f(&mut Arena::new(self)),
        }
    }

    fn execute(
        &self,
        args: &[Value],
        wrap: &mut Wrap,
        scope: &Scope,
        hook: Option<&mut CustomCalls>,
    ) -> Result<Value, String> {
        if args.len() != self.plan.params.len() {
            return Err(format!("the module takes {} arguments, got {}", self.plan.params.len(), args.len()));
        }
        let comp = self.module.comp(self.plan.comp);
        for (i, v) in args.iter().enumerate() {
            let want = &comp.inst(comp.params[i]).ty;
            if !v.ty().same_type(want) {
                return Err(format!("argument {i} is {}, the parameter is {want}", v.ty()));
            }
        }
        self.with_arena(|bufs| {
            bufs.external.iter_mut().for_each(|e| *e = None);
            for (v, p) in args.iter().zip(&self.plan.params) {
                write_value(bufs, p, v.clone());
            }
            pool::as_caller(|| self.run_kernels(bufs, wrap, scope, hook))?;
            read_value(&self.plan, bufs, &self.plan.result)
        })
    }

    /// Runs a row chain's members chunk by chunk of their rows (the free `run_chain`).
    fn run_chain(&self, bufs: &mut Arena, chain: &Chain, budget: usize) -> Result<(), String> {
        let mut tables = Vec::new();
        let mut members = Vec::new();
        for j in chain.kernels.clone() {
            let (Code::Native { f, .. }, m) = (&self.code[j], &self.plan.kernels[j]) else {
                return Err("a row chain member is not native code".into());
            };
            tables.push(bufs.pointers(m.inputs.iter().chain(&m.outputs).copied()));
            members.push(*f);
        }
        let members: Vec<(KernelFn, Table)> =
            members.into_iter().zip(&tables).map(|(f, t)| (f, Table(t.as_ptr()))).collect();
        run_chain(&members, chain, budget);
        Ok(())
    }

    /// Runs dot kernel `i` with its epilogue, kernel `i + 1`, inside the dot's tasks.
    fn run_dot_with_epilogue(
        &self,
        bufs: &mut Arena,
        i: usize,
        spec: &kernel::DotSpec,
        e: kernel::chains::TileEpilogue,
    ) -> Result<(), String> {
        let (k, epilogue) = (&self.plan.kernels[i], &self.plan.kernels[i + 1]);
        let Code::Native { f, work, .. } = self.code[i + 1] else {
            return Err("a dot's epilogue that is not native code".into());
        };
        let pointers = bufs.pointers(epilogue.inputs.iter().chain(&epilogue.outputs).copied());
        let table = Table(pointers.as_ptr());
        let (l, r, o) = (k.inputs[0], k.inputs[1], k.outputs[0]);
        let p = bufs.pointers([l, r, o].into_iter());
        let run = |r0: usize, r1: usize| f(table.ptr(), r0 as i64, r1 as i64);
        let parallel = work as u64 >= PARALLEL_WORK;
        let epilogue = dot::Epilogue { rows: e.rows, dot_rows: e.dot_rows, parallel, run: &run };
        // SAFETY: as for a dot alone (see `run_kernels`); the epilogue's rows read only the
        // dot's rows computed before them (the plan's permission), and its outputs share
        // no bytes with anything the dot reads or writes elsewhere (`epilogue_writes_apart`).
        unsafe { dot::run(spec, &self.plan, (l, p[0]), (r, p[1]), (o, p[2]), Some(&epilogue)) }
    }

    /// Runs every kernel in plan order on `bufs`.
    fn run_kernels(
        &self,
        bufs: &mut Arena,
        wrap: &mut Wrap,
        scope: &Scope,
        mut hook: Option<&mut CustomCalls>,
    ) -> Result<(), String> {
        let budget = scope.chain_bytes;
        let mut chains = self.chains.iter().filter(|_| budget.is_some()).peekable();
        let mut skip_to = 0;
        for (i, (k, code)) in self.plan.kernels.iter().zip(&self.code).enumerate() {
            if i < skip_to {
                continue;
            }
            while chains.next_if(|c| c.kernels.start < i).is_some() {}
            let chain = chains.next_if(|c| c.kernels.start == i);
            // A dot with its epilogue, unless the epilogue heads a chain of its own.
            let paired = match (code, self.epilogues.get(i).copied().flatten()) {
                (Code::Dot(spec), Some(e)) if scope.tile_epilogues && chain.is_none() => {
                    let epilogue = &self.plan.kernels[i + 1];
                    let chained = chains.peek().is_some_and(|c| c.kernels.start == i + 1);
                    (!chained && epilogue_writes_apart(bufs, k, epilogue)).then_some((spec, e))
                }
                _ => None,
            };
            let info = KernelInfo {
                index: i,
                name: &k.name,
                kind: &k.kind,
                scope: &scope.path,
                comp: self.plan.comp,
                source: k.source,
                code: self.summaries.get(i).map_or("", String::as_str),
                chained: match (chain, paired) {
                    (Some(c), _) => c.kernels.clone(),
                    (None, Some(_)) => i..i + 2,
                    (None, None) => i..i + 1,
                },
            };
            if let Some(chain) = chain {
                let mut exec = || self.run_chain(bufs, chain, budget.unwrap_or_else(default_chain_bytes));
                wrap(&info, &mut exec).map_err(|e| format!("kernel {}: {e}", k.name))?;
                skip_to = chain.kernels.end;
                continue;
            }
            if let Some((spec, e)) = paired {
                let mut exec = || self.run_dot_with_epilogue(bufs, i, spec, e);
                wrap(&info, &mut exec).map_err(|err| format!("kernel {}: {err}", k.name))?;
                skip_to = i + 2;
                continue;
            }
            let mut exec = || -> Result<(), String> {
                match code {
                    Code::Native { f, par_extent, work } => {
                        let ptrs = bufs.pointers(k.inputs.iter().chain(&k.outputs).copied());
                        run_native(*f, ptrs.as_ptr(), *par_extent, *work);
                        Ok(())
                    }
                    Code::Dot(spec) => {
                        let (l, r, o) = (k.inputs[0], k.inputs[1], k.outputs[0]);
                        let p = bufs.pointers([l, r, o].into_iter());
                        // SAFETY: the buffers' own bytes, aligned (arena lines, or caller
                        // memory checked for 8-byte alignment); the output is a buffer of
                        // its own (the arena never puts a dot's output in place).
                        unsafe { dot::run(spec, &self.plan, (l, p[0]), (r, p[1]), (o, p[2]), None) }
                    }
                    Code::Sort { spec, cmp } => {
                        for (i, o) in k.inputs.iter().zip(&k.outputs) {
                            copy_unless_in_place(bufs, *i, *o);
                        }
                        let outs = bufs.pointers(k.outputs.iter().copied());
                        // SAFETY: the outputs are distinct buffers of the spec's shapes, and
                        // `cmp` is its compiled comparator.
                        unsafe { sort::run(spec, *cmp, &outs) };
                        Ok(())
                    }
                    Code::Scatter { spec, combine } => {
                        let n = k.outputs.len();
                        for (i, o) in k.inputs[..n].iter().zip(&k.outputs) {
                            copy_unless_in_place(bufs, *i, *o);
                        }
                        let indices = bufs.bytes(k.inputs[n]).to_vec();
                        let updates: Vec<Vec<u8>> = k.inputs[n + 1..].iter().map(|&b| bufs.bytes(b).to_vec()).collect();
                        let updates: Vec<&[u8]> = updates.iter().map(|u| u.as_slice()).collect();
                        let outs = bufs.pointers(k.outputs.iter().copied());
                        // SAFETY: the outputs are distinct buffers of the spec's shapes, and
                        // `combine` is its compiled combiner.
                        unsafe { scatter::run(spec, *combine, &indices, &updates, &outs) }
                    }
                    Code::Interpret { comp, operands, result } => {
                        let vals: Vec<Value> =
                            operands.iter().map(|o| read_value(&self.plan, bufs, o)).collect::<Result<_, _>>()?;
                        let mut interp = Interpreter::new(&self.module);
                        if let Some(h) = hook.as_deref_mut() {
                            interp = interp.with_custom_call_hook(move |i, a| h(i, a));
                        }
                        let v = interp.call(*comp, &vals).map_err(|e| format!("%{}: {}", e.inst, e.message))?;
                        write_value(bufs, result, v);
                        Ok(())
                    }
                    Code::While { cond, body, operands, result } => {
                        let mut state: Vec<Value> =
                            operands.iter().map(|o| read_value(&self.plan, bufs, o)).collect::<Result<_, _>>()?;
                        let mut iterations = 0u64;
                        let (in_cond, in_body) = (scope.inner(&k.name, "cond"), scope.inner(&k.name, "body"));
                        loop {
                            let go = cond.execute(
                                &state,
                                &mut |k, exec| in_cond.wrap(k, exec),
                                &in_cond,
                                hook.as_deref_mut(),
                            )?;
                            if !control::loop_continues(&go)? {
                                break;
                            }
                            control::count_iteration(&mut iterations)?;
                            let next = body.execute(
                                &state,
                                &mut |k, exec| in_body.wrap(k, exec),
                                &in_body,
                                hook.as_deref_mut(),
                            )?;
                            state = control::next_state(next, state.len())?;
                        }
                        write_value(bufs, result, control::loop_result(state));
                        Ok(())
                    }
                    Code::Case { branches, branch_operands, operands, result } => {
                        let selector = read_value(&self.plan, bufs, &operands[0])?;
                        let chosen = control::branch_index(&selector, branches.len())?;
                        let args: Vec<Value> = branch_operands[chosen]
                            .iter()
                            .map(|&k| {
                                let at = operands.get(k as usize + 1).ok_or("a branch operand out of range")?;
                                read_value(&self.plan, bufs, at)
                            })
                            .collect::<Result<_, _>>()?;
                        let inside = scope.inner(&k.name, &format!("branch{chosen}"));
                        let v = branches[chosen].execute(
                            &args,
                            &mut |k, exec| inside.wrap(k, exec),
                            &inside,
                            hook.as_deref_mut(),
                        )?;
                        write_value(bufs, result, v);
                        Ok(())
                    }
                }
            };
            wrap(&info, &mut exec).map_err(|e| format!("kernel {}: {e}", k.name))?;
        }
        Ok(())
    }
}

use cranelift_entity::EntityRef;

/// Where kernels run, for [`KernelInfo::scope`], and the wrapper that times the kernels
/// of the computations inside control flow (none: they run unwrapped).
struct Scope<'w> {
    path: String,
    nested: Option<&'w ScopedWrap<'w>>,
    /// The per-chunk working set of row chains, or None to run them kernel by kernel:
    /// the top executable's setting ([`CpuExecutable::set_row_chains`]), for everything
    /// run inside it.
    chain_bytes: Option<usize>,
    /// Whether dots run their epilogues in their tasks: the top executable's setting
    /// ([`CpuExecutable::set_tile_epilogues`]).
    tile_epilogues: bool,
}

impl<'w> Scope<'w> {
    /// The scope of `part` (`body`, `cond`, `branch1`) of control-flow kernel `name`.
    fn inner(&self, name: &str, part: &str) -> Scope<'w> {
        let path = if self.path.is_empty() { format!("{name}/{part}") } else { format!("{}/{name}/{part}", self.path) };
        Scope { path, nested: self.nested, chain_bytes: self.chain_bytes, tile_epilogues: self.tile_epilogues }
    }

    /// Runs `exec` through the nested wrapper, if any.
    fn wrap(&self, k: &KernelInfo, exec: &mut dyn FnMut() -> Result<(), String>) -> Result<(), String> {
        match self.nested {
            Some(w) => w(k, exec),
            None => exec(),
        }
    }
}

/// Copies buffer `from` into `to`, unless the arena put them at the same bytes (an
/// in-place sort or scatter: the operand already is its output).
fn copy_unless_in_place(bufs: &mut Arena, from: BufferId, to: BufferId) {
    if bufs.addr(from) != bufs.addr(to) {
        let src = bufs.bytes(from).to_vec();
        bufs.bytes_mut(to).copy_from_slice(&src);
    }
}

fn write_value(bufs: &mut Arena, at: &ValueBufs, v: Value) {
    match (at, v) {
        (ValueBufs::Array(b), Value::Array(l)) => bufs.bytes_mut(*b).copy_from_slice(&l.to_le_bytes()),
        (ValueBufs::Tuple(ps), Value::Tuple(vs)) => {
            for (p, v) in ps.iter().zip(vs) {
                write_value(bufs, p, v);
            }
        }
        _ => {}
    }
}

fn read_value(plan: &KernelPlan, bufs: &Arena, at: &ValueBufs) -> Result<Value, String> {
    Ok(match at {
        ValueBufs::Array(b) => Value::Array(read_buffer(plan, bufs, *b)?),
        ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| read_value(plan, bufs, p)).collect::<Result<_, _>>()?),
        ValueBufs::Token => Value::Token,
    })
}

fn read_buffer(plan: &KernelPlan, bufs: &Arena, b: BufferId) -> Result<Literal, String> {
    let shape = plan.buffers[b].shape.clone();
    Literal::from_le_bytes(shape, bufs.bytes(b)).ok_or_else(|| format!("buffer {b} has the wrong size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_read_as_sysfs_writes_them() {
        assert_eq!(cache_size("1024K\n"), Some(1 << 20));
        assert_eq!(cache_size("2M"), Some(2 << 20));
        assert_eq!(cache_size("512"), Some(512));
        assert_eq!(cache_size("big"), None);
        assert_eq!(cache_size("99999999999999999999M"), None);
        let chunk = default_chain_bytes();
        assert!((128 << 10..=1 << 20).contains(&chunk), "{chunk}");
    }
}
