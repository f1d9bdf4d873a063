//! Runs a [`WebGpuProgram`] through wgpu: one storage buffer holds the plan's arena, one
//! compute pipeline per shader, one compute pass per kernel (so each sees the previous
//! one's stores), submitted together until a host kernel needs the data.
//!
//! Host kernels (opaque: the interpreter) read the arena back into a host mirror, run,
//! and write their outputs back. Constants are written once, when the executable is
//! made, and parameters before each run ([`WebGpuExecutable::load`]): the arena pins
//! both, so no kernel overwrites them and a bench can run the kernels again on what is
//! loaded ([`WebGpuExecutable::execute`]). Only the result's buffers are read back.
//!
//! Per-kernel times are opt-in ([`WebGpuExecutable::run_timed`]), since measuring
//! changes how a run is submitted; [`TimingMethod`] says how. Timestamps come from each
//! compute pass's `timestamp_writes`, which need only `Features::TIMESTAMP_QUERY`
//! (requested when the adapter has it); `TIMESTAMP_QUERY_INSIDE_ENCODERS` and
//! `_INSIDE_PASSES`, for timestamps between commands, are not needed with one pass per
//! kernel.
//!
//! The work is async ([`WebGpuExecutable::open`], [`WebGpuExecutable::run_measured`],
//! ...), because a browser hands back mapped buffers and finished submissions only
//! through its event loop (the explorer's worker awaits them); natively the same calls
//! block on the device and the plain methods ([`WebGpuExecutable::new`],
//! [`WebGpuExecutable::run`], ...) drive them with `pollster`.

use super::WebGpuProgram;
use crate::interp::CustomCallHook;
use crate::ir::{Literal, Module, Value};
use crate::kernel::{BufferId, KernelBody, ValueBufs};
use crate::targets::control;
use clock::Stopwatch;
use std::time::Duration;

/// The adapter a device came from, in words (for the CLI and the bench).
#[derive(Clone, Debug)]
pub struct AdapterInfo {
    pub name: String,
    pub backend: String,
    pub driver: String,
}

/// How a timed run measured its device kernels (host kernels are always timed on the
/// host clock).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimingMethod {
    /// The GPU's own clock: a timestamp at the start and at the end of each kernel's
    /// compute pass, all kernels still in one submission between host kernels.
    GpuTimestamps,
    /// The host's clock around each kernel submitted alone and waited for: the kernel
    /// plus one submission's and one wait's overhead (for adapters without timestamps).
    SubmitAndWait,
}

impl TimingMethod {
    /// What the CLI and the bench call it.
    pub fn label(self) -> &'static str {
        match self {
            TimingMethod::GpuTimestamps => "gpu timestamps",
            TimingMethod::SubmitAndWait => "submit and wait per kernel",
        }
    }
}

/// One kernel of a timed run.
#[derive(Clone, Debug)]
pub struct KernelTime {
    /// The plan kernel's name (its source instruction's).
    pub name: String,
    /// Run on the host by the interpreter (timed from reading the arena back to its
    /// outputs' upload), not on the device.
    pub on_host: bool,
    pub time: Duration,
}

/// Per-kernel times of one run: one entry per plan kernel, in plan order (a kernel with
/// nothing to do gets zero).
#[derive(Clone, Debug)]
pub struct KernelTimes {
    pub method: TimingMethod,
    pub kernels: Vec<KernelTime>,
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct RunTimes {
    /// From writing the inputs to reading the result back.
    pub total: Duration,
    /// Per kernel, for a timed run.
    pub kernels: Option<KernelTimes>,
}

/// The buffers of timestamp queries: two per dispatched kernel.
struct Timestamps {
    set: wgpu::QuerySet,
    /// Where the set is resolved (GPU side), then copied for mapping.
    resolve: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Nanoseconds per tick.
    period: f64,
}

/// The system's default adapter (in a browser, `navigator.gpu`'s), or why there is none.
async fn default_adapter() -> Result<wgpu::Adapter, String> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    if cfg!(target_arch = "wasm32") {
        desc.backends = wgpu::Backends::BROWSER_WEBGPU;
    }
    let instance = wgpu::Instance::new(desc);
    instance.request_adapter(&wgpu::RequestAdapterOptions::default()).await.map_err(|e| {
        format!(
            "no WebGPU adapter: {e} ({})",
            if cfg!(target_arch = "wasm32") {
                "navigator.gpu offered none"
            } else {
                "on Linux without a GPU, install mesa-vulkan-drivers for lavapipe"
            }
        )
    })
}

