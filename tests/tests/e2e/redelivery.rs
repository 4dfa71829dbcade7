//! Webhook events Parley failed to take are asked for again: the scheduled sweep through
//! the conversation worker, against the fake GitHub's `/app/hook/deliveries` over HTTP,
//! on both stores.

use parley_core::conversation::ConversationHandler;
use parley_core::ports::store::keys;
use parley_core::ports::{JobError, JobHandler};
use parley_core::redelivery::{self, MAX_REDELIVERIES, Sweep};
use parley_tests::fake_github::{Fault, FaultAction};
use parley_tests::rig::Rig;
use parley_tests::stores::Backend;
use serde_json::json;
use std::time::Duration;
use time::OffsetDateTime;

parley_tests::on_both_stores!(
    lost_events_are_asked_for_again_once,
    an_event_that_keeps_failing_is_given_up,
    nothing_is_asked_for_while_deliveries_still_fail,
    a_lost_event_pages_back_is_found,
    a_github_failure_fails_the_sweep_and_loses_nothing,
    a_listing_that_is_not_deliveries_fails_the_sweep,
    a_github_without_a_delivery_log_is_swept_without_failing,
);

/// Where the next sweep starts reading, as the store keeps it (unix seconds; 0: never).
async fn watermark(rig: &Rig) -> u64 {
    rig.store
        .counter("app#redelivery", "watermark")
        .await
        .expect("read")
}

async fn sweep(rig: &Rig, run: &str) -> Result<(), JobError> {
    ConversationHandler::new(rig.services())
        .handle(redelivery::job(run))
        .await
}

async fn lost_events_are_asked_for_again_once(backend: Backend) {
    let rig = Rig::start(backend).await;
    let github = &rig.github;
    let dropped = github.add_webhook_delivery("g-dropped", "pull_request", 502, 10);
    // The webhook that failed it died holding its claim on the delivery id.
    let held = keys::delivery("g-dropped");
    rig.store
        .claim(&held, Duration::from_secs(3600))
        .await
        .expect("claim");
    github.add_webhook_delivery("g-taken", "issue_comment", 202, 9);
    // Failed, then taken by a redelivery someone clicked in the App's settings.
    github.add_webhook_delivery("g-clicked", "issue_comment", 0, 30);
    github.add_webhook_delivery("g-clicked", "issue_comment", 202, 20);
    // No answer, then a 503: the latest attempt is the one sent again.
    github.add_webhook_delivery("g-twice", "issue_comment", 0, 40);
    let twice = github.add_webhook_delivery("g-twice", "issue_comment", 503, 5);
    // The webhook refused it (a bad signature): it would refuse it again.
    github.add_webhook_delivery("g-refused", "pull_request", 401, 3);
    // Older than the first sweep reads.
    github.add_webhook_delivery("g-ancient", "pull_request", 502, 7 * 60);

    sweep(&rig, "1").await.expect("the sweep");
    let mut asked = github.redelivery_requests();
    asked.sort_unstable();
    assert_eq!(asked, [dropped, twice]);
    assert!(
        !rig.store.is_claimed(&held).await.expect("read"),
        "the redelivery is not taken for a duplicate"
    );

    // The next sweep finds both taken by their redeliveries, and asks for nothing.
    sweep(&rig, "2").await.expect("the second sweep");
    assert_eq!(github.redelivery_requests().len(), 2);
    assert!(
        watermark(&rig).await > 0,
        "a complete sweep moves the watermark"
    );
}

async fn an_event_that_keeps_failing_is_given_up(backend: Backend) {
    let rig = Rig::start(backend).await;
    let services = rig.services();
    rig.github.answer_redeliveries_with(502);
    rig.github
        .add_webhook_delivery("g-broken", "pull_request", 502, 20);
    // A sweep every 20 minutes, each redelivery failing a moment after it was asked for.
    let start = OffsetDateTime::now_utc();
    let mut last = Sweep::default();
    for k in 0..i64::from(MAX_REDELIVERIES) + 2 {
        rig.github.stamp_redeliveries_at(20 * k);
        let now = start + time::Duration::minutes(20 * k + 1);
        last = redelivery::sweep(services.github.as_ref(), services.store.as_ref(), now)
            .await
            .expect("a sweep");
        assert!(!last.held, "sweep {k}: {last:?}");
        if k == i64::from(MAX_REDELIVERIES) {
            assert_eq!(last.given_up, ["g-broken"], "sweep {k}");
        }
    }
    assert!(last.given_up.is_empty(), "given up once: {last:?}");
    assert_eq!(
        rig.github.redelivery_requests().len(),
        MAX_REDELIVERIES as usize,
        "each failed attempt asked for once, the event at most {MAX_REDELIVERIES} times"
    );
}

