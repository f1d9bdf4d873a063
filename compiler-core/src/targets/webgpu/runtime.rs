//! Runs a [`WebGpuProgram`] through wgpu: one storage buffer holds the plan's arena, one
//! compute pipeline per shader, one compute pass per kernel (so each sees the previous
//! one's stores), submitted together until a host kernel needs the data.
//!
//! Host kernels (opaque: the interpreter) read the arena back into a host mirror, run,
//! and write their outputs back; parameters and constants are written before the first
//! kernel and the result is read after the last.

use super::WebGpuProgram;
use crate::interp::Interpreter;
use crate::ir::{Literal, Module, Value};
use crate::kernel::{BufferId, KernelBody, ValueBufs};
use std::time::{Duration, Instant};

/// The adapter a device came from, in words (for the CLI and the bench).
#[derive(Clone, Debug)]
pub struct AdapterInfo {
    pub name: String,
    pub backend: String,
    pub driver: String,
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
    pipelines: Vec<Option<(wgpu::ComputePipeline, wgpu::BindGroup)>>,
    pub adapter: AdapterInfo,
}

/// What one run measured.
#[derive(Clone, Debug, Default)]
pub struct RunTimes {
    /// From writing the inputs to reading the result back.
    pub total: Duration,
}

impl WebGpuExecutable {
    /// Opens the system's default adapter (a real GPU if there is one) and builds every
    /// pipeline; errors say what is missing (no adapter, an arena past its limits, a
    /// shader the driver refuses).
    pub fn new(module: &Module, program: WebGpuProgram) -> Result<WebGpuExecutable, String> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle());
        let adapter =
            pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).map_err(|e| {
                format!("no WebGPU adapter: {e} (on Linux without a GPU, install mesa-vulkan-drivers for lavapipe)")
            })?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let bytes = program.plan.arena.arena_bytes.max(4).next_multiple_of(4);
        let most = (limits.max_storage_buffer_binding_size as u64).min(limits.max_buffer_size);
        if bytes > most {
            return Err(format!(
                "the arena needs {} but the adapter {} binds at most {} in one storage buffer",
                crate::limits::format_bytes(bytes),
                info.name,
                crate::limits::format_bytes(most)
            ));
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("hloscope"),
            required_limits: limits,
            ..Default::default()
        }))
        .map_err(|e| format!("the adapter {} gave no device: {e}", info.name))?;
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
            let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
            let m = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(&program.plan.kernels[i].name),
                source: wgpu::ShaderSource::Wgsl(shader.source.as_str().into()),
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&program.plan.kernels[i].name),
                layout: None,
                module: &m,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            if let Some(e) = pollster::block_on(scope.pop()) {
                return Err(format!("kernel {i} (%{}): the shader was refused: {e}", program.plan.kernels[i].name));
            }
            let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[wgpu::BindGroupEntry { binding: 0, resource: arena.as_entire_binding() }],
            });
            pipelines.push(Some((pipeline, bind)));
        }
        let mut wrapped = module.clone();
        let host = program
            .plan
            .kernels
            .iter()
            .map(|k| match &k.body {
                KernelBody::Opaque { inst, .. } => {
                    Some(crate::kernel::host_computation(&mut wrapped, program.plan.comp, *inst))
                }
                _ => None,
            })
            .collect();
        let adapter = AdapterInfo {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            driver: format!("{} {}", info.driver, info.driver_info).trim().to_string(),
        };
        Ok(WebGpuExecutable { program, module: wrapped, host, device, queue, arena, pipelines, adapter })
    }

    pub fn program(&self) -> &WebGpuProgram {
        &self.program
    }

    /// Runs the program on `args` (one value per entry parameter).
    pub fn run(&self, args: &[Value]) -> Result<(Value, RunTimes), String> {
        let plan = &self.program.plan;
        if args.len() != plan.params.len() {
            return Err(format!("{} arguments for {} parameters", args.len(), plan.params.len()));
        }
        let start = Instant::now();
        let mut mirror = vec![0u8; self.arena.size() as usize];
        for (b, lit) in &plan.constants {
            place(plan, &mut mirror, *b, lit)?;
        }
        for (p, v) in plan.params.iter().zip(args) {
            write_value(plan, &mut mirror, p, v)?;
        }
        self.queue.write_buffer(&self.arena, 0, &mirror);
        let mut pending = self.device.create_command_encoder(&Default::default());
        let mut dirty = false;
        for (i, k) in plan.kernels.iter().enumerate() {
            if let Some((pipeline, bind)) = &self.pipelines[i] {
                let workgroups = self.program.shaders[i].as_ref().map_or(0, |s| s.workgroups());
                if workgroups == 0 {
                    continue;
                }
                let mut pass = pending
                    .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&k.name), timestamp_writes: None });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bind, &[]);
                pass.dispatch_workgroups(workgroups, 1, 1);
                drop(pass);
                dirty = true;
                continue;
            }
            let KernelBody::Opaque { operands, result, .. } = &k.body else {
                return Err(format!("kernel {i} (%{}) has neither a shader nor a host computation", k.name));
            };
            if dirty {
                self.queue.submit([std::mem::replace(
                    &mut pending,
                    self.device.create_command_encoder(&Default::default()),
                )
                .finish()]);
                self.read_back(&mut mirror)?;
                dirty = false;
            }
            let vals: Vec<Value> = operands.iter().map(|o| read_value(plan, &mirror, o)).collect::<Result<_, _>>()?;
            let comp = self.host[i].ok_or("a host kernel without its computation")?;
            let v =
                Interpreter::new(&self.module).call(comp, &vals).map_err(|e| format!("%{}: {}", e.inst, e.message))?;
            write_value(plan, &mut mirror, result, &v)?;
            for b in result.leaves() {
                let (at, n) = span(plan, b);
                let end = (at + n).next_multiple_of(4).min(mirror.len());
                self.queue.write_buffer(&self.arena, at as u64, &mirror[at..end]);
            }
        }
        self.queue.submit([pending.finish()]);
        self.read_back(&mut mirror)?;
        let out = read_value(plan, &mirror, &plan.result)?;
        Ok((out, RunTimes { total: start.elapsed() }))
    }

    /// Copies the whole arena into `mirror` (after everything submitted so far).
    fn read_back(&self, mirror: &mut [u8]) -> Result<(), String> {
        let size = self.arena.size();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&self.arena, 0, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::Wait { submission_index: None, timeout: None })
            .map_err(|e| format!("the device stopped: {e}"))?;
        rx.recv()
            .map_err(|_| "the readback never finished".to_string())?
            .map_err(|e| format!("readback failed: {e}"))?;
        {
            let view = staging.slice(..).get_mapped_range().map_err(|e| format!("readback failed: {e}"))?;
            mirror.copy_from_slice(&view);
        }
        staging.unmap();
        Ok(())
    }
}

