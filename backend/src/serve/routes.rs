//! The router: `/api/*` handlers, the static files of the web app, and the layers every
//! response goes through (body limit, panic catching, request ids and logging, security
//! headers).
//!
//! Handlers keep no state of their own beyond the share store and the job runner (whose
//! workers share the on-disk compilation cache), so several server processes can serve
//! one site from one database.

use super::api::*;
use super::error::ApiError;
use super::jobs::Jobs;
use super::store::ShareStore;
use super::work::Job;
use axum::body::Body;
use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;

/// Everything the handlers share.
pub struct AppState {
    pub jobs: Arc<Jobs>,
    pub store: Arc<dyn ShareStore>,
    pub started: Instant,
    /// Largest stored state (source plus settings), bytes.
    pub max_share_bytes: usize,
}

pub type Shared = Arc<AppState>;

/// The page served when no built web app is found: what the API is.
const API_PAGE: &str = include_str!("api_page.html");

/// The Content-Security-Policy of every response: the app's own scripts and wasm only.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; \
frame-ancestors 'none'";

/// The router with every layer; `static_dir` holds the built web app (None: the API page).
pub fn app(state: Shared, static_dir: Option<PathBuf>, max_body: usize) -> Router {
    let api = Router::new()
        .route("/api/compile", post(compile))
        .route("/api/run", post(run))
        .route("/api/targets", get(targets))
        .route("/api/profile", get(profile))
        .route("/api/share", post(share_create))
        .route("/api/share/{id}", get(share_get))
        .route("/api/health", get(health))
        .route("/api/openapi.json", get(openapi))
        .route("/api/{*rest}", axum::routing::any(|| async { ApiError::not_found("no such API route") }))
        .with_state(state);
    let site = match static_dir {
        Some(dir) => Router::new().fallback_service(
            tower_http::services::ServeDir::new(dir).append_index_html_on_directories(true).fallback(
                tower::service_fn(|_req: Request<Body>| async {
                    Ok::<_, std::convert::Infallible>(StatusCode::NOT_FOUND.into_response())
                }),
            ),
        ),
        None => Router::new()
            .route("/", get(|| async { axum::response::Html(API_PAGE) }))
            .fallback(|| async { StatusCode::NOT_FOUND }),
    };
    with_layers(api.merge(site), max_body)
}

/// The layers every response goes through, outermost last: request ids, logging,
/// security headers, panic catching, the body limit.
fn with_layers(router: Router, max_body: usize) -> Router {
    router
        // The JSON extractors stop reading at the limit and answer 413 in our format.
        .layer(DefaultBodyLimit::max(max_body))
        .layer(CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
            ApiError::internal("internal error in hloscope (a bug, please report it)").into_response()
        }))
        .layer(SetResponseHeaderLayer::overriding(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)))
        .layer(SetResponseHeaderLayer::overriding(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")))
        .layer(SetResponseHeaderLayer::overriding(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<Body>| {
                    let id = req
                        .extensions()
                        .get::<RequestId>()
                        .and_then(|id| id.header_value().to_str().ok())
                        .unwrap_or("-")
                        .to_string();
                    tracing::info_span!("request", id = %id, method = %req.method(), route = %req.uri().path())
                })
                .on_response(|res: &Response, latency: std::time::Duration, _span: &tracing::Span| {
                    tracing::info!(status = res.status().as_u16(), ms = latency.as_secs_f64() * 1e3, "done");
                }),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(Counter::default()))
}

/// Request ids: a process-unique counter (with the process id, for several servers).
#[derive(Clone, Default)]
struct Counter(Arc<std::sync::atomic::AtomicU64>);

impl MakeRequestId for Counter {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HeaderValue::from_str(&format!("{}-{n}", std::process::id())).ok().map(RequestId::new)
    }
}

/// The client a job is counted against: its address (a server behind a proxy would read
/// the proxy's header here instead). Unspecified when the router runs without a socket
/// (`oneshot` in tests).
pub struct Client(IpAddr);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Client {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Client, Self::Rejection> {
        let ip = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(a)| a.ip());
        Ok(Client(ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))))
    }
}

