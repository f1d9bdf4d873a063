//! One error type for every handler: a status and the JSON body the client sees.
//!
//! 4xx means the client's mistake (bad JSON, an invalid module, a program over the
//! limits), 429/503 mean "not now" and carry `Retry-After`, 5xx means ours (a crashed
//! worker, a bug). The log gets the details; the client gets one sentence.

use super::api::ErrorBody;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorBody,
    /// Seconds, for 429 and 503.
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &str, error: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody { error: error.into(), kind: kind.to_string(), line: None, col: None },
            retry_after: None,
        }
    }

    /// The client sent something malformed (JSON, a field, an option).
    pub fn bad_request(error: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", error)
    }

    pub fn not_found(error: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", error)
    }

    pub fn internal(error: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", error)
    }

    /// Too much work queued: try again after `seconds`.
    pub fn busy(status: StatusCode, error: impl Into<String>, seconds: u32) -> ApiError {
        let mut e = ApiError::new(status, "busy", error);
        e.retry_after = Some(seconds);
        e
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body)).into_response();
        if let Some(s) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}

/// axum's own rejections (malformed JSON, a wrong content type, a body over the limit)
/// as our JSON errors, so that every error has one shape.
impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(r: axum::extract::rejection::JsonRejection) -> ApiError {
        let status = r.status();
        let kind = if status == StatusCode::PAYLOAD_TOO_LARGE { "too_large" } else { "bad_request" };
        let text = r.body_text();
        // Serde's messages name the field and the position in the JSON.
        let status = if status == StatusCode::PAYLOAD_TOO_LARGE || status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            status
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::new(status, kind, text)
    }
}
