//! A small persistent thread pool for splitting one kernel across cores: the CPU
//! target's native kernels and dots, and the WebAssembly target's pieces under wasmtime
//! (an instance per thread), one pool for the process. The CPU target's compiles use it
//! too (Cranelift, a function per task).
//!
//! Kernels are short (tens of microseconds to milliseconds) and many, so spawning
//! threads per kernel would cost as much as the work: the workers are started once, on
//! first use. A job is `n` tasks (`f(0) .. f(n-1)`), taken one at a time by the workers
//! and by the calling thread, which returns once all are done. One job runs at a time
//! (callers from several threads take turns).
//!
//! Waking a sleeping thread costs tens of microseconds, more in a virtual machine (the
//! idle CPU must be woken too), which is the whole run time of a small kernel. So a
//! worker that finds no task polls for the next job for [`SPIN`] before it sleeps on a
//! condition variable, and the caller, done with its own tasks, polls for the last ones
//! to finish before it sleeps: back-to-back kernels never wait for a wake-up. The polls
//! read atomics (no lock) and are bounded, so an idle process sleeps.
//!
//! Placement: with as many CPUs as threads (this project's 2-core machines), Linux
//! often leaves a woken worker on its waker's CPU, and the two then share one core for
//! the whole of a short job while the other idles (measured: a 256x1024 softmax ran at
//! one thread's speed in most processes). So on Linux each worker is pinned to a CPU of
//! its own, and a run of an executable pins its calling thread to the one left
//! ([`as_caller`]) for the run's duration, then gives the thread its own mask back.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Each worker's stack (address space; only what a task touches is backed).
const WORKER_STACK_BYTES: usize = 64 << 20;

/// How long a thread polls before it sleeps: longer than the gap between two kernels
/// of a run, short enough that an idle pool stops burning its cores at once.
const SPIN: Duration = Duration::from_micros(200);

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
    /// Mirrors of the state for the polls, written under the lock: tasks not handed out
    /// yet, and tasks not finished yet.
    unclaimed: AtomicUsize,
    unfinished: AtomicUsize,
    /// The CPU left to callers (the workers are pinned to the others), where the
    /// process may use one per thread.
    caller_cpu: Option<usize>,
    /// Whether a caller is pinned there now ([`as_caller`]).
    caller_pinned: AtomicBool,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<&'static Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        // One CPU per thread where the process may use that many: the callers' first.
        let cpus = placement::allowed_cpus().filter(|c| c.len() >= threads && threads >= 2);
        let pool: &'static Pool = Box::leak(Box::new(Pool {
            state: Mutex::new(State { job: None, next: 0, pending: 0, panicked: false }),
            work: Condvar::new(),
            done: Condvar::new(),
            turn: Mutex::new(()),
            threads,
            unclaimed: AtomicUsize::new(0),
            unfinished: AtomicUsize::new(0),
            caller_cpu: cpus.as_ref().map(|c| c[0]),
            caller_pinned: AtomicBool::new(false),
        }));
        for i in 1..threads {
            let cpu = cpus.as_ref().map(|c| c[i]);
            // More than the default 2 MiB, as for the threads that compile: tasks
            // include reading a long `main` (`parse/mlir/beside.rs`), which recurses
            // once per nesting level of hostile text. Reserved, not touched.
            let spawned = std::thread::Builder::new()
                .name(format!("hloscope-cpu-{i}"))
                .stack_size(WORKER_STACK_BYTES)
                .spawn(move || worker(pool));
            match (spawned, cpu) {
                // Placed from here, not by the worker itself: a new thread waits on its
                // parent's CPU until it first runs, which took a millisecond or more
                // where that CPU was busy.
                (Ok(handle), Some(cpu)) => placement::pin_spawned(&handle, cpu),
                (Ok(_), None) => {}
                // Fewer workers only means less parallelism: the caller runs the rest.
                (Err(_), _) => break,
            }
        }
        pool
    })
}

