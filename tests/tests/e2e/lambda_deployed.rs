//! The deployed path end to end: the three Lambda binaries (not `parley serve`) under an
//! emulated Lambda Runtime API, against DynamoDB, SQS and Secrets Manager on moto with the
//! tables and queues of template.yaml, the SQS event source mappings played as AWS
//! documents them, and GitHub and the LLM as HTTP fakes. See `parley_tests::lambda_stack`.
//!
//! Needs moto (`scripts/test.sh` starts it); fails, never skips, without it.

use parley_core::markers::{self, ReplyMarker};
use parley_core::ports::Installations;
use parley_tests::deliveries::{self, Source};
use parley_tests::fake_embeddings::FakeEmbeddings;
use parley_tests::fake_github::{FakeGitHub, Fault, FaultAction};
use parley_tests::fake_llm::FakeLlm;
use parley_tests::lambda_emulator::Outcome;
use parley_tests::lambda_stack::{self, LambdaStack, StackOptions, Template};
use parley_tests::rig::{AUTHOR, BASE, BOT, Fakes, HEAD, OWNER};
use serde_json::{Value, json};

const NAME: &str = "deployed";
const REPO: &str = "octo-org/deployed";
const INSTALLATION: u64 = 91;
const PR: u64 = 7;
const OTHER_PR: u64 = 8;
const ANSWER: &str = "The caller validates the id first, so this is safe.";
/// Polls per queue before a drain gives up: far more than any scenario needs.
const MAX_POLLS: usize = 12;

/// The fakes and the stack, with PRs #7 and #8 by alice changing `src/db.rs`.
struct Rig {
    github: FakeGitHub,
    llm: FakeLlm,
    source: Source,
    stack: LambdaStack,
}

impl Rig {
    async fn new() -> Rig {
        Rig::with(StackOptions::default()).await
    }

    /// The rig on a stack a test changed (a permission taken out, embeddings on).
    async fn with(options: StackOptions) -> Rig {
        let fakes = Fakes::start().await;
        for pr in [PR, OTHER_PR] {
            fakes.open_db_pull(REPO, pr, AUTHOR);
        }
        fakes.answer_everything_with(ANSWER);
        let stack = LambdaStack::start_with(&fakes.github, &fakes.llm, options).await;
        let Fakes { github, llm } = fakes;
        Rig {
            github,
            llm,
            source: Source::new(OWNER, NAME, INSTALLATION),
            stack,
        }
    }

    /// A top-level question from alice on `pr`: its comment id and the delivery payload.
    fn mention(&self, pr: u64, text: &str) -> (u64, Value) {
        let id = self.github.add_issue_comment(REPO, pr, AUTHOR, text);
        let comment = self
            .github
            .issue_comments(REPO, pr)
            .into_iter()
            .find(|c| c["id"] == id)
            .expect("the comment is on the fake");
        (id, deliveries::pr_issue_comment(&self.source, pr, &comment))
    }

    async fn deliver_accepted(&self, event: &str, delivery: &str, payload: &Value) {
        let (status, body) = self.stack.deliver(event, delivery, payload).await;
        assert_eq!(status, 202, "{delivery}: {body}\n{}", self.stack.logs());
        assert!(body.contains("accepted"), "{delivery}: {body}");
    }

    /// Run the conversation queue dry: every job answered, none left for a retry.
    async fn drain_conversations_cleanly(&self) {
        let polls = self.stack.conversations.drain(MAX_POLLS).await;
        assert_responded(&polls, &self.stack.logs());
        assert!(
            polls.iter().all(|p| p.failed.is_empty()),
            "{polls:#?}\n{}",
            self.stack.logs()
        );
    }

    /// Parley's replies answering comment `id` on `pr`.
    fn replies_to(&self, pr: u64, id: u64) -> Vec<Value> {
        self.github
            .issue_comments(REPO, pr)
            .into_iter()
            .filter(|c| {
                c["user"]["login"] == BOT
                    && markers::find::<ReplyMarker>(
                        c["body"].as_str().unwrap_or(""),
                        markers::kind::REPLY,
                    )
                    .is_some_and(|m| m.reply_to == id)
            })
            .collect()
    }