/// The emitter's options for an adapter: workgroup staging on a GPU, not on an adapter
/// that runs on the CPU (lavapipe, llvmpipe, SwiftShader), where it measured slower
/// (see [`super::wgsl::Options`]).
pub fn options_for(info: &wgpu::AdapterInfo) -> super::wgsl::Options {
    let name = info.name.to_lowercase();
    let on_cpu = info.device_type == wgpu::DeviceType::Cpu
        || ["llvmpipe", "lavapipe", "swiftshader"].iter().any(|n| name.contains(n));
    super::wgsl::Options { workgroup_staging: !on_cpu }
}

/// One compute pass of a kernel: its pipeline, bind group and workgroups.
struct Pass {
    pipeline: wgpu::ComputePipeline,
    bind: wgpu::BindGroup,
    workgroups: u32,
}

/// A kernel on the device: its passes in order (a scatter's copy, claims, then its
/// updates), and the scratch buffer they share, zeroed before the first.
struct DeviceKernel {
    passes: Vec<Pass>,
    scratch: Option<wgpu::Buffer>,
}

/// A WebGPU device with the program's pipelines.
pub struct WebGpuExecutable {
    program: WebGpuProgram,
    /// The module with a host computation per host kernel.
    module: Module,
    host: Vec<Option<crate::ir::CompId>>,
    device: wgpu::Device,
    queue: wgpu::Queue,
    arena: wgpu::Buffer,
    /// Per kernel on the device: its passes in order (one, or a scatter's two or
    /// three), each a pipeline, its bind group and its workgroups.
    pipelines: Vec<Option<DeviceKernel>>,
    /// Per kernel: a while loop's condition and body, or a conditional's branches, on the
    /// same device (empty for other kernels).
    nested: Vec<Vec<WebGpuExecutable>>,
    /// The best way to time kernels here ([`WebGpuExecutable::timing_method`]).
    method: TimingMethod,
    /// The query set when timing by timestamps (none when nothing is dispatched).
    timestamps: Option<Timestamps>,
    pub adapter: AdapterInfo,
}

impl WebGpuExecutable {
    /// Opens the system's default adapter (a real GPU if there is one; in a browser,
    /// `navigator.gpu`'s), builds every pipeline and writes the constants; errors say
    /// what is missing (no adapter, an arena past its limits, a shader the driver
    /// refuses).
    pub async fn open(module: &Module, program: WebGpuProgram) -> Result<WebGpuExecutable, String> {
        Self::open_on(default_adapter().await?, module, program).await
    }

    /// Opens the system's default adapter, compiles `module` (planned as it is) with the
    /// emitter options its kind calls for ([`options_for`]) and opens the program on it.
    pub async fn compile_and_open(module: &Module) -> Result<WebGpuExecutable, String> {
        let adapter = default_adapter().await?;
        let program = super::compile_with(module, options_for(&adapter.get_info()))?;
        Self::open_on(adapter, module, program).await
    }

    async fn open_on(
        adapter: wgpu::Adapter,
        module: &Module,
        program: WebGpuProgram,
    ) -> Result<WebGpuExecutable, String> {
        let info = adapter.get_info();
        let limits = adapter.limits();
        let most = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let dispatched = program.dispatched() as u32;
        // Two queries per kernel in one set; a plan past the set's cap is timed by
        // submit and wait instead.
        let method = if adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY)
            && 2 * dispatched <= wgpu::QUERY_SET_MAX_QUERIES
        {
            TimingMethod::GpuTimestamps
        } else {
            TimingMethod::SubmitAndWait
        };
        let timestamps_wanted = method == TimingMethod::GpuTimestamps && dispatched > 0;
        let required_features =
            if timestamps_wanted { wgpu::Features::TIMESTAMP_QUERY } else { wgpu::Features::empty() };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("hloscope"),
                required_features,
                required_limits: limits,
                ..Default::default()
            })
            .await
            .map_err(|e| format!("the adapter {} gave no device: {e}", info.name))?;
        let adapter = AdapterInfo {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
        };
        let on = OnDevice { device: &device, queue: &queue, adapter: &adapter, most };
        on.open(module, program, method, timestamps_wanted).await
    }
}

