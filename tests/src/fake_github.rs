//! A stateful fake GitHub on 127.0.0.1, speaking GitHub's REST and GraphQL shapes.
//!
//! Responses are built from GitHub's documented examples in `../shared/corpora/github-rest`
//! with the fields a test cares about overwritten, so a client that parses the fake parses
//! GitHub. State lives in memory: comments created through the API show up in later
//! listings, which is what conversation and review tests need to observe. Every request is
//! recorded; failures and latency can be injected.

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use crate::tripwire::{HoldPoint, Tripwire};

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
struct State {
    next_id: u64,
    latency: Duration,
    requests: Vec<Recorded>,
    injected: Vec<Injected>,
    faults: Vec<Fault>,
    pulls: HashMap<(String, u64), Value>,
    files: HashMap<(String, u64), Vec<Value>>,
    compares: HashMap<(String, String), Value>,
    review_comments: Vec<(String, u64, Value)>,
    issue_comments: Vec<(String, u64, Value)>,
    reviews: Vec<(String, u64, Value)>,
    contents: HashMap<(String, String, String), String>,
    /// `(repo, sha)` → the gzipped tarball `GET /repos/{o}/{r}/tarball/{sha}` serves.
    tarballs: HashMap<(String, String), Vec<u8>>,
    permissions: HashMap<(String, String), String>,
    /// `(org, user)` → `role` of an active membership; an org listed in
    /// `members_hidden` answers 403 (the App lacks "Members: read").
    org_roles: HashMap<(String, String), String>,
    members_hidden: Vec<String>,
    check_runs: Vec<(String, Value)>,
    reactions: Vec<(String, u64, String)>,
    /// People's reactions on inline comments: (comment id, content, login).
    people_reactions: Vec<(u64, String, String)>,
    requested_reviewers: Vec<(String, u64, Vec<String>)>,
    resolved_threads: Vec<String>,
    /// `(method, path fragment, tripwire)`, checked in order.
    tripwires: Vec<(String, String, Arc<Tripwire>)>,
    app_slug: String,
    /// A person's token this GitHub knows (`parley review` with `GITHUB_TOKEN`): any
    /// other bearer that is neither an installation token nor a JWT gets 401.
    personal_token: Option<String>,
    /// The person's token may read but not write (a fine-grained token without
    /// "Pull requests: write"): writes with it get 403.
    personal_read_only: bool,
    /// `http://127.0.0.1:<port>`, for pagination links.
    base_url: String,
}

