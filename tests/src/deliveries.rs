//! Webhook payloads for tests that drive `parley serve` over HTTP, built from GitHub's own
//! examples in the corpus with the fields Parley reads set to match a [`FakeGitHub`]'s
//! state (so what the webhook says and what the API answers agree, as they do on GitHub).
//!
//! [`FakeGitHub`]: crate::fake_github::FakeGitHub

use parley_core::Job;
use parley_core::markers::{self, FindingMarker};
use parley_core::mention::Handles;
use parley_core::ports::Severity;
use parley_core::webhook::normalise::{NormaliseContext, Normalised, normalise};
use serde_json::{Value, json};

/// The repository and installation a delivery comes from.
#[derive(Debug, Clone)]
pub struct Source {
    pub owner: String,
    pub name: String,
    pub installation: u64,
}

impl Source {
    pub fn new(owner: &str, name: &str, installation: u64) -> Self {
        Source {
            owner: owner.to_string(),
            name: name.to_string(),
            installation,
        }
    }

    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// Make `payload` come from this repository and installation, with the fakes' ids.
    pub fn stamp(&self, payload: &mut Value) {
        payload["repository"]["full_name"] = self.full_name().into();
        payload["repository"]["name"] = self.name.clone().into();
        payload["repository"]["owner"]["login"] = self.owner.clone().into();
        crate::tenants::stamp(payload);
        payload["installation"] = json!({ "id": self.installation, "node_id": "x" });
    }
}

/// The job the worker receives for a delivery, normalised as the webhook does for a bot
/// whose handle is `parley`. Panics when the payload is not one Parley acts on: a test
/// that builds a delivery means it to become a job.
pub fn job(event: &str, delivery: &str, payload: &Value) -> Job {
    job_for("parley", event, delivery, payload)
}

/// [`job`] for an App whose handle is `slug`.
pub fn job_for(slug: &str, event: &str, delivery: &str, payload: &Value) -> Job {
    let ctx = NormaliseContext {
        handles: Some(Handles::new(slug, &[])),
    };
    match normalise(event, delivery, payload, &ctx) {
        Normalised::Job(job) => *job,
        other => panic!("{event} did not normalise to a job: {other:?}"),
    }
}

/// The job an automatic review of `head` of PR `number` (by alice, on `main` at
/// [`crate::rig::BASE`]) becomes, as the webhook would enqueue it.
pub fn review_job(
    source: &Source,
    number: u64,
    trigger: parley_core::job::ReviewTrigger,
    head: &str,
    delivery: &str,
) -> Job {
    Job::Review(parley_core::job::ReviewJob {
        delivery_id: delivery.to_string(),
        installation_id: Some(source.installation),
        repo: parley_core::job::RepoRef {
            id: crate::tenants::repo_id(&source.full_name()),
            owner: source.owner.clone(),
            name: source.name.clone(),
            owner_id: crate::tenants::owner_id(&source.owner),
        },
        number,
        trigger,
        head_sha: head.to_string(),
        base_sha: crate::rig::BASE.to_string(),
        base_ref: "main".to_string(),
        before_sha: None,
        author: parley_core::job::Actor {
            login: "alice".to_string(),
            kind: "User".to_string(),
        },
        title: format!("PR #{number}"),
        request: None,
        label: None,
        rerun_of: None,
        moved_from: None,
    })
}

/// `merge_group.checks_requested` for the merge queue's commit `group_head`, testing PR
/// `number` on `main`. The corpus has no example of this event: its fields are GitHub's
/// documented ones, around the repository and sender of the `pull_request.opened`
/// example. The branch names the commit the group is built on (`base_sha`), as GitHub's
/// do, not the PR's head.
pub fn merge_group(source: &Source, number: u64, group_head: &str) -> Value {
    let mut payload = crate::webhook_example("pull_request", "opened.payload.json");
    source.stamp(&mut payload);
    payload["action"] = "checks_requested".into();
    payload["merge_group"] = json!({
        "head_sha": group_head,
        "head_ref": format!("refs/heads/gh-readonly-queue/main/pr-{number}-{}", crate::rig::BASE),
        "base_sha": crate::rig::BASE,
        "base_ref": "refs/heads/main",
        "head_commit": { "id": group_head, "tree_id": group_head, "message": format!("Merge pull request #{number}") },
    });
    if let Some(fields) = payload.as_object_mut() {
        fields.remove("pull_request");
        fields.remove("number");
    }
    payload
}

