//! Retrieval end to end: a review remembers the PR's hunks and findings, the
//! embedding job gives them vectors, and a later PR touching the same function is reviewed
//! with PR 1's hunk in its specialist prompts and PR 1's finding (and how it ended) in its
//! judge prompt; a question on a later PR is answered with an earlier review thread in its
//! prompt, and the answer says what context it used. With the embeddings server down or
//! answering garbage, the later review comes out the same (lexical search only): only the
//! "Context used" section says so.
//!
//! Everything over real HTTP: the fake GitHub, the fake LLM and the fake embeddings server
//! with the OpenAI-compatible client; every scenario on SQLite and on DynamoDB (moto).

use parley_core::Job;
use parley_core::conversation::ConversationHandler;
use parley_core::embedding::EmbeddingHandler;
use parley_core::job::ReviewTrigger;
use parley_core::ports::{Corpus, Embedder, FindingState, JobHandler, PollingQueue, QueueName};
use parley_core::repo::ConfigLoader;
use parley_core::review::ReviewHandler;
use parley_core::services::Services;
use parley_tests::clients::{openai_embedder, unreachable_embedder};
use parley_tests::deliveries::{self, Source};
use parley_tests::fake_embeddings::{FakeEmbeddings, Trouble};
use parley_tests::review_harness::CONVERSATION;
use parley_tests::rig::{BASE, Fakes, HEAD as HEAD1, OWNER, Rig};
use parley_tests::stores::Backend;
use parley_tests::tenants::key;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const NAME: &str = "recall";
const REPO: &str = "octo-org/recall";
const INSTALLATION: u64 = 91;
const HEAD2: &str = "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2";
const MODEL: &str = "nomic-embed-text";
const DIMS: usize = 64;

const PR1: u64 = 1;
const TITLE1: &str = "Parse headers strictly";
/// PR 1 adds the colon check to `parse_header` (new-file lines 10-17, 11-15 added).
const PATCH1: &str = "@@ -10,3 +10,8 @@ fn parse_header(line: &str) -> Result<Header, HeaderError>\n     let line = line.trim();\n+    let (name, value) = line\n+        .split_once(':')\n+        .ok_or(HeaderError::MissingColon)?;\n+    let name = name.trim().to_ascii_lowercase();\n+    validate_header_name(&name)?;\n     Ok(Header { name, value })\n }";
/// A line only PR 1's hunk has: seeing it in PR 2's prompt means retrieval brought it.
const PR1_LINE: &str = ".ok_or(HeaderError::MissingColon)?;";

const PR2: u64 = 2;
const TITLE2: &str = "Accept folded header values";
/// PR 2 changes the same function (new-file lines 14-20, 15-18 added).
const PATCH2: &str = "@@ -14,3 +14,7 @@ fn parse_header(line: &str) -> Result<Header, HeaderError>\n     validate_header_name(&name)?;\n+    let value = value.trim_start();\n+    if value.is_empty() {\n+        return Err(HeaderError::EmptyValue);\n+    }\n     Ok(Header { name, value })\n }";

const FINDING1: &str = "Missing colon error drops the offending header line";
const FINDING2: &str = "Empty header value rejected without the header name";
const JUDGE: &str = "final judge of an automated code review";
const SPECIALIST: &str = "You are reviewing a pull request for Parley";
/// Words only bob's reply in PR 1's thread has.
const BOB_SAID: &str = "the tokenizer rejects colonless lines before parse_header runs";

parley_tests::on_both_stores!(
    a_later_review_sees_the_earlier_hunk_and_how_its_finding_ended,
    embeddings_down_or_garbage_change_nothing_but_the_context_note,
    retrieval_off_remembers_and_retrieves_nothing,
    an_answer_cites_an_earlier_review_thread,
    a_question_answered_in_the_pr_conversation_is_found_by_a_later_review,
    a_finding_held_again_after_a_concession_is_shown_open,
);

/// One repository's world: a [`Rig`] (fakes, one store behind both ports, a local queue),
/// the fake embeddings server, and services with an embedder on it. Derefs to the rig.
struct World {
    rig: Rig,
    embeddings: FakeEmbeddings,
    services: Services,
}

