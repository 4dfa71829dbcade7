//! Learning end to end: teaching commands through the conversation worker,
//! applied by the review worker, outcomes recorded from GitHub's signals, the tuned
//! threshold, the reporting commands and the judge pass. Fake GitHub and fake LLM over
//! HTTP; every scenario on SQLite and on DynamoDB (moto).

use parley_core::job::ReviewTrigger;
use parley_core::learning::memory;
use parley_core::ports::{FindingState, JobHandler, Verdict};
use parley_tests::fake_github::Injected;
use parley_tests::review_harness::*;
use parley_tests::tenants::{key, org};
use serde_json::json;

parley_tests::review_on_both_stores!(
    remember_adds_one_learning_and_a_question_stays_a_question,
    readers_cannot_teach_the_repo_but_may_teach_their_pr,
    forget_takes_a_learning_back,
    a_dismissed_category_is_suppressed_in_the_next_review,
    an_adjust_rule_moves_the_threshold,
    outcome_signals_are_recorded,
    more_outcome_signals_are_recorded,
    the_tuned_threshold_comes_from_a_seeded_history,
    stats_and_configuration_report_the_store,
    the_judge_drops_a_contradicted_finding_and_its_failure_falls_back,
    an_app_with_its_own_handle_suggests_commands_with_it,
);

const HINTS: &str = "structured hints";

fn in_category(mut finding: serde_json::Value, category: &str) -> serde_json::Value {
    finding["category"] = category.into();
    finding
}

async fn remember_adds_one_learning_and_a_question_stays_a_question(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    let job = h
        .say("bob", "@parley remember that we allow unwrap in tests/**")
        .await;
    let said = h.last_said();
    assert!(said.contains("Learning added `L-"), "{said}");
    assert!(said.contains("(repo)"), "{said}");
    assert!(said.contains("undo with `@parley forget L-"), "{said}");
    // A redelivery of the same comment adds nothing, and answers nothing more.
    h.conversation().handle(job).await.expect("redelivered");
    let all = h.learnings().await;
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].author, "bob");
    assert_eq!(all[0].hints.paths, vec!["tests/**"]);
    assert_eq!(parley_says(&h).len(), 1);

    // A question that merely contains "remember" is answered by the model.
    h.llm.answer(
        CONVERSATION,
        &json!({ "reply": "We added it in #12.", "resolution": null }).to_string(),
    );
    h.say("bob", "@parley do you remember why we added the cache?")
        .await;
    assert_eq!(h.learnings().await.len(), 1);
    assert!(h.last_said().contains("We added it in #12."));
    // The answer's prompt carries the learning, with its id to cite.
    let prompt = h
        .llm
        .prompts()
        .into_iter()
        .rfind(|p| p.text().contains(CONVERSATION))
        .expect("the question's prompt")
        .text();
    assert!(prompt.contains(&all[0].id), "{prompt}");
    assert!(prompt.contains("we allow unwrap"), "{prompt}");
}

async fn readers_cannot_teach_the_repo_but_may_teach_their_pr(h: ReviewHarness) {
    h.config("mention:\n  minPermission: read\n");
    h.github.set_permission(REPO, "mallory", "read");
    h.say("mallory", "@parley don't flag style issues").await;
    let said = h.last_said();
    assert!(said.contains("need write permission"), "{said}");
    assert!(h.learnings().await.is_empty());

    // For their PR they may add context or make Parley stricter, never more lenient.
    h.say("mallory", "@parley don't flag style issues for this PR")
        .await;
    let said = h.last_said();
    assert!(said.contains("needs write permission"), "{said}");
    assert!(h.learnings().await.is_empty());
    h.say("mallory", "@parley be stricter about style for this PR")
        .await;
    let all = h.learnings().await;
    assert_eq!(all.len(), 1, "{}", h.last_said());
    assert_eq!(
        all[0].scope,
        parley_core::learning::Scope::Pr { pr: PR },
        "{all:#?}"
    );
    assert_eq!(
        all[0].authority,
        Some(parley_core::learning::record::Authority::Participant)
    );

    // Organisation-wide needs an admin of the organisation: admin of this repository,
    // or an ordinary member of the organisation, is not enough.
    let org_learnings = || async {
        h.learnings()
            .await
            .into_iter()
            .filter(|l| l.scope == parley_core::learning::Scope::Org)
            .count()
    };
    h.github.set_permission(REPO, "bob", "admin");
    h.say("bob", "@parley remember for all repos: we squash merge")
        .await;
    let said = h.last_said();
    assert!(said.contains("need an admin of octo-org"), "{said}");
    assert!(said.contains("@bob is not an admin of octo-org"), "{said}");
    h.github.set_org_role(OWNER, "bob", "member");
    h.say("bob", "@parley remember for all repos: we rebase merge")
        .await;
    let said = h.last_said();
    assert!(said.contains("@bob is a member there (active)"), "{said}");
    assert_eq!(org_learnings().await, 0);

    h.github.set_permission(REPO, "ada", "write");
    h.github.set_org_role(OWNER, "ada", "admin");
    h.say("ada", "@parley remember for all repos: we squash merge")
        .await;
    assert_eq!(org_learnings().await, 1, "{}", h.last_said());

    // An App installed without "Members: read" cannot tell: refused, and said why.
    h.github.hide_members(OWNER);
    h.say("ada", "@parley remember for all repos: releases are tagged")
        .await;
    let said = h.last_said();
    assert!(said.contains("\"Members: read\""), "{said}");
    assert_eq!(org_learnings().await, 1);
}

