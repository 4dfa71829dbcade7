//! A scripted HTTP server on 127.0.0.1 that stands in for an LLM provider: it answers
//! each request with the next canned response and records what it received, so tests can
//! assert on both sides of the wire.

#![allow(dead_code)] // each test binary uses a different part of this module

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use parley_core::ports::llm::{LlmOptions, LlmRequest, Message};
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
    events: Option<Events>,
    /// Binary frames (AWS event-stream framing), each `.1` apart.
    frames: Option<(Vec<Bytes>, Duration)>,
}

/// A server-sent event stream: `events` one `gap` apart, then `forever` again and again
/// until the client hangs up (a model that does not stop), or `[DONE]`.
#[derive(Clone, Debug)]
struct Events {
    events: Vec<String>,
    forever: Option<Vec<String>>,
    gap: Duration,
    /// Between the headers and the first event.
    first: Duration,
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
            events: None,
            frames: None,
        }
    }

    /// A streamed reply: each value one `data:` event, `gap` apart, then `[DONE]`.
    pub fn sse(events: Vec<serde_json::Value>, gap: Duration) -> Self {
        let mut canned = Self::raw(200, "").header("content-type", "text/event-stream");
        canned.events = Some(Events {
            events: events.iter().map(|e| e.to_string()).collect(),
            forever: None,
            gap,
            first: Duration::ZERO,
        });
        canned
    }

    /// A streamed reply that never ends: `events`, then `cycle` over and over until the
    /// client closes the connection (counted in [`FakeServer::hang_ups`]).
    pub fn sse_forever(
        events: Vec<serde_json::Value>,
        cycle: Vec<serde_json::Value>,
        gap: Duration,
    ) -> Self {
        let mut canned = Self::sse(events, gap);
        if let Some(stream) = canned.events.as_mut() {
            stream.forever = Some(cycle.iter().map(|e| e.to_string()).collect());
        }
        canned
    }

    /// A reply in AWS's binary event-stream framing (Bedrock's ConverseStream): `frames`,
    /// `gap` apart.
    pub fn frames(frames: Vec<Vec<u8>>, gap: Duration) -> Self {
        let mut canned =
            Self::raw(200, "").header("content-type", "application/vnd.amazon.eventstream");
        canned.frames = Some((frames.into_iter().map(Bytes::from).collect(), gap));
        canned
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

    /// Send the headers at once and the first event only after `delay`: a request waiting
    /// for a self-hosted server's one slot (llama-cpp-python answers that way).
    pub fn first_event_after(mut self, delay: Duration) -> Self {
        if let Some(events) = self.events.as_mut() {
            events.first = delay;
        }
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
    /// Streams the client closed before they ended.
    hang_ups: std::sync::atomic::AtomicUsize,
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
            hang_ups: std::sync::atomic::AtomicUsize::new(0),
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

    /// How many streamed replies the client stopped reading before their end.
    pub fn hang_ups(&self) -> usize {
        self.shared
            .hang_ups
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Counts a hang-up when a stream is dropped before it ended.
struct HangUp {
    shared: Arc<Shared>,
    ended: bool,
}

impl HangUp {
    /// The stream ran to its end: not a hang-up.
    fn end(mut self) {
        self.ended = true;
    }
}

impl Drop for HangUp {
    fn drop(&mut self) {
        if !self.ended {
            self.shared
                .hang_ups
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

fn event_stream(shared: Arc<Shared>, events: Events) -> axum::body::Body {
    let state = (
        0usize,
        HangUp {
            shared,
            ended: false,
        },
    );
    let stream = futures_util::stream::unfold(state, move |(i, guard)| {
        let events = events.clone();
        async move {
            tokio::time::sleep(if i > 0 { events.gap } else { events.first }).await;
            let data = match (events.events.get(i), &events.forever) {
                (Some(event), _) => event.clone(),
                (None, Some(cycle)) if !cycle.is_empty() => {
                    cycle[(i - events.events.len()) % cycle.len()].clone()
                }
                _ if i == events.events.len() => "[DONE]".to_owned(),
                _ => {
                    guard.end();
                    return None;
                }
            };
            let frame = Bytes::from(format!("data: {data}\n\n"));
            Some((Ok::<_, std::convert::Infallible>(frame), (i + 1, guard)))
        }
    });
    axum::body::Body::from_stream(stream)
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
    let mut response = match (canned.events, canned.frames) {
        (_, Some((frames, gap))) => {
            let stream = futures_util::stream::unfold(0usize, move |i| {
                let frame = frames.get(i).cloned();
                async move {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    Some((Ok::<_, std::convert::Infallible>(frame?), i + 1))
                }
            });
            (
                StatusCode::from_u16(canned.status).unwrap(),
                axum::body::Body::from_stream(stream),
            )
                .into_response()
        }
        (Some(events), None) => (
            StatusCode::from_u16(canned.status).unwrap(),
            event_stream(shared.clone(), events),
        )
            .into_response(),
        (None, None) => (StatusCode::from_u16(canned.status).unwrap(), canned.body).into_response(),
    };
    for (name, value) in canned.headers {
        response.headers_mut().insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}

/// Send `request` with an [`AnswerStarted`](parley_core::ports::llm::AnswerStarted) and
/// time both ends: `(when the answer began, the reply, when it ended)`.
pub async fn begin_and_end(
    llm: &dyn parley_core::ports::llm::Llm,
    mut request: LlmRequest,
) -> (
    Duration,
    Result<parley_core::ports::llm::LlmResponse, parley_core::ports::llm::LlmError>,
    Duration,
) {
    let started = parley_core::ports::llm::AnswerStarted::default();
    request.options.started = Some(started.clone());
    let sent = std::time::Instant::now();
    let (began, (reply, ended)) = tokio::join!(
        async {
            // Bounded, so that a reply that never begins fails its test instead of hanging.
            let _ = tokio::time::timeout(Duration::from_secs(10), started.wait()).await;
            sent.elapsed()
        },
        async { (llm.complete(&request).await, sent.elapsed()) }
    );
    (began, reply, ended)
}

/// The same short conversation every provider's tests send (the reviewer asked, the
/// developer answered), with the options each test wants to see in the request.
pub fn conversation(max_tokens: u32, temperature: f32) -> LlmRequest {
    LlmRequest::new(
        "You are a careful reviewer.",
        vec![
            Message::user("Is this a bug?"),
            Message::assistant("Which line?"),
            Message::user("Line 3."),
        ],
    )
    .with_options(LlmOptions {
        max_tokens,
        temperature: Some(temperature),
        ..LlmOptions::default()
    })
}

/// A conversation in which the model called `read_file` (call `call_id`) and got its
/// result back, offering the `read_file` tool again: what a tool loop's second turn sends.
pub fn tool_request(call_id: &str, text: &str, is_error: bool) -> LlmRequest {
    use parley_core::ports::llm::{ToolCall, ToolResult, ToolSpec};
    let mut request = LlmRequest::new(
        "You are a careful reviewer.",
        vec![
            Message::user("Review this."),
            Message::tool_calls(
                text,
                vec![ToolCall {
                    id: call_id.into(),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "src/app.rs", "start_line": 3}),
                }],
            ),
            Message::tool_results(vec![ToolResult {
                call_id: call_id.into(),
                content: "<code>fn main() {}</code>".into(),
                is_error,
            }]),
        ],
    );
    request.tools = vec![ToolSpec {
        name: "read_file",
        description: "Read a file.",
        input_schema: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    request
}