/// `pull_request.closed` for PR `number`, merged or not.
pub fn closed(source: &Source, number: u64, merged: bool) -> Value {
    let mut payload = crate::webhook_example("pull_request", "closed.payload.json");
    source.stamp(&mut payload);
    payload["pull_request"]["number"] = number.into();
    payload["pull_request"]["merged"] = merged.into();
    payload
}

/// `pull_request` with `action` (`opened`, `synchronize`, …) for PR `number` at `head`.
pub fn pull_request(
    source: &Source,
    action: &str,
    number: u64,
    author: &str,
    head: &str,
    base: &str,
    before: Option<&str>,
) -> Value {
    let mut payload = crate::webhook_example("pull_request", "opened.payload.json");
    payload["action"] = action.into();
    payload["number"] = number.into();
    let pr = &mut payload["pull_request"];
    pr["number"] = number.into();
    pr["title"] = format!("PR #{number}").into();
    pr["draft"] = false.into();
    pr["state"] = "open".into();
    pr["user"]["login"] = author.into();
    pr["user"]["type"] = "User".into();
    pr["head"]["sha"] = head.into();
    pr["base"]["sha"] = base.into();
    pr["base"]["ref"] = "main".into();
    if let Some(before) = before {
        payload["before"] = before.into();
        payload["after"] = head.into();
    }
    source.stamp(&mut payload);
    payload
}

/// `issue_comment.created` for `comment` (as the fake lists it) on PR `number`.
pub fn pr_issue_comment(source: &Source, number: u64, comment: &Value) -> Value {
    let mut payload = crate::webhook_example("issue_comment", "created.payload.json");
    payload["comment"] = comment.clone();
    payload["issue"]["number"] = number.into();
    payload["issue"]["pull_request"] = json!({
        "url": format!("https://api.github.com/repos/{}/pulls/{number}", source.full_name())
    });
    source.stamp(&mut payload);
    payload
}

/// `pull_request_review_comment.created` for `comment` (as the fake lists it) on PR
/// `number` by `pr_author`, with `diff_hunk` as GitHub sends it.
pub fn review_comment(
    source: &Source,
    number: u64,
    pr_author: &str,
    comment: &Value,
    diff_hunk: &str,
) -> Value {
    let mut payload = crate::webhook_example("pull_request_review_comment", "created.payload.json");
    payload["comment"] = comment.clone();
    payload["comment"]["diff_hunk"] = diff_hunk.into();
    payload["pull_request"]["number"] = number.into();
    payload["pull_request"]["user"]["login"] = pr_author.into();
    source.stamp(&mut payload);
    payload
}

/// `pull_request_review_comment.deleted`: `actor` deleted Parley's comment `comment_id`
/// (the first of its thread) on PR `number`.
pub fn review_comment_deleted(source: &Source, number: u64, comment_id: u64, actor: &str) -> Value {
    let mut payload = crate::webhook_example("pull_request_review_comment", "deleted.payload.json");
    payload["sender"]["login"] = actor.into();
    payload["pull_request"]["number"] = number.into();
    payload["comment"]["id"] = comment_id.into();
    payload["comment"]["user"]["login"] = "parley[bot]".into();
    payload["comment"]["user"]["type"] = "Bot".into();
    source.stamp(&mut payload);
    payload
}

/// The marker of a high-severity security finding `id` at `path:line`, as the review
/// worker writes it.
pub fn finding_marker(id: &str, path: &str, line: u32, title: &str) -> FindingMarker {
    FindingMarker {
        id: id.into(),
        fingerprint: format!("fp-{id}"),
        severity: Severity::High,
        category: "security".into(),
        confidence: 92,
        path: path.into(),
        start_line: None,
        line,
        title: title.into(),
        site: String::new(),
    }
}

/// The body of a Parley finding as the review worker posts it inline: visible text and the
/// hidden finding marker a reply's thread is recognised by.
pub fn finding_body(id: &str, path: &str, line: u32, title: &str) -> String {
    markers::append(
        &format!("**[HIGH] security** (confidence 92)\n\n{title}."),
        markers::kind::FINDING,
        &finding_marker(id, path, line, title),
    )
}
