//! A Lambda execution environment for one function binary: the Lambda Runtime API served
//! by the test on 127.0.0.1, and the binary (the same `bootstrap` `sam build` packages,
//! built for the host) started as a child process that polls it.
//!
//! The binary cannot tell this from Lambda: it gets the variables Lambda sets, long-polls
//! `GET /2018-06-01/runtime/invocation/next`, answers on `…/invocation/{id}/response` or
//! `…/invocation/{id}/error`, and reports a failed start on `…/runtime/init/error`. Like
//! Lambda, the environment runs one invocation at a time, ends the process when an
//! invocation outlives the function's timeout, and starts a new process (a cold start) for
//! the next invocation after the old one died.
//!
//! Why the Runtime API here rather than `cargo lambda watch`: the test owns every
//! invocation (it sees the function's response or error as a value, with no HTTP front
//! door that would translate them), the process is the test's own child (a crash or a
//! cold start is something the test can cause and observe), nothing else needs
//! installing in CI, and there is no file watcher rebuilding the binary under the test.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

/// How one invocation ended, as Lambda would report it to the caller.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The function's response document (`POST …/response`).
    Response(Value),
    /// The function reported an error (`POST …/error`): its error type header and body.
    Error { error_type: String, body: Value },
    /// The process exited before answering (Lambda: `Runtime.ExitError`); a failed start
    /// reported on `/runtime/init/error` is included.
    Exited(String),
    /// No answer within the function's timeout; the process was ended, as Lambda does.
    TimedOut,
}

/// How Lambda configures the function (the template's values).
#[derive(Debug, Clone)]
pub struct FunctionConfig {
    /// `AWS_LAMBDA_FUNCTION_NAME`.
    pub name: String,
    pub memory_mb: u32,
    pub timeout: Duration,
}

/// One function's execution environment. Dropping it ends the process.
pub struct LambdaFunction {
    config: FunctionConfig,
    binary: PathBuf,
    /// The function's own environment (the template's variables), without Lambda's.
    env: Vec<(String, String)>,
    /// The running process and the Runtime API it polls: a new pair per process, as each
    /// Lambda execution environment has its own (a `GET …/next` left hanging by a killed
    /// process can then never take the next process's invocation).
    process: Mutex<Option<(Child, Arc<RuntimeApi>)>>,
    log: PathBuf,
    /// One invocation at a time, as in one Lambda execution environment.
    busy: tokio::sync::Mutex<()>,
    starts: Mutex<u32>,
}

