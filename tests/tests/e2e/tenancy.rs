//! What Parley keeps belongs to a repository, not to its name: a rename or transfer keeps
//! its findings (and so the merge gate), a new repository under a name someone used
//! before inherits none of it, and records an older Parley keyed by name move under the
//! repository's id on its first job. The review worker runs end to end against the fake
//! GitHub and fake LLM, on SQLite and on DynamoDB (moto).

use parley_core::Job;
use parley_core::job::ReviewTrigger;
use parley_core::learning::memory;
use parley_core::learning::record::{Hints, Learning, LearningKind, Scope};
use parley_core::ports::Finding;
use parley_core::tenancy::Tenant;
use parley_tests::review_harness::*;
use parley_tests::tenants::{key, org, owner_id, repo_id};
use time::OffsetDateTime;

parley_tests::review_on_both_stores!(
    a_renamed_repository_keeps_its_findings_and_its_gate,
    a_new_repository_under_a_used_name_inherits_nothing,
    name_keyed_records_move_under_the_id_on_the_first_job,
);

const RENAMED: &str = "octo-org/hello-again";

/// Review HEAD with one blocking finding; the gate fails on it.
async fn review_with_a_blocking_finding(h: &ReviewHarness) -> Finding {
    review_with_a_blocking_finding_as(h, job(ReviewTrigger::Opened, HEAD, "d-1")).await
}

async fn review_with_a_blocking_finding_as(h: &ReviewHarness, job: Job) -> Finding {
    let blocking = reply(&[finding("src/db.rs", 3, "high", 90, SQL_TITLE)]);
    h.llm
        .answer_in_turn(SECURITY, &[&blocking, &reply(&[]), &reply(&[])]);
    h.run(job).await.expect("review of HEAD");
    assert_eq!(h.latest_check("Parley review")["conclusion"], "failure");
    let findings = h.findings().await;
    assert_eq!(findings.len(), 1, "{findings:#?}");
    findings[0].clone()
}

/// The PR as GitHub serves it under `name` after a push to HEAD2 that only adds a README.
fn serve_pushed_pr_as(h: &ReviewHarness, name: &str) {
    h.github.add_pull(name, PR, "alice", HEAD2, BASE);
    h.github.update_pull(name, PR, |pr| {
        pr["html_url"] = format!("https://github.com/{name}/pull/{PR}").into();
        pr["base"]["repo"]["default_branch"] = "main".into();
    });
    h.github.set_files(
        name,
        PR,
        &[
            ("src/db.rs", "modified", DB_PATCH),
            ("README.md", "added", README_PATCH),
        ],
    );
    h.github
        .set_compare(name, HEAD, HEAD2, &[("README.md", "added", README_PATCH)]);
}

/// The push's review job, for the repository `name` with GitHub's `id`.
fn push_job(name: &str, id: u64) -> Job {
    let mut job = job(ReviewTrigger::Synchronize, HEAD2, "d-2");
    if let Job::Review(review) = &mut job {
        let (owner, repo) = name.split_once('/').expect("owner/name");
        review.repo.owner = owner.to_string();
        review.repo.name = repo.to_string();
        review.repo.id = id;
    }
    job
}

/// The newest "Parley review" check on `head` of repository `name`.
fn gate_on(h: &ReviewHarness, name: &str, head: &str) -> serde_json::Value {
    h.github
        .check_runs(name)
        .into_iter()
        .rfind(|c| c["name"] == "Parley review" && c["head_sha"] == head)
        .unwrap_or_else(|| panic!("no Parley review on {head}: {:#?}", h.check_runs()))
}

async fn a_renamed_repository_keeps_its_findings_and_its_gate(h: ReviewHarness) {
    let old = review_with_a_blocking_finding(&h).await;
    serve_pushed_pr_as(&h, RENAMED);
    h.run(push_job(RENAMED, repo_id(REPO)))
        .await
        .expect("review after the rename");

    // The review after the rename knew the earlier one: it reviewed only the push (and,
    // with nothing new in it, posted no review)...
    let gate = gate_on(&h, RENAMED, HEAD2);
    let said = gate["output"]["summary"].as_str().unwrap_or_default();
    assert!(said.contains("…`c2c2c2c` (`README.md`)"), "{said}");
    // ...and the open blocking finding still holds the gate, linked under the new name.
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(text.contains(SQL_TITLE), "{text}");
    assert!(
        text.contains(&format!(
            "https://github.com/{RENAMED}/pull/{PR}#discussion_r"
        )),
        "{text}"
    );
    let findings = h.findings().await;
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].id, old.id);
}