/// A worker's JSON answer, passed through as it is.
fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Compile a module: per-pass snapshots, cost, kernel plan, generated code.
#[utoipa::path(post, path = "/api/compile", request_body = CompileRequest,
    responses(
        (status = 200, description = "Compiled", body = CompileResponse),
        (status = 400, description = "Malformed request or option", body = ErrorBody),
        (status = 413, description = "Request too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Invalid module, or over a resource or time limit", body = ErrorBody),
        (status = 429, description = "Too many jobs from this client", body = ErrorBody),
        (status = 500, description = "A bug in hloscope", body = ErrorBody),
        (status = 503, description = "The queue is full", body = ErrorBody)))]
pub async fn compile(
    State(s): State<Shared>,
    Client(client): Client,
    body: Result<Json<CompileRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let answer = s.jobs.submit(client, &Job::Compile(req)).await?;
    Ok(json_response(answer.status, answer.body))
}

/// Run a module on a target: output summaries, per-kernel timings, a numerics check.
#[utoipa::path(post, path = "/api/run", request_body = RunRequest,
    responses(
        (status = 200, description = "Ran", body = RunResponse),
        (status = 400, description = "Malformed request, unknown target or bad inputs", body = ErrorBody),
        (status = 413, description = "Request too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Invalid module, a failed run, over a resource or time limit, or a target this \
            server cannot run here (`target_unavailable`: cuda without a device)", body = ErrorBody),
        (status = 429, description = "Too many jobs from this client", body = ErrorBody),
        (status = 500, description = "A bug in hloscope", body = ErrorBody),
        (status = 503, description = "The queue is full", body = ErrorBody)))]
pub async fn run(
    State(s): State<Shared>,
    Client(client): Client,
    body: Result<Json<RunRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body?;
    let answer = s.jobs.submit(client, &Job::Run(req)).await?;
    Ok(json_response(answer.status, answer.body))
}

/// What this server runs.
#[utoipa::path(get, path = "/api/targets", responses((status = 200, body = TargetsResponse)))]
pub async fn targets() -> Json<TargetsResponse> {
    Json(TargetsResponse {
        cpu: super::host::cpu_info(),
        targets: vec![
            TargetInfo {
                name: "interp".into(),
                available: true,
                description: "the reference interpreter: exact semantics, slow".into(),
            },
            TargetInfo {
                name: "cpu".into(),
                available: true,
                description: "native code: Cranelift JIT kernels, gemm for dots, the interpreter for the rest".into(),
            },
            cuda_target(),
        ],
    })
}

/// `cuda`, probed once: the device it runs on, or why there is none (no driver, no
/// device, no NVRTC).
fn cuda_target() -> TargetInfo {
    static STATUS: std::sync::OnceLock<TargetInfo> = std::sync::OnceLock::new();
    STATUS
        .get_or_init(|| match hloscope_core::targets::cuda::runtime::device() {
            Err(why) => TargetInfo { name: "cuda".into(), available: false, description: why },
            Ok(name) => TargetInfo {
                name: "cuda".into(),
                available: true,
                description: format!(
                    "CUDA C kernels on {name} (NVRTC), timed with CUDA events; the interpreter for the rest"
                ),
            },
        })
        .clone()
}

/// This server's CPU as a cost-model profile, measured at the first request (about a
/// quarter of a second, off the async threads) and kept: the cost pane's "server CPU".
#[utoipa::path(get, path = "/api/profile",
    responses(
        (status = 200, description = "The measured profile", body = ProfileResponse),
        (status = 500, description = "The measurement failed", body = ErrorBody)))]
pub async fn profile() -> Result<Json<ProfileResponse>, ApiError> {
    static MEASURED: std::sync::OnceLock<Result<ProfileResponse, String>> = std::sync::OnceLock::new();
    let measured = tokio::task::spawn_blocking(|| {
        MEASURED
            .get_or_init(|| {
                let p = crate::probe::measure_cpu()?;
                let measured_at =
                    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                Ok(ProfileResponse {
                    name: "server CPU (measured)".into(),
                    peak_f32: p.peak_f32,
                    peak_f16_tensor: p.peak_f16_tensor,
                    peak_f64: p.peak_f64,
                    mem_bandwidth: p.mem_bandwidth,
                    launch_overhead_s: p.launch_overhead_s,
                    measured_at,
                })
            })
            .clone()
    })
    .await
    .map_err(|e| ApiError::internal(format!("the measurement stopped: {e}")))?;
    measured.map(Json).map_err(|e| ApiError::internal(format!("measuring this CPU failed: {e}")))
}