async fn forget_takes_a_learning_back(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    h.say(
        "bob",
        "@parley remember our API ids are validated at the boundary (ask @carol)",
    )
    .await;
    let id = h.learnings().await[0].id.clone();
    // Bob's comment notified carol; what Parley says of the learning does not again.
    let added = h.last_said();
    assert!(
        added.contains("(ask ＠carol)") && !added.contains("@carol"),
        "{added}"
    );
    h.say("bob", "@parley learnings").await;
    let listed = h.last_said();
    assert!(
        listed.contains("(ask ＠carol)") && !listed.contains("@carol"),
        "{listed}"
    );
    h.say("bob", &format!("@parley forget {id}")).await;
    assert!(h.last_said().contains(&format!("Forgot `{id}`")));
    let all = h.learnings().await;
    assert!(all[0].forgotten.is_some(), "soft delete: kept, marked");
    h.say("bob", "@parley learnings").await;
    assert!(!h.last_said().contains(&id), "{}", h.last_said());
    h.say("bob", &format!("@parley forget {id}")).await;
    assert!(h.last_said().contains("nothing to forget"));
}

async fn a_dismissed_category_is_suppressed_in_the_next_review(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    h.say("bob", "@parley don't flag style issues").await;
    let id = h.learnings().await[0].id.clone();
    // The model still reports a style finding; the review must not post it.
    h.llm.answer(
        STYLE,
        &reply(&[in_category(
            finding("src/db.rs", 3, "low", 90, "Name is too short"),
            "style",
        )]),
    );
    h.review_opened().await;
    assert!(h.inline_comments().is_empty(), "{:#?}", h.inline_comments());
    let summary = h.summary();
    assert!(summary.contains("1 finding(s) suppressed"), "{summary}");
    assert!(summary.contains(&format!("dismissed by {id}")), "{summary}");
    let learning = h.learnings().await.remove(0);
    assert_eq!(learning.findings_suppressed, 1);
    assert_eq!(learning.times_applied, 1);
}

async fn an_adjust_rule_moves_the_threshold(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    h.say("bob", "@parley be stricter about security").await;
    // Confidence 70 is under the default 75, but security's threshold is now 65.
    h.llm.answer(
        SECURITY,
        &reply(&[in_category(
            finding("src/db.rs", 3, "medium", 70, "Weak hash"),
            "security",
        )]),
    );
    h.llm.answer(
        STYLE,
        &reply(&[in_category(
            finding("src/db.rs", 2, "low", 70, "Long line"),
            "style",
        )]),
    );
    h.review_opened().await;
    let comments = h.inline_bodies();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].contains("Weak hash"), "{comments:#?}");
    let summary = h.summary();
    assert!(
        summary.contains("adjusted by learnings: security 65"),
        "{summary}"
    );
}

