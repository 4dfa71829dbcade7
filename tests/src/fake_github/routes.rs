//! How the fake answers: a request meets the scripted failures and tripwires first, then
//! the handler of its REST path or GraphQL query, which reads and changes the [`State`].

use super::shapes::{example, issue_comment_json, merge, review_comment_json, user_json};
use super::state::{FaultAction, Injected, Recorded, State};
use super::{deliveries, protection};
use crate::tripwire::HoldPoint;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

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

/// GitHub's `since` filter on comment listings: updated at or after the given time.
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

type Shared = axum::extract::State<Arc<Mutex<State>>>;

/// Like GitHub, every answer says how many requests are left in the hour's window
/// (5 000 for an installation), counting down with each request; it never reaches 0 on its
/// own (that means "rate limited"), and an injected answer that sets it keeps its value.
pub(super) async fn rate_limit_header(
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

pub(super) async fn handle(
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

/// The most characters GitHub takes in a comment's or review's body.
pub const MAX_BODY_CHARS: usize = 65_536;

/// GitHub's 422 for a body (or a review's inline comment's) over [`MAX_BODY_CHARS`],
/// counted as GitHub does, in characters; `None` when every body fits.
fn body_too_long(body: &Value) -> Option<Response> {
    let comments = body["comments"].as_array().into_iter().flatten();
    let bodies = std::iter::once(&body["body"]).chain(comments.map(|c| &c["body"]));
    bodies
        .filter_map(Value::as_str)
        .any(|text| text.chars().count() > MAX_BODY_CHARS)
        .then(|| unprocessable("body is too long (maximum is 65536 characters)"))
}

/// The most bytes GitHub takes in a check run's summary and in its text (its message
/// says bytes; its documentation, characters).
pub const MAX_CHECK_BYTES: usize = 65_535;

/// GitHub's 422 for a check run's summary or text over [`MAX_CHECK_BYTES`].
fn check_output_too_long(body: &Value) -> Option<Response> {
    ["summary", "text"].into_iter().find_map(|field| {
        let text = body["output"][field].as_str()?;
        (text.len() > MAX_CHECK_BYTES).then(|| {
            unprocessable(&format!(
                "{field} exceeds a maximum bytesize of {MAX_CHECK_BYTES}"
            ))
        })
    })
}

fn route(s: &mut State, method: &str, path: &str, query: &str, body: Value) -> Response {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if matches!(method, "POST" | "PATCH")
        && let Some(refused) = body_too_long(&body).or_else(|| check_output_too_long(&body))
    {
        return refused;
    }
    match (method, parts.as_slice()) {
        ("GET", ["app"]) => {
            let mut app = example("apps__get-authenticated.200.default.json");
            app["slug"] = s.app_slug.clone().into();
            app["name"] = s.app_slug.clone().into();
            let (permissions, events) = s.app_setup.clone().unwrap_or_else(manifest_setup);
            app["permissions"] = permissions;
            app["events"] = events.into();
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
        ("GET", ["app", "hook", "deliveries"]) => {
            let per_page = query_param(query, "per_page")
                .and_then(|v| v.parse().ok())
                .unwrap_or(30)
                .clamp(1, 100);
            deliveries::list(s, per_page, query_param(query, "cursor").as_deref())
        }
        ("POST", ["app", "hook", "deliveries", id, "attempts"]) => deliveries::redeliver(s, id),
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

/// The permissions and events Parley's manifest asks for: by default, the App asks for
/// them all and each installation has accepted them.
fn manifest_setup() -> (Value, Vec<String>) {
    use parley_cli::manifest::{EVENTS, PERMISSIONS};
    let permissions = PERMISSIONS
        .iter()
        .map(|(name, access, _)| (name.to_string(), Value::from(*access)))
        .collect::<serde_json::Map<_, _>>();
    (
        Value::Object(permissions),
        EVENTS.map(String::from).to_vec(),
    )
}

fn get_repo(s: &mut State, repo: &str, rest: &[&str], path: &str, query: &str) -> Response {
    match rest {
        // Installed wherever a PR was arranged.
        ["installation"] if s.pulls.keys().any(|(r, _)| r == repo) => {
            let (permissions, events) =
                (s.installation_setup.clone()).unwrap_or_else(manifest_setup);
            let login = repo.split('/').next().unwrap_or_default();
            ok(json!({
                "id": 1, "account": { "login": login },
                "permissions": permissions, "events": events,
            }))
        }
        [] => {
            // The documented full repository, as a PR's `base.repo` carries it.
            let mut found = example("pulls__get.200.default.json")["base"]["repo"].clone();
            found["full_name"] = repo.into();
            found["default_branch"] = "main".into();
            ok(found)
        }
        ["branches"] => ok(protection::listing(s, repo)),
        ["branches", branch @ ..] => ok(protection::branch(s, repo, &branch.join("/"))),
        ["rules", "branches", branch @ ..] => ok(protection::rules(s, repo, &branch.join("/"))),
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
        ["git", "matching-refs", prefix @ ..] => {
            // GitHub's documented `git-ref` shape; an unmatched prefix is an empty list.
            let prefix = format!("refs/{}", prefix.join("/"));
            let refs: Vec<Value> = s
                .refs
                .iter()
                .filter(|(on, name, _)| on == repo && name.starts_with(&prefix))
                .map(|(_, name, sha)| {
                    json!({
                        "ref": name,
                        "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
                        "url": format!("https://api.github.com/repos/{repo}/git/{name}"),
                        "object": { "type": "commit", "sha": sha, "url": format!("https://api.github.com/repos/{repo}/git/commits/{sha}") },
                    })
                })
                .collect();
            ok(Value::Array(refs))
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
        ["issues", n] => {
            let number = n.parse::<u64>().unwrap_or(0);
            let key = (repo.to_string(), number);
            match (s.issues.get(&key), s.pulls.get(&key)) {
                (Some(issue), _) => ok(issue.clone()),
                // GitHub answers a PR's number with the PR as an issue.
                (None, Some(pr)) => {
                    let mut issue = example("issues__get.200.default.json");
                    issue["number"] = number.into();
                    issue["title"] = pr["title"].clone();
                    ok(issue)
                }
                (None, None) => not_found(),
            }
        }
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
            // Teams by slug, recorded as `owner/slug`, after the people.
            let owner = repo.split('/').next().unwrap_or_default();
            let named = |key: &str| -> Vec<String> {
                body[key]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut reviewers = named("reviewers");
            // A login has neither (a team named as a person is not a collaborator).
            if reviewers.iter().any(|r| r.contains(['/', '@'])) {
                return unprocessable(&format!(
                    "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the {repo} repository."
                ));
            }
            reviewers.extend(
                named("team_reviewers")
                    .into_iter()
                    .map(|slug| format!("{owner}/{slug}")),
            );
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
            // Made with Parley's installation token: the App is Parley.
            run["app"]["slug"] = s.app_slug.clone().into();
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
    let number = body["variables"]["number"].as_u64().unwrap_or(0);
    let owner = body["variables"]["owner"].as_str().unwrap_or("");
    let name = body["variables"]["name"].as_str().unwrap_or("");
    let repo = format!("{owner}/{name}");
    // Only links made by hand are kept, so only a query for those may read them.
    if query.contains("closingIssuesReferences") && query.contains("userLinkedOnly: true") {
        let nodes: Vec<Value> = s
            .linked_by_hand
            .iter()
            .filter(|(r, n, _, _)| *r == repo && *n == number)
            .map(|(_, _, issue_repo, issue)| {
                json!({ "number": issue, "repository": { "nameWithOwner": issue_repo } })
            })
            .collect();
        return ok(
            json!({ "data": { "repository": { "pullRequest": { "closingIssuesReferences": { "nodes": nodes } } } } }),
        );
    }
    if query.contains("reviewThreads") {
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
