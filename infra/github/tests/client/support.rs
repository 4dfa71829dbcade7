//! A fake GitHub on 127.0.0.1 that serves canned responses and records every request,
//! plus loaders for the shared corpora and a freshly generated App key.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Request, StatusCode, Uri};
use axum::response::Response;
use parley_core::ports::github::RepoScope;
use parley_github::{GitHubClient, GitHubConfig, RetryPolicy};
use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey, LineEnding};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub const APP_ID: u64 = 12345;
pub const INSTALLATION_ID: u64 = 99;
pub const OWNER: &str = "octo-org";
pub const REPO: &str = "hello-world";

pub fn repo() -> RepoScope {
    RepoScope::new(INSTALLATION_ID, OWNER, REPO)
}

// --- corpora -----------------------------------------------------------------------------

fn corpora() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
}

/// One documented example from GitHub's OpenAPI description.
pub struct Example {
    pub method: Method,
    /// With `{owner}`-style placeholders.
    pub path: String,
    pub status: u16,
    pub body: Value,
}

/// A documented example: from the shared corpus, else from this repository's own
/// (`tests/corpora`, for the operations it adds).
pub fn example(name: &str) -> Example {
    let shared = corpora().join("github-rest").join(format!("{name}.json"));
    let file = if shared.exists() {
        shared
    } else {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/corpora/github-rest")
            .join(format!("{name}.json"))
    };
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", file.display()));
    let mut value: Value = serde_json::from_str(&text).unwrap();
    Example {
        method: value["method"].as_str().unwrap().parse().unwrap(),
        path: value["path"].as_str().unwrap().to_owned(),
        status: u16::try_from(value["status"].as_u64().unwrap()).unwrap(),
        body: value["body"].take(),
    }
}

/// The exchanges of one recorded octokit/fixtures scenario.
pub fn recorded(name: &str) -> Vec<Value> {
    let file = corpora()
        .join("github-rest-recorded")
        .join(format!("{name}.normalized-fixture.json"));
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", file.display()));
    serde_json::from_str(&text).unwrap()
}

/// The placeholder values the tests use for documented paths.
pub fn fill(path: &str) -> String {
    path.replace("{owner}", OWNER)
        .replace("{repo}", REPO)
        .replace("{pull_number}", "42")
        .replace("{issue_number}", "42")
        .replace("{comment_id}", "7")
        .replace("{review_id}", "80")
        .replace("{check_run_id}", "4")
        .replace("{username}", "hubot")
        .replace("{installation_id}", &INSTALLATION_ID.to_string())
}

// --- the App key -------------------------------------------------------------------------

pub struct TestKey {
    pub private_pem: String,
    pub public_pem: String,
}

/// A 2048-bit RSA key like GitHub issues. Generating one in an unoptimised build takes a
/// while, and nextest runs each test in its own process, so the pair is generated once and
/// kept under Cargo's per-target temp dir for the other test processes.
pub fn test_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parley-github-test-key");
        let private_path = dir.join("app.pem");
        let public_path = dir.join("app.pub.pem");
        if let (Ok(private_pem), Ok(public_pem)) = (
            std::fs::read_to_string(&private_path),
            std::fs::read_to_string(&public_path),
        ) {
            return TestKey {
                private_pem,
                public_pem,
            };
        }
        let private = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
        let private_pem = private.to_pkcs1_pem(LineEnding::LF).unwrap().to_string();
        let public_pem = private
            .to_public_key()
            .to_pkcs1_pem(LineEnding::LF)
            .unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        // Write the public half first and rename both into place, so a concurrent reader
        // finds either nothing or a complete pair.
        let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
        for (path, text) in [(&public_path, &public_pem), (&private_path, &private_pem)] {
            let temp = dir.join(format!("{unique}.tmp"));
            std::fs::write(&temp, text).unwrap();
            std::fs::rename(&temp, path).unwrap();
        }
        TestKey {
            private_pem,
            public_pem,
        }
    })
}

/// Retries fast enough for tests; rate-limit waits still use GitHub's own seconds.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_elapsed: Duration::from_secs(5),
        rate_limit_budget: Duration::from_secs(5),
    }
}

pub fn config_for(base_url: &str) -> GitHubConfig {
    GitHubConfig {
        api_url: base_url.to_owned(),
        retry: fast_retry(),
        request_timeout: Duration::from_secs(5),
        ..GitHubConfig::new(APP_ID.to_string(), test_key().private_pem.clone())
    }
}

pub fn client(fake: &FakeGitHub) -> GitHubClient {
    GitHubClient::new(config_for(&fake.base_url)).unwrap()
}

// --- the fake server ---------------------------------------------------------------------

#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub delay: Duration,
}

impl Canned {
    pub fn json(status: u16, body: &Value) -> Self {
        Canned {
            status,
            headers: vec![(
                "content-type".into(),
                "application/json; charset=utf-8".into(),
            )],
            body: serde_json::to_vec(body).unwrap(),
            delay: Duration::ZERO,
        }
    }