async fn outcome_signals_are_recorded(h: ReviewHarness) {
    h.llm.answer(
        SECURITY,
        &reply(&[
            finding("src/db.rs", 2, "medium", 90, "Unchecked id"),
            finding("src/db.rs", 3, "medium", 90, "SQL injection"),
            finding("src/db.rs", 4, "low", 90, "Missing doc"),
            finding("src/db.rs", 5, "low", 90, "Unused helper"),
        ]),
    );
    h.review_opened().await;
    let by_title = |findings: &[parley_core::ports::Finding], title: &str| {
        findings
            .iter()
            .find(|f| f.title == title)
            .cloned()
            .unwrap_or_else(|| panic!("no {title}"))
    };
    let found = h.findings().await;
    assert_eq!(found.len(), 4);
    // A maintainer resolves "Unchecked id": accepted.
    let unchecked = by_title(&found, "Unchecked id");
    h.conversation()
        .handle(thread_job(
            unchecked.comment_id.expect("inline"),
            true,
            "t-1",
        ))
        .await
        .expect("bookkeeping");
    // bob disputes "SQL injection" and Parley concedes: rejected.
    h.github.set_permission(REPO, "bob", "write");
    h.llm.answer(
        CONVERSATION,
        &json!({ "reply": "Fair point.", "resolution": "concede" }).to_string(),
    );
    let sql = by_title(&found, "SQL injection");
    h.conversation()
        .handle(reply_in_thread(
            &h,
            sql.comment_id.expect("inline"),
            "bob",
            "It is a constant.",
        ))
        .await
        .expect("turn");
    // 👍 on "Missing doc"; nothing on "Unused helper"; then the PR closes.
    // Reactions count from people with `gate.resolveBy` (see tests/tests/e2e/signals.rs).
    h.github.set_permission(REPO, "carol", "write");
    let doc = by_title(&found, "Missing doc");
    h.github
        .react_to_review_comment(doc.comment_id.expect("inline"), "+1", "carol");
    h.github.update_pull(REPO, PR, |pr| {
        pr["state"] = "closed".into();
        pr["merged"] = true.into();
    });
    close_pr(&h).await;

    let found = h.findings().await;
    let verdict = |title: &str| {
        by_title(&found, title)
            .outcome
            .map(|o| (o.verdict, o.signal))
    };
    assert_eq!(
        verdict("Unchecked id"),
        Some((Verdict::Accepted, "thread_resolved".into()))
    );
    assert_eq!(
        verdict("SQL injection"),
        Some((Verdict::Rejected, "conceded".into()))
    );
    assert_eq!(
        verdict("Missing doc"),
        Some((Verdict::Accepted, "thumbs_up".into()))
    );
    assert_eq!(
        verdict("Unused helper"),
        Some((Verdict::Ignored, "closed_unanswered".into()))
    );
    let stats = memory::load(h.store.as_ref(), &key(REPO), &org(OWNER))
        .await
        .expect("memory")
        .stats;
    let total = stats.total();
    assert_eq!((total.accepted, total.rejected, total.ignored), (2, 1, 1));
    assert_eq!(
        memory::load(h.store.as_ref(), &key(REPO), &org(OWNER))
            .await
            .expect("memory")
            .patterns
            .len(),
        1,
        "the rejection feeds a pattern"
    );
    let _ = FindingState::Open;
}

async fn more_outcome_signals_are_recorded(h: ReviewHarness) {
    h.llm.answer_in_turn(
        SECURITY,
        &[&reply(&[
            finding("src/db.rs", 3, "medium", 90, "SQL injection"),
            finding("src/db.rs", 2, "low", 90, "Unchecked id"),
            finding("src/db.rs", 5, "low", 90, "Unused helper"),
        ])],
    );
    h.review_opened().await;
    let found = h.findings().await;
    let id_of = |title: &str| {
        found
            .iter()
            .find(|f| f.title == title)
            .and_then(|f| f.comment_id)
            .unwrap_or_else(|| panic!("no {title}"))
    };
    // A push that rewrites line 3: the SQL injection finding was acted on.
    h.push_sql_fix();
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("incremental review");
    // `won't fix` in the "Unchecked id" thread; a 👎 from two people on "Unused helper".
    h.github.set_permission(REPO, "bob", "write");
    h.conversation()
        .handle(reply_in_thread(
            &h,
            id_of("Unchecked id"),
            "bob",
            "won't fix: ids are trusted here",
        ))
        .await
        .expect("turn");
    for who in ["amy", "cat"] {
        h.github.set_permission(REPO, who, "write");
        h.github
            .react_to_review_comment(id_of("Unused helper"), "-1", who);
    }
    close_pr(&h).await;
    let found = h.findings().await;
    let verdict = |title: &str| {
        found
            .iter()
            .find(|f| f.title == title)
            .and_then(|f| f.outcome.clone())
            .map(|o| (o.verdict, o.signal))
    };
    assert_eq!(
        verdict("SQL injection"),
        Some((Verdict::Accepted, "code_changed".into()))
    );
    assert_eq!(
        verdict("Unchecked id"),
        Some((Verdict::Rejected, "wont_fix".into()))
    );
    assert_eq!(
        verdict("Unused helper"),
        Some((Verdict::Rejected, "thumbs_down".into()))
    );
    let memory = memory::load(h.store.as_ref(), &key(REPO), &org(OWNER))
        .await
        .expect("memory");
    let pattern = memory
        .patterns
        .iter()
        .find(|(_, p)| p.title == "unused helper")
        .map(|(_, p)| p.clone())
        .expect("a pattern for the 👎");
    assert_eq!(pattern.people.len(), 2, "{pattern:?}");
    // The won't fix also taught a PR-scoped dismissal.
    assert!(
        memory
            .learnings
            .iter()
            .any(|l| l.scope == parley_core::learning::Scope::Pr { pr: PR })
    );
}