/// What every program opened on one device shares: a while loop's or conditional's
/// programs run on their parent's device.
struct OnDevice<'a> {
    device: &'a wgpu::Device,
    queue: &'a wgpu::Queue,
    adapter: &'a AdapterInfo,
    /// The most bytes one storage buffer may bind.
    most: u64,
}

impl OnDevice<'_> {
    /// `program`'s arena, pipelines and constants (and its control flow's programs', each
    /// with an arena of its own), timed by `method` (timestamps when wanted: the top
    /// program only; control flow is timed whole, by the clock).
    async fn open(
        &self,
        module: &Module,
        program: WebGpuProgram,
        method: TimingMethod,
        timestamps_wanted: bool,
    ) -> Result<WebGpuExecutable, String> {
        let OnDevice { device, queue, adapter, most } = *self;
        let info = adapter;
        let bytes = program.plan.arena.arena_bytes.max(4).next_multiple_of(4);
        if bytes > most {
            return Err(format!(
                "the arena needs {} but the adapter {} binds at most {} in one storage buffer",
                crate::limits::format_bytes(bytes),
                info.name,
                crate::limits::format_bytes(most)
            ));
        }
        let arena = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("arena"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut pipelines = Vec::with_capacity(program.shaders.len());
        for (i, shader) in program.shaders.iter().enumerate() {
            let Some(shader) = shader else {
                pipelines.push(None);
                continue;
            };
            let scratch_bytes = shader.passes().map(|p| p.scratch_words).max().unwrap_or(0) * 4;
            if scratch_bytes > most {
                return Err(format!(
                    "kernel {i} (%{}) needs {} of scratch but the adapter {} binds at most {} in one storage buffer",
                    program.plan.kernels[i].name,
                    crate::limits::format_bytes(scratch_bytes),
                    info.name,
                    crate::limits::format_bytes(most)
                ));
            }
            let scratch = (scratch_bytes > 0).then(|| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("scratch"),
                    size: scratch_bytes,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            });
            let mut passes = Vec::new();
            for sh in shader.passes() {
                let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
                let m = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(&program.plan.kernels[i].name),
                    source: wgpu::ShaderSource::Wgsl(sh.source.as_str().into()),
                });
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&program.plan.kernels[i].name),
                    layout: None,
                    module: &m,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                });
                if let Some(e) = scope.pop().await {
                    return Err(format!("kernel {i} (%{}): the shader was refused: {e}", program.plan.kernels[i].name));
                }
                let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: arena.as_entire_binding() }];
                if let (Some(scratch), true) = (&scratch, sh.scratch_words > 0) {
                    entries.push(wgpu::BindGroupEntry { binding: 1, resource: scratch.as_entire_binding() });
                }
                let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &entries,
                });
                if sh.workgroups() > 0 {
                    passes.push(Pass { pipeline, bind, workgroups: sh.workgroups() });
                }
            }
            pipelines.push(Some(DeviceKernel { passes, scratch }));
        }
        let timestamps = timestamps_wanted.then(|| {
            let count = 2 * program.dispatched() as u32;
            let size = u64::from(count) * u64::from(wgpu::QUERY_SIZE);
            let buffer = |label, usage| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation: false,
                })
            };
            Timestamps {
                set: device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("kernel times"),
                    ty: wgpu::QueryType::Timestamp,
                    count,
                }),
                resolve: buffer("timestamps", wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
                readback: buffer("timestamps readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
                period: f64::from(queue.get_timestamp_period()),
            }
        });
        let (wrapped, host) = program.plan.host_computations(module);
        let mut nested = Vec::with_capacity(program.nested.len());
        for programs in &program.nested {
            let mut opened = Vec::with_capacity(programs.len());
            for p in programs {
                opened.push(Box::pin(self.open(module, p.clone(), TimingMethod::SubmitAndWait, false)).await?);
            }
            nested.push(opened);
        }
        let exe = WebGpuExecutable {
            program,
            module: wrapped,
            host,
            device: device.clone(),
            queue: queue.clone(),
            arena,
            pipelines,
            nested,
            method,
            timestamps,
            adapter: adapter.clone(),
        };
        for (b, lit) in &exe.program.plan.constants {
            exe.upload(*b, lit)?;
        }
        Ok(exe)
    }
}