    pub fn of(example: &Example) -> Self {
        Canned::json(example.status, &example.body)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    pub fn bearer(&self) -> &str {
        self.header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "))
            .unwrap_or_else(|| panic!("no bearer credential on {} {}", self.method, self.path))
    }

    pub fn query_pairs(&self) -> Vec<(String, String)> {
        let query = self.query.clone().unwrap_or_default();
        reqwest::Url::parse(&format!("http://x/?{query}"))
            .unwrap()
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

struct Route {
    method: Method,
    path: String,
    /// `None` matches any query string.
    query: Option<String>,
    /// Served in order; the last one repeats.
    responses: VecDeque<Canned>,
}

#[derive(Default)]
struct FakeState {
    routes: Mutex<Vec<Route>>,
    requests: Mutex<Vec<Recorded>>,
}

pub struct FakeGitHub {
    pub base_url: String,
    state: Arc<FakeState>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub const TOKEN: &str = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
pub const TOKEN_PATH: &str = "/app/installations/99/access_tokens";

impl FakeGitHub {
    pub async fn start() -> Self {
        let state = Arc::new(FakeState::default());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        FakeGitHub {
            base_url,
            state,
            server,
        }
    }

    /// A fake that also mints installation tokens: the documented token response, with an
    /// expiry an hour ahead so the client caches it.
    pub async fn with_token() -> Self {
        let fake = Self::start().await;
        fake.on(Method::POST, TOKEN_PATH, token_response(TOKEN, 60));
        fake
    }

    /// Queue `canned` for `method path` (any query).
    pub fn on(&self, method: Method, path: &str, canned: Canned) {
        self.on_query(method, path, None, canned);
    }

    /// The next GraphQL request is answered `body` (200, as GitHub answers its errors too).
    pub fn graphql_answers(&self, body: &Value) {
        self.on(Method::POST, "/graphql", Canned::json(200, body));
    }

    pub fn on_query(&self, method: Method, path: &str, query: Option<&str>, canned: Canned) {
        let mut routes = self.state.routes.lock().unwrap();
        let query = query.map(str::to_owned);
        if let Some(route) = routes
            .iter_mut()
            .find(|r| r.method == method && r.path == path && r.query == query)
        {
            route.responses.push_back(canned);
        } else {
            routes.push(Route {
                method,
                path: path.to_owned(),
                query,
                responses: VecDeque::from([canned]),
            });
        }
    }

    /// Serve a documented example at its documented method and path.
    pub fn serve_example(&self, name: &str) -> Example {
        let example = example(name);
        self.on(
            example.method.clone(),
            &fill(&example.path),
            Canned::of(&example),
        );
        example
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn requests_to(&self, method: Method, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path == path)
            .collect()
    }

    pub fn token_requests(&self) -> usize {
        self.requests_to(Method::POST, TOKEN_PATH).len()
    }
}

/// The documented installation-token response with `token` and an expiry `minutes` ahead.
pub fn token_response(token: &str, minutes: i64) -> Canned {
    let mut body = example("apps__create-installation-access-token.201.default").body;
    body["token"] = Value::from(token);
    let expires = OffsetDateTime::now_utc() + time::Duration::minutes(minutes);
    body["expires_at"] = Value::from(expires.format(&Rfc3339).unwrap());
    Canned::json(201, &body)
}

async fn handle(State(state): State<Arc<FakeState>>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let body: Bytes = axum::body::to_bytes(body, 10 << 20)
        .await
        .unwrap_or_default();
    let uri: &Uri = &parts.uri;
    let path = uri.path().to_owned();
    let query = uri.query().map(str::to_owned);
    state.requests.lock().unwrap().push(Recorded {
        method: parts.method.clone(),
        path: path.clone(),
        query: query.clone(),
        headers: parts.headers.clone(),
        body: body.to_vec(),
    });

    let canned = {
        let mut routes = state.routes.lock().unwrap();
        let route = routes.iter_mut().find(|r| {
            r.method == parts.method && r.path == path && (r.query.is_none() || r.query == query)
        });
        match route {
            Some(route) if route.responses.len() > 1 => route.responses.pop_front(),
            Some(route) => route.responses.front().cloned(),
            None => None,
        }
    };
    let canned = canned.unwrap_or_else(|| {
        Canned::json(
            404,
            &serde_json::json!({
                "message": "Not Found",
                "documentation_url": "https://docs.github.com/rest",
                "status": "404"
            }),
        )
    });
    if !canned.delay.is_zero() {
        tokio::time::sleep(canned.delay).await;
    }
    let mut response = Response::builder().status(StatusCode::from_u16(canned.status).unwrap());
    for (name, value) in &canned.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(canned.body)).unwrap()
}