async fn a_new_repository_under_a_used_name_inherits_nothing(h: ReviewHarness) {
    review_with_a_blocking_finding(&h).await;
    // The repository is deleted and someone creates another under the same name: same
    // name, new id, and (here) a PR with the same number.
    let stranger = repo_id(REPO) + 1;
    serve_pushed_pr_as(&h, REPO);
    h.run(push_job(REPO, stranger))
        .await
        .expect("review of the new repository");

    let gate = gate_on(&h, REPO, HEAD2);
    assert_eq!(gate["conclusion"], "success", "{gate:#?}");
    let text = gate["output"]["text"].as_str().unwrap_or_default();
    assert!(!text.contains(SQL_TITLE), "{text}");
    let body = h.reviews().last().expect("a review")["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        !body.contains("Files reviewed: `README.md`\n"),
        "a first review of the new repository is a full one: {body}"
    );
    let theirs = Tenant::of(stranger, owner_id(OWNER), OWNER, NAME).repo;
    let findings = h
        .store
        .findings_for_pr(&theirs, PR)
        .await
        .expect("findings");
    assert!(findings.is_empty(), "{findings:#?}");
}

async fn name_keyed_records_move_under_the_id_on_the_first_job(h: ReviewHarness) {
    // A job queued before owner ids were carried: the organisation's learnings are not
    // moved yet (nothing marks them moved).
    let mut first = job(ReviewTrigger::Opened, HEAD, "d-1");
    if let Job::Review(review) = &mut first {
        review.repo.owner_id = 0;
    }
    let old = review_with_a_blocking_finding_as(&h, first).await;
    // Put everything back where an older Parley kept it: under the name (the marker
    // that says the move was made goes with it), with a learning for the repository and
    // one for the organisation.
    let by_name = Tenant::name_keyed(OWNER, NAME);
    h.store
        .rekey_repository(&key(REPO), &by_name.repo)
        .await
        .expect("back to the name");
    assert!(h.findings().await.is_empty());
    for (scope, text, comment) in [
        (Scope::Repo, "we allow unwrap in tests", 501),
        (Scope::Org, "prefer anyhow at entrypoints", 502),
    ] {
        let learning = Learning {
            id: String::new(),
            repo: by_name.repo.clone(),
            scope,
            kind: LearningKind::Remember,
            text: text.to_string(),
            hints: Hints::default(),
            author: "carol".to_string(),
            authority: None,
            source_url: format!("https://github.com/{REPO}/pull/1#issuecomment-{comment}"),
            source_comment_id: comment,
            created_at: OffsetDateTime::now_utc(),
            forgotten: None,
            times_applied: 0,
            findings_suppressed: 0,
        };
        memory::add_learning(h.store.as_ref(), &by_name.org, learning)
            .await
            .expect("stored by name");
    }

    serve_pushed_pr_as(&h, REPO);
    h.run(push_job(REPO, repo_id(REPO)))
        .await
        .expect("the first review after the upgrade");

    // The earlier review was found (incremental), and its open finding still blocks.
    let gate = gate_on(&h, REPO, HEAD2);
    assert_eq!(gate["conclusion"], "failure", "{gate:#?}");
    let moved = h.findings().await;
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0].id, old.id);
    assert_eq!(moved[0].repo, key(REPO));
    assert!(
        h.store
            .findings_for_pr(&by_name.repo, PR)
            .await
            .expect("findings")
            .is_empty()
    );
    let learned = memory::load(h.store.as_ref(), &key(REPO), &org(OWNER))
        .await
        .expect("memory")
        .learnings;
    let texts: Vec<&str> = learned.iter().map(|l| l.text.as_str()).collect();
    assert!(texts.contains(&"we allow unwrap in tests"), "{texts:?}");
    assert!(texts.contains(&"prefer anyhow at entrypoints"), "{texts:?}");
    assert!(
        h.store
            .memory(&by_name.repo)
            .await
            .expect("memory")
            .is_empty()
            && h.store
                .memory(&by_name.org)
                .await
                .expect("memory")
                .is_empty()
    );
    // The learnings reached the review's prompts too.
    let prompts = h.pass_prompts();
    let last = prompts.last().expect("a pass").text();
    assert!(last.contains("we allow unwrap in tests"), "{last}");
}