impl std::ops::Deref for World {
    type Target = Rig;

    fn deref(&self) -> &Rig {
        &self.rig
    }
}

impl World {
    async fn start(backend: Backend) -> Self {
        let (rig, embeddings) = tokio::join!(Rig::start(backend), FakeEmbeddings::start(DIMS));
        let Fakes { github, llm } = &rig.fakes;
        github.set_permission(REPO, "bob", "write");
        for (number, title, head, patch) in
            [(PR1, TITLE1, HEAD1, PATCH1), (PR2, TITLE2, HEAD2, PATCH2)]
        {
            github.add_pull(REPO, number, "alice", head, BASE);
            github.update_pull(REPO, number, |pr| {
                pr["title"] = title.into();
                pr["html_url"] = format!("https://github.com/{REPO}/pull/{number}").into();
                pr["base"]["repo"]["default_branch"] = "main".into();
            });
            github.set_files(REPO, number, &[("src/parse.rs", "modified", patch)]);
        }
        llm.default_reply(r#"{"findings": []}"#);
        llm.answer(
            &format!("Pull request title: {TITLE1}"),
            &findings(&[(13, FINDING1)]),
        );
        llm.answer(
            &format!("Pull request title: {TITLE2}"),
            &findings(&[(16, FINDING2)]),
        );
        let embedder = openai_embedder(&embeddings, MODEL, DIMS, Duration::from_secs(5));
        let services = rig.services_with(Some(Arc::new(embedder)));
        World {
            rig,
            embeddings,
            services,
        }
    }

    /// Services whose embedder is `embedder` (the same store, queue and fakes).
    fn services_with(&self, embedder: Option<Arc<dyn Embedder>>) -> Services {
        Services {
            embedder,
            ..self.services.clone()
        }
    }

    /// Services with a configuration loader of their own, which reads `.parley.yml` anew.
    fn with_fresh_config(&self) -> Services {
        Services {
            config: Arc::new(ConfigLoader::new(
                self.services.github.clone(),
                ConfigLoader::DEFAULT_TTL,
            )),
            ..self.services.clone()
        }
    }

    async fn review(&self, services: &Services, number: u64, head: &str) {
        ReviewHandler::new(services.clone())
            .handle(review_job(number, head))
            .await
            .expect("review");
    }

    /// Run every embedding job waiting on the queue; the documents they embedded.
    async fn embed_all(&self) -> usize {
        let handler = EmbeddingHandler::new(self.services.clone());
        let mut embedded = 0;
        loop {
            let got = self
                .queue
                .receive(QueueName::Embedding, 10, Duration::from_secs(30))
                .await
                .expect("receive");
            if got.is_empty() {
                return embedded;
            }
            for message in got {
                let Job::Embed(job) = serde_json::from_str::<Job>(&message.body).expect("job")
                else {
                    panic!("not an embedding job: {}", message.body);
                };
                embedded += handler.embed(&job).await.expect("embedding job").embedded;
                self.queue
                    .ack(QueueName::Embedding, &message.receipt)
                    .await
                    .expect("ack");
            }
        }
    }

    async fn documents(&self, corpus: Corpus) -> Vec<parley_core::ports::Document> {
        self.corpus
            .documents(&key(REPO), corpus, 100)
            .await
            .expect("corpus read")
    }

    /// The summary body of PR `number`'s only review.
    fn summary(&self, number: u64) -> String {
        let reviews = self.github.reviews(REPO, number);
        assert_eq!(reviews.len(), 1, "{reviews:#?}");
        reviews[0]["body"].as_str().unwrap_or_default().to_string()
    }

    /// PR 1's finding as stored now.
    async fn pr1_finding(&self) -> parley_core::ports::Finding {
        self.store
            .findings_for_pr(&key(REPO), PR1)
            .await
            .expect("findings")
            .into_iter()
            .find(|f| f.title == FINDING1)
            .expect("PR 1's finding is stored")
    }

    /// PR 1's finding, rejected with a 👎 and the PR closed (the bookkeeping job records
    /// the outcome, which must reach the finding's retrieval document).
    async fn reject_finding_and_close_pr1(&self) {
        let finding = self.pr1_finding().await;
        // A maintainer's 👎: reactions count only from people with `gate.resolveBy`.
        self.github.set_permission(REPO, "carol", "write");
        self.github.react_to_review_comment(
            finding.comment_id.expect("posted inline"),
            "-1",
            "carol",
        );
        self.github.update_pull(REPO, PR1, |pr| {
            pr["state"] = "closed".into();
            pr["merged"] = true.into();
        });
        let closed = deliveries::closed(&source(), PR1, true);
        ConversationHandler::new(self.services.clone())
            .handle(deliveries::job("pull_request", "close-1", &closed))
            .await
            .expect("bookkeeping");
    }
}

/// Everything a reader of PR 2's review sees, but the "Context used" section.
#[derive(Debug, PartialEq)]
struct Seen {
    summary: String,
    comments: Vec<(String, u64, String)>,
    conclusion: String,
    prompts_carry_pr1: bool,
}

fn seen(world: &World) -> Seen {
    let summary = world.summary(PR2);
    let comments = world
        .github
        .review_comments(REPO, PR2)
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap_or_default().to_string(),
                c["line"].as_u64().unwrap_or_default(),
                c["body"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let check = world
        .github
        .check_runs(REPO)
        .into_iter()
        .rfind(|c| c["head_sha"] == HEAD2)
        .expect("PR 2's check run");
    let pass_prompts = world.pass_prompts(TITLE2);
    Seen {
        summary: without_context_used(&summary),
        comments,
        conclusion: check["conclusion"].as_str().unwrap_or_default().to_string(),
        prompts_carry_pr1: !pass_prompts.is_empty()
            && pass_prompts.iter().all(|p| p.contains(PR1_LINE)),
    }
}

impl World {
    /// The specialist prompts of the review of the PR titled `title`.
    fn pass_prompts(&self, title: &str) -> Vec<String> {
        self.llm
            .prompts()
            .iter()
            .map(|p| p.text())
            .filter(|t| {
                t.contains(SPECIALIST)
                    && !t.contains(JUDGE)
                    && t.contains(&format!("Pull request title: {title}"))
            })
            .collect()
    }

    fn judge_prompts(&self) -> Vec<String> {
        self.llm
            .prompts()
            .iter()
            .map(|p| p.text())
            .filter(|t| t.contains(JUDGE))
            .collect()
    }
}

/// PR 1 reviewed, its documents embedded, its finding rejected; then PR 2 reviewed with
/// `services` (whose embedder may be broken).
async fn pr1_then_pr2(world: &World, services: &Services) {
    world.review(&world.services, PR1, HEAD1).await;
    world.embed_all().await;
    world.reject_finding_and_close_pr1().await;
    world.review(services, PR2, HEAD2).await;
}

async fn a_later_review_sees_the_earlier_hunk_and_how_its_finding_ended(backend: Backend) {
    let world = World::start(backend).await;
    world.review(&world.services, PR1, HEAD1).await;

    // Remembered at publish: PR 1's hunk and its finding, keyed and attributed.
    let code = world.documents(Corpus::Code).await;
    assert_eq!(code.len(), 1, "{code:#?}");
    assert!(code[0].text.contains(PR1_LINE), "{}", code[0].text);
    assert_eq!(code[0].occurrences[0].pr, PR1);
    assert_eq!(code[0].occurrences[0].pr_title, TITLE1);
    assert_eq!(
        code[0].function_context.as_deref(),
        Some("fn parse_header(line: &str) -> Result<Header, HeaderError>")
    );
    let found = world.documents(Corpus::Finding).await;
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].text.starts_with(FINDING1), "{}", found[0].text);
    assert_eq!(found[0].attributes["state"], "open");
    assert!(code[0].vector.is_none() && found[0].vector.is_none());
    // Nothing earlier to use: no "Context used" in PR 1's summary.
    assert!(!world.summary(PR1).contains("Context used"));