async fn nothing_is_asked_for_while_deliveries_still_fail(backend: Backend) {
    let rig = Rig::start(backend).await;
    let lost = rig
        .github
        .add_webhook_delivery("g-lost", "pull_request", 502, 40);
    let also = rig
        .github
        .add_webhook_delivery("g-new", "issue_comment", 503, 2);
    sweep(&rig, "1").await.expect("the sweep");
    assert!(
        rig.github.redelivery_requests().is_empty(),
        "Parley is still failing: redeliveries would fail too"
    );
    // Deliveries are taken again: every event lost in the outage is asked for.
    rig.github
        .add_webhook_delivery("g-ok", "issue_comment", 202, 0);
    sweep(&rig, "2").await.expect("the sweep");
    let mut asked = rig.github.redelivery_requests();
    asked.sort_unstable();
    assert_eq!(asked, [lost, also]);
}

async fn a_lost_event_pages_back_is_found(backend: Backend) {
    let rig = Rig::start(backend).await;
    let lost = rig
        .github
        .add_webhook_delivery("g-lost", "issue_comment", 0, 50);
    for n in 0..230 {
        rig.github
            .add_webhook_delivery(&format!("g-{n}"), "issue_comment", 202, 40);
    }
    sweep(&rig, "1").await.expect("the sweep");
    assert_eq!(rig.github.redelivery_requests(), [lost]);
    let listed = rig
        .github
        .requests()
        .iter()
        .filter(|r| r.path == "/app/hook/deliveries")
        .count();
    assert_eq!(listed, 3, "three pages of 100");
}

async fn a_github_failure_fails_the_sweep_and_loses_nothing(backend: Backend) {
    let rig = Rig::start(backend).await;
    let lost = rig
        .github
        .add_webhook_delivery("g-lost", "pull_request", 504, 20);
    let fault = |path: &str, method: &'static str| Fault {
        method,
        path: path.to_string(),
        exact: false,
        skip: 0,
        // Every attempt the client makes (the rig's client tries twice).
        times: 2,
        action: FaultAction::Respond {
            status: 502,
            body: json!({ "message": "Server Error" }),
            headers: Vec::new(),
        },
    };
    // The listing fails: nothing asked, and the queue retries the sweep.
    rig.github.fault(fault("/app/hook/deliveries", "GET"));
    let err = sweep(&rig, "1").await.expect_err("GitHub failed");
    assert!(err.is_retried(), "{err}");
    // Asking fails: the claims go with it, so the retry asks again.
    rig.github.fault(fault("/attempts", "POST"));
    let err = sweep(&rig, "1").await.expect_err("GitHub failed");
    assert!(err.is_retried(), "{err}");
    assert!(rig.github.redelivery_requests().is_empty());
    sweep(&rig, "1").await.expect("the retry");
    assert_eq!(rig.github.redelivery_requests(), [lost]);
}

async fn a_listing_that_is_not_deliveries_fails_the_sweep(backend: Backend) {
    let rig = Rig::start(backend).await;
    let lost = rig
        .github
        .add_webhook_delivery("g-lost", "pull_request", 502, 20);
    rig.github
        .answer_next_listing(200, json!({ "message": "not a list of deliveries" }));
    let err = sweep(&rig, "1")
        .await
        .expect_err("an answer it cannot read");
    assert!(err.to_string().contains("/app/hook/deliveries"), "{err}");
    assert!(rig.github.redelivery_requests().is_empty());
    assert_eq!(
        watermark(&rig).await,
        0,
        "the watermark stays where nothing was read"
    );
    // GitHub answers properly again: the lost event is found.
    sweep(&rig, "2").await.expect("the sweep");
    assert_eq!(rig.github.redelivery_requests(), [lost]);
}

async fn a_github_without_a_delivery_log_is_swept_without_failing(backend: Backend) {
    // A GitHub Enterprise Server without `/app/hook/deliveries` answers 404: the sweep is
    // done (a warning says why nothing can be recovered), not a job failing every 15 min.
    let rig = Rig::start(backend).await;
    let lost = rig
        .github
        .add_webhook_delivery("g-lost", "pull_request", 502, 20);
    let no_log = || {
        rig.github
            .answer_next_listing(404, json!({ "message": "Not Found" }))
    };
    no_log();
    let services = rig.services();
    let swept = redelivery::sweep(
        services.github.as_ref(),
        services.store.as_ref(),
        OffsetDateTime::now_utc(),
    )
    .await
    .expect("not a failure");
    let nothing = Sweep {
        unavailable: true,
        ..Sweep::default()
    };
    assert_eq!(swept, nothing);
    assert_eq!(watermark(&rig).await, 0);
    // Through the worker the same answer is a job done, not a failure.
    no_log();
    sweep(&rig, "1").await.expect("a job done");
    assert!(rig.github.redelivery_requests().is_empty());
    // Where the log exists, the lost event is found as ever.
    sweep(&rig, "2").await.expect("the sweep");
    assert_eq!(rig.github.redelivery_requests(), [lost]);
}