/// Where a value's buffers lie in an arena: each leaf's byte offset and length, padded
/// to whole words (a buffer's slot runs to its 256-byte alignment, so the padding is
/// its own), depth first.
fn leaf_spans(plan: &crate::kernel::KernelPlan, at: &[ValueBufs]) -> Vec<(u64, u64)> {
    at.iter()
        .flat_map(ValueBufs::leaves)
        .map(|b| {
            let (offset, n) = plan.span(b);
            (offset as u64, (n as u64).next_multiple_of(4))
        })
        .collect()
}

/// Copies each span of `from` in `src` to the same-sized span of `to` in `dst`.
fn copy_spans(
    enc: &mut wgpu::CommandEncoder,
    (src, from): (&wgpu::Buffer, &[(u64, u64)]),
    (dst, to): (&wgpu::Buffer, &[(u64, u64)]),
) -> Result<(), String> {
    if from.len() != to.len() {
        return Err(format!("{} buffers copied to {}", from.len(), to.len()));
    }
    for (&(a, n), &(b, m)) in from.iter().zip(to) {
        if n != m {
            return Err(format!("a buffer of {n} bytes copied to one of {m}"));
        }
        if n > 0 {
            enc.copy_buffer_to_buffer(src, a, dst, b, n);
        }
    }
    Ok(())
}

impl WebGpuExecutable {
    /// Runs control-flow kernel `i` from the host, its state on the device: a while
    /// loop's state in a buffer of its own, copied into the condition's and the body's
    /// parameters and back from the body's result, the condition's pred the only value
    /// read back per iteration (as XLA's GPU runtime does); a conditional's selector
    /// read back, its operands copied into the chosen branch and its result out.
    async fn control_flow(&self, i: usize, mut hook: Option<&mut CustomCallHook<'_>>) -> Result<(), String> {
        let plan = &self.program.plan;
        let nested = &self.nested[i];
        let encoder = || self.device.create_command_encoder(&Default::default());
        match &plan.kernels[i].body {
            KernelBody::While { operands, result, .. } => {
                let [cond, body] = nested.as_slice() else {
                    return Err("a while loop without its condition and body".into());
                };
                let (operands, result) = (leaf_spans(plan, operands), leaf_spans(plan, std::slice::from_ref(result)));
                let (cond_params, body_params) = (
                    leaf_spans(&cond.program.plan, &cond.program.plan.params),
                    leaf_spans(&body.program.plan, &body.program.plan.params),
                );
                let body_result = leaf_spans(&body.program.plan, std::slice::from_ref(&body.program.plan.result));
                // The state: the leaves one after another.
                let mut state = Vec::with_capacity(operands.len());
                let mut size = 0;
                for &(_, n) in &operands {
                    state.push((size, n));
                    size += n;
                }
                let held = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("loop state"),
                    size: size.max(4),
                    usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut enc = encoder();
                copy_spans(&mut enc, (&self.arena, &operands), (&held, &state))?;
                self.queue.submit([enc.finish()]);
                let mut iterations = 0u64;
                loop {
                    let mut enc = encoder();
                    copy_spans(&mut enc, (&held, &state), (&cond.arena, &cond_params))?;
                    cond.queue.submit([enc.finish()]);
                    Box::pin(cond.execute_with(None, hook.as_deref_mut())).await?;
                    if !control::loop_continues(&cond.read_result_async().await?)? {
                        break;
                    }
                    control::count_iteration(&mut iterations)?;
                    let mut enc = encoder();
                    copy_spans(&mut enc, (&held, &state), (&body.arena, &body_params))?;
                    self.queue.submit([enc.finish()]);
                    Box::pin(body.execute_with(None, hook.as_deref_mut())).await?;
                    let mut enc = encoder();
                    copy_spans(&mut enc, (&body.arena, &body_result), (&held, &state))?;
                    self.queue.submit([enc.finish()]);
                }
                let mut enc = encoder();
                copy_spans(&mut enc, (&held, &state), (&self.arena, &result))?;
                self.queue.submit([enc.finish()]);
                Ok(())
            }
            KernelBody::Case { branch_operands, operands, result, .. } => {
                let Some(ValueBufs::Array(b)) = operands.first() else {
                    return Err("a conditional without a selector".into());
                };
                let shape = plan.buffers[*b].shape.clone();
                let bytes = self.read(&leaf_spans(plan, &operands[..1])).await?.concat();
                let selector = Literal::from_le_bytes(shape.clone(), &bytes[..shape.byte_size().min(bytes.len())])
                    .map(Value::Array)
                    .ok_or("the selector has the wrong size")?;
                let chosen = control::branch_index(&selector, nested.len())?;
                let branch = &nested[chosen];
                let args: Vec<ValueBufs> = branch_operands[chosen]
                    .iter()
                    .map(|&o| operands.get(o as usize + 1).cloned().ok_or("a branch operand out of range"))
                    .collect::<Result<_, _>>()?;
                let mut enc = encoder();
                copy_spans(
                    &mut enc,
                    (&self.arena, &leaf_spans(plan, &args)),
                    (&branch.arena, &leaf_spans(&branch.program.plan, &branch.program.plan.params)),
                )?;
                self.queue.submit([enc.finish()]);
                Box::pin(branch.execute_with(None, hook)).await.map_err(|e| format!("branch {chosen}: {e}"))?;
                let mut enc = encoder();
                let out = leaf_spans(&branch.program.plan, std::slice::from_ref(&branch.program.plan.result));
                copy_spans(
                    &mut enc,
                    (&branch.arena, &out),
                    (&self.arena, &leaf_spans(plan, std::slice::from_ref(result))),
                )?;
                self.queue.submit([enc.finish()]);
                Ok(())
            }
            _ => Err("not control flow".into()),
        }
    }

