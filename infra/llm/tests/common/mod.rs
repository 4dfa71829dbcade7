//! A scripted HTTP server on 127.0.0.1 that stands in for an LLM provider: it answers
//! each request with the next canned response and records what it received, so tests can
//! assert on both sides of the wire.

#![allow(dead_code)] // each test binary uses a different part of this module

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use parley_llm::RetryPolicy;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Retries as in production, but with millisecond waits so tests stay fast.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_secs(2),
    }
}

#[derive(Clone, Debug)]
pub struct Canned {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay: Duration,
}

impl Canned {
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self::raw(status, &body.to_string()).header("content-type", "application/json")
    }

    pub fn raw(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Answer only after `delay`, to trip the client's timeout.
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

struct Shared {
    script: Mutex<VecDeque<Canned>>,
    seen: Mutex<Vec<Recorded>>,
}

pub struct FakeServer {
    pub base_url: String,
    shared: Arc<Shared>,
}

impl FakeServer {
    pub async fn start(script: Vec<Canned>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        Self::start_on(listener, script)
    }

    /// Serve on a listener bound earlier, for tests that must know the address before
    /// the async runtime exists. Call from inside a runtime.
    pub fn start_on(listener: std::net::TcpListener, script: Vec<Canned>) -> Self {
        listener.set_nonblocking(true).unwrap();
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            base_url: format!("http://{address}"),
            shared,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.seen.lock().unwrap().clone()
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(&body).into()));
    shared.seen.lock().unwrap().push(Recorded {
        method,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let next = shared.script.lock().unwrap().pop_front();
    let Some(canned) = next else {
        return (StatusCode::IM_A_TEAPOT, "fake server script exhausted").into_response();
    };
    tokio::time::sleep(canned.delay).await;
    let mut response = (StatusCode::from_u16(canned.status).unwrap(), canned.body).into_response();
    for (name, value) in canned.headers {
        response.headers_mut().insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}