    // The embedding job gives both their vectors.
    assert_eq!(world.embed_all().await, 2);
    let code = world.documents(Corpus::Code).await;
    let vector = code[0].vector.as_ref().expect("the hunk is embedded");
    assert_eq!((vector.model.as_str(), vector.dimensions()), (MODEL, DIMS));

    // How PR 1's finding ended reaches its document.
    world.reject_finding_and_close_pr1().await;
    let found = world.documents(Corpus::Finding).await;
    assert_eq!(
        found[0].attributes.get("verdict").map(String::as_str),
        Some("rejected")
    );
    assert_eq!(
        found[0].attributes.get("signal").map(String::as_str),
        Some("thumbs_down")
    );
    assert!(found[0].vector.is_some(), "same text, the vector stays");

    let asked_before = world.embeddings.texts_asked();
    world.review(&world.services, PR2, HEAD2).await;

    // One retrieval for the whole review: one query embedding, shared by every pass.
    assert_eq!(world.embeddings.texts_asked(), asked_before + 1);
    let passes = world.pass_prompts(TITLE2);
    assert_eq!(passes.len(), 4, "four specialists (no guideline files)");
    for prompt in &passes {
        assert!(
            prompt.contains(PR1_LINE),
            "PR 1's hunk is in every pass:\n{prompt}"
        );
        assert!(
            prompt.contains("Code from PR #1 — ")
                && prompt.contains(&format!("<snippet>\nPR #1 title: {TITLE1}\n")),
            "{prompt}"
        );
        assert!(prompt.contains("<snippet>"), "{prompt}");
    }
    // Every pass and the judge get the same shared part of the user message: the
    // retrieval is shared, not redone per pass (and a provider caches it once).
    let shared: std::collections::HashSet<String> = world
        .llm
        .prompts()
        .iter()
        .filter(|p| p.text().contains(SPECIALIST) && p.text().contains(TITLE2))
        .filter_map(|p| p.messages.first().map(|(_, text)| text.clone()))
        .map(|text| {
            text.split("\n\n## Your task")
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(shared.len(), 1, "{shared:#?}");
    // The judge's own part sees PR 1's finding and that it was rejected, and no code
    // snippets (those are in the shared part it reads like the passes).
    let judge = world
        .judge_prompts()
        .into_iter()
        .find(|p| p.contains(FINDING2))
        .expect("PR 2's judge pass");
    let judge = judge
        .split("## Your task")
        .nth(1)
        .expect("the judge's own part")
        .to_string();
    assert!(judge.contains("Past findings on this code"), "{judge}");
    assert!(judge.contains(FINDING1), "{judge}");
    assert!(judge.contains("rejected (thumbs down)"), "{judge}");
    assert!(!judge.contains(PR1_LINE), "{judge}");
    // The summary says what was used, collapsed, with vector search taking part.
    let summary = world.summary(PR2);
    assert!(
        summary.contains("<details><summary>Context used</summary>"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("lexical and vector search (`{MODEL}`)")),
        "{summary}"
    );
    assert!(
        summary.contains("code — PR #1 `src/parse.rs` lines 10-17"),
        "{summary}"
    );
    assert!(
        summary.contains("finding — PR #1 `src/parse.rs` line 13"),
        "{summary}"
    );
    // PR 2 is remembered in turn, beside PR 1.
    assert_eq!(world.documents(Corpus::Code).await.len(), 2);
}

async fn embeddings_down_or_garbage_change_nothing_but_the_context_note(backend: Backend) {
    // The same two PRs in three worlds: PR 2 reviewed with a healthy embeddings server,
    // with one that is down, and with one answering garbage.
    let healthy = World::start(backend).await;
    pr1_then_pr2(&healthy, &healthy.services).await;

    let down = World::start(backend).await;
    let unreachable = unreachable_embedder(MODEL, DIMS).await;
    pr1_then_pr2(&down, &down.services_with(Some(Arc::new(unreachable)))).await;

    let garbage = World::start(backend).await;
    garbage.review(&garbage.services, PR1, HEAD1).await;
    garbage.embed_all().await;
    garbage.reject_finding_and_close_pr1().await;
    garbage.embeddings.trouble_always(Trouble::Garbage);
    garbage.review(&garbage.services, PR2, HEAD2).await;

    let expected = seen(&healthy);
    assert!(expected.prompts_carry_pr1, "{expected:#?}");
    assert_eq!(expected.comments.len(), 1, "{expected:#?}");
    assert!(expected.comments[0].2.contains(FINDING2));
    for (name, world) in [("down", &down), ("garbage", &garbage)] {
        assert_eq!(seen(world), expected, "embeddings {name}");
        let summary = world.summary(PR2);
        assert!(
            summary.contains("lexical search only (the embeddings provider failed this time)"),
            "embeddings {name}: {summary}"
        );
        // Nothing of PR 2 was embedded either, but its documents are stored for later.
        assert!(
            world.documents(Corpus::Code).await.len() == 2,
            "embeddings {name}"
        );
    }
    assert!(!healthy.summary(PR2).contains("lexical search only"));
}

async fn retrieval_off_remembers_and_retrieves_nothing(backend: Backend) {
    let world = World::start(backend).await;
    world.review(&world.services, PR1, HEAD1).await;
    world.embed_all().await;
    // Turned off on the default branch (read afresh: the loader caches per branch): PR 2
    // neither searches nor is remembered, and nothing is sent for embedding.
    world.github.set_file(
        REPO,
        "main",
        ".parley.yml",
        "retrieval:\n  enabled: false\n",
    );
    let fresh = world.with_fresh_config();
    let asked_before = world.embeddings.texts_asked();
    world.review(&fresh, PR2, HEAD2).await;
    assert_eq!(world.embeddings.texts_asked(), asked_before);
    let passes = world.pass_prompts(TITLE2);
    assert_eq!(passes.len(), 4);
    for prompt in passes {
        assert!(!prompt.contains(PR1_LINE), "{prompt}");
        assert!(!prompt.contains("Related context"), "{prompt}");
    }
    assert!(!world.summary(PR2).contains("Context used"));
    let code = world.documents(Corpus::Code).await;
    assert_eq!(code.len(), 1, "only PR 1's hunk: {code:#?}");
    assert_eq!(world.embed_all().await, 0, "nothing to embed");

    // `hunkEmbedding: false`: hunks are stored (lexical search finds them) but only the
    // findings are embedded.
    let world = World::start(backend).await;
    world.github.set_file(
        REPO,
        "main",
        ".parley.yml",
        "retrieval:\n  hunkEmbedding:\n    enabled: false\n",
    );
    world.review(&world.services, PR1, HEAD1).await;
    assert_eq!(world.embed_all().await, 1);
    let code = world.documents(Corpus::Code).await;
    assert_eq!(code.len(), 1);
    assert!(code[0].vector.is_none());
    assert!(world.documents(Corpus::Finding).await[0].vector.is_some());
    world.review(&world.services, PR2, HEAD2).await;
    for prompt in world.pass_prompts(TITLE2) {
        assert!(prompt.contains(PR1_LINE), "found lexically: {prompt}");
    }
}

async fn an_answer_cites_an_earlier_review_thread(backend: Backend) {
    let world = World::start(backend).await;
    world.review(&world.services, PR1, HEAD1).await;
    let root = world
        .store
        .findings_for_pr(&key(REPO), PR1)
        .await
        .expect("findings")[0]
        .comment_id
        .expect("posted inline");

    // bob disputes PR 1's finding in its thread; Parley answers there.
    world.llm.answer(
        CONVERSATION,
        &json!({"reply": "Agreed, the check upstream covers it.", "resolution": null}).to_string(),
    );
    let bob = format!("This cannot happen: {BOB_SAID}.");
    let talk = ConversationHandler::new(world.services.clone());
    talk.handle(inline_comment(&world, PR1, &bob, Some(root), 13, PATCH1))
        .await
        .expect("PR 1 turn");
    let first_reply = parley_replies(&world, PR1);
    assert_eq!(first_reply.len(), 1, "{first_reply:#?}");
    assert!(
        !first_reply[0].contains("Context used"),
        "nothing from other PRs was used: {}",
        first_reply[0]
    );
    // The thread is remembered under its root: the finding, bob and Parley's answer.
    let thread = world
        .corpus
        .document(&key(REPO), Corpus::Thread, &root.to_string())
        .await
        .expect("read")
        .expect("the thread is remembered");
    assert!(thread.text.contains(BOB_SAID), "{}", thread.text);
    assert!(
        thread
            .text
            .contains("@parley[bot]: Agreed, the check upstream covers it.")
    );
    assert!(thread.text.contains(FINDING1), "{}", thread.text);
    assert!(
        !thread.text.contains("<!--"),
        "markers stripped: {}",
        thread.text
    );
    assert_eq!(thread.attributes["participants"], "bob, parley[bot]");
    assert_eq!(
        world.embed_all().await,
        3,
        "PR 1's hunk, its finding and the thread"
    );

    // On PR 2, bob asks about the same function: PR 1's thread is in the prompt.
    let asked = talk
        .handle(inline_comment(
            &world,
            PR2,
            "@parley can MissingColon still fire in parse_header after this change?",
            None,
            16,
            PATCH2,
        ))
        .await;
    asked.expect("PR 2 turn");
    let prompt = world
        .llm
        .prompts()
        .iter()
        .map(|p| p.text())
        .rfind(|t| t.contains(CONVERSATION))
        .expect("the conversation prompt");
    assert!(
        prompt.contains(BOB_SAID),
        "PR 1's thread is in the prompt:\n{prompt}"
    );
    assert!(
        prompt.contains("Review thread — `src/parse.rs`"),
        "{prompt}"
    );
    assert!(prompt.contains("<conversation>"), "{prompt}");
    let replies = parley_replies(&world, PR2);
    assert_eq!(replies.len(), 1, "{replies:#?}");
    assert!(
        replies[0].contains("<details><summary>Context used</summary>"),
        "{}",
        replies[0]
    );
    assert!(replies[0].contains("thread — PR #1"), "{}", replies[0]);
}

/// Words only Parley's answer in PR 1's conversation has.
const ANSWERED: &str = "header names are folded to lower case once, at parse time";

/// bob asks in PR 1's conversation (not in a review thread); Parley's answer is
/// remembered with the question, keyed apart from review threads, and PR 2's review of
/// the same function has it in its prompt, headed as a question in PR 1's conversation.
async fn a_question_answered_in_the_pr_conversation_is_found_by_a_later_review(backend: Backend) {
    let world = World::start(backend).await;
    world.review(&world.services, PR1, HEAD1).await;
    world.llm.answer(
        CONVERSATION,
        &json!({"reply": format!("Because {ANSWERED}."), "resolution": null}).to_string(),
    );
    let question = "@parley why does parse_header lowercase the header name?";
    let id = world.github.add_issue_comment(REPO, PR1, "bob", question);
    let comment = world.github.issue_comment(REPO, PR1, id);
    let payload = deliveries::pr_issue_comment(&source(), PR1, &comment);
    ConversationHandler::new(world.services.clone())
        .handle(deliveries::job(
            "issue_comment",
            &format!("delivery-{id}"),
            &payload,
        ))
        .await
        .expect("PR 1 question");

    let remembered = world
        .corpus
        .document(&key(REPO), Corpus::Thread, &format!("comment-{id}"))
        .await
        .expect("read")
        .expect("the question and its answer are remembered");
    assert_eq!(
        remembered.text,
        format!("@bob: {question}\n@parley[bot]: Because {ANSWERED}.")
    );
    assert_eq!(remembered.path, None);

    world.review(&world.services, PR2, HEAD2).await;
    let prompts = world.pass_prompts(TITLE2);
    assert!(!prompts.is_empty(), "PR 2 was reviewed");
    for prompt in prompts {
        assert!(prompt.contains(ANSWERED), "PR 1's answer: {prompt}");
        assert!(
            prompt.contains("Question in the PR conversation, PR #1 (bob, parley[bot])"),
            "{prompt}"
        );
    }
}

/// A state change with no outcome behind it (a conceded finding held again in its
/// thread) reaches the finding's document too, so a later review or the judge does not
/// see it as set aside.
async fn a_finding_held_again_after_a_concession_is_shown_open(backend: Backend) {
    let world = World::start(backend).await;
    world.review(&world.services, PR1, HEAD1).await;
    let mut finding = world.pr1_finding().await;
    // Conceded earlier (as a concession's outcome records it, document included).
    finding.state = FindingState::WontFix;
    world.store.put_finding(&finding).await.expect("store");
    parley_core::retrieval::remember::outcome(world.corpus.as_ref(), &finding).await;
    let state = |docs: Vec<parley_core::ports::Document>| docs[0].attributes["state"].clone();
    assert_eq!(state(world.documents(Corpus::Finding).await), "wont_fix");

    // bob brings new evidence; Parley holds the finding, which opens it again.
    world.llm.answer(
        CONVERSATION,
        &json!({"reply": "On second look the colon check is still missing.", "resolution": "maintain"})
            .to_string(),
    );
    let root = finding.comment_id.expect("posted inline");
    ConversationHandler::new(world.services.clone())
        .handle(inline_comment(
            &world,
            PR1,
            "Are you sure? It was conceded.",
            Some(root),
            13,
            PATCH1,
        ))
        .await
        .expect("PR 1 turn");
    assert_eq!(world.pr1_finding().await.state, FindingState::Open);
    assert_eq!(state(world.documents(Corpus::Finding).await), "open");
}

/// `{"findings": [...]}` with one finding per `(line, title)` on `src/parse.rs`.
fn findings(items: &[(u32, &str)]) -> String {
    let findings: Vec<Value> = items
        .iter()
        .map(|(line, title)| {
            json!({
                "path": "src/parse.rs", "line": line, "side": "RIGHT", "severity": "medium",
                "category": "bug", "confidence": 90, "title": title,
                "body": format!("Details about {title}."),
            })
        })
        .collect();
    json!({ "findings": findings }).to_string()
}

fn review_job(number: u64, head: &str) -> Job {
    deliveries::review_job(
        &source(),
        number,
        ReviewTrigger::Opened,
        head,
        &format!("review-{number}-{head}"),
    )
}

/// bob's inline comment on `src/parse.rs` of PR `number`, on GitHub and as its job.
fn inline_comment(
    world: &World,
    number: u64,
    body: &str,
    in_reply_to: Option<u64>,
    line: u64,
    hunk: &str,
) -> Job {
    let id = world.github.add_review_comment(
        REPO,
        number,
        "bob",
        body,
        in_reply_to,
        "src/parse.rs",
        line,
    );
    let comment = world.github.review_comment(REPO, number, id);
    let payload = deliveries::review_comment(&source(), number, "alice", &comment, hunk);
    deliveries::job(
        "pull_request_review_comment",
        &format!("delivery-{id}"),
        &payload,
    )
}

/// Parley's replies in PR `number`'s review threads (not its findings), oldest first.
fn parley_replies(world: &World, number: u64) -> Vec<String> {
    world
        .github
        .review_comments(REPO, number)
        .into_iter()
        .filter(|c| c["user"]["login"] == "parley[bot]" && !c["in_reply_to_id"].is_null())
        .map(|c| c["body"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn source() -> Source {
    Source::new(OWNER, NAME, INSTALLATION)
}

/// `body` without its `<details><summary>Context used</summary>…</details>` section.
fn without_context_used(body: &str) -> String {
    const START: &str = "<details><summary>Context used</summary>";
    let Some(start) = body.find(START) else {
        return body.to_string();
    };
    let end = body[start..]
        .find("</details>")
        .map_or(body.len(), |e| start + e + "</details>".len());
    format!("{}{}", &body[..start], &body[end..])
}