    pub fn program(&self) -> &WebGpuProgram {
        &self.program
    }

    /// How [`WebGpuExecutable::run_timed`] measures best on this adapter: timestamps
    /// when it has them, else submit and wait.
    pub fn timing_method(&self) -> TimingMethod {
        self.method
    }

    /// Runs the program on `args` (one value per entry parameter); with `timing`, each
    /// kernel timed by that method (slower than a plain run, whose kernels are recorded
    /// into one encoder between host kernels; timestamps where the adapter has none are
    /// an error).
    pub async fn run_measured(
        &self,
        args: &[Value],
        timing: Option<TimingMethod>,
    ) -> Result<(Value, RunTimes), String> {
        let start = Stopwatch::start();
        self.load(args)?;
        let kernels = self.execute_with(timing, None).await?;
        let out = self.read_result_async().await?;
        Ok((out, RunTimes { total: start.elapsed(), kernels }))
    }

    /// Writes the parameters into the arena (queued: the next submission carries them).
    pub fn load(&self, args: &[Value]) -> Result<(), String> {
        let plan = &self.program.plan;
        if args.len() != plan.params.len() {
            return Err(format!("{} arguments for {} parameters", args.len(), plan.params.len()));
        }
        plan.params.iter().zip(args).try_for_each(|(p, v)| self.upload_value(p, v))
    }

