//! `hloscope serve`: the web app and the JSON API, safe to put in front of strangers.
//!
//! - `api.rs`: the wire types (DTOs) and the OpenAPI document generated from them;
//! - `routes.rs`: the router, its handlers and the layers around them;
//! - `jobs.rs`: admission (queue, per-client fairness) and the pool of worker processes;
//! - `work.rs`: what a worker process does with a job (`hloscope worker`);
//! - `store.rs`: share links in SQLite behind the `ShareStore` trait;
//! - `error.rs`: the one error type, JSON `{error, kind, line?, col?}`;
//! - `host.rs`: CPU facts for `/api/targets`.

pub mod api;
mod error;
mod host;
mod jobs;
mod routes;
mod store;
pub mod work;

use crate::run::RunError;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
#[command(after_help = "\
Untrusted work (compile, run) runs in worker processes of this binary, one job each, under an \
address-space cap and a CPU-time cap, with a wall-clock deadline after which the server kills \
the worker: a crash or an endless loop fails that one request. Share links are stored in \
SQLite (DATA_DIR/shares.sqlite3), compiled modules in DATA_DIR/cache (or $HLOSCOPE_CACHE_DIR).

Logging: RUST_LOG (default info), one line per request with its id, route, status and time.")]
pub struct ServeArgs {
    /// The address to listen on (port 0: any free port, printed on standard output).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,

    /// Where share links and the compilation cache live (default: the user's data
    /// folder + hloscope).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// The built web app (default: ./static when it holds index.html, else a page that
    /// describes the API).
    #[arg(long, value_name = "DIR")]
    pub static_dir: Option<PathBuf>,

    /// Largest request body, bytes.
    #[arg(long, default_value_t = 4 << 20)]
    pub max_body_bytes: usize,

    /// Jobs (compile, run) running at once (default: the number of cores).
    #[arg(long)]
    pub max_jobs: Option<usize>,

    /// Jobs waiting beyond those running; more are refused with 503 and Retry-After.
    #[arg(long, default_value_t = 32)]
    pub queue: usize,

    /// Jobs one client address may have queued or running; more get 429 and Retry-After.
    #[arg(long, default_value_t = 8)]
    pub per_client: usize,

    /// Wall-clock limit of a compile job, seconds.
    #[arg(long, default_value_t = 20.0)]
    pub compile_timeout_s: f64,

    /// Wall-clock limit of a run job, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub run_timeout_s: f64,

    /// Address-space limit of a worker process, MiB.
    #[arg(long, default_value_t = 4096)]
    pub worker_memory_mib: u64,

    /// Largest array a submitted module may hold, in elements.
    #[arg(long, default_value_t = 1 << 26)]
    pub max_elements: u64,

    /// Largest shared state (source plus settings), bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_share_bytes: usize,
}

/// Runs the server until Ctrl-C or SIGTERM.
pub fn serve(args: &ServeArgs) -> Result<String, RunError> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let data_dir = args
        .data_dir
        .clone()
        .or_else(|| dirs::data_dir().map(|d| d.join("hloscope")))
        .ok_or_else(|| RunError("no data folder: pass --data-dir".into()))?;
    let store = store::SqliteStore::open(&data_dir).map_err(RunError)?;
    let cache_dir = std::env::var_os("HLOSCOPE_CACHE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| data_dir.join("cache"));
    let static_dir = match &args.static_dir {
        Some(d) if d.is_dir() => Some(d.clone()),
        Some(d) => return Err(RunError(format!("--static-dir {}: not a folder", d.display()))),
        None => Some(PathBuf::from("static")).filter(|d| d.join("index.html").is_file()),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max_jobs = args.max_jobs.unwrap_or(cores).max(1);
    let seconds = |s: f64, name: &str| {
        Duration::try_from_secs_f64(s)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| RunError(format!("{name} must be a positive number of seconds")))
    };
    let limits = jobs::JobLimits {
        max_jobs,
        queue: args.queue,
        per_client: args.per_client.max(1),
        compile_timeout: seconds(args.compile_timeout_s, "--compile-timeout-s")?,
        run_timeout: seconds(args.run_timeout_s, "--run-timeout-s")?,
        worker_memory: args.worker_memory_mib.saturating_mul(1 << 20),
        max_elements: args.max_elements,
        prespawn: max_jobs,
        cache_dir: Some(cache_dir),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async move {
        let jobs = Arc::new(jobs::Jobs::new(limits));
        jobs.warm_up();
        let state = Arc::new(routes::AppState {
            jobs,
            store: Arc::new(store),
            started: Instant::now(),
            max_share_bytes: args.max_share_bytes,
        });
        let app = routes::app(state, static_dir.clone(), args.max_body_bytes);
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(|e| RunError(format!("cannot listen on {}: {e}", args.addr)))?;
        let local = listener.local_addr().map_err(|e| RunError(e.to_string()))?;
        // Tests and scripts read this line to find the port.
        println!("hloscope serving on http://{local}");
        tracing::info!(
            data_dir = %data_dir.display(),
            app = %static_dir.as_ref().map_or("the API page".to_string(), |d| d.display().to_string()),
            max_jobs,
            "ready"
        );
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())
            .with_graceful_shutdown(shutdown_signal())
            .await
            .map_err(|e| RunError(format!("the server failed: {e}")))?;
        Ok(String::new())
    })
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
