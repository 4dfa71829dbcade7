//! A stateful fake GitHub on 127.0.0.1, speaking GitHub's REST and GraphQL shapes.
//!
//! Responses are built from GitHub's documented examples in `../shared/corpora/github-rest`
//! with the fields a test cares about overwritten, so a client that parses the fake parses
//! GitHub. State lives in memory: comments created through the API show up in later
//! listings, which is what conversation and review tests need to observe. Every request is
//! recorded; failures and latency can be injected.
//!
//! [`FakeGitHub`] here is what a test holds: it arranges the repository and reads back
//! what Parley did. `state` is what the fake knows, `routes` how it answers a request,
//! `shapes` the JSON it serves.

mod deliveries;
mod protection;
mod routes;
mod shapes;
mod state;

use axum::Router;
use routes::{handle, rate_limit_header};
use serde_json::{Value, json};
use shapes::{backdate, issue_comment_json, now, review_comment_json, user_json};
use state::State;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use crate::tripwire::{HoldPoint, Tripwire};
pub use shapes::{example, right_side_lines, tarball};
pub use state::{Fault, FaultAction, Injected, Recorded};

/// A listing of changed files the fake serves: a PR's ([`FakeGitHub::set_files`]) or a
/// compare's of `base...head` ([`FakeGitHub::set_compare`]).
#[derive(Debug, Clone, Copy)]
pub enum Listed<'a> {
    Pull(u64),
    Compare(&'a str, &'a str),
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
            redelivery_status: 202,
            ..State::default()
        }));
        let (listener, url) = crate::local_server::listen("the fake GitHub").await;
        state.lock().unwrap_or_else(|e| e.into_inner()).base_url = url.clone();
        let app = Router::new()
            .fallback(handle)
            .layer(axum::middleware::map_response_with_state(
                state.clone(),
                rate_limit_header,
            ))
            .with_state(state.clone());
        crate::local_server::serve(listener, app);
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

    /// What `GET /app` says the App asks for (by default, all Parley's manifest does).
    pub fn set_app_setup(&self, permissions: Value, events: &[&str]) {
        let events = events.iter().map(|e| e.to_string()).collect();
        self.state().app_setup = Some((permissions, events));
    }

    /// `GET /app` says the App asks for all Parley's manifest does again.
    pub fn reset_app_setup(&self) {
        self.state().app_setup = None;
    }

    /// What `GET /repos/{o}/{r}/installation` says the installation has accepted.
    pub fn set_installation_setup(&self, permissions: Value, events: &[&str]) {
        let events = events.iter().map(|e| e.to_string()).collect();
        self.state().installation_setup = Some((permissions, events));
    }

    pub fn set_app_slug(&self, slug: &str) {
        self.state().app_slug = slug.to_string();
    }

    pub fn app_slug(&self) -> String {
        self.state().app_slug.clone()
    }

    /// The login the App's comments carry: `<slug>[bot]`.
    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.app_slug())
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

    /// Mark changed file `name` of `listed` as moved from `previous`, as GitHub lists a
    /// rename.
    pub fn renamed_from(&self, repo: &str, listed: Listed<'_>, name: &str, previous: &str) {
        self.edit_listed(repo, listed, name, |file| {
            file["status"] = "renamed".into();
            file["previous_filename"] = previous.into();
        });
    }

    /// Mark changed file `name` of `listed` as moved from `previous` and changed in no
    /// line, as GitHub lists such a rename: no patch, no line counted.
    pub fn renamed_unchanged(&self, repo: &str, listed: Listed<'_>, name: &str, previous: &str) {
        self.renamed_from(repo, listed, name, previous);
        self.edit_listed(repo, listed, name, |file| {
            if let Some(fields) = file.as_object_mut() {
                fields.remove("patch");
            }
            for count in ["additions", "deletions", "changes"] {
                file[count] = 0.into();
            }
        });
    }

    /// Give changed file `name` of `listed` the blob `sha` (its content where the listing
    /// ends): files with the same blob have the same content.
    pub fn blob(&self, repo: &str, listed: Listed<'_>, name: &str, sha: &str) {
        self.edit_listed(repo, listed, name, |file| file["sha"] = sha.into());
    }

    fn edit_listed(&self, repo: &str, listed: Listed<'_>, name: &str, edit: impl Fn(&mut Value)) {
        let mut state = self.state();
        let files = match listed {
            Listed::Pull(number) => state.files.get_mut(&(repo.to_string(), number)),
            Listed::Compare(base, head) => state
                .compares
                .get_mut(&(repo.to_string(), format!("{base}...{head}")))
                .and_then(|body| body["files"].as_array_mut()),
        };
        for file in files.into_iter().flatten() {
            if file["filename"] == name {
                edit(file);
            }
        }
    }

    /// Branch `name` (under `refs/heads/`) at `sha`, as `git/matching-refs` lists it.
    pub fn set_branch(&self, repo: &str, name: &str, sha: &str) {
        let name = format!("refs/heads/{name}");
        let mut state = self.state();
        state
            .refs
            .retain(|(on, held, _)| !(on == repo && *held == name));
        state.refs.push((repo.to_string(), name, sha.to_string()));
    }

    /// Branch `name` deleted (the merge queue takes its branch away when it is done).
    pub fn delete_branch(&self, repo: &str, name: &str) {
        let name = format!("refs/heads/{name}");
        self.state()
            .refs
            .retain(|(on, held, _)| !(on == repo && *held == name));
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

    /// An issue of `repo`, from GitHub's documented example (a plain issue: no
    /// `pull_request`). A PR's number is answered as the PR's issue without this.
    pub fn set_issue(&self, repo: &str, number: u64, title: &str, body: &str) {
        let mut issue = shapes::example("issues__get.200.default.json");
        if let Some(fields) = issue.as_object_mut() {
            fields.remove("pull_request");
        }
        issue["number"] = number.into();
        issue["title"] = title.into();
        issue["body"] = body.into();
        issue["html_url"] = format!("https://github.com/{repo}/issues/{number}").into();
        self.state()
            .issues
            .insert((repo.to_string(), number), issue);
    }

    /// Link issue `issue_repo#number` to PR `pr` in its sidebar ("Development"), as
    /// GraphQL's `closingIssuesReferences(userLinkedOnly: true)` then lists it.
    pub fn link_issue_by_hand(&self, repo: &str, pr: u64, issue_repo: &str, number: u64) {
        self.state()
            .linked_by_hand
            .push((repo.to_string(), pr, issue_repo.to_string(), number));
    }

    /// Say of the compare set by [`FakeGitHub::set_compare`] that `head` does not descend
    /// from `base` (a force-push), as GitHub says it: `status: "diverged"`.
    pub fn diverged(&self, repo: &str, base: &str, head: &str) {
        if let Some(body) = self
            .state()
            .compares
            .get_mut(&(repo.to_string(), format!("{base}...{head}")))
        {
            body["status"] = "diverged".into();
            body["behind_by"] = 2.into();
        }
    }

    /// Make the one commit of the compare set by [`FakeGitHub::set_compare`] a merge of
    /// `other` into `base`: two parents, as GitHub lists them.
    pub fn merge_commit(&self, repo: &str, base: &str, head: &str, other: &str) {
        if let Some(body) = self
            .state()
            .compares
            .get_mut(&(repo.to_string(), format!("{base}...{head}")))
        {
            body["commits"][0]["parents"] = json!([{ "sha": base }, { "sha": other }]);
            body["commits"][0]["commit"]["message"] = "Merge branch 'main' into feature".into();
        }
    }

    /// Say of the compare set by [`FakeGitHub::set_compare`] that it holds `total`
    /// commits, more than it lists (GitHub lists 250 at most).
    pub fn more_commits_than_listed(&self, repo: &str, base: &str, head: &str, total: u64) {
        if let Some(body) = self
            .state()
            .compares
            .get_mut(&(repo.to_string(), format!("{base}...{head}")))
        {
            body["total_commits"] = total.into();
        }
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

    /// `branch` of `repo` requires the status check `context`, from the App `app_id` (`None`:
    /// any source), by its branch protection (`ruleset: None`) or by ruleset `ruleset`.
    pub fn require_check(
        &self,
        (repo, branch): (&str, &str),
        ruleset: Option<u64>,
        context: &str,
        app_id: Option<u64>,
    ) {
        self.state().required_checks.push(protection::Required {
            repo: repo.to_string(),
            branch: branch.to_string(),
            ruleset,
            context: context.to_string(),
            app_id,
        });
    }

    /// Answer 403 for `org`'s memberships, as GitHub does when the App was not granted
    /// the organisation permission "Members: read".
    pub fn hide_members(&self, org: &str) {
        self.state().members_hidden.push(org.to_string());
    }

    /// An attempt to deliver event `guid` to Parley `minutes_ago`, answered `status_code`
    /// (0: no answer at all), as `GET /app/hook/deliveries` will list it. Returns its id.
    pub fn add_webhook_delivery(
        &self,
        guid: &str,
        event: &str,
        status_code: u32,
        minutes_ago: i64,
    ) -> u64 {
        let mut state = self.state();
        let id = state.next_id();
        let attempt = deliveries::attempt(id, guid, event, status_code, minutes_ago);
        state.deliveries.push(attempt);
        id
    }

    /// The delivery ids Parley asked GitHub to send again, in order.
    pub fn redelivery_requests(&self) -> Vec<u64> {
        self.state().redelivery_requests.clone()
    }

    /// Answer every redelivery from now on with `status_code` (202 until then).
    pub fn answer_redeliveries_with(&self, status_code: u32) {
        self.state().redelivery_status = status_code;
    }

    /// Answer the next listing of deliveries (its first page) with `status` and `body`.
    pub fn answer_next_listing(&self, status: u16, body: Value) {
        self.fault(Fault {
            method: "GET",
            path: "/app/hook/deliveries".to_string(),
            exact: true,
            skip: 0,
            times: 1,
            action: FaultAction::Respond {
                status,
                body,
                headers: Vec::new(),
            },
        });
    }

    /// Stamp redeliveries `minutes` from now, for a test that sweeps at later times.
    pub fn stamp_redeliveries_at(&self, minutes: i64) {
        self.state().redelivery_clock_minutes = minutes;
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

    /// Its author edits top-level comment `id` to say `body`. The body before, for the
    /// `edited` delivery's `changes`.
    pub fn edit_issue_comment(&self, id: u64, body: &str) -> String {
        let mut state = self.state();
        let comment = state
            .issue_comments
            .iter_mut()
            .map(|(_, _, comment)| comment)
            .find(|comment| comment["id"] == id)
            .unwrap_or_else(|| panic!("no issue comment {id}"));
        let before = comment["body"].as_str().unwrap_or_default().to_string();
        comment["body"] = body.into();
        before
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

    /// Change a seeded review comment as GitHub would show it (its side, an outdated line).
    pub fn update_review_comment(&self, id: u64, change: impl FnOnce(&mut Value)) {
        let mut state = self.state();
        if let Some((_, _, comment)) = state
            .review_comments
            .iter_mut()
            .find(|(_, _, c)| c["id"] == id)
        {
            change(comment);
        }
    }

    pub fn delete_issue_comment(&self, id: u64) {
        self.state()
            .issue_comments
            .retain(|(_, _, c)| c["id"] != id);
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

    /// A completed check another App (or a workflow's token) made on `sha`: any name,
    /// any external id.
    pub fn add_foreign_check(&self, repo: &str, sha: &str, name: &str, external_id: &str) {
        let mut state = self.state();
        let id = state.next_id();
        let mut run = example("checks__create.201.example-of-completed-conclusion.json");
        run["id"] = id.into();
        run["name"] = name.into();
        run["head_sha"] = sha.into();
        run["external_id"] = external_id.into();
        run["app"]["slug"] = "someone-else".into();
        state.check_runs.push((repo.to_string(), run));
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