    /// Everything Parley posted on `pr`'s conversation.
    fn parley_comments(&self, pr: u64) -> Vec<Value> {
        self.github
            .issue_comments(REPO, pr)
            .into_iter()
            .filter(|c| c["user"]["login"] == BOT)
            .collect()
    }
}

/// Every invocation of a poll ended with a response (not a function error or timeout).
fn assert_responded(polls: &[parley_tests::lambda_esm::Poll], logs: &str) {
    for poll in polls {
        assert!(
            matches!(poll.outcome, Some(Outcome::Response(_))),
            "the worker did not answer the invocation: {:?}\n{logs}",
            poll.outcome
        );
    }
}

#[tokio::test]
async fn a_mention_is_answered_once() {
    let rig = Rig::new().await;
    let phrase = "why is building this query safe";
    let (question, payload) = rig.mention(PR, &format!("@parley {phrase}?"));
    rig.deliver_accepted("issue_comment", "e2e-mention", &payload)
        .await;

    let polls = rig.stack.conversations.drain(MAX_POLLS).await;
    assert_responded(&polls, &rig.stack.logs());
    assert_eq!(polls.len(), 1, "one receive, one invocation: {polls:#?}");
    assert_eq!(polls[0].received.len(), 1);
    assert!(
        polls[0].failed.is_empty(),
        "no batch item failures: {polls:#?}\n{}",
        rig.stack.logs()
    );
    assert_eq!(
        polls[0].received[0].group,
        format!("{REPO}#{PR}"),
        "grouped by PR"
    );
    let replies = rig.replies_to(PR, question);
    assert_eq!(replies.len(), 1, "{replies:#?}\n{}", rig.stack.logs());
    assert!(
        replies[0]["body"].as_str().unwrap_or("").contains(ANSWER),
        "{replies:#?}"
    );

    // SQS delivers at least once: the same job arriving again (a delete that got lost)
    // finds the claim in DynamoDB and the marker on GitHub, and posts nothing.
    let job = &polls[0].received[0];
    rig.stack
        .resources
        .sqs
        .send_message()
        .queue_url(rig.stack.conversations.queue_url())
        .message_body(&job.body)
        .message_group_id(&job.group)
        .message_deduplication_id("e2e-mention-redelivered")
        .send()
        .await
        .expect("send the job again");
    let again = rig.stack.conversations.drain(MAX_POLLS).await;
    assert_responded(&again, &rig.stack.logs());
    assert_eq!(again.len(), 1, "{again:#?}");
    assert!(again[0].failed.is_empty(), "{again:#?}");
    assert_eq!(
        rig.replies_to(PR, question).len(),
        1,
        "answered once, however often SQS delivers"
    );
    assert_eq!(rig.parley_comments(PR).len(), 1, "no other note either");
    assert_eq!(
        rig.llm.calls_containing(phrase),
        1,
        "the model was asked once"
    );
    assert_eq!(
        rig.stack.conversation_worker.starts(),
        1,
        "one warm execution environment served both invocations"
    );

    // Each function reached AWS under its own role (what its role refuses fails the test
    // when the stack is dropped): the webhook read its secret and queued the job; the
    // conversation worker's mapping received it and the worker read the App's key.
    let resources = &rig.stack.resources;
    let webhook = rig.stack.asked(0);
    for needed in [
        format!(
            "secretsmanager:GetSecretValue on {}",
            rig.stack.secret_arns.webhook_secret
        ),
        format!("sqs:SendMessage on {}", resources.arns["ConversationQueue"]),
    ] {
        assert!(webhook.contains(&needed), "{needed}: {webhook:#?}");
    }
    let worker = rig.stack.asked(1);
    for needed in [
        format!(
            "sqs:ReceiveMessage on {}",
            resources.arns["ConversationQueue"]
        ),
        format!(
            "secretsmanager:GetSecretValue on {}",
            rig.stack.secret_arns.private_key
        ),
    ] {
        assert!(worker.contains(&needed), "{needed}: {worker:#?}");
    }
}