/// Threads a job can use (the caller included).
pub fn threads() -> usize {
    pool().threads
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the next task of the current job, if any is left.
    fn take(&self, state: &mut State) -> Option<(Job, usize)> {
        let job = state.job?;
        if state.next >= job.n {
            return None;
        }
        state.next += 1;
        self.unclaimed.store(job.n - state.next, Ordering::Release);
        Some((job, state.next - 1))
    }

    fn run_task(&self, (job, i): (Job, usize)) {
        let ok = catch_unwind(AssertUnwindSafe(|| (job.f)(i))).is_ok();
        let mut s = self.lock();
        s.pending -= 1;
        s.panicked |= !ok;
        self.unfinished.store(s.pending, Ordering::Release);
        if s.pending == 0 {
            self.done.notify_all();
        }
    }

    /// Polls `until` for at most [`SPIN`]; whether it came true.
    fn poll(&self, until: impl Fn(&Pool) -> bool) -> bool {
        let deadline = Instant::now() + SPIN;
        loop {
            if until(self) {
                return true;
            }
            for _ in 0..32 {
                std::hint::spin_loop();
            }
            if Instant::now() >= deadline {
                return until(self);
            }
        }
    }
}

fn worker(pool: &'static Pool) {
    loop {
        pool.poll(|p| p.unclaimed.load(Ordering::Acquire) > 0);
        let task = {
            let mut s = pool.lock();
            loop {
                if let Some(t) = pool.take(&mut s) {
                    break t;
                }
                // Nothing was posted while polling (or others took it all): sleep.
                s = pool.work.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        };
        pool.run_task(task);
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
    job(pool, pool.turn.lock().unwrap_or_else(|e| e.into_inner()), n, f, || ());
}

/// Runs `helper` on a worker while this thread runs `main`; returns `main`'s result once
/// both are done. A helper no worker has taken by the time `main` returns runs here,
/// after it: so `main` must never wait on the helper without a way to go on alone (the
/// process may have no worker, the worker may start late, or the pool may be running
/// another caller's job: then this one does not wait for its turn, and `main` runs
/// alone). Panics if either panicked.
pub fn beside<R>(helper: &(dyn Fn() + Sync), main: impl FnOnce() -> R) -> R {
    let pool = pool();
    let turn = match pool.turn.try_lock() {
        Ok(turn) => turn,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            let result = main();
            helper();
            return result;
        }
    };
    as_caller(|| job(pool, turn, 1, &|_| helper(), main))
}

/// Posts `f(0) .. f(n-1)` as the pool's job (the caller holds its `turn`), runs `first`
/// on this thread, then takes tasks until none is left and waits for the rest.
fn job<R>(
    pool: &Pool,
    _turn: std::sync::MutexGuard<'_, ()>,
    n: usize,
    f: &(dyn Fn(usize) + Sync),
    first: impl FnOnce() -> R,
) -> R {
    // SAFETY: `f` is only called for tasks of this job, and this function does not
    // return (nor unwind: `first` runs under catch_unwind) before every task has
    // finished (`pending == 0`) and the job is cleared.
    let f_static: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(f) };
    {
        let mut s = pool.lock();
        *s = State { job: Some(Job { f: f_static, n }), next: 0, pending: n, panicked: false };
        pool.unfinished.store(n, Ordering::Release);
        pool.unclaimed.store(n, Ordering::Release);
    }
    pool.work.notify_all();
    let first = catch_unwind(AssertUnwindSafe(first));
    loop {
        let t = pool.take(&mut pool.lock());
        let Some(t) = t else { break };
        pool.run_task(t);
    }
    pool.poll(|p| p.unfinished.load(Ordering::Acquire) == 0);
    let mut s = pool.lock();
    while s.pending > 0 {
        s = pool.done.wait(s).unwrap_or_else(|e| e.into_inner());
    }
    s.job = None;
    let panicked = s.panicked;
    drop(s);
    let first = first.unwrap_or_else(|payload| std::panic::resume_unwind(payload));
    assert!(!panicked, "a parallel task panicked");
    first
}