    /// Runs every kernel on what the arena holds (after [`WebGpuExecutable::load`]) and
    /// waits until the device is done; with `timing`, times each kernel, and with
    /// `hook`, answers the custom calls the interpreter does not know. The result stays
    /// in the arena ([`WebGpuExecutable::read_result_async`]).
    pub async fn execute_with(
        &self,
        timing: Option<TimingMethod>,
        mut hook: Option<&mut CustomCallHook<'_>>,
    ) -> Result<Option<KernelTimes>, String> {
        let plan = &self.program.plan;
        if timing == Some(TimingMethod::GpuTimestamps) && self.method != TimingMethod::GpuTimestamps {
            return Err(format!("the adapter {} cannot time these kernels by timestamps", self.adapter.name));
        }
        let timestamps = if timing == Some(TimingMethod::GpuTimestamps) { self.timestamps.as_ref() } else { None };
        let per_kernel = timing == Some(TimingMethod::SubmitAndWait);
        let mut times = vec![Duration::ZERO; plan.kernels.len()];
        if timing.is_some() {
            // The parameters' upload is no kernel's time.
            self.wait(self.queue.submit([])).await?;
        }
        let encoder = || self.device.create_command_encoder(&Default::default());
        let mut pending = encoder();
        // Whether `pending` holds work, and whether the host mirror misses the device's
        // stores (it starts empty: nothing was read back yet).
        let (mut dirty, mut stale) = (false, true);
        let mut mirror: Vec<u8> = Vec::new();
        // (kernel, its first query), in dispatch order.
        let mut queried: Vec<(usize, u32)> = Vec::new();
        for (i, k) in plan.kernels.iter().enumerate() {
            if let Some(DeviceKernel { passes, scratch }) = &self.pipelines[i] {
                if passes.is_empty() {
                    continue;
                }
                let first_query = 2 * queried.len() as u32;
                if timestamps.is_some() {
                    queried.push((i, first_query));
                }
                let mut alone = per_kernel.then(encoder);
                let enc = alone.as_mut().unwrap_or(&mut pending);
                if let Some(scratch) = scratch {
                    enc.clear_buffer(scratch, 0, None);
                }
                // A kernel of several passes is timed from its first's start to its
                // last's end; passes run in order, each seeing the previous one's stores.
                for (p, step) in passes.iter().enumerate() {
                    let writes = timestamps.map(|t| wgpu::ComputePassTimestampWrites {
                        query_set: &t.set,
                        beginning_of_pass_write_index: (p == 0).then_some(first_query),
                        end_of_pass_write_index: (p + 1 == passes.len()).then_some(first_query + 1),
                    });
                    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                        label: Some(&k.name),
                        timestamp_writes: writes,
                    });
                    pass.set_pipeline(&step.pipeline);
                    pass.set_bind_group(0, &step.bind, &[]);
                    pass.dispatch_workgroups(step.workgroups, 1, 1);
                }
                stale = true;
                match alone {
                    Some(enc) => {
                        let t = Stopwatch::start();
                        self.wait(self.queue.submit([enc.finish()])).await?;
                        times[i] = t.elapsed();
                    }
                    None => dirty = true,
                }
                continue;
            }
            // Host work next (control flow, or a kernel the interpreter runs): the device
            // kernels queued so far go first.
            if dirty {
                let idx = self.queue.submit([std::mem::replace(&mut pending, encoder()).finish()]);
                if timing.is_some() {
                    // The device kernels before this one are theirs, not its time.
                    self.wait(idx).await?;
                }
                dirty = false;
            }
            let t = Stopwatch::start();
            if !self.nested[i].is_empty() {
                // Control flow: its state stays on the device (copied between arenas),
                // only the condition or selector read back.
                self.control_flow(i, hook.as_deref_mut()).await.map_err(|e| format!("%{}: {e}", k.name))?;
                stale = true;
            } else {
                if stale {
                    mirror = self.read(&[(0, self.arena.size())]).await?.pop().unwrap_or_default();
                    stale = false;
                }
                let result =
                    plan.interpret_kernel(i, (&self.module, self.host[i]), &mut mirror[..], hook.as_deref_mut())?;
                for b in result.leaves() {
                    let (at, n) = plan.span(b);
                    let end = (at + n).next_multiple_of(4).min(mirror.len());
                    self.queue.write_buffer(&self.arena, at as u64, &mirror[at..end]);
                }
            }
            if timing.is_some() {
                self.wait(self.queue.submit([])).await?;
            }
            times[i] = t.elapsed();
        }
        if let (Some(t), false) = (timestamps, queried.is_empty()) {
            // Queries written by earlier submissions keep their values: resolve them all
            // once, after the last kernel.
            let n = 2 * queried.len() as u32;
            pending.resolve_query_set(&t.set, 0..n, &t.resolve, 0);
            pending.copy_buffer_to_buffer(&t.resolve, 0, &t.readback, 0, u64::from(n) * u64::from(wgpu::QUERY_SIZE));
        }
        self.wait(self.queue.submit([pending.finish()])).await?;
        if let (Some(t), false) = (timestamps, queried.is_empty()) {
            let ticks = self
                .map_read(&t.readback, |bytes| {
                    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<u64>>()
                })
                .await?;
            for &(i, q) in &queried {
                let (begin, end) = (ticks[q as usize], ticks[q as usize + 1]);
                times[i] = Duration::from_nanos((end.saturating_sub(begin) as f64 * t.period).round() as u64);
            }
        }
        Ok(timing.map(|method| KernelTimes {
            method,
            kernels: plan
                .kernels
                .iter()
                .zip(times)
                .enumerate()
                .map(|(i, (k, time))| KernelTime {
                    name: k.name.clone(),
                    // Control flow runs its programs' kernels on the device (timed whole).
                    on_host: self.pipelines[i].is_none() && self.nested[i].is_empty(),
                    time,
                })
                .collect(),
        }))
    }

    /// The result of the last [`WebGpuExecutable::execute_with`], read from the device.
    pub async fn read_result_async(&self) -> Result<Value, String> {
        let plan = &self.program.plan;
        let leaves = plan.result.leaves();
        let spans: Vec<(u64, u64)> = leaves
            .iter()
            .map(|&b| {
                let (at, n) = plan.span(b);
                (at as u64, (n as u64).next_multiple_of(4))
            })
            .collect();
        let literals = leaves
            .iter()
            .zip(self.read(&spans).await?)
            .map(|(&b, bytes)| {
                let shape = &plan.buffers[b].shape;
                Literal::from_le_bytes(shape.clone(), &bytes[..shape.byte_size()])
                    .ok_or_else(|| format!("{b} has the wrong size"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Leaves are depth-first, as `assemble` takes them.
        fn assemble(at: &ValueBufs, leaves: &mut std::vec::IntoIter<Literal>) -> Value {
            match at {
                ValueBufs::Array(_) => Value::Array(leaves.next().expect("one literal per leaf")),
                ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| assemble(p, leaves)).collect()),
                ValueBufs::Token => Value::Token,
            }
        }
        Ok(assemble(&plan.result, &mut literals.into_iter()))
    }

    /// Queues buffer `b`'s bytes, `lit`, for the arena.
    fn upload(&self, b: BufferId, lit: &Literal) -> Result<(), String> {
        let (at, n) = self.program.plan.span(b);
        let mut bytes = lit.to_le_bytes();
        if bytes.len() != n {
            return Err(format!("{b} holds {n} bytes, the value {}", bytes.len()));
        }
        // Copies are whole words; the buffer's own padding takes the rest.
        bytes.resize(n.next_multiple_of(4), 0);
        if !bytes.is_empty() {
            self.queue.write_buffer(&self.arena, at as u64, &bytes);
        }
        Ok(())
    }

    fn upload_value(&self, at: &ValueBufs, v: &Value) -> Result<(), String> {
        match (at, v) {
            (ValueBufs::Array(b), Value::Array(l)) => self.upload(*b, l),
            (ValueBufs::Tuple(ps), Value::Tuple(vs)) if ps.len() == vs.len() => {
                ps.iter().zip(vs).try_for_each(|(p, v)| self.upload_value(p, v))
            }
            (ValueBufs::Token, _) => Ok(()),
            _ => Err("a value of another structure than its buffers".into()),
        }
    }

    /// Until submission `idx` (and everything before it) is done: natively the device
    /// is polled until then; a browser says so through a callback.
    async fn wait(&self, idx: wgpu::SubmissionIndex) -> Result<(), String> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            self.device
                .poll(wgpu::PollType::Wait { submission_index: Some(idx), timeout: None })
                .map(|_| ())
                .map_err(|e| format!("the device stopped: {e}"))
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = idx;
            let (tx, rx) = futures_channel::oneshot::channel();
            self.queue.on_submitted_work_done(move || {
                let _ = tx.send(());
            });
            rx.await.map_err(|_| "the device stopped before the work was done".to_string())
        }
    }

    /// The arena's bytes at each (offset, length), both multiples of 4, after
    /// everything submitted so far.
    async fn read(&self, spans: &[(u64, u64)]) -> Result<Vec<Vec<u8>>, String> {
        let size: u64 = spans.iter().map(|s| s.1).sum();
        if size == 0 {
            return Ok(spans.iter().map(|_| Vec::new()).collect());
        }
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        let mut to = 0;
        for &(at, n) in spans {
            if n > 0 {
                enc.copy_buffer_to_buffer(&self.arena, at, &staging, to, n);
            }
            to += n;
        }
        self.queue.submit([enc.finish()]);
        self.map_read(&staging, |bytes| {
            let mut from = 0;
            spans
                .iter()
                .map(|&(_, n)| {
                    let part = bytes[from..from + n as usize].to_vec();
                    from += n as usize;
                    part
                })
                .collect()
        })
        .await
    }

    /// Maps `buffer` once the queue is done with it and reads it with `f` (natively the
    /// poll runs the mapping's callback; a browser runs it from its event loop, a no-op
    /// poll).
    async fn map_read<T>(&self, buffer: &wgpu::Buffer, f: impl FnOnce(&[u8]) -> T) -> Result<T, String> {
        let (tx, rx) = futures_channel::oneshot::channel();
        buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: None })
            .map_err(|e| format!("the device stopped: {e}"))?;
        rx.await
            .map_err(|_| "the readback never finished".to_string())?
            .map_err(|e| format!("readback failed: {e}"))?;
        let out = {
            let view = buffer.slice(..).get_mapped_range().map_err(|e| format!("readback failed: {e}"))?;
            f(&view)
        };
        buffer.unmap();
        Ok(out)
    }
}