#[tokio::test]
async fn a_review_asked_for_in_a_comment_and_the_lost_automatic_one_run_within_the_roles() {
    let rig = Rig::new().await;
    // PR #7's `opened` never reached Parley; alice, who may write, asks for a review.
    rig.github.set_permission(REPO, AUTHOR, "write");
    let (_, payload) = rig.mention(PR, "@parley review");
    rig.deliver_accepted("issue_comment", "e2e-ask-review", &payload)
        .await;
    rig.stack.drain(MAX_POLLS).await;

    let gate: Vec<Value> = rig
        .github
        .check_runs(REPO)
        .into_iter()
        .filter(|c| c["name"] == "Parley review")
        .collect();
    assert_eq!(gate.len(), 1, "{gate:#?}\n{}", rig.stack.logs());
    assert_eq!(gate[0]["status"], "completed", "{gate:#?}");
    let sent = format!(
        "sqs:SendMessage on {}",
        rig.stack.resources.arns["ReviewQueue"]
    );
    assert!(
        rig.stack.asked(1).contains(&sent),
        "the conversation worker queued the review: {:#?}",
        rig.stack.asked(1)
    );
    assert!(
        rig.stack.asked(2).contains(&sent),
        "the review worker queued the lost automatic review: {:#?}",
        rig.stack.asked(2)
    );
}

#[tokio::test]
async fn an_uninstall_is_purged_within_the_conversation_workers_role() {
    let rig = Rig::new().await;
    let (_, payload) = rig.mention(PR, "@parley why is this safe?");
    rig.deliver_accepted("issue_comment", "e2e-before-uninstall", &payload)
        .await;
    rig.stack.drain(MAX_POLLS).await;
    assert_eq!(rig.parley_comments(PR).len(), 1, "{}", rig.stack.logs());

    let mut uninstalled = parley_tests::webhook_example("installation", "deleted.payload.json");
    uninstalled["installation"]["id"] = INSTALLATION.into();
    uninstalled["installation"]["account"]["login"] = OWNER.into();
    uninstalled["installation"]["account"]["id"] = parley_tests::tenants::owner_id(OWNER).into();
    uninstalled["repositories"] = json!([{
        "id": parley_tests::tenants::repo_id(REPO),
        "node_id": "x",
        "name": NAME,
        "full_name": REPO,
        "private": false,
    }]);
    rig.deliver_accepted("installation", "e2e-uninstall", &uninstalled)
        .await;
    rig.drain_conversations_cleanly().await;
    let scanned = format!(
        "dynamodb:Scan on {}",
        rig.stack.resources.arns["FindingsTable"]
    );
    assert!(
        rig.stack.asked(1).iter().filter(|a| **a == scanned).count() >= 1,
        "the purge looked for the repository's findings: {:#?}",
        rig.stack.asked(1)
    );
    assert!(
        rig.stack
            .resources
            .store()
            .installation(INSTALLATION)
            .await
            .expect("read the installation")
            .is_none(),
        "the installation's record is gone"
    );
}

#[tokio::test]
async fn a_permission_missing_from_the_template_fails_the_job_as_it_would_in_aws() {
    let template =
        Template::load().without_statement("ReviewWorkerFunction", "AdoptNameKeyedRecords");
    let rig = Rig::with(StackOptions {
        template,
        ..StackOptions::default()
    })
    .await;
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.deliver_accepted("pull_request", "e2e-no-scan", &opened)
        .await;
    let poll = rig.stack.reviews.poll().await;
    assert_eq!(poll.failed.len(), 1, "the review failed: {poll:#?}");
    let refused = rig.stack.take_refusals();
    let expected = format!(
        "ReviewWorkerFunctionRole may not dynamodb:Scan on {}",
        rig.stack.resources.arns["FindingsTable"]
    );
    assert_eq!(refused.first(), Some(&expected), "{refused:#?}");
    assert!(rig.github.check_runs(REPO).is_empty() || rig.github.reviews(REPO, PR).is_empty());
}