#[derive(Clone)]
pub struct FakeGitHub {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl FakeGitHub {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(State {
            next_id: 1000,
            app_slug: "parley".to_string(),
            ..State::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake github");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        state.lock().unwrap_or_else(|e| e.into_inner()).base_url = url.clone();
        let app = Router::new()
            .fallback(handle)
            .layer(axum::middleware::map_response_with_state(
                state.clone(),
                rate_limit_header,
            ))
            .with_state(state.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeGitHub { url, state }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    // --- arranging -------------------------------------------------------------------

    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// Accept `token` as a person's token; with `read_only`, writes with it get 403.
    pub fn accept_personal_token(&self, token: &str, read_only: bool) {
        let mut s = self.state();
        s.personal_token = Some(token.to_string());
        s.personal_read_only = read_only;
    }

    pub fn set_app_slug(&self, slug: &str) {
        self.state().app_slug = slug.to_string();
    }

    pub fn inject(&self, failure: Injected) {
        self.state().injected.push(failure);
    }

    /// Hold the first `catches` requests whose method is `method` and whose path contains
    /// `path_contains` at `point`, until the returned tripwire is released (or abandoned:
    /// a request held before applying then changes nothing); the test learns of each catch
    /// through the tripwire. Later matching requests are served as usual.
    pub fn tripwire(
        &self,
        method: &str,
        path_contains: &str,
        point: HoldPoint,
        catches: usize,
    ) -> Arc<Tripwire> {
        let wire = Tripwire::new(point, catches);
        self.state()
            .tripwires
            .push((method.to_string(), path_contains.to_string(), wire.clone()));
        wire
    }

    /// End every injected failure still pending (an outage is over), however many times
    /// the client happened to retry. Faults ([`FakeGitHub::fault`]) end too.
    pub fn clear_injected(&self) {
        let mut state = self.state();
        state.injected.clear();
        state.faults.clear();
    }

    /// Script a [`Fault`]. Checked before [`Injected`] failures.
    pub fn fault(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    /// A pull request built from the documented example.
    /// An open PR as a review reads it: [`FakeGitHub::add_pull`], its page on github.com,
    /// `main` as the base repository's default branch, and `files` (path, status, patch)
    /// as its changed files.
    pub fn open_pull(
        &self,
        repo: &str,
        number: u64,
        (author, head_sha, base_sha): (&str, &str, &str),
        files: &[(&str, &str, &str)],
    ) {
        self.add_pull(repo, number, author, head_sha, base_sha);
        self.update_pull(repo, number, |pr| {
            pr["html_url"] = format!("https://github.com/{repo}/pull/{number}").into();
            pr["base"]["repo"]["default_branch"] = "main".into();
        });
        self.set_files(repo, number, files);
    }

    pub fn add_pull(&self, repo: &str, number: u64, author: &str, head_sha: &str, base_sha: &str) {
        let mut pr = example("pulls__get.200.default.json");
        pr["number"] = number.into();
        pr["user"]["login"] = author.into();
        pr["head"]["sha"] = head_sha.into();
        pr["base"]["sha"] = base_sha.into();
        pr["base"]["ref"] = "main".into();
        pr["title"] = format!("PR #{number}").into();
        pr["body"] = "Please review.".into();
        pr["draft"] = false.into();
        pr["state"] = "open".into();
        // The example's repositories are another one's: the PR lives in `repo`, from a
        // branch of `repo` (not a fork).
        let (owner, name) = repo.split_once('/').unwrap_or((repo, repo));
        for side in ["base", "head"] {
            pr[side]["repo"]["full_name"] = repo.into();
            pr[side]["repo"]["name"] = name.into();
            pr[side]["repo"]["owner"]["login"] = owner.into();
            pr[side]["repo"]["id"] = crate::tenants::repo_id(repo).into();
            pr[side]["repo"]["owner"]["id"] = crate::tenants::owner_id(owner).into();
        }
        self.state().pulls.insert((repo.to_string(), number), pr);
    }

    pub fn update_pull(&self, repo: &str, number: u64, change: impl FnOnce(&mut Value)) {
        if let Some(pr) = self.state().pulls.get_mut(&(repo.to_string(), number)) {
            change(pr);
        }
    }

    /// Changed files: `(filename, status, patch)`.
    pub fn set_files(&self, repo: &str, number: u64, files: &[(&str, &str, &str)]) {
        let template = example("pulls__list-files.200.default.json")[0].clone();
        let files = files
            .iter()
            .map(|(name, status, patch)| {
                let mut f = template.clone();
                f["filename"] = (*name).into();
                f["status"] = (*status).into();
                f["patch"] = (*patch).into();
                let additions = patch.lines().filter(|l| l.starts_with('+')).count();
                let deletions = patch.lines().filter(|l| l.starts_with('-')).count();
                f["additions"] = additions.into();
                f["deletions"] = deletions.into();
                f["changes"] = (additions + deletions).into();
                f
            })
            .collect();
        self.state().files.insert((repo.to_string(), number), files);
    }

    /// The answer to `GET /repos/{repo}/compare/{base}...{head}`: `(filename, status, patch)`.
    pub fn set_compare(&self, repo: &str, base: &str, head: &str, files: &[(&str, &str, &str)]) {
        let files: Vec<Value> = files
            .iter()
            .map(|(name, status, patch)| json!({ "filename": name, "status": status, "patch": patch, "additions": 1, "deletions": 0, "changes": 1, "sha": "0", "blob_url": "", "raw_url": "", "contents_url": "" }))
            .collect();
        let body = json!({
            "status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
            "base_commit": { "sha": base }, "merge_base_commit": { "sha": base },
            "commits": [ { "sha": head, "commit": { "message": "change" } } ],
            "files": files,
        });
        self.state()
            .compares
            .insert((repo.to_string(), format!("{base}...{head}")), body);
    }

    /// Serve `bytes` as the repository's tarball at `sha` (build one with
    /// [`tarball`]).
    pub fn set_tarball(&self, repo: &str, sha: &str, bytes: Vec<u8>) {
        self.state()
            .tarballs
            .insert((repo.to_string(), sha.to_string()), bytes);
    }

    /// A file at a ref, served by the contents API (base64, as GitHub does).
    pub fn set_file(&self, repo: &str, git_ref: &str, path: &str, content: &str) {
        self.state().contents.insert(
            (repo.to_string(), git_ref.to_string(), path.to_string()),
            content.to_string(),
        );
    }

    /// Make `user` an active member of `org` with `role` (`admin` or `member`).
    pub fn set_org_role(&self, org: &str, user: &str, role: &str) {
        self.state()
            .org_roles
            .insert((org.to_string(), user.to_string()), role.to_string());
    }

    /// Answer 403 for `org`'s memberships, as GitHub does when the App was not granted
    /// the organisation permission "Members: read".
    pub fn hide_members(&self, org: &str) {
        self.state().members_hidden.push(org.to_string());
    }

    pub fn set_permission(&self, repo: &str, user: &str, permission: &str) {
        self.state()
            .permissions
            .insert((repo.to_string(), user.to_string()), permission.to_string());
    }

    /// Seed a review comment as if a user (or Parley) had written it. Returns its id.
    #[allow(clippy::too_many_arguments)] // mirrors the fields of a review comment one to one
    pub fn add_review_comment(
        &self,
        repo: &str,
        pr: u64,
        author: &str,
        body: &str,
        in_reply_to: Option<u64>,
        path: &str,
        line: u64,
    ) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let comment = review_comment_json(id, repo, pr, author, body, in_reply_to, path, line);
        state.review_comments.push((repo.to_string(), pr, comment));
        id
    }

    /// Seed an issue comment. Returns its id.
    pub fn add_issue_comment(&self, repo: &str, number: u64, author: &str, body: &str) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let comment = issue_comment_json(id, repo, number, author, body);
        state
            .issue_comments
            .push((repo.to_string(), number, comment));
        id
    }

    /// Date a seeded comment (either listing) `when`: created and last updated then.
    pub fn set_comment_time(&self, id: u64, when: time::OffsetDateTime) {
        let mut state = self.state();
        let State {
            issue_comments,
            review_comments,
            ..
        } = &mut *state;
        for (_, _, comment) in issue_comments.iter_mut().chain(review_comments.iter_mut()) {
            if comment["id"] == id {
                backdate(comment, when);
            }
        }
    }

    /// Seed a submitted review (`COMMENTED`) by `author` with `body`. Returns its id.
    pub fn add_review(&self, repo: &str, pr: u64, author: &str, body: &str) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let mut review = example("pulls__create-review.200.default.json");
        review["id"] = id.into();
        review["body"] = body.into();
        review["user"] = user_json(author);
        review["state"] = "COMMENTED".into();
        review["submitted_at"] = now().into();
        review["html_url"] =
            format!("https://github.com/{repo}/pull/{pr}#pullrequestreview-{id}").into();
        state.reviews.push((repo.to_string(), pr, review));
        id
    }

    pub fn delete_review_comment(&self, id: u64) {
        self.state()
            .review_comments
            .retain(|(_, _, c)| c["id"] != id);
    }

    // --- observing -------------------------------------------------------------------

    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    /// Requests whose method matches and whose path contains `fragment`.
    pub fn requests_to(&self, method: &str, fragment: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.contains(fragment))
            .collect()
    }

