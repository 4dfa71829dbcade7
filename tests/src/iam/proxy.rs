//! The AWS endpoint one emulated function talks to: each request is authorised against the
//! function's role, then forwarded to moto; a request the role does not allow is answered
//! as AWS answers it (`AccessDeniedException`, HTTP 400) and recorded, so a test sees a
//! missing permission even where the function only logs the failure.

use super::policy::Policy;
use super::request::{self, Names, Need};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};

/// A running proxy; dropping it stops it.
pub struct PolicyProxy {
    pub url: String,
    state: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

struct Shared {
    policy: Policy,
    names: Arc<Names>,
    upstream: String,
    client: reqwest::Client,
    /// Every authorisation asked for, allowed or not, in order (`action on ARN`).
    asked: Mutex<Vec<String>>,
    /// What was refused, and requests that could not be read as an AWS call.
    refused: Mutex<Vec<String>>,
}

impl PolicyProxy {
    /// Serve on 127.0.0.1, forwarding what `policy` allows to `upstream` (moto).
    pub async fn start(policy: Policy, names: Arc<Names>, upstream: &str) -> PolicyProxy {
        let state = Arc::new(Shared {
            policy,
            names,
            upstream: upstream.trim_end_matches('/').to_string(),
            // Plain HTTP to moto; the builder installs the TLS provider reqwest needs to exist.
            client: parley_llm::client_builder()
                .build()
                .expect("an HTTP client"),
            asked: Mutex::new(Vec::new()),
            refused: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .fallback(forward)
            .layer(DefaultBodyLimit::disable())
            .with_state(state.clone());
        let (listener, url) = crate::local_server::listen("the IAM proxy").await;
        let server = crate::local_server::serve(listener, app);
        PolicyProxy { url, state, server }
    }

    /// What the role refused, and requests that could not be read, one line each.
    pub fn refusals(&self) -> Vec<String> {
        lock(&self.state.refused).clone()
    }

    /// [`PolicyProxy::refusals`], forgotten: for a test that expects them.
    pub fn take_refusals(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.state.refused))
    }

    /// Every authorisation the function needed (allowed or not), as `action on ARN`.
    pub fn asked(&self) -> Vec<String> {
        lock(&self.state.asked).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for PolicyProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn forward(
    State(state): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let needs = match request::needs(target, &body, &state.names) {
        Ok(needs) => needs,
        Err(why) => {
            lock(&state.refused).push(format!("{method} {uri}: {why}"));
            return denied(&why);
        }
    };
    let refused: Vec<&Need> = needs
        .iter()
        .filter(|need| !state.policy.allows(&need.action, &need.resource))
        .collect();
    lock(&state.asked).extend(needs.iter().map(Need::to_string));
    let role = state.policy.role();
    lock(&state.refused).extend(refused.iter().map(|need| format!("{role} may not {need}")));
    if let Some(need) = refused.first() {
        return denied(&format!(
            "User: arn:aws:sts::000000000000:assumed-role/{role}/function is not authorized to \
             perform: {} on resource: {} because no identity-based policy allows the {} action",
            need.action, need.resource, need.action
        ));
    }

    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut upstream = state
        .client
        .request(method, format!("{}{path}", state.upstream))
        .body(body);
    for (name, value) in &headers {
        if !matches!(name.as_str(), "host" | "content-length" | "connection") {
            upstream = upstream.header(name, value);
        }
    }
    match upstream.send().await {
        Ok(answer) => {
            let status = answer.status();
            let mut out = HeaderMap::new();
            for (name, value) in answer.headers() {
                if !matches!(
                    name.as_str(),
                    "content-length" | "transfer-encoding" | "connection"
                ) {
                    out.insert(name, value.clone());
                }
            }
            let bytes = answer.bytes().await.unwrap_or_default();
            (status, out, bytes).into_response()
        }
        Err(err) => (StatusCode::BAD_GATEWAY, format!("moto: {err}")).into_response(),
    }
}

/// AWS's answer to a call the caller's policies do not allow, in the JSON protocols'
/// error shape (the SDKs read the code from `__type` and from `x-amzn-query-error`).
fn denied(message: &str) -> Response {
    let body = serde_json::json!({
        "__type": "com.amazonaws.coral#AccessDeniedException",
        "message": message,
    });
    (
        StatusCode::BAD_REQUEST,
        [
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amzn-query-error", "AccessDenied;Sender"),
        ],
        body.to_string(),
    )
        .into_response()
}