/// The PR closes: GitHub's `pull_request.closed` delivery, through the conversation
/// worker's bookkeeping.
async fn close_pr(h: &ReviewHarness) {
    h.conversation()
        .handle(closed_job(false, "close-1"))
        .await
        .expect("bookkeeping");
}

/// Seed `n` decided findings at `confidence` in the statistics.
async fn seed(h: &ReviewHarness, confidence: u8, accepted: u64, rejected: u64) {
    h.seed_stats(|stats| {
        for _ in 0..accepted {
            stats.count("security", "medium", confidence, Verdict::Accepted, 1);
        }
        for _ in 0..rejected {
            stats.count("style", "low", confidence, Verdict::Rejected, 1);
        }
    })
    .await;
}

async fn the_tuned_threshold_comes_from_a_seeded_history(h: ReviewHarness) {
    // 30 decided: at >= 71, 18 of 19 accepted (94.7%); at >= 70, 20 of 25 (80%).
    seed(&h, 90, 10, 0).await;
    seed(&h, 80, 8, 1).await;
    seed(&h, 70, 2, 4).await;
    seed(&h, 60, 0, 5).await;
    h.llm.answer(
        SECURITY,
        &reply(&[
            finding("src/db.rs", 3, "medium", 72, "Kept at 72"),
            finding("src/db.rs", 2, "medium", 70, "Filtered at 70"),
        ]),
    );
    h.review_opened().await;
    let comments = h.inline_bodies();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].contains("Kept at 72"), "{comments:#?}");
    let summary = h.summary();
    assert!(
        summary.contains("Confidence threshold: 71 (tuned from 30 accepted or rejected findings"),
        "{summary}"
    );
}

async fn stats_and_configuration_report_the_store(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    seed(&h, 90, 3, 1).await;
    h.config(
        "review:\n  maxInlineComments: 7\n  minConfidence: 300\ndispute:\n  humanReviewers: ['@carol', octo-org/security]\n",
    );
    h.say("bob", "@parley stats").await;
    let stats = h.last_said();
    assert!(
        stats.contains("| security | 0 | 0 | 3 | 0 | 0 | 100% |"),
        "{stats}"
    );
    assert!(
        stats.contains("| style | 0 | 0 | 0 | 1 | 0 | 0% |"),
        "{stats}"
    );
    assert!(
        stats.contains("| **all** | 0 | 0 | 3 | 1 | 0 | 75% |"),
        "{stats}"
    );
    assert!(
        stats.contains("not tuned yet (4 of 20 decided findings needed)"),
        "{stats}"
    );
    h.say("bob", "@parley configuration").await;
    let config = h.last_said();
    assert!(
        config.contains("| `review.maxInlineComments` | 7 | `.parley.yml` |"),
        "{config}"
    );
    assert!(
        config.contains("| `review.minConfidence` | 75 | default |"),
        "{config}"
    );
    // Whom an escalation would ask is shown, not paged each time someone asks.
    assert!(
        config.contains(
            "| `dispute.humanReviewers` | [＠carol, octo-org/security] | `.parley.yml` |"
        ),
        "{config}"
    );
    assert!(config.contains("review.minConfidence"), "{config}");
    assert!(
        config.contains("300"),
        "the rejected value is reported: {config}"
    );
    assert!(
        config.contains("No organisation settings were read.")
            && config.contains("default branch of `octo-org/.github`, when the App is installed"),
        "where organisation settings would come from: {config}"
    );
    // The base branch's rules, read for the people who can change them: not required is
    // a choice; required from any source is a gate a workflow job of that name passes.
    assert!(
        config.contains("Merge gate: `Parley review` is not required on `main`"),
        "{config}"
    );
    h.github
        .require_check((REPO, "main"), None, "Parley review", None);
    h.say("bob", "@parley configuration").await;
    let config = h.last_said();
    assert!(
        config.contains(
            "Merge gate: `Parley review` is required on `main` (branch protection) from any source"
        ),
        "{config}"
    );
    h.github
        .inject(Injected::answering("GET", "/branches/main", 403, 1));
    h.say("bob", "@parley configuration").await;
    let config = h.last_said();
    assert!(
        config.contains("Merge gate: GitHub would not give the rules of `main` (")
            && config.contains("| `review.maxInlineComments` | 7 |"),
        "the rest is answered all the same: {config}"
    );
    h.say("bob", "@parley help").await;
    assert!(h.last_said().contains("`@parley forget L-3f9a`"));
}