#[tokio::test]
async fn a_pull_request_is_reviewed_with_its_check_run() {
    let rig = Rig::new().await;
    parley_tests::scripts::one_blocking_finding(&rig.llm);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.deliver_accepted("pull_request", "e2e-review", &opened)
        .await;
    assert_eq!(
        rig.stack
            .resources
            .depth(&rig.stack.resources.var("PARLEY_REVIEW_QUEUE_URL"))
            .await,
        1,
        "the webhook enqueued one review job"
    );

    let polls = rig.stack.reviews.drain(MAX_POLLS).await;
    assert_responded(&polls, &rig.stack.logs());
    assert_eq!(polls.len(), 1, "{polls:#?}\n{}", rig.stack.logs());
    assert!(
        polls[0].failed.is_empty(),
        "{polls:#?}\n{}",
        rig.stack.logs()
    );

    parley_tests::expect::reviewed_once_with_one_blocking_finding(
        &rig.github,
        &rig.stack.resources.store(),
        REPO,
        PR,
        HEAD,
    )
    .await;
}

#[tokio::test]
async fn a_duplicate_delivery_is_enqueued_once() {
    let rig = Rig::new().await;
    let (question, payload) = rig.mention(PR, "@parley is this query injectable?");
    rig.deliver_accepted("issue_comment", "e2e-duplicate", &payload)
        .await;
    // GitHub redelivers (a timeout on its side, or "Redeliver" in the App settings).
    let (status, body) = rig
        .stack
        .deliver("issue_comment", "e2e-duplicate", &payload)
        .await;
    assert_eq!(status, 202, "{body}");
    assert!(body.contains("duplicate"), "{body}");
    let queue = rig.stack.resources.var("PARLEY_CONVERSATION_QUEUE_URL");
    assert_eq!(
        rig.stack.resources.depth(&queue).await,
        1,
        "the second delivery was not enqueued"
    );
    assert_eq!(
        rig.stack.webhook.starts(),
        1,
        "one warm webhook served both deliveries (the dedup record is in DynamoDB, not in the process)"
    );

    let polls = rig.stack.conversations.drain(MAX_POLLS).await;
    assert_responded(&polls, &rig.stack.logs());
    assert_eq!(polls.len(), 1, "{polls:#?}");
    assert_eq!(rig.replies_to(PR, question).len(), 1);
}