    pub fn review_comments(&self, repo: &str, pr: u64) -> Vec<Value> {
        self.state()
            .review_comments
            .iter()
            .filter(|(r, n, _)| r == repo && *n == pr)
            .map(|(_, _, c)| c.clone())
            .collect()
    }

    /// Review comment `id` on PR `pr`, as the API lists it (panics when there is none: the
    /// test just posted it).
    pub fn review_comment(&self, repo: &str, pr: u64, id: u64) -> Value {
        self.review_comments(repo, pr)
            .into_iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no review comment {id} on {repo}#{pr}"))
    }

    /// Issue comment `id` on issue or PR `number`, as the API lists it.
    pub fn issue_comment(&self, repo: &str, number: u64, id: u64) -> Value {
        self.issue_comments(repo, number)
            .into_iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no issue comment {id} on {repo}#{number}"))
    }

    pub fn issue_comments(&self, repo: &str, number: u64) -> Vec<Value> {
        self.state()
            .issue_comments
            .iter()
            .filter(|(r, n, _)| r == repo && *n == number)
            .map(|(_, _, c)| c.clone())
            .collect()
    }

    pub fn reviews(&self, repo: &str, pr: u64) -> Vec<Value> {
        self.state()
            .reviews
            .iter()
            .filter(|(r, n, _)| r == repo && *n == pr)
            .map(|(_, _, c)| c.clone())
            .collect()
    }

    /// Parley's reviews of `head` on the PR (by the marker each review body carries).
    pub fn reviews_of(&self, repo: &str, pr: u64, head: &str) -> Vec<Value> {
        use parley_core::markers;
        use parley_core::review::summary::ReviewMarker;
        self.reviews(repo, pr)
            .into_iter()
            .filter(|r| {
                markers::find::<ReviewMarker>(
                    r["body"].as_str().unwrap_or(""),
                    markers::kind::REVIEW,
                )
                .is_some_and(|m| m.head_sha == head)
            })
            .collect()
    }

    /// The "Parley review" check runs on `head`, oldest first: the newest is the one
    /// branch protection reads.
    pub fn gate_checks(&self, repo: &str, head: &str) -> Vec<Value> {
        self.check_runs(repo)
            .into_iter()
            .filter(|c| c["name"] == "Parley review" && c["head_sha"] == head)
            .collect()
    }