impl LambdaFunction {
    /// Serve the Runtime API for `binary`; the process starts on the first invocation.
    /// Its output (JSON log lines) goes to `log_dir/<name>.log`.
    pub async fn new(
        config: FunctionConfig,
        binary: &Path,
        env: Vec<(String, String)>,
        log_dir: &Path,
    ) -> LambdaFunction {
        LambdaFunction {
            log: log_dir.join(format!("{}.log", config.name)),
            config,
            binary: binary.to_path_buf(),
            env,
            process: Mutex::new(None),
            busy: tokio::sync::Mutex::new(()),
            starts: Mutex::new(0),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The value of a variable of the function's own environment (not Lambda's).
    pub fn env(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Invoke the function synchronously with `event` (`RequestResponse`).
    pub async fn invoke(&self, event: &Value) -> Outcome {
        let _one_at_a_time = self.busy.lock().await;
        let api = self.ensure_running().await;
        let (id, answer) = api.enqueue(event, self.config.timeout, &self.config.name);
        let deadline = Instant::now() + self.config.timeout;
        tokio::pin!(answer);
        loop {
            tokio::select! {
                outcome = &mut answer => {
                    return outcome.unwrap_or_else(|_| Outcome::Exited("the Runtime API dropped the invocation".into()));
                }
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            if let Some(status) = self.exit_status() {
                api.forget(&id);
                let init = api.init_errors();
                return Outcome::Exited(format!(
                    "{} exited ({status}){}",
                    self.config.name,
                    if init.is_empty() {
                        String::new()
                    } else {
                        format!("; init errors: {init:?}")
                    }
                ));
            }
            if Instant::now() >= deadline {
                api.forget(&id);
                self.stop();
                return Outcome::TimedOut;
            }
        }
    }

    /// Processes started so far: 1 after the first invocation, one more per cold start.
    pub fn starts(&self) -> u32 {
        *lock(&self.starts)
    }

    /// Everything the function wrote so far (all its processes).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// End the process (`kill -9`), as Lambda does after a timeout or when it retires an
    /// environment. The next invocation starts a new one.
    pub fn stop(&self) {
        if let Some((mut child, _api)) = lock(&self.process).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn exit_status(&self) -> Option<String> {
        let mut process = lock(&self.process);
        let status = process.as_mut()?.0.try_wait().ok()??;
        *process = None;
        Some(status.to_string())
    }

    /// The running process's Runtime API, after starting a process if none runs (a cold
    /// start).
    async fn ensure_running(&self) -> Arc<RuntimeApi> {
        if let Some((child, api)) = lock(&self.process).as_mut()
            && matches!(child.try_wait(), Ok(None))
        {
            return api.clone();
        }
        let api = Arc::new(RuntimeApi::start().await);
        let output = || {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .expect("open the function's log file")
        };
        let name = &self.config.name;
        let child = Command::new(&self.binary)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            // What Lambda sets for a custom runtime on provided.al2023.
            .env("AWS_LAMBDA_RUNTIME_API", &api.address)
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env(
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
                self.config.memory_mb.to_string(),
            )
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "emulated")
            .env("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
            .env("_HANDLER", "bootstrap")
            .env("TZ", ":UTC")
            .stdin(Stdio::null())
            .stdout(Stdio::from(output()))
            .stderr(Stdio::from(output()))
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", self.binary.display()));
        *lock(&self.starts) += 1;
        *lock(&self.process) = Some((child, api.clone()));
        api
    }
}

impl Drop for LambdaFunction {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The Runtime API of one execution environment.
struct RuntimeApi {
    /// `127.0.0.1:<port>`, the value of `AWS_LAMBDA_RUNTIME_API`.
    address: String,
    state: Arc<ApiState>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for RuntimeApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

struct ApiState {
    invocations: mpsc::UnboundedSender<Invocation>,
    /// Taken by the one `GET …/next` that is waiting (the runtime polls one at a time).
    next: tokio::sync::Mutex<mpsc::UnboundedReceiver<Invocation>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<Outcome>>>,
    init_errors: Mutex<Vec<Value>>,
}

struct Invocation {
    id: String,
    event: Bytes,
    deadline_ms: u128,
    function_arn: String,
}

impl RuntimeApi {
    async fn start() -> RuntimeApi {
        let (invocations, next) = mpsc::unbounded_channel();
        let state = Arc::new(ApiState {
            invocations,
            next: tokio::sync::Mutex::new(next),
            waiting: Mutex::new(HashMap::new()),
            init_errors: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next_invocation))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(invocation_response),
            )
            .route(
                "/2018-06-01/runtime/invocation/{id}/error",
                post(invocation_error),
            )
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(state.clone());
        let (listener, url) = crate::local_server::listen("the Runtime API").await;
        // The variable names a host and port, without the scheme.
        let address = url.trim_start_matches("http://").to_string();
        let server = crate::local_server::serve(listener, app);
        RuntimeApi {
            address,
            state,
            server,
        }
    }

    /// Queue an invocation; the receiver gets its outcome.
    fn enqueue(
        &self,
        event: &Value,
        timeout: Duration,
        function: &str,
    ) -> (String, oneshot::Receiver<Outcome>) {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        lock(&self.state.waiting).insert(id.clone(), tx);
        let deadline = SystemTime::now() + timeout;
        let deadline_ms = deadline
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        let invocation = Invocation {
            id: id.clone(),
            event: Bytes::from(serde_json::to_vec(event).expect("encode the event")),
            deadline_ms,
            function_arn: format!("arn:aws:lambda:us-east-1:123456789012:function:{function}"),
        };
        self.state
            .invocations
            .send(invocation)
            .unwrap_or_else(|_| panic!("the Runtime API of {function} is gone"));
        (id, rx)
    }

    fn forget(&self, id: &str) {
        lock(&self.state.waiting).remove(id);
    }

    fn init_errors(&self) -> Vec<Value> {
        lock(&self.state.init_errors).clone()
    }
}

type Api = State<Arc<ApiState>>;

/// `GET /runtime/invocation/next`: blocks until there is an invocation, as Lambda does.
async fn next_invocation(State(state): Api) -> Response {
    let invocation = {
        let mut next = state.next.lock().await;
        match next.recv().await {
            Some(invocation) => invocation,
            None => return StatusCode::GONE.into_response(),
        }
    };
    let mut response = (StatusCode::OK, invocation.event).into_response();
    let headers = response.headers_mut();
    let values = [
        ("lambda-runtime-aws-request-id", invocation.id),
        (
            "lambda-runtime-deadline-ms",
            invocation.deadline_ms.to_string(),
        ),
        (
            "lambda-runtime-invoked-function-arn",
            invocation.function_arn,
        ),
        (
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000;Sampled=0".to_string(),
        ),
        ("content-type", "application/json".to_string()),
    ];
    for (name, value) in values {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}

/// `POST /runtime/invocation/{id}/response`.
async fn invocation_response(
    State(state): Api,
    UrlPath(id): UrlPath<String>,
    body: Bytes,
) -> StatusCode {
    let document = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    answer(&state, &id, Outcome::Response(document))
}

/// `POST /runtime/invocation/{id}/error`.
async fn invocation_error(
    State(state): Api,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let error_type = headers
        .get("lambda-runtime-function-error-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("Unhandled")
        .to_string();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    answer(&state, &id, Outcome::Error { error_type, body })
}

/// `POST /runtime/init/error`: the function could not start. Lambda then ends the
/// process; the pending invocation sees it exit.
async fn init_error(State(state): Api, body: Bytes) -> StatusCode {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    lock(&state.init_errors).push(body);
    StatusCode::ACCEPTED
}

fn answer(state: &ApiState, id: &str, outcome: Outcome) -> StatusCode {
    match lock(&state.waiting).remove(id) {
        Some(waiting) => {
            let _ = waiting.send(outcome);
            StatusCode::ACCEPTED
        }
        // Lambda answers 400 to a response for an invocation it no longer waits for.
        None => StatusCode::BAD_REQUEST,
    }
}