/// Runs `f` (a whole run of an executable, many jobs) with the calling thread pinned to
/// the CPU the workers leave free, when the pool pins its workers and no other caller
/// is pinned there now; restores the thread's CPU mask afterwards. Runs nested in `f`
/// (a while loop's body) find the CPU taken and just run.
pub fn as_caller<T>(f: impl FnOnce() -> T) -> T {
    let pool = pool();
    let Some(cpu) = pool.caller_cpu else { return f() };
    // Already there (the usual case after the first run): nothing to do.
    if placement::current_cpu() == Some(cpu) || pool.caller_pinned.swap(true, Ordering::Acquire) {
        return f();
    }
    struct Unpin<'a>(&'a Pool, Option<placement::Mask>);
    impl Drop for Unpin<'_> {
        fn drop(&mut self) {
            if let Some(mask) = &self.1 {
                placement::restore(mask);
            }
            self.0.caller_pinned.store(false, Ordering::Release);
        }
    }
    let _unpin = Unpin(pool, placement::pin_to(cpu));
    f()
}

/// CPU affinity, where the platform has it.
#[cfg(target_os = "linux")]
mod placement {
    /// A thread's CPU mask.
    pub struct Mask(libc::cpu_set_t);

    fn mask() -> Option<libc::cpu_set_t> {
        // SAFETY: a zeroed cpu_set_t is an empty set; the call writes at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0).then_some(set)
        }
    }

    /// The CPUs this thread may run on, in order.
    pub fn allowed_cpus() -> Option<Vec<usize>> {
        let set = mask()?;
        // SAFETY: reading bits of an initialized set.
        Some((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
    }

    /// Pins this thread to `cpu`; returns its previous mask. None, and no change, when
    /// `cpu` is not in the thread's mask (its owner kept it off that CPU) or a call
    /// failed: the thread then runs where the system puts it, as without pinning.
    pub fn pin_to(cpu: usize) -> Option<Mask> {
        let old = mask()?;
        // SAFETY: reading a bit of an initialized set (CPU_ISSET checks the range).
        if cpu >= libc::CPU_SETSIZE as usize || !unsafe { libc::CPU_ISSET(cpu, &old) } {
            return None;
        }
        let set = only(cpu);
        // SAFETY: a set made by `only`, of the size given.
        let ok = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 };
        ok.then_some(Mask(old))
    }

    /// Pins the thread of `handle` (not started yet, maybe) to `cpu`, one of this
    /// thread's (which the new thread inherits).
    pub fn pin_spawned<T>(handle: &std::thread::JoinHandle<T>, cpu: usize) {
        use std::os::unix::thread::JoinHandleExt;
        if cpu >= libc::CPU_SETSIZE as usize {
            return;
        }
        let set = only(cpu);
        // SAFETY: as in `pin_to`; the handle's thread is alive (not joined, not detached).
        unsafe { libc::pthread_setaffinity_np(handle.as_pthread_t(), std::mem::size_of::<libc::cpu_set_t>(), &set) };
    }

    /// The set of just `cpu` (below `CPU_SETSIZE`).
    fn only(cpu: usize) -> libc::cpu_set_t {
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET ignores CPUs beyond its size.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            set
        }
    }

    /// The CPU this thread runs on now.
    pub fn current_cpu() -> Option<usize> {
        // SAFETY: no arguments; -1 on failure.
        usize::try_from(unsafe { libc::sched_getcpu() }).ok()
    }

    /// Gives this thread `mask` back.
    pub fn restore(mask: &Mask) {
        // SAFETY: a mask read by `sched_getaffinity`.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask.0) };
    }
}