    pub fn check_runs(&self, repo: &str) -> Vec<Value> {
        self.state()
            .check_runs
            .iter()
            .filter(|(r, _)| r == repo)
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// `(kind, comment id, content)`: kind is `issue` or `review`.
    /// `login` reacts to inline comment `comment_id` with `content` (`+1`, `-1`, …).
    pub fn react_to_review_comment(&self, comment_id: u64, content: &str, login: &str) {
        self.state()
            .people_reactions
            .push((comment_id, content.to_string(), login.to_string()));
    }

    pub fn reactions(&self) -> Vec<(String, u64, String)> {
        self.state().reactions.clone()
    }

    pub fn requested_reviewers(&self) -> Vec<(String, u64, Vec<String>)> {
        self.state().requested_reviewers.clone()
    }

    pub fn resolved_threads(&self) -> Vec<String> {
        self.state().resolved_threads.clone()
    }
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn take_tripwire(&mut self, method: &str, path: &str) -> Option<Arc<Tripwire>> {
        self.tripwires
            .iter()
            .find(|(m, fragment, wire)| m == method && path.contains(fragment) && wire.take())
            .map(|(_, _, wire)| wire.clone())
    }

    /// The action of the first fault this request hits, counting it.
    fn take_fault(&mut self, method: &str, path: &str) -> Option<FaultAction> {
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

    fn take_injected(&mut self, method: &str, path: &str) -> Option<Injected> {
        let index = self
            .injected
            .iter()
            .position(|f| f.times > 0 && f.method == method && path.contains(&f.path_contains))?;
        self.injected[index].times -= 1;
        Some(self.injected[index].clone())
    }
}

/// The body of a documented example from the REST corpus.
pub fn example(file: &str) -> Value {
    let path = crate::corpora().join("github-rest").join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_slice(&bytes).expect("example json");
    doc["body"].clone()
}

/// GitHub's `since` filter on comment listings: updated at or after the given time.
/// The items of `list` on issue or PR `number` (as the path spells it) of `repo` that
/// `keep` keeps, in the order they were made.
fn on(
    list: &[(String, u64, Value)],
    repo: &str,
    number: &str,
    keep: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let number: u64 = number.parse().unwrap_or(0);
    list.iter()
        .filter(|(r, n, item)| r == repo && *n == number && keep(item))
        .map(|(_, _, item)| item.clone())
        .collect()
}

/// The item of `list` in `repo` with id `id` (as the path spells it), or GitHub's 404.
fn by_id(list: &[(String, u64, Value)], repo: &str, id: &str) -> Response {
    let id: u64 = id.parse().unwrap_or(0);
    match list
        .iter()
        .find(|(r, _, item)| r == repo && item["id"] == id)
    {
        Some((_, _, item)) => ok(item.clone()),
        None => not_found(),
    }
}

/// `PATCH` of a comment: its body becomes the request's.
fn edit_body(list: &mut [(String, u64, Value)], repo: &str, id: &str, body: &Value) -> Response {
    let id: u64 = id.parse().unwrap_or(0);
    match list.iter_mut().find(|(r, _, c)| r == repo && c["id"] == id) {
        Some((_, _, comment)) => {
            comment["body"] = body["body"].clone();
            ok(comment.clone())
        }
        None => not_found(),
    }
}

fn updated_since(comment: &Value, since: Option<&str>) -> bool {
    let Some(since) = since else { return true };
    let since = since
        .replace("%3A", ":")
        .replace("%3a", ":")
        .replace("%2B", "+");
    let since = since.as_str();
    let parse = |text: &str| {
        time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()
    };
    match (parse(since), comment["updated_at"].as_str().and_then(parse)) {
        (Some(since), Some(updated)) => updated >= since,
        _ => true,
    }
}

/// Set a comment's timestamps.
fn backdate(comment: &mut Value, when: time::OffsetDateTime) {
    let text = when
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    comment["created_at"] = text.clone().into();
    comment["updated_at"] = text.into();
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn user_json(login: &str) -> Value {
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    json!({ "login": login, "id": 1, "type": kind, "site_admin": false })
}

#[allow(clippy::too_many_arguments)]
fn review_comment_json(
    id: u64,
    repo: &str,
    pr: u64,
    author: &str,
    body: &str,
    in_reply_to: Option<u64>,
    path: &str,
    line: u64,
) -> Value {
    let mut c = example("pulls__get-review-comment.200.default.json");
    c["id"] = id.into();
    c["node_id"] = format!("PRRC_{id}").into();
    c["body"] = body.into();
    c["user"] = user_json(author);
    c["path"] = path.into();
    c["line"] = line.into();
    c["original_line"] = line.into();
    c["start_line"] = Value::Null;
    c["side"] = "RIGHT".into();
    c["created_at"] = now().into();
    c["updated_at"] = now().into();
    c["html_url"] = format!("https://github.com/{repo}/pull/{pr}#discussion_r{id}").into();
    c["pull_request_url"] = format!("https://api.github.com/repos/{repo}/pulls/{pr}").into();
    match in_reply_to {
        Some(parent) => c["in_reply_to_id"] = parent.into(),
        None => {
            if let Some(map) = c.as_object_mut() {
                map.remove("in_reply_to_id");
            }
        }
    }
    c
}

fn issue_comment_json(id: u64, repo: &str, number: u64, author: &str, body: &str) -> Value {
    let mut c = example("issues__get-comment.200.default.json");
    c["id"] = id.into();
    c["body"] = body.into();
    c["user"] = user_json(author);
    c["created_at"] = now().into();
    c["updated_at"] = now().into();
    c["html_url"] = format!("https://github.com/{repo}/pull/{number}#issuecomment-{id}").into();
    c["issue_url"] = format!("https://api.github.com/repos/{repo}/issues/{number}").into();
    c
}

type Shared = axum::extract::State<Arc<Mutex<State>>>;

/// Like GitHub, every answer says how many requests are left in the hour's window
/// (5 000 for an installation), counting down with each request; it never reaches 0 on its
/// own (that means "rate limited"), and an injected answer that sets it keeps its value.
async fn rate_limit_header(
    axum::extract::State(state): Shared,
    mut response: Response,
) -> Response {
    if !response.headers().contains_key("x-ratelimit-remaining") {
        let used = state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .requests
            .len();
        let remaining = 5000usize.saturating_sub(used).max(1);
        response
            .headers_mut()
            .insert("x-ratelimit-remaining", http::HeaderValue::from(remaining));
    }
    response
}

async fn handle(
    axum::extract::State(state): Shared,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    if let Some(refused) = refuse_credential(&state, &method, &headers) {
        return refused;
    }
    let query = uri.query().unwrap_or("").to_string();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (latency, fault, injected, wire) = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.requests.push(Recorded {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            body: body.clone(),
            authorization: headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        });
        let wire = s.take_tripwire(method.as_str(), &path);
        let fault = s.take_fault(method.as_str(), &path);
        let injected = match fault {
            Some(_) => None,
            None => s.take_injected(method.as_str(), &path),
        };
        (s.latency, fault, injected, wire)
    };
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(wire) = wire
        .as_ref()
        .filter(|w| w.point() == HoldPoint::BeforeApplying)
        && !wire.hold().await
    {
        return status(502).into_response();
    }
    let injected = match fault {
        Some(FaultAction::Respond {
            status,
            body,
            headers,
        }) => Some(Injected {
            method: "",
            path_contains: String::new(),
            status,
            body,
            headers,
            times: 0,
        }),
        Some(FaultAction::Slow(delay)) => {
            let response = respond(&state, method.as_str(), &path, &query, body);
            tokio::time::sleep(delay).await;
            return response;
        }
        None => injected,
    };
    if let Some(failure) = injected {
        let mut response = (status(failure.status), axum::Json(failure.body)).into_response();
        for (name, value) in failure.headers {
            if let Ok(value) = value.parse() {
                response.headers_mut().insert(name, value);
            }
        }
        return response;
    }
    let response = respond(&state, method.as_str(), &path, &query, body);
    if let Some(wire) = wire.filter(|w| w.point() == HoldPoint::AfterApplying) {
        // Applied either way: abandoning only means nobody reads this answer.
        wire.hold().await;
    }
    response
}

/// GitHub's answers to a person's token it does not know (401), or that lacks the
/// permission for a write (403). Only when a personal token was arranged.
fn refuse_credential(
    state: &Mutex<State>,
    method: &Method,
    headers: &HeaderMap,
) -> Option<Response> {
    let s = state.lock().unwrap_or_else(|e| e.into_inner());
    let known = s.personal_token.as_deref()?;
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("token "))
        })
        .unwrap_or("");
    let app_credential = bearer.starts_with("ghs_fake") || bearer.matches('.').count() == 2;
    if bearer == known {
        if s.personal_read_only && method != Method::GET {
            return Some(
                (
                    StatusCode::FORBIDDEN,
                    axum::Json(
                        json!({ "message": "Resource not accessible by personal access token" }),
                    ),
                )
                    .into_response(),
            );
        }
        return None;
    }
    if app_credential {
        return None;
    }
    Some(
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({ "message": "Bad credentials", "documentation_url": "https://docs.github.com/rest" })),
        )
            .into_response(),
    )
}