/// Byte offset and size of buffer `b` in the arena.
fn span(plan: &crate::kernel::KernelPlan, b: BufferId) -> (usize, usize) {
    (plan.arena.offset(b) as usize, plan.buffers[b].shape.byte_size())
}

fn place(plan: &crate::kernel::KernelPlan, mirror: &mut [u8], b: BufferId, lit: &Literal) -> Result<(), String> {
    let (at, n) = span(plan, b);
    let bytes = lit.to_le_bytes();
    if bytes.len() != n {
        return Err(format!("{b} holds {n} bytes, the value {}", bytes.len()));
    }
    mirror[at..at + n].copy_from_slice(&bytes);
    Ok(())
}

fn write_value(plan: &crate::kernel::KernelPlan, mirror: &mut [u8], at: &ValueBufs, v: &Value) -> Result<(), String> {
    match (at, v) {
        (ValueBufs::Array(b), Value::Array(l)) => place(plan, mirror, *b, l),
        (ValueBufs::Tuple(ps), Value::Tuple(vs)) if ps.len() == vs.len() => {
            ps.iter().zip(vs).try_for_each(|(p, v)| write_value(plan, mirror, p, v))
        }
        (ValueBufs::Token, _) => Ok(()),
        _ => Err("a value of another structure than its buffers".into()),
    }
}

fn read_value(plan: &crate::kernel::KernelPlan, mirror: &[u8], at: &ValueBufs) -> Result<Value, String> {
    Ok(match at {
        ValueBufs::Array(b) => {
            let (off, n) = span(plan, *b);
            Value::Array(
                Literal::from_le_bytes(plan.buffers[*b].shape.clone(), &mirror[off..off + n])
                    .ok_or_else(|| format!("{b} has the wrong size"))?,
            )
        }
        ValueBufs::Tuple(ps) => Value::Tuple(ps.iter().map(|p| read_value(plan, mirror, p)).collect::<Result<_, _>>()?),
        ValueBufs::Token => Value::Token,
    })
}
