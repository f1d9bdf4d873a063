//! The threads of a threaded module under wasmtime (feature `wasm-run`): one long-lived
//! worker per thread past the first, each with its own store and instance of the module
//! on the shared memory. A split call publishes the kernel and its pieces
//! ([`super::host::chunks`]); the workers and the calling thread take pieces one at a
//! time from one counter, and the caller returns when every piece is done. Starting
//! threads per call, or a message per piece, would cost more than a small kernel's
//! work; so an idle worker polls for the next call for [`SPIN`] before it sleeps on a
//! condition variable, and the caller polls for the last piece the same way.
//!
//! Invariant: the memory is touched by the workers only between a call's start and its
//! last piece's end, so the host reads and writes it between calls as its own.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wasmtime::{Store, TypedFunc};

/// How long an idle thread polls before it sleeps (a kernel's hand-off is a few
/// microseconds while polled, tens once asleep).
const SPIN: Duration = Duration::from_micros(200);

/// A kernel function of one instance.
pub(super) type KernelFunc = TypedFunc<(i32, i32), ()>;

/// One instance of the module in its own store: a worker's, or the caller's.
pub(super) struct Member {
    pub store: Store<()>,
    /// Per plan kernel, its function (`None`: a host kernel).
    pub funcs: Vec<Option<KernelFunc>>,
}

impl Member {
    /// Runs kernel `kernel` over `[begin, end)`.
    pub fn call(&mut self, kernel: usize, (begin, end): (u32, u32)) -> Result<(), String> {
        let f = self.funcs[kernel].as_ref().ok_or("a kernel without a function")?;
        f.call(&mut self.store, (begin as i32, end as i32)).map_err(|e| format!("{e:?}"))
    }
}

/// What the caller and the workers share.
struct Shared {
    /// Per plan kernel, the pieces of its range.
    pieces: Vec<Vec<(u32, u32)>>,
    /// Bumped by each call; a worker that has seen this call's number takes its pieces.
    call: AtomicU64,
    /// The kernel of the current call.
    kernel: AtomicUsize,
    /// The call's number (high 32 bits) and its next piece to take (low 32 bits): one
    /// word, so a thread late from the last call cannot take a piece of this one.
    claim: AtomicU64,
    /// Pieces not finished yet.
    left: AtomicUsize,
    quit: AtomicBool,
    /// Threads asleep on `wake` (workers) or `finished` (the caller).
    sleepers: AtomicUsize,
    caller_asleep: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
    finished: Condvar,
    /// The first error of the current call's pieces.
    error: Mutex<Option<String>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes and runs pieces of call `call` (of kernel `kernel`) on `member` until none
    /// is left, or another call has begun.
    fn take_pieces(&self, call: u64, kernel: usize, member: &mut Member) {
        let pieces = &self.pieces[kernel];
        loop {
            let v = self.claim.load(Ordering::Acquire);
            let i = (v & 0xffff_ffff) as usize;
            if v >> 32 != call & 0xffff_ffff || i >= pieces.len() {
                return;
            }
            if self.claim.compare_exchange_weak(v, v + 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
                continue;
            }
            if let Err(e) = member.call(kernel, pieces[i]) {
                self.error.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
            }
            if self.left.fetch_sub(1, Ordering::AcqRel) == 1 && self.caller_asleep.load(Ordering::SeqCst) {
                let _guard = self.lock();
                self.finished.notify_all();
            }
        }
    }

    /// Polls `until` for at most [`SPIN`]; whether it came true.
    fn poll(&self, until: impl Fn(&Shared) -> bool) -> bool {
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

/// The workers of a threaded executable and the pieces of each kernel.
pub(super) struct Pool {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts a worker on each of `members` (instantiated already, so no data segment
    /// runs while a kernel does); `pieces`: per plan kernel, the pieces of its range.
    pub fn start(members: Vec<Member>, pieces: Vec<Vec<(u32, u32)>>) -> Result<Pool, String> {
        let shared = Arc::new(Shared {
            pieces,
            call: AtomicU64::new(0),
            kernel: AtomicUsize::new(0),
            claim: AtomicU64::new(0),
            left: AtomicUsize::new(0),
            quit: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            caller_asleep: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            finished: Condvar::new(),
            error: Mutex::new(None),
        });
        let mut pool = Pool { shared: shared.clone(), workers: Vec::new() };
        for (i, member) in members.into_iter().enumerate() {
            let shared = shared.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("hloscope-wasm-{}", i + 1))
                .spawn(move || worker(&shared, member))
                .map_err(|e| format!("cannot start a wasm thread: {e}"))?;
            pool.workers.push(spawned);
        }
        Ok(pool)
    }

    /// Whether kernel `kernel` is split across the threads.
    pub fn splits(&self, kernel: usize) -> bool {
        self.shared.pieces[kernel].len() > 1
    }

    /// Runs kernel `kernel`'s pieces on the workers and on `caller` (the calling thread's
    /// instance), and returns when all are done.
    pub fn run(&self, kernel: usize, caller: &mut Member) -> Result<(), String> {
        let s = &*self.shared;
        let call = s.call.load(Ordering::Relaxed) + 1;
        // The claim first: a thread late from the last call that reads this kernel then
        // finds the claim under another call's number and takes nothing.
        s.claim.store((call & 0xffff_ffff) << 32, Ordering::SeqCst);
        s.left.store(s.pieces[kernel].len(), Ordering::SeqCst);
        s.kernel.store(kernel, Ordering::SeqCst);
        s.call.store(call, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = s.lock();
            s.wake.notify_all();
        }
        s.take_pieces(call, kernel, caller);
        if !s.poll(|s| s.left.load(Ordering::Acquire) == 0) {
            let mut guard = s.lock();
            s.caller_asleep.store(true, Ordering::SeqCst);
            while s.left.load(Ordering::SeqCst) > 0 {
                guard = s.finished.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
            s.caller_asleep.store(false, Ordering::SeqCst);
        }
        match s.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let s = &*self.shared;
        s.quit.store(true, Ordering::SeqCst);
        s.call.fetch_add(1, Ordering::SeqCst);
        {
            let _guard = s.lock();
            s.wake.notify_all();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

fn worker(s: &Shared, mut member: Member) {
    // Call 0 is the pool's start, not the value when this thread starts running: a
    // thread started late must not take the last call's number (or the quit's) for one
    // already seen.
    let mut seen = 0;
    loop {
        if !s.poll(|s| s.call.load(Ordering::Acquire) != seen) {
            let mut guard = s.lock();
            s.sleepers.fetch_add(1, Ordering::SeqCst);
            while s.call.load(Ordering::SeqCst) == seen {
                guard = s.wake.wait(guard).unwrap_or_else(|e| e.into_inner());
            }
            s.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
        seen = s.call.load(Ordering::SeqCst);
        if s.quit.load(Ordering::SeqCst) {
            return;
        }
        s.take_pieces(seen, s.kernel.load(Ordering::Acquire), &mut member);
    }
}