/// Act on a request and answer it.
fn respond(state: &Mutex<State>, method: &str, path: &str, query: &str, body: Value) -> Response {
    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
    let mut response = route(&mut s, method, path, query, body);
    // Pagination links name this server, as GitHub's name GitHub: a client that checks
    // the link's origin against its configured API URL must accept them.
    if !s.base_url.is_empty()
        && let Some(link) = response.headers().get("link").and_then(|v| v.to_str().ok())
        && let Ok(value) = link.replace("http://fake", &s.base_url).parse()
    {
        response.headers_mut().insert("link", value);
    }
    response
}

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn ok(value: Value) -> Response {
    (StatusCode::OK, axum::Json(value)).into_response()
}

fn created(value: Value) -> Response {
    (StatusCode::CREATED, axum::Json(value)).into_response()
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(
            json!({ "message": "Not Found", "documentation_url": "https://docs.github.com/rest" }),
        ),
    )
        .into_response()
}

fn unprocessable(message: &str) -> Response {
    (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(json!({ "message": "Validation Failed", "errors": [ { "message": message, "code": "custom" } ] }))).into_response()
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// Serve one page of `items` with GitHub's `Link` header.
fn paginated(path: &str, query: &str, items: Vec<Value>) -> Response {
    let per_page: usize = query_param(query, "per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page: usize = query_param(query, "page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let start = (page - 1) * per_page;
    let slice: Vec<Value> = items.iter().skip(start).take(per_page).cloned().collect();
    let mut response = ok(Value::Array(slice));
    if start + per_page < items.len() {
        // Other parameters (`since`) carry over to the next page, as on GitHub.
        let kept: String = query
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("page=") && !kv.starts_with("per_page="))
            .map(|kv| format!("&{kv}"))
            .collect();
        let link = format!(
            "<http://fake{path}?per_page={per_page}&page={}{kept}>; rel=\"next\"",
            page + 1
        );
        if let Ok(value) = link.parse() {
            response.headers_mut().insert("link", value);
        }
    }
    response
}

fn route(s: &mut State, method: &str, path: &str, query: &str, body: Value) -> Response {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        ("GET", ["app"]) => {
            let mut app = example("apps__get-authenticated.200.default.json");
            app["slug"] = s.app_slug.clone().into();
            app["name"] = s.app_slug.clone().into();
            ok(app)
        }
        ("POST", ["app", "installations", _, "access_tokens"]) => {
            let mut token = example("apps__create-installation-access-token.201.default.json");
            let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
            token["expires_at"] = expires
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default()
                .into();
            token["token"] = format!("ghs_fake{}", s.next_id()).into();
            created(token)
        }
        ("POST", ["graphql"]) => graphql(s, body),
        ("GET", ["orgs", org, "memberships", user]) => {
            if s.members_hidden.iter().any(|o| o == org) {
                return (
                    StatusCode::FORBIDDEN,
                    axum::Json(json!({
                        "message": "Resource not accessible by integration",
                        "documentation_url": "https://docs.github.com/rest/orgs/members#get-organization-membership-for-a-user",
                        "status": "403"
                    })),
                )
                    .into_response();
            }
            match s.org_roles.get(&(org.to_string(), user.to_string())) {
                // The documented shape of an active membership, the fields Parley reads
                // and a few around them.
                Some(role) => ok(json!({
                    "url": format!("https://api.github.com/orgs/{org}/memberships/{user}"),
                    "state": "active",
                    "role": role,
                    "organization_url": format!("https://api.github.com/orgs/{org}"),
                    "organization": { "login": org },
                    "user": { "login": user, "type": "User" }
                })),
                None => not_found(),
            }
        }
        ("GET", ["repos", owner, name, rest @ ..]) => {
            get_repo(s, &format!("{owner}/{name}"), rest, path, query)
        }
        (m, ["repos", owner, name, rest @ ..]) => {
            write_repo(s, m, &format!("{owner}/{name}"), rest, body)
        }
        _ => not_found(),
    }
}