/// The blocking forms of the async calls, for the CLI, the bench and the tests (a
/// browser cannot block: it awaits the async ones).
#[cfg(not(target_arch = "wasm32"))]
impl WebGpuExecutable {
    /// [`WebGpuExecutable::open`], waited for.
    pub fn new(module: &Module, program: WebGpuProgram) -> Result<WebGpuExecutable, String> {
        pollster::block_on(Self::open(module, program))
    }

    /// [`WebGpuExecutable::compile_and_open`], blocking.
    pub fn compile_and_new(module: &Module) -> Result<WebGpuExecutable, String> {
        pollster::block_on(Self::compile_and_open(module))
    }

    /// Runs the program on `args` (one value per entry parameter).
    pub fn run(&self, args: &[Value]) -> Result<(Value, RunTimes), String> {
        pollster::block_on(self.run_measured(args, None))
    }

    /// [`WebGpuExecutable::run`], each kernel timed by `method`.
    pub fn run_timed(&self, args: &[Value], method: TimingMethod) -> Result<(Value, RunTimes), String> {
        pollster::block_on(self.run_measured(args, Some(method)))
    }

    /// [`WebGpuExecutable::run`] with the custom calls the interpreter does not know
    /// (the conformance corpus's `check.*` ops) answered by `hook`, as
    /// `Interpreter::with_custom_call_hook`.
    pub fn run_with_custom_calls(&self, args: &[Value], hook: &mut CustomCallHook) -> Result<Value, String> {
        self.load(args)?;
        pollster::block_on(self.execute_with(None, Some(hook)))?;
        self.read_result()
    }

