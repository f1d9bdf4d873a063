//! `browser-webgpu` runs: the compiled module's WGSL kernels on the worker's
//! `navigator.gpu` (the WebGPU target's runtime, built for the browser), checked against
//! the interpreter like every run.
//!
//! The device and its pipelines are made once per compile (fused and unfused apart) and
//! kept until the next compile. A run is one untimed run (the browser compiles shaders at
//! their first dispatch), then timed runs, each kernel timed by the adapter's
//! timestamps where it has them; the per-kernel times are medians over the timed runs.
//! Nothing here holds the session across an await: `static/worker.js` answers one
//! message at a time, and the job is made before the first await.

use crate::protocol::RunView;
use crate::{kernel_times, run_view, RunJob, RunTiming};
use hloscope_core::ir::Literal;
use hloscope_core::targets::webgpu::runtime::WebGpuExecutable;
use std::cell::RefCell;
use std::rc::Rc;

/// Timed runs after the untimed one: at most this many, and no more once they have
/// taken [`TIMED_BUDGET_S`] (the adapter here may be a CPU fallback).
const MAX_TIMED_RUNS: usize = 5;
const TIMED_BUDGET_S: f64 = 1.0;

/// An executable kept for a compile: (generation, unfused), it, and the seconds opening
/// it took.
type Kept = ((u64, bool), Rc<WebGpuExecutable>, f64);

thread_local! {
    /// The executables of the last compile.
    static EXECUTABLES: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// Runs `job` on WebGPU: its view and outputs, or why not (no adapter, a shader the
/// browser refused, a failed run), in words.
pub async fn run(job: RunJob, clock: fn() -> f64) -> Result<(Box<RunView>, Vec<Literal>), String> {
    let (exe, compile_s) = executable(&job, clock).await?;
    exe.run_measured(&job.args, None).await?;
    let method = exe.timing_method();
    let mut runs_s = Vec::new();
    let mut per_kernel: Vec<Vec<f64>> = Vec::new();
    let mut got = Vec::new();
    let started = clock();
    while runs_s.len() < MAX_TIMED_RUNS && (runs_s.is_empty() || (clock() - started) / 1e3 < TIMED_BUDGET_S) {
        let (value, times) = exe.run_measured(&job.args, Some(method)).await?;
        runs_s.push(times.total.as_secs_f64());
        let kernels = times.kernels.ok_or("a timed run gave no kernel times")?;
        per_kernel.resize(kernels.kernels.len(), Vec::new());
        for (slot, k) in per_kernel.iter_mut().zip(&kernels.kernels) {
            slot.push(k.time.as_secs_f64());
        }
        got = value.flatten();
    }
    let (on_device, on_host) = exe.program().counts();
    // A browser names its adapter to the page (the target's label), not always to wgpu.
    let adapter = match exe.adapter.name.as_str() {
        "" => "navigator.gpu's adapter".to_string(),
        name => format!("navigator.gpu's {name}"),
    };
    let device = format!(
        "{adapter}, kernels timed by {}: {on_device} kernels on the device, {on_host} on the host",
        method.label()
    );
    let kernels = kernel_times(&job, &exe.program().plan.kernels, &per_kernel);
    let timing = RunTiming { target: "browser-webgpu", device, compile_s, runs_s, kernels };
    Ok((run_view(&job, &got, timing), got))
}

/// The job's executable: the one made for this compile, or a new one (its plan, shaders,
/// device and pipelines), timed.
async fn executable(job: &RunJob, clock: fn() -> f64) -> Result<(Rc<WebGpuExecutable>, f64), String> {
    let key = (job.generation, job.unfused);
    let kept = EXECUTABLES.with(|e| e.borrow().iter().find(|(k, ..)| *k == key).map(|(_, x, s)| (Rc::clone(x), *s)));
    if let Some(kept) = kept {
        return Ok(kept);
    }
    let t0 = clock();
    // The shaders are made for the page's adapter (workgroup staging on a GPU).
    let exe = Rc::new(WebGpuExecutable::compile_and_open(&job.module).await?);
    let compile_s = (clock() - t0) / 1e3;
    EXECUTABLES.with(|e| {
        let mut e = e.borrow_mut();
        e.retain(|((generation, _), ..)| *generation == job.generation);
        e.push((key, Rc::clone(&exe), compile_s));
    });
    Ok((exe, compile_s))
}