fn get_repo(s: &mut State, repo: &str, rest: &[&str], path: &str, query: &str) -> Response {
    match rest {
        // Installed wherever a PR was arranged.
        ["installation"] if s.pulls.keys().any(|(r, _)| r == repo) => ok(
            json!({ "id": 1, "account": { "login": repo.split('/').next().unwrap_or_default() } }),
        ),
        ["commits", sha, "check-runs"] => {
            let name = query_param(query, "check_name").map(|n| {
                n.replace("%20", " ")
                    .replace('+', " ")
                    .replace("%28", "(")
                    .replace("%29", ")")
            });
            let mut runs: Vec<Value> = s
                .check_runs
                .iter()
                .filter(|(r, c)| {
                    r == repo
                        && c["head_sha"] == *sha
                        && name.as_deref().is_none_or(|n| c["name"] == n)
                })
                .map(|(_, c)| c.clone())
                .collect();
            runs.reverse();
            ok(json!({ "total_count": runs.len(), "check_runs": runs }))
        }
        ["pulls", "comments", id, "reactions"] => {
            let id: u64 = id.parse().unwrap_or(0);
            let template = example("reactions__create-for-issue-comment.201.default.json");
            let items = s
                .people_reactions
                .iter()
                .filter(|(comment, _, _)| *comment == id)
                .enumerate()
                .map(|(n, (_, content, login))| {
                    let mut reaction = template.clone();
                    reaction["id"] = (n as u64 + 1).into();
                    reaction["content"] = content.clone().into();
                    reaction["user"] = user_json(login);
                    reaction
                })
                .collect();
            paginated(path, query, items)
        }
        ["pulls", n] => match n
            .parse::<u64>()
            .ok()
            .and_then(|n| s.pulls.get(&(repo.to_string(), n)))
        {
            Some(pr) => ok(pr.clone()),
            None => not_found(),
        },
        ["pulls", n, "files"] => {
            let files = n
                .parse::<u64>()
                .ok()
                .and_then(|n| s.files.get(&(repo.to_string(), n)).cloned())
                .unwrap_or_default();
            paginated(path, query, files)
        }
        ["pulls", n, "comments"] => {
            let since = query_param(query, "since");
            let items = on(&s.review_comments, repo, n, |c| {
                updated_since(c, since.as_deref())
            });
            paginated(path, query, items)
        }
        ["pulls", "comments", id] => by_id(&s.review_comments, repo, id),
        ["pulls", n, "reviews"] => paginated(path, query, on(&s.reviews, repo, n, |_| true)),
        ["pulls", n, "reviews", review, "comments"] => {
            let review: u64 = review.parse().unwrap_or(0);
            let items = on(&s.review_comments, repo, n, |c| {
                c["pull_request_review_id"] == review
            });
            paginated(path, query, items)
        }
        ["compare", basehead] => match s.compares.get(&(repo.to_string(), basehead.to_string())) {
            Some(body) => ok(body.clone()),
            None => not_found(),
        },
        ["issues", n, "comments"] => {
            let since = query_param(query, "since");
            let items = on(&s.issue_comments, repo, n, |c| {
                updated_since(c, since.as_deref())
            });
            paginated(path, query, items)
        }
        ["issues", "comments", id] => by_id(&s.issue_comments, repo, id),
        ["tarball", sha] => match s.tarballs.get(&(repo.to_string(), sha.to_string())) {
            Some(bytes) => (
                StatusCode::OK,
                [("content-type", "application/x-gzip")],
                bytes.clone(),
            )
                .into_response(),
            None => not_found(),
        },
        ["contents", file @ ..] => {
            let file = file.join("/");
            let git_ref = query_param(query, "ref").unwrap_or_else(|| "main".to_string());
            match s.contents.get(&(repo.to_string(), git_ref, file.clone())) {
                Some(content) => {
                    use base64::Engine as _;
                    let mut body =
                        example("repos__get-content.200.response-if-content-is-a-file.json");
                    body["path"] = file.clone().into();
                    body["name"] = file.rsplit('/').next().unwrap_or("").into();
                    body["encoding"] = "base64".into();
                    body["size"] = content.len().into();
                    body["content"] = base64::engine::general_purpose::STANDARD
                        .encode(content)
                        .into();
                    ok(body)
                }
                None => not_found(),
            }
        }
        ["collaborators", user, "permission"] => {
            let permission = s
                .permissions
                .get(&(repo.to_string(), user.to_string()))
                .cloned()
                .unwrap_or_else(|| "read".to_string());
            let mut body = example(
                "repos__get-collaborator-permission-level.200.response-if-user-has-admin-permissions.json",
            );
            body["permission"] = permission.clone().into();
            body["role_name"] = permission.into();
            body["user"]["login"] = (*user).into();
            ok(body)
        }
        _ => not_found(),
    }
}

