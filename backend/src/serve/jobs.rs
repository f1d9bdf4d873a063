//! Admission and execution of untrusted work: a bounded queue with per-client fairness
//! in front of a pool of worker processes.
//!
//! A job first takes a slot of its client (at most `per_client` queued or running per
//! client address, else 429), then a place in the queue (at most `queue` waiting, else
//! 503), then one of `max_jobs` permits. With a permit it takes a worker process that was
//! spawned ahead (so a job does not wait for a process to start), sends the job on the
//! worker's standard input and reads its answer, with a wall-clock deadline after which
//! the worker is killed. Every worker runs one job and exits: no state of one stranger's
//! job is left for the next, and a fresh process has fresh CPU-time limits.

use super::error::ApiError;
use super::work::{Job, JobHeader};
use axum::http::StatusCode;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

/// Most bytes of a worker's answer the server reads (a compile of a large module with a
/// snapshot after every pass is a few MiB).
const MAX_ANSWER_BYTES: u64 = 256 << 20;
/// Most bytes of a worker's standard error kept for the log.
const MAX_STDERR_BYTES: u64 = 16 << 10;

/// How the server runs jobs.
#[derive(Clone, Debug)]
pub struct JobLimits {
    /// Jobs running at once.
    pub max_jobs: usize,
    /// Jobs waiting for a permit, beyond those running.
    pub queue: usize,
    /// Jobs one client address may have queued or running.
    pub per_client: usize,
    /// Wall-clock deadline of a compile job, and of a run job.
    pub compile_timeout: Duration,
    pub run_timeout: Duration,
    /// Address-space cap of a worker, bytes.
    pub worker_memory: u64,
    /// Largest array a module may hold, in elements.
    pub max_elements: u64,
    /// Worker processes kept started ahead of demand.
    pub prespawn: usize,
    /// The compilation cache's folder.
    pub cache_dir: Option<PathBuf>,
}

/// Counters for `/api/health`.
#[derive(Default)]
pub struct Counters {
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub waiting: AtomicU64,
    pub running: AtomicU64,
}

pub struct Jobs {
    limits: JobLimits,
    permits: Semaphore,
    clients: Mutex<HashMap<IpAddr, usize>>,
    pub counters: Counters,
    pool: WorkerPool,
}

/// A client's slot, given back when the job ends however it ends.
struct ClientSlot<'a> {
    jobs: &'a Jobs,
    client: IpAddr,
}

impl Drop for ClientSlot<'_> {
    fn drop(&mut self) {
        let mut clients = self.jobs.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = clients.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                clients.remove(&self.client);
            }
        }
    }
}

/// Decrements a gauge when dropped.
struct Gauge<'a>(&'a AtomicU64);