    /// [`WebGpuExecutable::execute_with`] without a hook, waited for (a bench runs the
    /// kernels again on what is loaded).
    pub fn execute(&self, timing: Option<TimingMethod>) -> Result<Option<KernelTimes>, String> {
        pollster::block_on(self.execute_with(timing, None))
    }

    /// [`WebGpuExecutable::read_result_async`], waited for.
    pub fn read_result(&self) -> Result<Value, String> {
        pollster::block_on(self.read_result_async())
    }
}

/// Elapsed time on the host: `Instant` natively; in a browser, which has no `Instant`,
/// `performance.now()` (a page's or a worker's).
mod clock {
    use std::time::Duration;

    #[cfg(not(target_arch = "wasm32"))]
    pub struct Stopwatch(std::time::Instant);

    #[cfg(not(target_arch = "wasm32"))]
    impl Stopwatch {
        pub fn start() -> Stopwatch {
            Stopwatch(std::time::Instant::now())
        }

        pub fn elapsed(&self) -> Duration {
            self.0.elapsed()
        }
    }

    #[cfg(target_arch = "wasm32")]
    pub struct Stopwatch(f64);

    #[cfg(target_arch = "wasm32")]
    #[wasm_bindgen::prelude::wasm_bindgen]
    extern "C" {
        #[wasm_bindgen(js_namespace = performance, js_name = now)]
        fn performance_now() -> f64;
    }

    #[cfg(target_arch = "wasm32")]
    impl Stopwatch {
        pub fn start() -> Stopwatch {
            Stopwatch(performance_now())
        }

        pub fn elapsed(&self) -> Duration {
            Duration::from_secs_f64(((performance_now() - self.0) / 1e3).max(0.0))
        }
    }
}
