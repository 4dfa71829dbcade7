//! What the fake knows: every pull request, comment, review and check it was given or
//! made, the requests it received, and the failures scripted for the next ones.

use crate::tripwire::Tripwire;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
    /// The `Authorization` header: the App JWT or the installation token the client sent.
    pub authorization: Option<String>,
}

/// A scripted failure: the next `times` requests matching `method` and containing
/// `path_contains` get `status` with `body` (and `headers`).
#[derive(Debug, Clone)]
pub struct Injected {
    pub method: &'static str,
    pub path_contains: String,
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(&'static str, String)>,
    pub times: usize,
}

impl Injected {
    /// `status` for the next `times` requests of `method` to a path containing
    /// `path_contains`, with the message GitHub gives it and no headers.
    pub fn answering(
        method: &'static str,
        path_contains: impl Into<String>,
        status: u16,
        times: usize,
    ) -> Self {
        Injected {
            method,
            path_contains: path_contains.into(),
            status,
            body: serde_json::json!({ "message": message_of(status) }),
            headers: Vec::new(),
            times,
        }
    }
}

/// The `message` GitHub's error body carries for `status`.
fn message_of(status: u16) -> &'static str {
    match status {
        403 => "Resource not accessible by integration",
        422 => "Validation Failed",
        429 => "API rate limit exceeded",
        500 => "Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// A scripted fault with more control than [`Injected`]: it can let the first `skip`
/// matching requests through (to hit the second call to the same path), and it can
/// answer late instead of failing (a timeout as the client sees it).
#[derive(Debug, Clone)]
pub struct Fault {
    pub method: &'static str,
    /// The request path (no query) it hits: equal to this when `exact`, else containing it.
    pub path: String,
    pub exact: bool,
    /// Matching requests served normally before the fault starts.
    pub skip: usize,
    /// Matching requests the fault hits after that (`usize::MAX`: until cleared).
    pub times: usize,
    pub action: FaultAction,
}

#[derive(Debug, Clone)]
pub enum FaultAction {
    /// Answer `status` with `body` and `headers`; the request is not acted on.
    Respond {
        status: u16,
        body: Value,
        headers: Vec<(&'static str, String)>,
    },
    /// Act on the request (a write lands, as on GitHub), then hold the answer this long:
    /// a client with a shorter timeout sees a timeout on a request that took effect.
    Slow(Duration),
}

#[derive(Default)]
pub(super) struct State {
    pub(super) next_id: u64,
    pub(super) latency: Duration,
    pub(super) requests: Vec<Recorded>,
    pub(super) injected: Vec<Injected>,
    pub(super) faults: Vec<Fault>,
    pub(super) pulls: HashMap<(String, u64), Value>,
    pub(super) files: HashMap<(String, u64), Vec<Value>>,
    pub(super) compares: HashMap<(String, String), Value>,
    /// Issues by `(repo, number)`, as `GET …/issues/{n}` gives them.
    pub(super) issues: HashMap<(String, u64), Value>,
    /// `(repo, refs/heads/…, sha)`: the branches `git/matching-refs` lists.
    pub(super) refs: Vec<(String, String, String)>,
    pub(super) review_comments: Vec<(String, u64, Value)>,
    pub(super) issue_comments: Vec<(String, u64, Value)>,
    pub(super) reviews: Vec<(String, u64, Value)>,
    pub(super) contents: HashMap<(String, String, String), String>,
    /// `(repo, sha)` → the gzipped tarball `GET /repos/{o}/{r}/tarball/{sha}` serves.
    pub(super) tarballs: HashMap<(String, String), Vec<u8>>,
    pub(super) permissions: HashMap<(String, String), String>,
    /// `(org, user)` → `role` of an active membership; an org listed in
    /// `members_hidden` answers 403 (the App lacks "Members: read").
    pub(super) org_roles: HashMap<(String, String), String>,
    pub(super) members_hidden: Vec<String>,
    pub(super) check_runs: Vec<(String, Value)>,
    /// Checks branches require.
    pub(super) required_checks: Vec<super::protection::Required>,
    pub(super) reactions: Vec<(String, u64, String)>,
    /// People's reactions on inline comments: (comment id, content, login).
    pub(super) people_reactions: Vec<(u64, String, String)>,
    pub(super) requested_reviewers: Vec<(String, u64, Vec<String>)>,
    pub(super) resolved_threads: Vec<String>,
    /// `(repo, pr, issue's repo, issue)`: issues linked to a PR in its sidebar.
    pub(super) linked_by_hand: Vec<(String, u64, String, u64)>,
    /// `(method, path fragment, tripwire)`, checked in order.
    pub(super) tripwires: Vec<(String, String, Arc<Tripwire>)>,
    pub(super) app_slug: String,
    /// What `GET /app` says the App asks for: `(permissions, events)`; `None`, what
    /// Parley's manifest asks for.
    pub(super) app_setup: Option<(Value, Vec<String>)>,
    /// The same for what installations have accepted.
    pub(super) installation_setup: Option<(Value, Vec<String>)>,
    /// A person's token this GitHub knows (`parley review` with `GITHUB_TOKEN`): any
    /// other bearer that is neither an installation token nor a JWT gets 401.
    pub(super) personal_token: Option<String>,
    /// The person's token may read but not write (a fine-grained token without
    /// "Pull requests: write"): writes with it get 403.
    pub(super) personal_read_only: bool,
    /// Attempts at webhook deliveries, as `GET /app/hook/deliveries` lists them.
    pub(super) deliveries: Vec<Value>,
    /// Delivery ids Parley asked to be sent again, in order.
    pub(super) redelivery_requests: Vec<u64>,
    /// How a redelivery is answered (202 unless a test makes them fail).
    pub(super) redelivery_status: u32,
    /// Minutes from now a redelivery is stamped with (a test moving the clock on).
    pub(super) redelivery_clock_minutes: i64,
    /// `http://127.0.0.1:<port>`, for pagination links.
    pub(super) base_url: String,
}

impl State {
    pub(super) fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn take_tripwire(&mut self, method: &str, path: &str) -> Option<Arc<Tripwire>> {
        self.tripwires
            .iter()
            .find(|(m, fragment, wire)| m == method && path.contains(fragment) && wire.take())
            .map(|(_, _, wire)| wire.clone())
    }

    /// The action of the first fault this request hits, counting it.
    pub(super) fn take_fault(&mut self, method: &str, path: &str) -> Option<FaultAction> {
        for fault in &mut self.faults {
            let hit = if fault.exact {
                path == fault.path
            } else {
                path.contains(&fault.path)
            };
            if fault.method != method || !hit {
                continue;
            }
            if fault.skip > 0 {
                fault.skip -= 1;
                continue;
            }
            if fault.times == 0 {
                continue;
            }
            fault.times -= 1;
            return Some(fault.action.clone());
        }
        None
    }

    pub(super) fn take_injected(&mut self, method: &str, path: &str) -> Option<Injected> {
        let index = self
            .injected
            .iter()
            .position(|f| f.times > 0 && f.method == method && path.contains(&f.path_contains))?;
        self.injected[index].times -= 1;
        Some(self.injected[index].clone())
    }
}