impl<'a> Gauge<'a> {
    fn up(g: &'a AtomicU64) -> Gauge<'a> {
        g.fetch_add(1, Ordering::SeqCst);
        Gauge(g)
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A job's answer: the HTTP status and the JSON body, as the worker wrote them.
pub struct Answer {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

impl Jobs {
    pub fn new(limits: JobLimits) -> Jobs {
        let pool = WorkerPool::new(&limits);
        Jobs {
            permits: Semaphore::new(limits.max_jobs.max(1)),
            clients: Mutex::new(HashMap::new()),
            counters: Counters::default(),
            pool,
            limits,
        }
    }

    /// Starts the prespawned workers (call once, inside the runtime).
    pub fn warm_up(self: &Arc<Self>) {
        self.pool.refill();
    }

    /// Runs `job` for `client` in a worker, within the limits; the worker's answer, or
    /// why there is none.
    pub async fn submit(&self, client: IpAddr, job: &Job) -> Result<Answer, ApiError> {
        let _slot = self.client_slot(client)?;
        let permit = match self.permits.try_acquire() {
            Ok(p) => p,
            Err(_) => {
                if self.counters.waiting.load(Ordering::SeqCst) >= self.limits.queue as u64 {
                    return Err(ApiError::busy(
                        StatusCode::SERVICE_UNAVAILABLE,
                        format!("the server is busy ({} jobs queued); try again shortly", self.limits.queue),
                        2,
                    ));
                }
                let _waiting = Gauge::up(&self.counters.waiting);
                self.permits.acquire().await.map_err(|_| ApiError::internal("the job queue is closed"))?
            }
        };
        let _running = Gauge::up(&self.counters.running);
        let timeout = match job {
            Job::Compile(_) => self.limits.compile_timeout,
            Job::Run(_) => self.limits.run_timeout,
        };
        let input = serde_json::to_vec(job).map_err(|e| ApiError::internal(format!("cannot encode the job: {e}")))?;
        let worker = self.pool.take().await?;
        let answer = run_worker(worker, input, timeout, self.limits.worker_memory).await;
        drop(permit);
        let (header, body) = answer?;
        match header.cache.as_deref() {
            Some("hit") => self.counters.cache_hits.fetch_add(1, Ordering::Relaxed),
            Some("miss") => self.counters.cache_misses.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let status = StatusCode::from_u16(header.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Ok(Answer { status, body })
    }

    fn client_slot(&self, client: IpAddr) -> Result<ClientSlot<'_>, ApiError> {
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        let n = clients.entry(client).or_insert(0);
        if *n >= self.limits.per_client {
            return Err(ApiError::busy(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many jobs from one client at once (at most {})", self.limits.per_client),
                1,
            ));
        }
        *n += 1;
        Ok(ClientSlot { jobs: self, client })
    }
}

/// Worker processes started ahead of demand.
struct WorkerPool {
    idle: Arc<Mutex<Vec<Child>>>,
    command: Arc<WorkerCommand>,
    prespawn: usize,
}

/// How to start a worker: this binary, `worker`, its limits.
struct WorkerCommand {
    exe: PathBuf,
    args: Vec<String>,
}

impl WorkerCommand {
    fn spawn(&self) -> std::io::Result<Child> {
        Command::new(&self.exe)
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
    }
}

impl WorkerPool {
    fn new(limits: &JobLimits) -> WorkerPool {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hloscope"));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        let longest = limits.compile_timeout.max(limits.run_timeout).as_secs() + 1;
        let mut args = vec![
            "worker".to_string(),
            format!("--max-memory={}", limits.worker_memory),
            // CPU time counts every thread: the wall-clock deadline decides, this is the
            // backstop should the server fail to kill a worker.
            format!("--max-cpu-s={}", longest * cores + 1),
            format!("--max-elements={}", limits.max_elements),
        ];
        if let Some(dir) = &limits.cache_dir {
            args.push(format!("--cache-dir={}", dir.display()));
        }
        WorkerPool {
            idle: Arc::new(Mutex::new(Vec::new())),
            command: Arc::new(WorkerCommand { exe, args }),
            prespawn: limits.prespawn,
        }
    }

    /// Tops the idle list up to `prespawn`, in the background.
    fn refill(&self) {
        let idle = self.idle.clone();
        let command = self.command.clone();
        let want = self.prespawn;
        tokio::task::spawn_blocking(move || loop {
            if idle.lock().unwrap_or_else(|p| p.into_inner()).len() >= want {
                return;
            }
            match command.spawn() {
                Ok(child) => idle.lock().unwrap_or_else(|p| p.into_inner()).push(child),
                Err(e) => {
                    tracing::error!("cannot start a worker process: {e}");
                    return;
                }
            }
        });
    }

    /// An idle worker (one that has exited since it was started is dropped), or a fresh
    /// one; then starts a replacement.
    async fn take(&self) -> Result<Child, ApiError> {
        let ready = {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let mut found = None;
            while let Some(mut c) = idle.pop() {
                if matches!(c.try_wait(), Ok(None)) {
                    found = Some(c);
                    break;
                }
            }
            found
        };
        self.refill();
        match ready {
            Some(c) => Ok(c),
            None => self.command.spawn().map_err(|e| ApiError::internal(format!("cannot start a worker process: {e}"))),
        }
    }
}

/// Sends `input` to `child`, reads its answer within `timeout`, and makes sense of how
/// it ended.
async fn run_worker(
    mut child: Child,
    input: Vec<u8>,
    timeout: Duration,
    memory: u64,
) -> Result<(JobHeader, Vec<u8>), ApiError> {
    let mut stdin = child.stdin.take().ok_or_else(|| ApiError::internal("worker without stdin"))?;
    let stdout = child.stdout.take().ok_or_else(|| ApiError::internal("worker without stdout"))?;
    let stderr = child.stderr.take().ok_or_else(|| ApiError::internal("worker without stderr"))?;
    let work = async {
        // Writing and reading at once: a large job must not block on a full pipe.
        let write = async move {
            let r = stdin.write_all(&input).await;
            drop(stdin);
            r
        };
        let read_out = async move {
            let mut out = Vec::new();
            stdout.take(MAX_ANSWER_BYTES + 1).read_to_end(&mut out).await.map(|_| out)
        };
        let read_err = async move {
            let mut err = Vec::new();
            let _ = stderr.take(MAX_STDERR_BYTES).read_to_end(&mut err).await;
            err
        };
        let (w, out, err) = tokio::join!(write, read_out, read_err);
        let status = child.wait().await;
        (w, out, err, status)
    };
    // On the deadline, dropping `work` drops the child, which kills it (kill_on_drop).
    let (write, out, err, status) = match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "time_limit",
                format!("the job ran past its time limit of {} s and was stopped", timeout.as_secs_f64()),
            ))
        }
    };
    let stderr_text = String::from_utf8_lossy(&err).trim().to_string();
    if !stderr_text.is_empty() {
        tracing::warn!(stderr = %stderr_text, "worker wrote to standard error");
    }
    let status = status.map_err(|e| ApiError::internal(format!("cannot wait for the worker: {e}")))?;
    let out = out.map_err(|e| ApiError::internal(format!("cannot read the worker's answer: {e}")))?;
    if out.len() as u64 > MAX_ANSWER_BYTES {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "resource_limit",
            format!("the answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20),
        ));
    }
    if let Some(nl) = out.iter().position(|&b| b == b'\n') {
        if let Ok(header) = serde_json::from_slice::<JobHeader>(&out[..nl]) {
            if status.success() {
                return Ok((header, out[nl + 1..].to_vec()));
            }
        }
    }
    let _ = write;
    Err(died(status, &stderr_text, memory, timeout))
}

/// The error for a worker that ended without an answer.
fn died(status: std::process::ExitStatus, stderr: &str, memory: u64, timeout: Duration) -> ApiError {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            if sig == libc::SIGXCPU || sig == libc::SIGKILL {
                return ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "time_limit",
                    format!(
                        "the job used more CPU time than its limit (about {} s) and was stopped",
                        timeout.as_secs()
                    ),
                );
            }
            if sig == libc::SIGABRT && stderr.contains("memory allocation of") {
                return out_of_memory(memory);
            }
            return ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "worker_crashed",
                format!("the worker crashed (signal {sig}); this is a bug in hloscope, the server carries on"),
            );
        }
    }
    if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
        return out_of_memory(memory);
    }
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "worker_crashed",
        format!("the worker ended without an answer ({status}); this is a bug in hloscope"),
    )
}

fn out_of_memory(memory: u64) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "resource_limit",
        format!("the job needed more memory than its limit of {} MiB", memory >> 20),
    )
}