fn write_repo(s: &mut State, method: &str, repo: &str, rest: &[&str], body: Value) -> Response {
    match (method, rest) {
        ("POST", ["pulls", n, "comments", parent, "replies"]) => {
            let n: u64 = n.parse().unwrap_or(0);
            let parent: u64 = parent.parse().unwrap_or(0);
            let Some(root) = s
                .review_comments
                .iter()
                .find(|(r, _, c)| r == repo && c["id"] == parent)
                .map(|(_, _, c)| c.clone())
            else {
                return not_found();
            };
            let id = s.next_id();
            let line = root["line"].as_u64().unwrap_or(1);
            let mut c = review_comment_json(
                id,
                repo,
                n,
                &format!("{}[bot]", s.app_slug),
                body["body"].as_str().unwrap_or(""),
                Some(parent),
                root["path"].as_str().unwrap_or(""),
                line,
            );
            c["pull_request_review_id"] = root["pull_request_review_id"].clone();
            s.review_comments.push((repo.to_string(), n, c.clone()));
            created(c)
        }
        ("POST", ["pulls", n, "comments"]) => {
            let n: u64 = n.parse().unwrap_or(0);
            let id = s.next_id();
            let c = review_comment_json(
                id,
                repo,
                n,
                &format!("{}[bot]", s.app_slug),
                body["body"].as_str().unwrap_or(""),
                body["in_reply_to"].as_u64(),
                body["path"].as_str().unwrap_or(""),
                body["line"].as_u64().unwrap_or(1),
            );
            s.review_comments.push((repo.to_string(), n, c.clone()));
            created(c)
        }
        ("POST", ["pulls", n, "reviews"]) => create_review(s, repo, n.parse().unwrap_or(0), body),
        ("POST", ["pulls", n, "requested_reviewers"]) => {
            let n: u64 = n.parse().unwrap_or(0);
            let reviewers: Vec<String> = body["reviewers"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            s.requested_reviewers.push((repo.to_string(), n, reviewers));
            let mut pr = s
                .pulls
                .get(&(repo.to_string(), n))
                .cloned()
                .unwrap_or_else(|| example("pulls__get.200.default.json"));
            pr["number"] = n.into();
            created(pr)
        }
        ("PATCH", ["pulls", "comments", id]) => edit_body(&mut s.review_comments, repo, id, &body),
        ("POST", ["issues", n, "comments"]) => {
            let n: u64 = n.parse().unwrap_or(0);
            let id = s.next_id();
            let c = issue_comment_json(
                id,
                repo,
                n,
                &format!("{}[bot]", s.app_slug),
                body["body"].as_str().unwrap_or(""),
            );
            s.issue_comments.push((repo.to_string(), n, c.clone()));
            created(c)
        }
        ("PATCH", ["issues", "comments", id]) => edit_body(&mut s.issue_comments, repo, id, &body),
        ("POST", ["issues", "comments", id, "reactions"]) => reaction(s, "issue", id, body),
        ("POST", ["pulls", "comments", id, "reactions"]) => reaction(s, "review", id, body),
        ("POST", ["check-runs"]) => {
            let id = s.next_id();
            let mut run = example("checks__create.201.example-of-in-progress-conclusion.json");
            merge(&mut run, &body);
            run["id"] = id.into();
            run["html_url"] = format!("https://github.com/{repo}/runs/{id}").into();
            s.check_runs.push((repo.to_string(), run.clone()));
            created(run)
        }
        ("PATCH", ["check-runs", id]) => {
            let id: u64 = id.parse().unwrap_or(0);
            match s
                .check_runs
                .iter_mut()
                .find(|(r, c)| r == repo && c["id"] == id)
            {
                Some((_, run)) => {
                    merge(run, &body);
                    ok(run.clone())
                }
                None => not_found(),
            }
        }
        _ => not_found(),
    }
}

fn create_review(s: &mut State, repo: &str, n: u64, body: Value) -> Response {
    let review_id = s.next_id();
    let head = s
        .pulls
        .get(&(repo.to_string(), n))
        .map(|pr| pr["head"]["sha"].clone())
        .unwrap_or(Value::Null);
    // Like GitHub, reject the whole review when one inline comment is not on the diff.
    let files = s
        .files
        .get(&(repo.to_string(), n))
        .cloned()
        .unwrap_or_default();
    let comments = body["comments"].as_array().cloned().unwrap_or_default();
    for comment in &comments {
        let path = comment["path"].as_str().unwrap_or("");
        let line = comment["line"].as_u64().unwrap_or(0);
        let on_diff = files.iter().any(|f| {
            f["filename"] == path
                && crate::fake_github::right_side_lines(f["patch"].as_str().unwrap_or(""))
                    .contains(&line)
        });
        if !on_diff {
            return unprocessable("Line could not be resolved");
        }
    }
    let author = format!("{}[bot]", s.app_slug);
    for comment in &comments {
        let id = s.next_id();
        let mut c = review_comment_json(
            id,
            repo,
            n,
            &author,
            comment["body"].as_str().unwrap_or(""),
            None,
            comment["path"].as_str().unwrap_or(""),
            comment["line"].as_u64().unwrap_or(1),
        );
        c["pull_request_review_id"] = review_id.into();
        c["start_line"] = comment["start_line"].clone();
        c["commit_id"] = head.clone();
        s.review_comments.push((repo.to_string(), n, c));
    }
    let mut review = example("pulls__create-review.200.default.json");
    review["id"] = review_id.into();
    review["body"] = body["body"].clone();
    review["user"] = user_json(&author);
    review["state"] = match body["event"].as_str() {
        Some("APPROVE") => "APPROVED",
        Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
        _ => "COMMENTED",
    }
    .into();
    review["commit_id"] = body.get("commit_id").cloned().unwrap_or(head);
    review["html_url"] =
        format!("https://github.com/{repo}/pull/{n}#pullrequestreview-{review_id}").into();
    s.reviews.push((repo.to_string(), n, review.clone()));
    ok(review)
}

fn reaction(s: &mut State, kind: &str, id: &str, body: Value) -> Response {
    let id: u64 = id.parse().unwrap_or(0);
    let exists = match kind {
        "issue" => s.issue_comments.iter().any(|(_, _, c)| c["id"] == id),
        _ => s.review_comments.iter().any(|(_, _, c)| c["id"] == id),
    };
    if !exists {
        return not_found();
    }
    let content = body["content"].as_str().unwrap_or("").to_string();
    s.reactions.push((kind.to_string(), id, content.clone()));
    let mut reaction = example("reactions__create-for-issue-comment.201.default.json");
    reaction["content"] = content.into();
    created(reaction)
}

fn graphql(s: &mut State, body: Value) -> Response {
    let query = body["query"].as_str().unwrap_or("");
    if query.contains("resolveReviewThread") {
        let id = body["variables"]["threadId"]
            .as_str()
            .unwrap_or("")
            .to_string();
        s.resolved_threads.push(id.clone());
        return ok(
            json!({ "data": { "resolveReviewThread": { "thread": { "id": id, "isResolved": true } } } }),
        );
    }
    if query.contains("reviewThreads") {
        let number = body["variables"]["number"].as_u64().unwrap_or(0);
        let owner = body["variables"]["owner"].as_str().unwrap_or("");
        let name = body["variables"]["name"].as_str().unwrap_or("");
        let repo = format!("{owner}/{name}");
        let nodes: Vec<Value> = s
            .review_comments
            .iter()
            .filter(|(r, n, c)| *r == repo && *n == number && c.get("in_reply_to_id").is_none_or(Value::is_null))
            .map(|(_, _, c)| {
                let id = c["id"].as_u64().unwrap_or(0);
                let thread = format!("PRRT_{id}");
                json!({ "id": thread, "isResolved": s.resolved_threads.contains(&thread), "comments": { "nodes": [ { "fullDatabaseId": id.to_string() } ] } })
            })
            .collect();
        return ok(
            json!({ "data": { "repository": { "pullRequest": { "reviewThreads": { "pageInfo": { "hasNextPage": false, "endCursor": null }, "nodes": nodes } } } } }),
        );
    }
    ok(json!({ "errors": [ { "message": "unsupported query in fake", "type": "INTERNAL" } ] }))
}

fn merge(target: &mut Value, patch: &Value) {
    if let (Some(target), Some(patch)) = (target.as_object_mut(), patch.as_object()) {
        for (k, v) in patch {
            target.insert(k.clone(), v.clone());
        }
    }
}

/// Line numbers on the right side of a unified-diff patch (added and context lines): the
/// lines GitHub accepts inline comments on.
pub fn right_side_lines(patch: &str) -> Vec<u64> {
    let mut lines = Vec::new();
    let mut current = 0u64;
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("@@") {
            // @@ -a,b +c,d @@
            current = header
                .split_whitespace()
                .find_map(|part| part.strip_prefix('+'))
                .and_then(|spec| spec.split(',').next())
                .and_then(|start| start.parse().ok())
                .unwrap_or(0);
            continue;
        }
        if line.starts_with('-') {
            continue;
        }
        if line.starts_with('+') || line.starts_with(' ') || line.is_empty() {
            lines.push(current);
            current += 1;
        }
    }
    lines
}

/// A gzipped tarball as GitHub builds one: `files` under `octo-repo-<sha>/`.
pub fn tarball(files: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        // The name written raw: the builder's own checks would refuse a hostile one
        // (`..`), which is what some tests serve.
        let name = format!("octo-repo-abc/{path}");
        header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_cksum();
        builder.append(&header, text.as_bytes()).expect("append");
    }
    builder
        .into_inner()
        .and_then(|gz| gz.finish())
        .expect("tarball")
}