async fn the_judge_drops_a_contradicted_finding_and_its_failure_falls_back(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    h.say(
        "bob",
        "@parley remember user ids are validated at the API boundary",
    )
    .await;
    let id = h.learnings().await[0].id.clone();
    h.llm.answer(
        SECURITY,
        &reply(&[
            finding("src/db.rs", 3, "medium", 90, "Id not validated"),
            finding("src/db.rs", 2, "medium", 90, "Query not parameterised"),
        ]),
    );
    h.llm.answer(
        JUDGE,
        &json!({ "verdicts": [
            { "index": 0, "keep": false, "reason": "ids are validated upstream", "learning": id },
            { "index": 1, "keep": true, "confidence": 95 }
        ]})
        .to_string(),
    );
    h.review_opened().await;
    let comments = h.inline_comments();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap_or_default();
    assert!(
        body.contains("Query not parameterised") && body.contains("confidence 95%"),
        "{body}"
    );
    let summary = h.summary();
    assert!(summary.contains(&format!("contradicts {id}")), "{summary}");
    assert!(
        summary.contains("Judge pass: 1 dropped, 1 re-scored."),
        "{summary}"
    );
    let judged = h.judge_prompts();
    assert!(judged[0].text().contains(&id), "the judge saw the learning");

    // The judge fails on the next head: the specialists' findings stand, and the summary
    // says so.
    h.llm.fail(JUDGE, 500);
    h.github
        .update_pull(REPO, PR, |pr| pr["head"]["sha"] = HEAD2.into());
    h.github
        .set_compare(REPO, HEAD, HEAD2, &[("src/db.rs", "modified", DB_PATCH)]);
    h.llm.answer(
        SECURITY,
        &reply(&[finding("src/db.rs", 4, "medium", 90, "Another finding")]),
    );
    h.run(job(ReviewTrigger::Synchronize, HEAD2, "d-2"))
        .await
        .expect("review");
    let summary = h.reviews()[1]["body"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(summary.contains("Judge pass did not run"), "{summary}");
    assert!(h.inline_comments().iter().any(|c| {
        c["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Another finding")
    }));
    let _ = HINTS;
}

/// GitHub App names are unique, so every installation's handle is its own: the commands
/// Parley suggests must be spelt with it (`@parley` would name someone else).
async fn an_app_with_its_own_handle_suggests_commands_with_it(h: ReviewHarness) {
    h.github.set_app_slug("acme-review");
    h.github.set_permission(REPO, "bob", "write");
    h.say("bob", "@acme-review learnings").await;
    let none = h.last_said();
    assert!(
        none.contains("Teach me with `@acme-review remember …`, `@acme-review don't flag …`"),
        "{none}"
    );
    h.say(
        "bob",
        "@acme-review remember that we allow unwrap in tests/**",
    )
    .await;
    let added = h.last_said();
    assert!(
        added.contains("undo with `@acme-review forget L-"),
        "{added}"
    );
    h.say("bob", "@acme-review forget \"tabs over spaces\"")
        .await;
    let unknown = h.last_said();
    assert!(
        unknown.contains("`@acme-review learnings` lists them"),
        "{unknown}"
    );
    h.say("bob", "@acme-review help").await;
    let help = h.last_said();
    assert!(
        help.contains("| `@acme-review review` / `@acme-review full review` |"),
        "{help}"
    );
    assert!(help.contains("| `@acme-review dismiss f_…` |"), "{help}");
    assert!(
        help.contains("| `@acme-review is f_… really a bug?` | ask about one finding by its id"),
        "{help}"
    );
    assert!(
        help.contains("| `… in <path glob>`, `… for this PR`, `… for all repos` |"),
        "{help}"
    );

    h.review_opened().await;
    let asked = h
        .github
        .add_issue_comment(REPO, PR, "bob", "@acme-review review");
    h.run(manual_job(
        ReviewTrigger::ManualIncremental,
        HEAD,
        "m-1",
        asked,
    ))
    .await
    .expect("answered");
    let already = h.last_said();
    assert!(
        already.starts_with("Already reviewed")
            && already.contains("or ask `@acme-review full review`"),
        "{already}"
    );
    let said = parley_says(&h);
    assert_eq!(said.len(), 5, "{said:#?}");
    for text in said {
        assert!(!text.contains("@parley"), "{text}");
    }
}