#[tokio::test]
async fn a_message_that_always_fails_lands_in_the_dead_letter_queue() {
    let rig = Rig::new().await;
    // GitHub answers 500 to every read of PR #7, for good: no attempt can succeed.
    rig.github.fault(Fault {
        method: "GET",
        path: format!("/repos/{REPO}/pulls/{PR}"),
        exact: true,
        skip: 0,
        times: usize::MAX,
        action: FaultAction::Respond {
            status: 500,
            body: json!({ "message": "Server Error" }),
            headers: Vec::new(),
        },
    });
    let (poisoned, payload) = rig.mention(PR, "@parley does this leak?");
    rig.deliver_accepted("issue_comment", "e2e-poison", &payload)
        .await;
    let (healthy, payload) = rig.mention(OTHER_PR, "@parley and this one?");
    rig.deliver_accepted("issue_comment", "e2e-healthy", &payload)
        .await;

    let polls = rig.stack.conversations.drain(MAX_POLLS).await;
    assert_responded(&polls, &rig.stack.logs());
    let poison_group = format!("{REPO}#{PR}");

    // One batch held both PRs' jobs; only #7's came back, #8's was deleted and answered.
    assert_eq!(polls[0].received.len(), 2, "{polls:#?}");
    assert_eq!(
        polls[0].failed.len(),
        1,
        "a partial batch failure: {polls:#?}"
    );
    let receives: Vec<u32> = polls
        .iter()
        .flat_map(|p| &p.received)
        .filter(|r| r.group == poison_group)
        .map(|r| r.receive_count)
        .collect();
    let max_receive = rig
        .stack
        .resources
        .max_receive_count("PARLEY_CONVERSATION_QUEUE_URL")
        .await;
    assert_eq!(
        receives,
        (1..=max_receive).collect::<Vec<_>>(),
        "received maxReceiveCount times, then no more: {polls:#?}"
    );
    for poll in &polls {
        for received in poll.received.iter().filter(|r| r.group == poison_group) {
            assert!(
                poll.failed.contains(&received.message_id),
                "the worker reported the poisoned job failed every time: {poll:#?}"
            );
        }
    }

    let dead = rig
        .stack
        .resources
        .peek(&rig.stack.resources.var("PARLEY_CONVERSATION_DLQ_URL"))
        .await;
    assert_eq!(dead.len(), 1, "in the dead-letter queue: {dead:#?}");
    let job: Value = serde_json::from_str(&dead[0].0).expect("the dead letter is a job");
    assert!(
        dead[0].0.contains("e2e-poison"),
        "the poisoned delivery's job: {job:#}"
    );
    assert_eq!(
        rig.stack
            .resources
            .depth(&rig.stack.resources.var("PARLEY_CONVERSATION_QUEUE_URL"))
            .await,
        0,
        "nothing left on the queue"
    );
    assert!(
        rig.parley_comments(PR).is_empty(),
        "nothing posted on the PR GitHub cannot be read for: {:#?}",
        rig.parley_comments(PR)
    );
    assert_eq!(rig.replies_to(OTHER_PR, healthy).len(), 1);
    assert!(rig.replies_to(PR, poisoned).is_empty());
}

#[tokio::test]
async fn the_webhook_secret_and_the_app_key_are_read_from_secrets_manager_by_arn() {
    let rig = Rig::new().await;
    let arns = rig.stack.secret_arns.clone();
    for arn in [&arns.webhook_secret, &arns.private_key, &arns.llm_api_key] {
        assert!(arn.starts_with("arn:aws:secretsmanager:"), "{arn}");
    }
    // The functions are given ARNs only, as the template wires them: no secret value is
    // in any function's configuration.
    let stack = &rig.stack;
    assert_eq!(
        stack.webhook.env("GITHUB_WEBHOOK_SECRET"),
        Some(arns.webhook_secret.as_str())
    );
    for worker in [&stack.conversation_worker, &stack.review_worker] {
        assert_eq!(
            worker.env("GITHUB_PRIVATE_KEY"),
            Some(arns.private_key.as_str())
        );
        assert_eq!(worker.env("LLM_API_KEY"), Some(arns.llm_api_key.as_str()));
        assert_eq!(worker.env("GITHUB_WEBHOOK_SECRET"), None);
    }
    assert_eq!(stack.webhook.env("GITHUB_PRIVATE_KEY"), None);
    let (question, payload) = rig.mention(PR, "@parley where does this id come from?");

    // A function that took the variable for the secret would accept this signature.
    let (status, body) = rig
        .stack
        .deliver_signed(&arns.webhook_secret, "issue_comment", "e2e-arn", &payload)
        .await;
    assert_eq!(status, 401, "signed with the ARN itself: {body}");
    rig.deliver_accepted("issue_comment", "e2e-secret", &payload)
        .await;

    let polls = rig.stack.conversations.drain(MAX_POLLS).await;
    assert_responded(&polls, &rig.stack.logs());
    assert_eq!(
        rig.replies_to(PR, question).len(),
        1,
        "{}",
        rig.stack.logs()
    );

    // The installation token was minted with a JWT signed by the App key in the secret.
    let mints = rig.github.requests_to("POST", "/access_tokens");
    assert!(!mints.is_empty(), "the worker minted an installation token");
    for mint in &mints {
        let jwt = mint
            .authorization
            .as_deref()
            .and_then(|h| h.strip_prefix("Bearer "))
            .expect("the mint carries the App JWT");
        let claims = verify_app_jwt(jwt);
        assert_eq!(claims["iss"], "12345", "{claims:#}");
    }
    // The LLM key came from its secret too.
    let prompts = rig.llm.prompts();
    assert!(!prompts.is_empty());
    for prompt in prompts {
        assert_eq!(
            prompt.api_key.as_deref(),
            Some(lambda_stack::LLM_API_KEY),
            "the LLM was called with the key from Secrets Manager"
        );
    }
}