/// Store the app's state; the id and the page that restores it.
#[utoipa::path(post, path = "/api/share", request_body = ShareRequest,
    responses(
        (status = 200, description = "Stored (durably)", body = ShareCreated),
        (status = 400, description = "Malformed request", body = ErrorBody),
        (status = 413, description = "State or request too large", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 500, description = "The store failed", body = ErrorBody)))]
pub async fn share_create(
    State(s): State<Shared>,
    body: Result<Json<ShareRequest>, JsonRejection>,
) -> Result<Json<ShareCreated>, ApiError> {
    let Json(req) = body?;
    let settings = serde_json::to_string(&req.settings).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let size = req.source.len() + settings.len();
    if size > s.max_share_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the state is {size} bytes; at most {} can be shared", s.max_share_bytes),
        ));
    }
    let store = s.store.clone();
    let id = tokio::task::spawn_blocking(move || store.put(&req.source, &settings))
        .await
        .map_err(|e| ApiError::internal(format!("the store failed: {e}")))?
        .map_err(|e| {
            tracing::error!("share store: {e}");
            ApiError::internal("the share store failed")
        })?;
    let url = format!("/?share={id}");
    Ok(Json(ShareCreated { id, url }))
}

/// A stored state.
#[utoipa::path(get, path = "/api/share/{id}", params(("id" = String, Path, description = "The share id")),
    responses(
        (status = 200, body = SharedState),
        (status = 404, description = "No such share", body = ErrorBody),
        (status = 500, description = "The store failed", body = ErrorBody)))]
pub async fn share_get(State(s): State<Shared>, Path(id): Path<String>) -> Result<Json<SharedState>, ApiError> {
    // Ids are URL-safe base64; anything else cannot be one.
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(ApiError::not_found(format!("no share `{}`", id.chars().take(64).collect::<String>())));
    }
    let store = s.store.clone();
    let key = id.clone();
    let found = tokio::task::spawn_blocking(move || store.get(&key))
        .await
        .map_err(|e| ApiError::internal(format!("the store failed: {e}")))?
        .map_err(|e| {
            tracing::error!("share store: {e}");
            ApiError::internal("the share store failed")
        })?;
    let shared = found.ok_or_else(|| ApiError::not_found(format!("no share `{id}`")))?;
    // Settings are an object (the schema says so); a row that holds anything else reads as `{}`.
    let settings = serde_json::from_str::<serde_json::Value>(&shared.settings)
        .ok()
        .filter(serde_json::Value::is_object)
        .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
    Ok(Json(SharedState { id: shared.id, source: shared.source, settings, created_at: shared.created_at }))
}

/// Liveness and load.
#[utoipa::path(get, path = "/api/health", responses((status = 200, body = Health)))]
pub async fn health(State(s): State<Shared>) -> Json<Health> {
    use std::sync::atomic::Ordering::Relaxed;
    let c = &s.jobs.counters;
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_s: s.started.elapsed().as_secs_f64(),
        cache_hits: c.cache_hits.load(Relaxed),
        cache_misses: c.cache_misses.load(Relaxed),
        queue_depth: c.waiting.load(Relaxed),
        running: c.running.load(Relaxed),
    })
}

async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    /// A handler that panics fails its own request with a JSON 500; the router answers
    /// the next request as before.
    #[tokio::test]
    async fn a_panicking_handler_is_a_500_for_that_request_only() {
        let router = with_layers(
            Router::new()
                .route("/boom", get(|| async { std::panic::panic_any::<&str>("a bug") as &'static str }))
                .route("/fine", get(|| async { "fine" })),
            1024,
        );
        let request = |path: &str| Request::builder().uri(path).body(Body::empty()).unwrap();
        let res = router.clone().oneshot(request("/boom")).await.unwrap();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(res.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert!(res.headers().contains_key("x-request-id"));
        let body = axum::body::to_bytes(res.into_body(), 1 << 16).await.unwrap();
        let body: ErrorBody = serde_json::from_slice(&body).unwrap();
        assert_eq!(body.kind, "internal");
        let res = router.oneshot(request("/fine")).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
    }
}
