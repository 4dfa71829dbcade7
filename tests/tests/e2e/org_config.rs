//! An organisation's `.parley.yml` (in its `.github` repository) under each repository's
//! own: the repository's keys win, the organisation's fill in the rest, and
//! `@parley configuration` says which came from where.

use parley_core::job::ReviewTrigger;
use parley_core::ports::{JobError, JobHandler};
use parley_tests::review_harness::*;

parley_tests::review_on_both_stores!(
    the_organisations_settings_apply_where_the_repository_sets_none,
    the_repositorys_settings_win_and_configuration_says_where_each_came_from,
    an_organisation_file_github_will_not_give_is_waited_for_and_read_again,
    a_pr_changing_the_repositorys_file_is_compared_over_the_organisations,
);

const ORG_SETTINGS: &str = "octo-org/.github";

/// The organisation's file, on its `.github` repository's default branch.
fn org_config(h: &ReviewHarness, yaml: &str) {
    h.github.set_file(ORG_SETTINGS, "HEAD", ".parley.yml", yaml);
}

/// The organisation blocks only on critical findings and the repository says nothing of
/// it: a high finding does not fail the gate.
async fn the_organisations_settings_apply_where_the_repository_sets_none(h: ReviewHarness) {
    org_config(&h, "gate:\n  blockOn: [critical]\n");
    h.config("review:\n  maxInlineComments: 7\n");
    let high = reply(&[finding("src/db.rs", 3, "high", 90, SQL_TITLE)]);
    h.llm.answer_in_turn(SECURITY, &[&high]);
    h.review_opened().await;
    assert_eq!(h.findings().await.len(), 1);
    assert_eq!(h.latest_gate(HEAD)["conclusion"], "success");
}

async fn the_repositorys_settings_win_and_configuration_says_where_each_came_from(
    h: ReviewHarness,
) {
    h.github.set_permission(REPO, "bob", "write");
    org_config(
        &h,
        "review:\n  maxInlineComments: 4\n  minConfidence: 85\n  specialist: [security]\n",
    );
    h.config("review:\n  maxInlineComments: 7\n");
    h.say("bob", "@parley configuration").await;
    let said = h.last_said();
    parley_tests::expect::says_all(
        &said,
        &[
            "| `review.maxInlineComments` | 7 | `.parley.yml` |",
            "| `review.minConfidence` | 85 | `octo-org/.github` (organisation) |",
            "| `review.judge` | true | default |",
            // The organisation's typo is reported as its own.
            "review.specialist",
            "in octo-org/.github's `.parley.yml`",
        ],
    );
    assert!(
        !said.contains("No organisation settings were read"),
        "{said}"
    );
}

/// GitHub fails the organisation's file: a review's last attempt goes on without it, and
/// says so; a question waits for it (the queue's retry), since who may talk and what the
/// gate holds may be set there, and the next try reads it (a failure is not cached).
async fn an_organisation_file_github_will_not_give_is_waited_for_and_read_again(h: ReviewHarness) {
    h.github.set_permission(REPO, "bob", "write");
    org_config(&h, "review:\n  minConfidence: 85\n");
    h.github
        .inject(parley_tests::fake_github::Injected::answering(
            "GET",
            format!("/repos/{ORG_SETTINGS}/contents/.parley.yml"),
            502,
            50,
        ));
    passes_find_nothing(&h.llm);
    h.run_attempt(job(ReviewTrigger::Opened, HEAD, "d-1"), 5, 5)
        .await
        .expect("review");
    parley_tests::expect::says_all(
        &h.first_review_body(),
        &["the organisation's settings are not applied"],
    );

    let question = top_level(&h, "bob", "@parley configuration");
    let err = h
        .conversation()
        .handle(question.clone())
        .await
        .expect_err("waits for the organisation's settings");
    assert!(matches!(err, JobError::Transient(_)), "{err:?}");
    assert_eq!(h.last_said(), "");
    h.github.clear_injected();
    h.conversation().handle(question).await.expect("answered");
    parley_tests::expect::says_all(
        &h.last_said(),
        &["| `review.minConfidence` | 85 | `octo-org/.github` (organisation) |"],
    );
}

/// A PR that edits the repository's `.parley.yml` is told what it would change, read as it
/// would be once merged: over the organisation's settings. The organisation's
/// `gate.blockOn`, set in neither version of the repository's file, is no change.
async fn a_pr_changing_the_repositorys_file_is_compared_over_the_organisations(h: ReviewHarness) {
    org_config(&h, "gate:\n  blockOn: [critical]\n");
    h.config("review:\n  maxInlineComments: 7\n");
    h.github.set_file(
        REPO,
        HEAD,
        ".parley.yml",
        "review:\n  maxInlineComments: 5\n",
    );
    h.github.set_files(
        REPO,
        PR,
        &[
            ("src/db.rs", "modified", DB_PATCH),
            (
                ".parley.yml",
                "modified",
                "@@ -1,2 +1,2 @@\n review:\n-  maxInlineComments: 7\n+  maxInlineComments: 5",
            ),
        ],
    );
    h.review_opened().await;
    let text = h.summary();
    parley_tests::expect::says_all(
        &text,
        &[
            "**This PR changes the rules Parley reviews by.**",
            "> - `.parley.yml` `review.maxInlineComments`: `7` → `5`",
        ],
    );
    assert!(!text.contains("gate.blockOn"), "{text}");
}