#[cfg(not(target_os = "linux"))]
mod placement {
    pub struct Mask;
    pub fn allowed_cpus() -> Option<Vec<usize>> {
        None
    }
    pub fn pin_to(_cpu: usize) -> Option<Mask> {
        None
    }
    pub fn pin_spawned<T>(_handle: &std::thread::JoinHandle<T>, _cpu: usize) {}
    pub fn current_cpu() -> Option<usize> {
        None
    }
    pub fn restore(_mask: &Mask) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    /// Every task runs exactly once, with jobs posted from several threads at once and
    /// back to back (the workers polling between them).
    #[test]
    fn every_task_runs_once() {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for n in [2, 3, 17, 64] {
                        let hits: Vec<AtomicU32> = (0..n).map(|_| AtomicU32::new(0)).collect();
                        run(n, &|i| {
                            hits[i].fetch_add(1, Ordering::Relaxed);
                        });
                        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                    }
                });
            }
        });
    }

    /// A panicking task makes `run` panic once all tasks are done; the pool goes on.
    #[test]
    fn a_panicking_task_is_reported_and_the_pool_survives() {
        let done = AtomicU32::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            run(8, &|i| {
                assert!(i != 3, "task 3 fails");
                done.fetch_add(1, Ordering::Relaxed);
            })
        }));
        assert!(r.is_err());
        assert_eq!(done.load(Ordering::Relaxed), 7);
        let sum = AtomicUsize::new(0);
        run(10, &|i| {
            sum.fetch_add(i, Ordering::Relaxed);
        });
        assert_eq!(sum.load(Ordering::Relaxed), 45);
    }

    /// `beside` runs its helper once next to `main`; while another caller's job holds
    /// the pool it does not wait for its turn: `main` runs alone, then the helper, both
    /// on this thread.
    #[test]
    fn beside_runs_the_helper_once_and_never_waits_for_a_busy_pool() {
        let helped = AtomicU32::new(0);
        assert_eq!(beside(&|| _ = helped.fetch_add(1, Ordering::Relaxed), || 7), 7);
        assert_eq!(helped.load(Ordering::Relaxed), 1);

        let (holding, release) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|s| {
            s.spawn(|| {
                run(2, &|i| {
                    if i == 0 {
                        holding.store(true, Ordering::Release);
                        let until = Instant::now() + Duration::from_secs(20);
                        while !release.load(Ordering::Acquire) && Instant::now() < until {
                            std::thread::yield_now();
                        }
                    }
                })
            });
            while !holding.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            let me = std::thread::current().id();
            let order = Mutex::new(Vec::new());
            let started = Instant::now();
            beside(&|| order.lock().unwrap().push(("helper", std::thread::current().id())), || {
                order.lock().unwrap().push(("main", std::thread::current().id()))
            });
            let waited = started.elapsed();
            release.store(true, Ordering::Release);
            assert_eq!(*order.lock().unwrap(), vec![("main", me), ("helper", me)]);
            assert!(waited < Duration::from_secs(10), "beside waited {waited:?} for the pool");
        });
    }

    /// `as_caller` gives the thread its CPU mask back, also when the run panics, and
    /// nests.
    #[cfg(target_os = "linux")]
    #[test]
    fn as_caller_restores_the_cpu_mask() {
        let before = placement::allowed_cpus();
        let inner = as_caller(|| {
            let sum = AtomicUsize::new(0);
            as_caller(|| run(4, &|i| _ = sum.fetch_add(i, Ordering::Relaxed)));
            sum.load(Ordering::Relaxed)
        });
        assert_eq!(inner, 6);
        assert_eq!(placement::allowed_cpus(), before);
        let r = catch_unwind(|| as_caller(|| panic!("a failing run")));
        assert!(r.is_err());
        assert_eq!(placement::allowed_cpus(), before);
        // The pinning itself, whichever CPU this thread is on now.
        let last = *before.as_ref().and_then(|c| c.last()).expect("a CPU");
        let mask = placement::pin_to(last).expect("pinned");
        assert_eq!(placement::allowed_cpus(), Some(vec![last]));
        assert_eq!(placement::current_cpu(), Some(last));
        // A CPU outside the thread's mask is not taken.
        if let Some(other) = before.as_ref().and_then(|c| c.iter().find(|&&c| c != last)) {
            assert!(placement::pin_to(*other).is_none());
            assert_eq!(placement::allowed_cpus(), Some(vec![last]));
        }
        placement::restore(&mask);
        assert_eq!(placement::allowed_cpus(), before);
    }
}
