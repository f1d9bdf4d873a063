//! A small persistent thread pool for splitting one kernel across cores.
//!
//! Kernels are short (tens of microseconds to milliseconds) and many, so spawning
//! threads per kernel would cost as much as the work: the workers are started once, on
//! first use, and sleep on a condition variable between jobs. A job is `n` tasks
//! (`f(0) .. f(n-1)`), taken one at a time by the workers and by the calling thread,
//! which returns once all are done. One job runs at a time (callers from several
//! threads take turns).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, OnceLock};

/// The current job: a task function whose lifetime `run` guarantees (it waits for every
/// task before returning), hence the erased `'static`.
#[derive(Clone, Copy)]
struct Job {
    f: &'static (dyn Fn(usize) + Sync),
    n: usize,
}

struct State {
    job: Option<Job>,
    /// Next task to hand out.
    next: usize,
    /// Tasks not finished yet.
    pending: usize,
    panicked: bool,
}

struct Pool {
    state: Mutex<State>,
    work: Condvar,
    done: Condvar,
    /// Held by the caller for the whole job.
    turn: Mutex<()>,
    threads: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            state: Mutex::new(State { job: None, next: 0, pending: 0, panicked: false }),
            work: Condvar::new(),
            done: Condvar::new(),
            turn: Mutex::new(()),
            threads,
        }));
        for i in 1..threads {
            let spawned = std::thread::Builder::new().name(format!("hloscope-cpu-{i}")).spawn(move || worker(pool));
            if spawned.is_err() {
                // Fewer workers only means less parallelism: the caller runs the rest.
                break;
            }
        }
        pool
    })
}

/// Threads a job can use (the caller included).
pub fn threads() -> usize {
    pool().threads
}

/// Takes the next task of the current job, if any is left.
fn take(state: &mut State) -> Option<(Job, usize)> {
    let job = state.job?;
    if state.next >= job.n {
        return None;
    }
    state.next += 1;
    Some((job, state.next - 1))
}

fn finish(pool: &Pool, ok: bool) {
    let mut s = pool.state.lock().unwrap_or_else(|e| e.into_inner());
    s.pending -= 1;
    s.panicked |= !ok;
    if s.pending == 0 {
        pool.done.notify_all();
    }
}

fn worker(pool: &'static Pool) {
    loop {
        let (job, i) = {
            let mut s = pool.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(t) = take(&mut s) {
                    break t;
                }
                s = pool.work.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        let ok = catch_unwind(AssertUnwindSafe(|| (job.f)(i))).is_ok();
        finish(pool, ok);
    }
}

/// Runs `f(0) .. f(n-1)` on the pool's threads and this one; returns when all are done.
/// Panics if a task panicked.
pub fn run(n: usize, f: &(dyn Fn(usize) + Sync)) {
    if n <= 1 {
        (0..n).for_each(f);
        return;
    }
    let pool = pool();
    let _turn = pool.turn.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: `f` is only called for tasks of this job, and this function does not
    // return before every task has finished (`pending == 0`) and the job is cleared.
    let f_static: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
    {
        let mut s = pool.state.lock().unwrap_or_else(|e| e.into_inner());
        *s = State { job: Some(Job { f: f_static, n }), next: 0, pending: n, panicked: false };
    }
    pool.work.notify_all();
    loop {
        let t = take(&mut pool.state.lock().unwrap_or_else(|e| e.into_inner()));
        let Some((job, i)) = t else { break };
        let ok = catch_unwind(AssertUnwindSafe(|| (job.f)(i))).is_ok();
        finish(pool, ok);
    }
    let mut s = pool.state.lock().unwrap_or_else(|e| e.into_inner());
    while s.pending > 0 {
        s = pool.done.wait(s).unwrap_or_else(|e| e.into_inner());
    }
    s.job = None;
    let panicked = s.panicked;
    drop(s);
    assert!(!panicked, "a parallel task panicked");
}
