//! A fake embeddings server on 127.0.0.1 speaking two APIs:
//!
//! - OpenAI's `POST …/embeddings` (any path ending in `/embeddings`): point Parley at it
//!   with `EMBEDDINGS_PROVIDER=openai`, `EMBEDDINGS_BASE_URL=<url>/v1`.
//! - Bedrock's `POST /model/{id}/invoke` with Titan Text Embeddings V2's body: point the
//!   AWS SDK at it as its endpoint.
//!
//! By default it answers real vectors: a hashed bag of words (each lower-cased word adds
//! to one of `dimensions` buckets), so texts sharing words are similar, deliberately
//! *not* normalised (the adapters must normalise), and in the OpenAI API listed in
//! reverse order with their `index` (the adapter must reorder). Tests can script
//! failures, garbage and wrong shapes, add latency, and read back what was asked.

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What the next request gets instead of the real answer.
#[derive(Debug, Clone)]
pub enum Trouble {
    /// This HTTP status with an OpenAI-style error body.
    Status(u16),
    /// 200 with a body that is not JSON.
    Garbage,
    /// 200, one vector fewer than inputs.
    MissingVector,
    /// 200, vectors one value too short.
    WrongDimensions,
}

#[derive(Default)]
struct State {
    dimensions: usize,
    /// Used up one per request, before `always`.
    next: VecDeque<Trouble>,
    always: Option<Trouble>,
    latency: Duration,
    /// Every request body, in arrival order.
    requests: Vec<Value>,
    /// Every request path.
    paths: Vec<String>,
}

#[derive(Clone)]
pub struct FakeEmbeddings {
    /// `http://127.0.0.1:PORT`: the OpenAI base is `{url}/v1`, Bedrock's endpoint `{url}`.
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeEmbeddings {
    pub async fn start(dimensions: usize) -> Self {
        let state = Arc::new(Mutex::new(State {
            dimensions,
            ..State::default()
        }));
        let app = Router::new().fallback(handle).with_state(state.clone());
        let url = crate::local_server::start("the fake embeddings server", app).await;
        FakeEmbeddings { url, state }
    }

    /// The OpenAI-compatible base URL (`EMBEDDINGS_BASE_URL`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next `times` requests get `trouble`, then answers are real again.
    pub fn trouble_times(&self, trouble: Trouble, times: usize) {
        let mut state = self.state();
        for _ in 0..times {
            state.next.push_back(trouble.clone());
        }
    }

    /// Every request gets `trouble` until [`FakeEmbeddings::heal`].
    pub fn trouble_always(&self, trouble: Trouble) {
        self.state().always = Some(trouble);
    }

    pub fn heal(&self) {
        let mut state = self.state();
        state.always = None;
        state.next.clear();
    }

    /// Answer every request only after `latency`.
    pub fn latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// Request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.state().requests.clone()
    }

    pub fn paths(&self) -> Vec<String> {
        self.state().paths.clone()
    }

    /// How many texts were embedded (asked for) so far, over both APIs.
    pub fn texts_asked(&self) -> usize {
        self.state()
            .requests
            .iter()
            .map(|r| {
                r["input"]
                    .as_array()
                    .map_or(usize::from(r["inputText"].is_string()), Vec::len)
            })
            .sum()
    }

    /// The vector this server makes for `text`, before any normalisation.
    pub fn raw_vector(&self, text: &str) -> Vec<f32> {
        bag_of_words(text, self.state().dimensions)
    }

    /// [`FakeEmbeddings::raw_vector`] at a size the request asked for.
    pub fn raw_vector_sized(&self, text: &str, dimensions: usize) -> Vec<f32> {
        bag_of_words(text, dimensions)
    }
}

/// A URL where nothing listens: an embeddings server that is down.
pub async fn closed_url() -> String {
    let (listener, url) = crate::local_server::listen("a port to close").await;
    drop(listener);
    url
}

type Shared = axum::extract::State<Arc<Mutex<State>>>;