/// Verify an RS256 JWT against the test App's public key; return its claims.
fn verify_app_jwt(jwt: &str) -> Value {
    use base64::Engine;
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::signature::Verifier;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = jwt.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        panic!("not a JWT: {jwt}");
    };
    let header: Value = serde_json::from_slice(&b64.decode(header).expect("header")).expect("json");
    assert_eq!(header["alg"], "RS256", "{header:#}");
    let public_pem = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/tmp/parley-github-test-key/app.pub.pem"),
    )
    .expect("the test App's public key, written beside its private key");
    let key = rsa::RsaPublicKey::from_pkcs1_pem(&public_pem).expect("public key");
    let verifier = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(key);
    let signature =
        rsa::pkcs1v15::Signature::try_from(b64.decode(signature).expect("signature").as_slice())
            .expect("signature bytes");
    verifier
        .verify(
            format!("{}.{}", jwt.split('.').next().unwrap_or(""), claims).as_bytes(),
            &signature,
        )
        .expect("the App JWT is signed with the App's private key");
    serde_json::from_slice(&b64.decode(claims).expect("claims")).expect("claims are JSON")
}

#[tokio::test]
async fn a_reviews_documents_are_embedded_from_the_embedding_queue_within_the_roles() {
    const DIMENSIONS: usize = 256;
    let embedder = FakeEmbeddings::start(DIMENSIONS).await;
    let rig = Rig::with(StackOptions {
        embeddings: Some((embedder.openai_base(), DIMENSIONS)),
        ..StackOptions::default()
    })
    .await;
    parley_tests::scripts::one_blocking_finding(&rig.llm);
    let opened = deliveries::pull_request(&rig.source, "opened", PR, AUTHOR, HEAD, BASE, None);
    rig.deliver_accepted("pull_request", "e2e-embed", &opened)
        .await;
    rig.stack.drain(MAX_POLLS).await;

    assert!(
        !embedder.requests().is_empty(),
        "the review's hunks and finding were embedded\n{}",
        rig.stack.logs()
    );
    let queue = &rig.stack.resources.arns["EmbeddingQueue"];
    let key = rig.stack.secret_arns.embeddings_api_key.clone();
    let review_worker = rig.stack.asked(2);
    for needed in [
        format!("sqs:SendMessage on {queue}"),
        format!("sqs:ReceiveMessage on {queue}"),
        format!(
            "secretsmanager:GetSecretValue on {}",
            key.unwrap_or_default()
        ),
    ] {
        assert!(
            review_worker.contains(&needed),
            "{needed}: {review_worker:#?}"
        );
    }
}

#[tokio::test]
async fn the_schedule_sweeps_for_lost_deliveries_within_the_conversation_workers_role() {
    let rig = Rig::new().await;
    let lost = rig
        .github
        .add_webhook_delivery("g-lost", "issue_comment", 502, 20);
    let (group, body) =
        Template::load().scheduled_message("RedeliverySweepRule", "2026-11-26T22:00:00Z");
    // As EventBridge sends it: no deduplication id (the queue deduplicates by content).
    rig.stack
        .resources
        .sqs
        .send_message()
        .queue_url(rig.stack.conversations.queue_url())
        .message_body(body)
        .message_group_id(group)
        .send()
        .await
        .expect("the scheduled message is accepted");
    rig.drain_conversations_cleanly().await;
    assert_eq!(rig.github.redelivery_requests(), [lost]);
}