async fn handle(axum::extract::State(state): Shared, uri: Uri, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not json").into_response();
    };
    let path = uri.path().to_string();
    let (trouble, dimensions, latency) = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.requests.push(request.clone());
        s.paths.push(path.clone());
        let trouble = s.next.pop_front().or_else(|| s.always.clone());
        (trouble, s.dimensions, s.latency)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if path.starts_with("/model/") && path.ends_with("/invoke") {
        titan(&request, dimensions, trouble)
    } else if path.ends_with("/embeddings") {
        openai(&request, dimensions, trouble)
    } else {
        (StatusCode::NOT_FOUND, "no such API").into_response()
    }
}

fn openai(request: &Value, dimensions: usize, trouble: Option<Trouble>) -> Response {
    let inputs: Vec<String> = match &request["input"] {
        Value::String(one) => vec![one.clone()],
        Value::Array(many) => many
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => return error(400, "input must be a string or a list of strings"),
    };
    let dimensions = request["dimensions"]
        .as_u64()
        .map_or(dimensions, |d| d as usize);
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let mut vector = bag_of_words(text, dimensions);
            if matches!(trouble, Some(Trouble::WrongDimensions)) {
                vector.pop();
            }
            json!({"object": "embedding", "index": index, "embedding": vector})
        })
        .collect();
    match trouble {
        Some(Trouble::Status(status)) => return error(status, "fake failure"),
        Some(Trouble::Garbage) => return garbage(),
        Some(Trouble::MissingVector) => {
            data.pop();
        }
        _ => {}
    }
    data.reverse();
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    let body = json!({
        "object": "list",
        "data": data,
        "model": request["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    });
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn titan(request: &Value, default_dimensions: usize, trouble: Option<Trouble>) -> Response {
    let Some(text) = request["inputText"].as_str() else {
        return bedrock_error(400, "ValidationException", "inputText is required");
    };
    let dimensions = request["dimensions"]
        .as_u64()
        .map_or(default_dimensions, |d| d as usize);
    let mut vector = bag_of_words(text, dimensions);
    match trouble {
        Some(Trouble::Status(429)) => {
            return bedrock_error(429, "ThrottlingException", "Too many requests");
        }
        Some(Trouble::Status(status)) if status >= 500 => {
            return bedrock_error(status, "ServiceUnavailableException", "fake failure");
        }
        Some(Trouble::Status(status)) => {
            return bedrock_error(status, "ValidationException", "fake failure");
        }
        Some(Trouble::Garbage) => return garbage(),
        Some(Trouble::WrongDimensions) => {
            vector.pop();
        }
        Some(Trouble::MissingVector) | None => {}
    }
    let body = json!({
        "embedding": vector,
        "inputTextTokenCount": text.split_whitespace().count(),
        "embeddingsByType": {"float": []}
    });
    (StatusCode::OK, axum::Json(body)).into_response()
}

fn error(status: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = json!({"error": {"message": message, "type": "fake_error"}});
    (status, axum::Json(body)).into_response()
}

/// Bedrock's restJson1 error: the type in `x-amzn-errortype`, the message in the body.
fn bedrock_error(status: u16, kind: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [("x-amzn-errortype", kind.to_string())],
        axum::Json(json!({"message": message})),
    )
        .into_response()
}

fn garbage() -> Response {
    (
        StatusCode::OK,
        [("content-type", "text/html")],
        "<html>proxy says hello</html>",
    )
        .into_response()
}

/// Each lower-cased word adds 3 to bucket `fnv1a(word) % dimensions`: similar texts get
/// similar vectors, and the length is never 1 (the caller must normalise).
fn bag_of_words(text: &str, dimensions: usize) -> Vec<f32> {
    let mut vector = vec![0.0_f32; dimensions];
    if dimensions == 0 {
        return vector;
    }
    for word in text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
    {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in word.to_lowercase().bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        vector[(hash % dimensions as u64) as usize] += 3.0;
    }
    if vector.iter().all(|v| *v == 0.0) {
        // A text without words still gets a direction of its own.
        vector[0] = 1.0;
    }
    vector
}
