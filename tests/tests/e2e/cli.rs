//! `parley review`, `parley doctor` and `parley app manifest` as a person runs them: the
//! real binary, against the fake GitHub and fake LLM over HTTP, in a directory of its own
//! (no `.env` found, nothing inherited from the test's environment).

use parley_tests::fake_github::Injected;
use parley_tests::review_harness::{
    CORRECTNESS, DB_PATCH, HEAD, JUDGE, NAME, OWNER, PR, REPO, SECURITY, TESTS, added_lines,
    finding, reply,
};
use parley_tests::rig::Fakes;
use parley_tests::serve_process::parley_binary;
use parley_tests::tenants::key;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const TOKEN: &str = "ghp_person_token_for_tests";

/// Variables for one run of the binary.
type Env = Vec<(String, String)>;

/// The fakes and a working directory for the binary's local store.
struct Rig {
    fakes: Fakes,
    dir: tempfile::TempDir,
}

impl std::ops::Deref for Rig {
    type Target = Fakes;

    fn deref(&self) -> &Fakes {
        &self.fakes
    }
}

impl Rig {
    /// PR #42 with `src/db.rs`; the security pass finds an SQL injection on line 3.
    async fn start() -> Self {
        let fakes = Fakes::start().await;
        fakes.llm.default_reply(r#"{"findings": []}"#);
        fakes.llm.answer(
            SECURITY,
            &reply(&[finding("src/db.rs", 3, "critical", 92, "SQL injection")]),
        );
        fakes.open_db_pull(REPO, PR, "alice");
        fakes.github.accept_personal_token(TOKEN, false);
        Rig {
            fakes,
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A person's environment: a token, the LLM, a local store; no App.
    fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .fakes
            .env(&self.dir.path().join("parley.db"), "s")
            .into_iter()
            .filter(|(k, _)| {
                !["GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "RUST_LOG"].contains(&k.as_str())
            })
            .collect();
        env.push(("GITHUB_TOKEN".into(), TOKEN.into()));
        env.push(("LLM_MAX_CONCURRENCY".into(), "4".into()));
        env.push(("LLM_MAX_RETRIES".into(), "1".into()));
        env.push(("LLM_RETRY_BASE_DELAY_MS".into(), "10".into()));
        env
    }

    fn posts(&self) -> usize {
        self.github.requests_to("POST", "/reviews").len()
            + self.github.requests_to("POST", "/comments").len()
    }
}

fn parley_in(dir: &Path, args: &[&str], env: &[(String, String)], stdin: Option<&str>) -> Output {
    let mut command = Command::new(parley_binary());
    command
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn parley");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    child.wait_with_output().expect("parley output")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn run(rig: &Rig, args: Vec<String>, env: Vec<(String, String)>) -> Output {
    let dir = rig.dir.path().to_path_buf();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        parley_in(&dir, &args, &env, None)
    })
    .await
    .expect("join")
}

/// What `parley review <reference> --format <format>` prints, read as JSON (json, sarif).
async fn printed_as(rig: &Rig, reference: &str, format: &str) -> Value {
    let out = run(
        rig,
        args(&["review", reference, "--format", format]),
        rig.env(),
    )
    .await;
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|err| panic!("{format} on stdout ({err}): {}", stderr(&out)))
}

/// `parley review` of the rig's PR with the rig's environment.
async fn review_the_pr(rig: &Rig) -> Output {
    run(rig, args(&["review", "octo-org/hello-world#42"]), rig.env()).await
}

/// What [`review_the_pr`] printed; it must have succeeded.
async fn reviewed(rig: &Rig) -> String {
    let out = review_the_pr(rig).await;
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_pr_review_prints_in_every_format_and_posts_nothing() {
    let rig = Rig::start().await;
    let reference = format!("{OWNER}/{NAME}#{PR}");
    let overview = "Moves the user lookup into `db`.";
    rig.llm.answer(
        CORRECTNESS,
        &serde_json::json!({"findings": [], "overview": overview}).to_string(),
    );

    let out = run(&rig, args(&["review", &reference]), rig.env()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("Parley review of octo-org/hello-world#42"),
        "{text}"
    );
    assert!(text.contains("[critical] src/db.rs:3"), "{text}");
    assert!(text.contains("SQL injection"), "{text}");
    assert!(
        text.contains(&format!("What this change does: {overview}")),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "NO_COLOR: no escape codes: {text:?}"
    );

    let out = run(
        &rig,
        args(&["review", &reference, "--format", "markdown"]),
        rig.env(),
    )
    .await;
    let text = stdout(&out);
    assert!(text.starts_with("## Parley review of"), "{text}");
    assert!(
        text.contains("### **critical** `src/db.rs:3` SQL injection"),
        "{text}"
    );
    assert!(
        text.contains(&format!("**What this change does:** {overview}")),
        "{text}"
    );

    let url = format!("https://github.com/{REPO}/pull/{PR}");
    let out = run(&rig, args(&["review", &url, "--format", "json"]), rig.env()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json on stdout, nothing else");
    assert_eq!(json["pr"], PR);
    assert_eq!(json["head"], HEAD);
    assert_eq!(json["overview"], serde_json::json!([overview]));
    let findings = json["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{json:#}");
    assert_eq!(findings[0]["severity"], "critical");
    assert_eq!(findings[0]["line"], 3);
    assert_eq!(json["passes"]["ok"].as_array().map(Vec::len), Some(4));
    assert!(json["usage"]["calls"].as_u64().unwrap_or(0) >= 4);

    let sarif = printed_as(&rig, &reference, "sarif").await;
    assert_eq!(sarif["version"], "2.1.0");
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["level"], "error");
    assert_eq!(
        result["ruleId"],
        format!(
            "parley/{}",
            findings[0]["category"].as_str().unwrap_or_default()
        )
    );
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "src/db.rs");
    assert_eq!(location["region"]["startLine"], 3);
    assert!(result["partialFingerprints"]["parleyFingerprint/v1"].is_string());
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert!(
        rules.iter().any(|r| r["id"] == result["ruleId"]),
        "every result's rule is declared"
    );

    assert_eq!(rig.posts(), 0, "nothing is posted without --post");
    // The specialists saw the PR's patch, as the worker's passes do.
    assert!(
        rig.llm
            .prompts()
            .iter()
            .any(|p| p.text().contains("SELECT * FROM users"))
    );
}

/// Escape sequences a model copied from hostile code reach no terminal: a finding's
/// title and body print without them (a terminal would retitle itself, or hide the line
/// behind a carriage return).
#[tokio::test]
async fn escape_sequences_a_model_wrote_reach_no_terminal() {
    let rig = a_rig_finding(
        SECURITY,
        finding(
            "src/db.rs",
            3,
            "critical",
            92,
            "SQL injection\u{1b}]0;pwned\u{7}\rall fine",
        ),
    )
    .await;
    let text = reviewed(&rig).await;
    assert!(text.contains("SQL injection]0;pwnedall fine"), "{text:?}");
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{text:?}"
    );
}

/// A PR with no file Parley could read says so rather than "No findings", and runs no
/// pass.
#[tokio::test]
async fn a_pr_with_no_file_to_read_says_nothing_was_reviewed() {
    let rig = Rig::start().await;
    rig.github.set_files(
        REPO,
        PR,
        &[("Cargo.lock", "modified", "@@ -1 +1 @@\n-a\n+b\n")],
    );
    let text = reviewed(&rig).await;
    parley_tests::expect::says_all(
        &text,
        &[
            "Nothing to review: every changed file is one the repository leaves out of review",
            "Cargo.lock: matches `review.skipPaths`",
        ],
    );
    assert!(!text.contains("No findings."), "{text}");
    let json = printed_as(&rig, "octo-org/hello-world#42", "json").await;
    assert_eq!(json["files_reviewed"], serde_json::json!([]));
    assert!(rig.llm.prompts().is_empty(), "no pass ran");
}

/// A documentation change is not sent to the passes that have nothing to look at in it,
/// and the terminal and the JSON say which were left out and why.
#[tokio::test]
async fn passes_a_documentation_change_gives_nothing_to_do_are_said() {
    let rig = Rig::start().await;
    rig.github.set_files(
        REPO,
        PR,
        &[("docs/usage.md", "modified", "@@ -1 +1 @@\n-old\n+new\n")],
    );
    let text = reviewed(&rig).await;
    assert!(
        text.contains("Passes not needed: correctness, tests (only documentation changed)\n"),
        "{text}"
    );
    let json = printed_as(&rig, "octo-org/hello-world#42", "json").await;
    assert_eq!(
        json["passes"]["ok"],
        serde_json::json!(["security", "style"])
    );
    assert_eq!(
        json["passes"]["not_needed"][1],
        serde_json::json!({"pass": "tests", "reason": "only documentation changed"})
    );
    assert_eq!(rig.llm.calls_containing(TESTS), 0);

    // A repository that asks only for passes with nothing to look at here.
    rig.github.set_file(
        REPO,
        "main",
        ".parley.yml",
        "review:\n  specialists: [tests]\n",
    );
    let text = reviewed(&rig).await;
    assert!(
        text.contains("Nothing to review: no pass `review.specialists` asks for has anything to look at in this change: tests (only documentation changed)."),
        "{text}"
    );
}

/// A diff larger than one budget is read in parts, and the terminal and the JSON say so.
#[tokio::test]
async fn a_diff_read_in_parts_is_said() {
    let rig = Rig::start().await;
    rig.github.set_file(
        REPO,
        "main",
        ".parley.yml",
        "review:\n  maxPatchTokens: 1000\n",
    );
    rig.github.set_files(
        REPO,
        PR,
        &[
            ("src/one.rs", "added", &added_lines("one", 50)),
            ("src/two.rs", "added", &added_lines("two", 50)),
        ],
    );
    let text = reviewed(&rig).await;
    assert!(
        text.contains(
            "Read in 2 parts, each by every pass: the diff is larger than review.maxPatchTokens.\n"
        ),
        "{text}"
    );
    assert!(!text.contains("Not reviewed"), "{text}");
    let json = printed_as(&rig, "octo-org/hello-world#42", "json").await;
    assert_eq!(json["parts"], 2);
    assert_eq!(json["partial"], false);
}

/// A finding taken out before it is reported is listed with why, in the text and the
/// JSON: a count alone leaves the person guessing. Here the model names a file the PR
/// does not change and the repository does not have (the path of the prompt's example,
/// which a small model copies).
#[tokio::test]
async fn suppressed_findings_are_listed_with_why() {
    let rig = a_rig_finding(
        SECURITY,
        finding("src/lib.rs", 42, "critical", 95, "Unchecked index"),
    )
    .await;
    let text = reviewed(&rig).await;
    assert!(text.contains("No findings."), "{text}");
    parley_tests::expect::says_all(
        &text,
        &[
            "Suppressed (1: by a learning, the judge, or for naming code the review could not see):",
            "src/lib.rs:42 Unchecked index (critical): `src/lib.rs` is not changed by this PR",
        ],
    );
    let json = printed_as(&rig, "octo-org/hello-world#42", "json").await;
    assert_eq!(json["suppressed"], 1);
    let suppressed = &json["suppressed_findings"][0];
    assert_eq!(suppressed["path"], "src/lib.rs");
    assert_eq!(suppressed["line"], 42);
    assert_eq!(suppressed["by"], "grounding");
    assert!(
        suppressed["reason"]
            .as_str()
            .is_some_and(|r| r.contains("not changed by this PR")),
        "{json:#}"
    );
    // Code scanning ignores SARIF's `suppressions`: uploaded as a result, the finding
    // would open the alert it was taken out for.
    let sarif = printed_as(&rig, "octo-org/hello-world#42", "sarif").await;
    assert_eq!(sarif["runs"][0]["results"], serde_json::json!([]));
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"].to_string();
    parley_tests::expect::says_all(&notes, &["parley/suppressed", "Unchecked index (critical)"]);
}

/// `--post` goes to the server the PR's URL names: a URL on that server posts there; a
/// URL on another server than `GITHUB_API_URL` is refused before anything is read.
#[tokio::test]
async fn post_goes_to_the_urls_server_or_nowhere() {
    let rig = Rig::start().await;
    let elsewhere = format!("https://github.com/{REPO}/pull/{PR}");
    let out = run(&rig, args(&["review", &elsewhere, "--post"]), rig.env()).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not posting there"), "{err}");
    assert!(err.contains("https://api.github.com"), "{err}");
    assert!(
        rig.github.requests().is_empty(),
        "nothing read, nothing posted"
    );

    let here = format!("{}/{REPO}/pull/{PR}", rig.github.url);
    let out = run(&rig, args(&["review", &here, "--post"]), rig.env()).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(rig.github.reviews(REPO, PR).len(), 1);
}

#[tokio::test]
async fn post_posts_exactly_one_review() {
    let rig = Rig::start().await;
    let out = run(
        &rig,
        args(&["review", "octo-org/hello-world#42", "--post"]),
        rig.env(),
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let reviews = rig.github.reviews(REPO, PR);
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    assert_eq!(rig.github.requests_to("POST", "/reviews").len(), 1);
    let comments = rig.github.review_comments(REPO, PR);
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("SQL injection")
    );
    assert!(stdout(&out).contains("Posted: "), "{}", stdout(&out));
    // No check run: a review from a terminal is not the merge gate.
    assert!(rig.github.check_runs(REPO).is_empty());
}

#[tokio::test]
async fn a_local_git_range_is_reviewed_without_github() {
    let rig = a_rig_finding(
        CORRECTNESS,
        finding("src/lib.rs", 2, "high", 88, "Off-by-one in the loop bound"),
    )
    .await;
    let repo = tempfile::tempdir().expect("repo dir");
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(repo.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git");
        assert!(
            status.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(repo.path().join("src/lib.rs"), "fn a() {}\n").unwrap();
    // The base's rules: a guideline file and a .parley.yml turning the judge off.
    std::fs::write(
        repo.path().join("CLAUDE.md"),
        "Loops use inclusive bounds only with a comment.\n",
    )
    .unwrap();
    std::fs::write(
        repo.path().join(".parley.yml"),
        "review:\n  judge: false\n  instructions: [{paths: 'src/*.rs', text: 'INSTR-LOCAL: bounds say why.'}]\n",
    )
    .unwrap();
    std::fs::write(
        repo.path().join(".gitattributes"),
        "src/gen/** linguist-generated\n",
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    git(&["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        repo.path().join("src/lib.rs"),
        "fn a() {}\nfn count(n: usize) {\n    for i in 0..=n { println!(\"{i}\"); }\n}\n",
    )
    .unwrap();
    // The change also loosens its own rules: neither `--git` nor `--diff` may heed that.
    std::fs::write(
        repo.path().join(".parley.yml"),
        "review:\n  judge: false\n  minConfidence: 95\n",
    )
    .unwrap();
    // And regenerates a client the base marks generated: not for review.
    std::fs::create_dir_all(repo.path().join("src/gen")).unwrap();
    std::fs::write(
        repo.path().join("src/gen/api.rs"),
        "pub fn regenerated_endpoint() {}\n",
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-am", "count things"]);

    let env = rig.env();
    let dir = repo.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        parley_in(
            &dir,
            &["review", "--git", "main..HEAD", "--format", "json"],
            &env,
            None,
        )
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{json:#}");
    assert_eq!(findings[0]["path"], "src/lib.rs");
    assert_eq!(json["pr"], Value::Null);
    assert!(rig.github.requests().is_empty(), "nothing touches GitHub");
    let prompts = rig.llm.prompts();
    assert!(
        prompts.iter().any(|p| p.text().contains("for i in 0..=n")),
        "the local change was reviewed"
    );
    assert!(
        prompts
            .iter()
            .any(|p| p.text().contains("inclusive bounds")),
        "the base's guideline file"
    );
    assert!(
        prompts.iter().all(|p| p.text().contains("INSTR-LOCAL")),
        "the base's review.instructions, in every pass"
    );
    assert!(
        !prompts.iter().any(|p| p.text().contains("final judge")),
        "the base's .parley.yml turned the judge off"
    );
    assert!(
        !prompts
            .iter()
            .any(|p| p.text().contains("regenerated_endpoint")),
        "the base's .gitattributes marks src/gen/ generated"
    );

    // The same change from a diff on stdin; and a diff that does not parse.
    let diff = Command::new("git")
        .args(["diff", "main..HEAD"])
        .current_dir(repo.path())
        .output()
        .unwrap()
        .stdout;
    let env = rig.env();
    let dir = repo.path().to_path_buf();
    let (ok, bad) = tokio::task::spawn_blocking(move || {
        let diff = String::from_utf8_lossy(&diff).into_owned();
        let ok = parley_in(
            &dir,
            &["review", "--diff", "-", "--format", "json"],
            &env,
            Some(&diff),
        );
        let broken = diff.replacen("@@ -1 +1,4 @@", "@@ -1 +1,9 @@", 1);
        let bad = parley_in(&dir, &["review", "--diff", "-"], &env, Some(&broken));
        (ok, bad)
    })
    .await
    .unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(
        !rig.llm
            .prompts()
            .iter()
            .any(|p| p.text().contains("regenerated_endpoint")),
        "a diff's files are held to the base's .gitattributes too"
    );
    assert!(
        rig.llm.prompts()[prompts.len()..]
            .iter()
            .all(|p| p.text().contains("INSTR-LOCAL")),
        "and read with the base's review.instructions"
    );
    let json: Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(
        json["findings"].as_array().map(Vec::len),
        Some(1),
        "the base's .parley.yml, not the diff's head's: {json:#}"
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("the diff does not parse"),
        "{}",
        stderr(&bad)
    );
    assert!(stdout(&bad).is_empty());
}

/// Each bad input: one line naming the fix, exit status 2, nothing posted.
/// A terminal review searches what `parley serve` remembered in the same local store
/// (here: a hunk of an earlier PR touching the same query), shows it to the specialists
/// and lists it; it writes nothing there itself.
#[tokio::test]
async fn a_terminal_review_uses_what_the_local_store_remembers() {
    use parley_core::ports::{Corpus, CorpusStore, Document, Occurrence};
    let rig = Rig::start().await;
    const EARLIER: &str = "let row = db.query(\"SELECT * FROM users WHERE id = ?\", &[&id])?;";
    let now = time::OffsetDateTime::now_utc();
    let text = format!("Parameterise the users query\nsrc/users.rs\nfn find_user(\n{EARLIER}");
    let earlier = Document {
        path: Some("src/users.rs".into()),
        language: Some("rust".into()),
        function_context: Some("fn find_user(id: &str) -> Result<User>".into()),
        occurrences: vec![Occurrence {
            pr: 7,
            pr_title: "Parameterise the users query".into(),
            path: "src/users.rs".into(),
            start_line: 3,
            line_count: 1,
            created_at: now,
        }],
        ..Document::new(key(REPO), Corpus::Code, "e1".repeat(32), text, now)
    };
    let db = rig.dir.path().join("parley.db");
    {
        let store = parley_store::sqlite::SqliteStore::open(&db).expect("local store");
        store.upsert_document(&earlier).await.expect("remembered");
    }

    let text = reviewed(&rig).await;
    assert!(
        text.contains("Context used (earlier reviews in the local store):"),
        "{text}"
    );
    assert!(text.contains("PR #7 `src/users.rs`"), "{text}");
    let prompts = rig.llm.prompts();
    let security = prompts
        .iter()
        .map(|p| p.text())
        .find(|t| t.contains(SECURITY))
        .expect("the security pass");
    assert!(security.contains(EARLIER), "{security}");

    // JSON lists it too; and the store holds only what was put there.
    let out = run(
        &rig,
        args(&["review", "octo-org/hello-world#42", "--format", "json"]),
        rig.env(),
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(
        json["context_used"].as_array().map(Vec::len),
        Some(1),
        "{json}"
    );
    let store = parley_store::sqlite::SqliteStore::open(&db).expect("local store");
    let code = store
        .documents(&key(REPO), Corpus::Code, 10)
        .await
        .expect("read");
    assert_eq!(code.len(), 1, "{code:#?}");
}

/// `LLM_MAX_OUTPUT_TOKENS` lowers what every call asks for (a specialist pass asks for
/// 4,096), so a small local model that never closes its JSON stops early.
#[tokio::test]
async fn an_output_cap_lowers_what_every_call_asks_for() {
    let rig = Rig::start().await;
    let mut env = rig.env();
    env.push(("LLM_MAX_OUTPUT_TOKENS".into(), "512".into()));
    let out = run(&rig, args(&["review", "octo-org/hello-world#42"]), env).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("SQL injection"), "{}", stdout(&out));
    let asked: Vec<Option<u64>> = rig.llm.prompts().iter().map(|p| p.max_tokens).collect();
    assert!(asked.len() >= 5, "{asked:?}");
    assert!(asked.iter().all(|t| *t == Some(512)), "{asked:?}");

    // Without it, the passes ask for what they need.
    let before = asked.len();
    let out = review_the_pr(&rig).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let uncapped: Vec<Option<u64>> = rig.llm.prompts()[before..]
        .iter()
        .map(|p| p.max_tokens)
        .collect();
    assert!(uncapped.contains(&Some(4096)), "{uncapped:?}");
}

/// A model that answers every pass with something that is not a review (a small local
/// model's malformed JSON) is told apart from one that does not answer: the fix is a
/// different model, not the server's address.
#[tokio::test]
async fn a_model_that_never_answers_usably_is_named_as_the_problem() {
    let rig = Rig::start().await;
    rig.llm.remove_rules(SECURITY);
    // Ended by the model mid-object, every time (the repair retry too).
    rig.llm
        .default_reply(r#"{"findings": [{"path": "src/db.rs", "line": 3, "title": "SQL inj"#);
    let out = review_the_pr(&rig).await;
    let err = gave_up_naming(&out, "try a larger one", "LLM_MAX_OUTPUT_TOKENS");
    assert!(
        err.contains("the model answered, but not with a usable review"),
        "{err}"
    );
}

/// Replies cut off at the output cap name the cap: a review longer than
/// `LLM_MAX_OUTPUT_TOKENS` allows, on every pass, from Anthropic (`stop_reason:
/// max_tokens`) and from an OpenAI-compatible server (`finish_reason: length`).
#[tokio::test]
async fn replies_cut_off_at_the_output_cap_name_the_cap() {
    let rig = Rig::start().await;
    rig.llm.remove_rules(SECURITY);
    let long: String = (0..300).map(|i| format!("step {i}, ")).collect();
    rig.llm.default_reply(&reply(&[finding(
        "src/db.rs",
        3,
        "high",
        90,
        &format!("SQL injection. {long}"),
    )]));
    for mut env in [rig.env(), local_server_env(&rig, "qwen2.5-coder:7b")] {
        env.push(("LLM_MAX_OUTPUT_TOKENS".into(), "256".into()));
        let out = run(&rig, args(&["review", "octo-org/hello-world#42"]), env).await;
        let err = gave_up_naming(
            &out,
            "raise or unset LLM_MAX_OUTPUT_TOKENS",
            "LLM_TIMEOUT_SECS",
        );
        assert!(err.contains("cut off at the output token limit"), "{err}");
    }
}

/// A self-hosted server too slow for the call's time limit, serving one request at a
/// time as llama-cpp-python does (its headers at once, its first chunk when the request
/// has the model): requests that waited for their turn timed out, and replies still being
/// written were cut off at the time limit. Either way the person is told which limit to
/// raise, not that the model cannot write a review or that its output cap is too low.
#[tokio::test]
async fn a_server_too_slow_for_the_time_limit_names_the_time_limit() {
    let rig = Rig::start().await;
    rig.llm.interrupt_streams_like_llama_cpp_python();
    rig.llm.set_latency(Duration::from_secs(3));
    let mut env = local_server_env(&rig, "qwen2.5-coder:7b");
    env.push(("LLM_TIMEOUT_SECS".into(), "1".into()));
    let out = run(&rig, args(&["review", "octo-org/hello-world#42"]), env).await;
    gave_up_naming(&out, "raise LLM_TIMEOUT_SECS", "LLM_MAX_OUTPUT_TOKENS");
}

/// The review gave up (exit 2) in one line on stderr that names `fix`, never `wrong_fix`
/// nor the server's address (the server answered), and printed nothing else.
fn gave_up_naming(out: &Output, fix: &str, wrong_fix: &str) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(fix), "{err}");
    assert!(!err.contains(wrong_fix), "{err}");
    assert!(!err.contains("LLM_BASE_URL"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(stdout(out).is_empty(), "{}", stdout(out));
    err
}

/// A small model on a local llama-cpp-python server, with nothing but the provider, the
/// server and the model set (as the README's local quick start has it): the server
/// breaks off one stream for the next and the model loops inside its JSON on every pass.
/// The review ends by naming the model as the problem, not with a timeout.
#[tokio::test]
async fn a_looping_model_on_a_local_server_with_the_defaults_is_named_not_timed_out() {
    let rig = Rig::start().await;
    rig.llm.remove_rules(SECURITY);
    rig.llm.interrupt_streams_like_llama_cpp_python();
    rig.llm.write_forever(
        "",
        "\n  \"type\": \"report\",\n  \"description_url\" : {\n    \"url\": \"https://github.com/SrEK1234567890-sir-john-doe\"\n  },",
    );
    let env = local_server_env(&rig, "smollm2");
    let out = run(&rig, args(&["review", "octo-org/hello-world#42"]), env).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the model answered, but not with a usable review"),
        "{err}"
    );
    assert!(!err.contains("in time"), "{err}");
    assert!(rig.llm.hang_ups() >= 1, "Parley stopped reading the loops");
}

/// A server that reports no usage (llama-cpp-python in a stream, some others always) gets
/// its calls counted by Parley, and the report says they are counted, not billed: never
/// "0 input tokens" for a review that sent thousands.
#[tokio::test]
async fn tokens_a_server_does_not_report_are_estimated_and_marked() {
    let (rig, reference) = a_high_sql_injection().await;
    let reported = run(&rig, args(&["review", &reference]), rig.env()).await;
    assert_eq!(reported.status.code(), Some(0), "{}", stderr(&reported));
    assert!(
        !stdout(&reported).contains("estimated"),
        "{}",
        stdout(&reported)
    );

    rig.llm.report_no_usage();
    let env = local_server_env(&rig, "local-model");
    let out = run(&rig, args(&["review", &reference]), env.clone()).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("[high] src/db.rs:3"), "{text}");
    assert!(
        text.contains("(estimated: the model server reported none)"),
        "{text}"
    );
    assert!(!text.contains(" 0 input"), "{text}");

    let out = run(&rig, args(&["review", &reference, "--format", "json"]), env).await;
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json report");
    assert_eq!(report["usage"]["tokens_estimated"], true, "{report}");
    assert!(
        report["usage"]["input_tokens"].as_u64().unwrap_or(0) > 100,
        "the prompts were counted: {report}"
    );
}

/// The rig's environment with the fake model served as a local OpenAI-compatible server
/// and nothing else about the model set, as the README's local quick start has it.
fn local_server_env(rig: &Rig, model: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = rig
        .env()
        .into_iter()
        .filter(|(k, _)| !k.starts_with("LLM_"))
        .collect();
    env.extend([
        ("LLM_PROVIDER".to_string(), "openai".to_string()),
        ("LLM_BASE_URL".to_string(), format!("{}/v1", rig.llm.url)),
        ("LLM_MODEL".to_string(), model.to_string()),
    ]);
    env
}

/// A rig whose `pass` reports `finding` and nothing else does.
async fn a_rig_finding(pass: &str, finding: Value) -> Rig {
    let rig = Rig::start().await;
    rig.llm.remove_rules(SECURITY);
    rig.llm.answer(pass, &reply(&[finding]));
    rig
}

/// A rig whose security pass reports one high SQL injection on the PR, and the PR.
async fn a_high_sql_injection() -> (Rig, String) {
    let rig = a_rig_finding(
        SECURITY,
        finding("src/db.rs", 3, "high", 92, "SQL injection"),
    )
    .await;
    (rig, format!("{OWNER}/{NAME}#{PR}"))
}

/// `--fail-on` lets a CI job fail on what the review found: a finding at or above the
/// severity exits 1 with the findings printed as usual; below it, 0.
#[tokio::test]
async fn fail_on_fails_the_job_at_or_above_its_severity() {
    let (rig, reference) = a_high_sql_injection().await;

    let out = run(
        &rig,
        args(&["review", &reference, "--fail-on", "high"]),
        rig.env(),
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("[high] src/db.rs:3"),
        "{}",
        stdout(&out)
    );

    let out = run(
        &rig,
        args(&[
            "review",
            &reference,
            "--fail-on",
            "medium",
            "--format",
            "sarif",
        ]),
        rig.env(),
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sarif: Value = serde_json::from_slice(&out.stdout).expect("sarif, as CI uploads it");
    assert_eq!(
        sarif["runs"][0]["results"].as_array().map(Vec::len),
        Some(1)
    );

    let out = run(
        &rig,
        args(&["review", &reference, "--fail-on", "critical"]),
        rig.env(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = run(&rig, args(&["review", &reference]), rig.env()).await;
    assert_eq!(out.status.code(), Some(0), "no --fail-on, no failing");
}

/// A finding the judge would drop at a severity the gate blocks on still fails the job,
/// and every format shows the judge's case beside it.
#[tokio::test]
async fn a_blocking_finding_the_judge_doubts_still_fails_the_job() {
    let (rig, reference) = a_high_sql_injection().await;
    rig.llm.answer(
        JUDGE,
        r#"{"verdicts": [{"index": 0, "keep": false, "reason": "the id is checked upstream"}]}"#,
    );
    let doubt = "The judge doubts this finding: the id is checked upstream.";
    for format in ["terminal", "markdown", "sarif", "github"] {
        let argv = args(&[
            "review",
            &reference,
            "--fail-on",
            "high",
            "--format",
            format,
        ]);
        let out = run(&rig, argv, rig.env()).await;
        assert_eq!(out.status.code(), Some(1), "{format}: {}", stderr(&out));
        let printed = stdout(&out);
        let printed =
            match format {
                "sarif" => {
                    serde_json::from_str::<Value>(&printed).expect("sarif")["runs"][0]["results"][0]
                        ["message"]["text"]
                        .to_string()
                }
                _ => printed,
            };
        assert!(printed.contains(doubt), "{format}: {printed}");
    }
    let json = printed_as(&rig, &reference, "json").await;
    assert_eq!(
        json["findings"][0]["doubt"], "the id is checked upstream",
        "{json:#}"
    );
}

/// `--fail-on-partial` fails a CI job whose review did not see everything it should
/// have (a pass failed) with status 3, so a gate cannot pass on a silent partial review;
/// a file no review could read (a skip pattern) does not count, and a finding at the
/// `--fail-on` bar still exits 1. SARIF names what was missed as tool notifications.
#[tokio::test]
async fn fail_on_partial_fails_a_review_that_missed_a_pass() {
    let rig = Rig::start().await;
    rig.github.set_files(
        REPO,
        PR,
        &[
            ("src/db.rs", "modified", DB_PATCH),
            ("Cargo.lock", "modified", "@@ -1 +1 @@\n-a\n+b\n"),
        ],
    );
    let reference = format!("{OWNER}/{NAME}#{PR}");
    let gate = |extra: &[&str]| {
        let mut argv = vec!["review", reference.as_str(), "--fail-on", "high"];
        argv.extend_from_slice(extra);
        args(&argv)
    };

    // Everything reviewed but the lockfile (a skip pattern): not partial.
    rig.llm.remove_rules(SECURITY);
    let out = run(&rig, gate(&["--fail-on-partial"]), rig.env()).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Cargo.lock: matches"),
        "{}",
        stdout(&out)
    );

    rig.llm.fail(CORRECTNESS, 500);
    let out = run(&rig, gate(&["--fail-on-partial"]), rig.env()).await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("warning: the correctness pass failed: "),
        "{}",
        stderr(&out)
    );
    let out = run(&rig, gate(&[]), rig.env()).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "partial passes without the flag"
    );

    let out = run(
        &rig,
        gate(&["--fail-on-partial", "--format", "sarif"]),
        rig.env(),
    )
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let sarif: Value = serde_json::from_slice(&out.stdout).expect("sarif, as CI uploads it");
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["properties"]["partial"], true, "{invocation}");
    let notes = invocation["toolExecutionNotifications"]
        .as_array()
        .expect("notifications");
    let texts: Vec<(&str, &str)> = notes
        .iter()
        .map(|n| {
            (
                n["level"].as_str().unwrap_or_default(),
                n["message"]["text"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        texts
            .iter()
            .any(|(level, text)| *level == "error" && text.contains("correctness pass failed")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|(level, text)| *level == "note" && text.contains("Cargo.lock")),
        "{texts:?}"
    );

    // What was found stands whatever was missed.
    rig.llm.answer(
        SECURITY,
        &reply(&[finding("src/db.rs", 3, "high", 92, "SQL injection")]),
    );
    let out = run(&rig, gate(&["--fail-on-partial"]), rig.env()).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// A terminal review waits for a pass as long as `PARLEY_PASS_TIMEOUT_SECS` says, not
/// the Lambda workers' 180 s: here 1 s, against a security pass that answers in 4 s.
#[tokio::test]
async fn a_pass_gets_the_deadline_the_operator_sets() {
    let rig = Rig::start().await;
    let reference = format!("{OWNER}/{NAME}#{PR}");
    rig.llm.remove_rules(SECURITY);
    rig.llm.answer_after(
        SECURITY,
        &reply(&[finding("src/db.rs", 3, "high", 92, "SQL injection")]),
        Duration::from_secs(4),
    );
    let mut env = rig.env();
    env.push(("PARLEY_PASS_TIMEOUT_SECS".into(), "1".into()));
    let started = std::time::Instant::now();
    let out = run(
        &rig,
        args(&["review", &reference, "--fail-on", "high"]),
        env,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "waited for the pass"
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("warning: the security pass failed: "),
        "{}",
        stderr(&out)
    );
}

/// `parley review OWNER/REPO#N --format github --fail-on high` as an Actions step whose
/// summary file is `summary`.
async fn review_in_actions(rig: &Rig, summary: &Path) -> Output {
    let mut env = rig.env();
    env.push(("GITHUB_STEP_SUMMARY".into(), summary.display().to_string()));
    let reference = format!("{OWNER}/{NAME}#{PR}");
    let argv = [
        "review",
        &reference,
        "--format",
        "github",
        "--fail-on",
        "high",
    ];
    run(rig, args(&argv), env).await
}

/// `--format github` prints one workflow command a line: an annotation on the finding's
/// lines (what Actions shows on the PR's diff, no code scanning needed) and a warning for
/// a failed pass; where Actions names a step summary file, the Markdown report is
/// appended to it.
#[tokio::test]
async fn github_format_annotates_the_diff_and_fills_the_step_summary() {
    let rig = Rig::start().await;
    rig.llm.fail(CORRECTNESS, 500);
    let summary = rig.dir.path().join("step-summary.md");
    std::fs::write(&summary, "# Tests\n").expect("summary file");

    let out = review_in_actions(&rig, &summary).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        lines[0].starts_with(
            "::error file=src/db.rs,line=3,endLine=3,title=Parley [critical] SQL injection::"
        ),
        "{printed}"
    );
    assert!(
        lines.iter().any(|l| l
            .starts_with("::warning title=Parley review is partial::The correctness pass failed")),
        "{printed}"
    );
    assert!(lines.iter().all(|l| l.starts_with("::")), "{printed}");
    let written = std::fs::read_to_string(&summary).expect("step summary");
    assert!(written.starts_with("# Tests\n"), "appended, not replaced");
    assert!(written.contains("## Parley review of"), "{written}");
    assert!(written.contains("SQL injection"), "{written}");

    // A summary file that cannot be written (a directory): one warning line, the result
    // as before.
    let out = review_in_actions(&rig, rig.dir.path()).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: could not write the step summary"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), printed, "the annotations are unchanged");
}

/// A model in trouble is reported the way a person reads it: a failed pass is one
/// `warning:` line on stderr (none with `--quiet`), a model that fails every pass one
/// error line; never the worker's timestamped log records (those only with `-v`).
#[tokio::test]
async fn a_failing_model_says_so_in_a_few_lines_and_no_log_records() {
    let rig = Rig::start().await;
    let reference = format!("{OWNER}/{NAME}#{PR}");
    rig.llm.remove_rules(SECURITY);
    rig.llm.fail(SECURITY, 500);

    let out = run(&rig, args(&["review", &reference]), rig.env()).await;
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the other passes reviewed: {err}"
    );
    assert!(
        err.starts_with("warning: the security pass failed: "),
        "{err}"
    );
    assert!(err.trim().lines().count() <= 3, "{err}");
    assert!(!looks_like_log_records(&err), "{err}");
    assert!(
        stdout(&out).contains("Passes that failed"),
        "{}",
        stdout(&out)
    );

    let out = run(&rig, args(&["review", &reference, "--quiet"]), rig.env()).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));

    let out = run(&rig, args(&["review", &reference, "-v"]), rig.env()).await;
    assert!(
        looks_like_log_records(&stderr(&out)),
        "-v shows the records: {}",
        stderr(&out)
    );

    // Every pass fails: one error line, exit 2.
    rig.llm.fail("", 500);
    let out = run(&rig, args(&["review", &reference]), rig.env()).await;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.trim().lines().count() <= 3, "{err}");
    assert!(!looks_like_log_records(&err), "{err}");
}

/// tracing's terminal format: a timestamp and a level on every record.
fn looks_like_log_records(text: &str) -> bool {
    text.lines()
        .any(|line| line.contains(" WARN ") || line.contains(" ERROR ") || line.contains(" INFO "))
}

#[tokio::test]
async fn bad_input_is_one_line_that_names_the_fix() {
    let rig = Rig::start().await;
    let reference = "octo-org/hello-world#42";
    let without = |name: &str| -> Vec<(String, String)> {
        rig.env().into_iter().filter(|(k, _)| k != name).collect()
    };
    let with = |name: &str, value: &str| -> Vec<(String, String)> {
        let mut env = without(name);
        env.push((name.to_string(), value.to_string()));
        env
    };
    let cases: Vec<(Vec<String>, Env, &str)> = vec![
        (
            args(&["review", "octo-org/hello-world"]),
            rig.env(),
            "OWNER/REPO#N",
        ),
        (
            args(&["review", reference]),
            without("GITHUB_TOKEN"),
            "set GITHUB_TOKEN",
        ),
        (
            args(&["review", reference]),
            with("GITHUB_TOKEN", "ghp_wrong"),
            "refused the credentials",
        ),
        (
            args(&["review", "octo-org/hello-world#404"]),
            rig.env(),
            "was not found",
        ),
        (
            args(&["review", reference]),
            without("LLM_PROVIDER"),
            "http://localhost:11434/v1",
        ),
        (
            args(&["review", reference]),
            with("LLM_BASE_URL", "http://127.0.0.1:9"),
            "the model did not answer",
        ),
        (
            args(&["review", reference]),
            with("LLM_MAX_OUTPUT_TOKENS", "12"),
            "LLM_MAX_OUTPUT_TOKENS must be a whole number of at least 256",
        ),
        (
            args(&["review", reference]),
            with("PARLEY_PASS_TIMEOUT_SECS", "soon"),
            "PARLEY_PASS_TIMEOUT_SECS: \"soon\" is not a whole number of seconds",
        ),
    ];
    for (argv, env, expected) in cases {
        let out = run(&rig, argv.clone(), env).await;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(err.contains(expected), "{argv:?}: {err}");
        assert!(stdout(&out).is_empty(), "{argv:?}: {}", stdout(&out));
        if !expected.contains("11434") {
            assert_eq!(err.trim().lines().count(), 1, "{argv:?}: one line: {err}");
        }
    }
    // A token that may read but not write: --post fails clearly, and nothing is posted.
    rig.github.accept_personal_token(TOKEN, true);
    let out = run(&rig, args(&["review", reference, "--post"]), rig.env()).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("Pull requests: write"),
        "{}",
        stderr(&out)
    );
    assert!(rig.github.reviews(REPO, PR).is_empty());
}

/// What `parley doctor` runs with: the App's credentials, the slug learnt from GitHub.
fn doctor_env(rig: &Rig) -> Vec<(String, String)> {
    let mut env = rig.fakes.env(
        &rig.dir.path().join("parley.db"),
        "a-webhook-secret-of-32-chars-xx",
    );
    env.retain(|(k, _)| k != "GITHUB_APP_SLUG" && k != "RUST_LOG");
    env
}

/// The row of `parley doctor`'s table that starts with `name`.
fn doctor_row(table: &str, name: &str) -> String {
    table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("{name}: {table}"))
        .to_string()
}

#[tokio::test]
async fn doctor_says_whether_the_merge_gate_holds() {
    let rig = Rig::start().await;
    // The doctor's "merge gate" row says all of `said` (and the run exits 0: a WARN works).
    let gate_says = async |said: &[&str]| {
        let out = run(&rig, args(&["doctor", REPO]), doctor_env(&rig)).await;
        assert!(out.status.success(), "{}", stdout(&out));
        parley_tests::expect::says_all(&doctor_row(&stdout(&out), "merge gate"), said);
    };
    // Nothing required: a team's choice, said with how to make it a gate.
    let not_required = "`Parley review` is not required on `main`";
    gate_says(&[" OK ", not_required, "as its source"]).await;
    // Required by a ruleset from any source: a workflow job of that name passes it.
    let github = &rig.fakes.github;
    github.require_check((REPO, "main"), Some(9), "Parley review", None);
    github.require_check((REPO, "main"), Some(9), "ci", Some(15368));
    let any_source = "(ruleset 9) from any source";
    gate_says(&[" WARN ", any_source, "a workflow job", "integration_id"]).await;
    // Branch protection that takes it from this App alone holds, whatever the ruleset says.
    github.require_check((REPO, "main"), None, "Parley review", Some(1));
    let pinned = "(branch protection) and only `";
    gate_says(&[" OK ", pinned, "` can set it"]).await;
    // A server without rulesets (404) is read as none; protection still decides.
    github.inject(Injected::answering("GET", "/rules/branches/main", 404, 1));
    gate_says(&[" OK ", pinned]).await;
    // GitHub refusing the branch: not known, and said so.
    github.inject(Injected::answering("GET", "/branches/main", 403, 1));
    gate_says(&[
        " WARN ",
        "would not give the rules of `main`",
        "is not known",
    ])
    .await;
}

/// The doctor reads the rules of every branch `review.baseBranches` names (and of the
/// default branch where the list takes it in), and of the branches its patterns match
/// among the repository's; where GitHub will not list them, it says it did not read them.
#[tokio::test]
async fn doctor_reads_the_rules_of_each_branch_the_repository_reviews() {
    let rig = Rig::start().await;
    let github = &rig.fakes.github;
    let gate_row = async |config: &str| {
        github.set_file(REPO, "HEAD", ".parley.yml", config);
        let out = run(&rig, args(&["doctor", REPO]), doctor_env(&rig)).await;
        assert!(out.status.success(), "{}", stdout(&out));
        doctor_row(&stdout(&out), "merge gate")
    };
    github.require_check((REPO, "main"), None, "Parley review", Some(1));
    github.require_check((REPO, "develop"), Some(4), "Parley review", None);
    github.require_check((REPO, "release/1.0"), None, "Parley review", Some(1));
    github.require_check((REPO, "release/2.0"), Some(7), "Parley review", None);
    let row = gate_row("review:\n  baseBranches: [main, develop, 'release/*']\n").await;
    parley_tests::expect::says_all(
        &row,
        &[
            " WARN ",
            "required on `main` (branch protection) and only `",
            "required on `develop` (ruleset 4) from any source",
            "required on `release/1.0` (branch protection) and only `",
            "required on `release/2.0` (ruleset 7) from any source",
        ],
    );
    assert!(!row.contains("not read here"), "{row}");
    // PRs into the default branch are not reviewed: its rules are none of Parley's.
    github.require_check((REPO, "develop"), None, "Parley review", Some(1));
    let row = gate_row("review:\n  baseBranches: [develop]\n").await;
    parley_tests::expect::says_all(&row, &[" OK ", "on `develop` (branch protection)"]);
    assert!(!row.contains("`main`"), "{row}");
    // Only a pattern: the branches it matches are read.
    let row = gate_row("review:\n  baseBranches: ['release/1.*']\n").await;
    parley_tests::expect::says_all(&row, &[" OK ", "on `release/1.0` (branch protection)"]);
    assert!(!row.contains("release/2.0"), "{row}");
    // A pattern no branch matches yet: nothing to read, and said; one matching only a
    // branch named too has matched it.
    let row = gate_row("review:\n  baseBranches: ['hotfix/*']\n").await;
    parley_tests::expect::says_all(&row, &[" SKIP ", "No branch matches `hotfix/*`"]);
    let row = gate_row("review:\n  baseBranches: [develop, 'dev*']\n").await;
    assert!(!row.contains("No branch matches"), "{row}");
    // A branch per release for years: the last ten by their numbers are read (`03.0` to
    // `13.0`, after `1.0` and `2.0`), the rest counted.
    for release in 3..=13 {
        let branch = format!("release/{release:02}.0");
        github.require_check((REPO, branch.as_str()), None, "Parley review", Some(1));
    }
    let row = gate_row("review:\n  baseBranches: ['release/*']\n").await;
    parley_tests::expect::says_all(
        &row,
        &[
            "on `release/13.0`",
            "on `release/04.0`",
            "3 more branches matching `release/*` (review.baseBranches) are not read here",
        ],
    );
    for older in ["`release/1.0`", "`release/2.0`", "`release/03.0`"] {
        assert!(!row.contains(older), "{older}: {row}");
    }
    // GitHub not listing the branches: said, with where to look instead.
    github.inject(Injected::answering("GET", "/branches", 403, 1));
    let row = gate_row("review:\n  baseBranches: [develop, 'release/*']\n").await;
    parley_tests::expect::says_all(
        &row,
        &[
            " OK ",
            "on `develop`",
            "Branches matching `release/*` (review.baseBranches) are not read here",
            "@parley configuration",
        ],
    );
}

#[tokio::test]
async fn doctor_says_what_works_and_how_to_fix_what_does_not() {
    let rig = Rig::start().await;
    let app_env = || doctor_env(&rig);
    rig.fakes
        .github
        .add_webhook_delivery("g-1", "pull_request", 202, 5);
    rig.fakes
        .github
        .add_webhook_delivery("g-2", "issue_comment", 502, 3);
    let out = run(&rig, args(&["doctor", REPO]), app_env()).await;
    let table = stdout(&out);
    assert!(out.status.success(), "{table}{}", stderr(&out));
    // Four checks read through the installation; it is looked up once.
    let lookups = rig
        .fakes
        .github
        .requests_to("GET", &format!("/repos/{REPO}/installation"));
    assert_eq!(lookups.len(), 1, "{lookups:#?}");
    assert!(
        table.contains("2 latest, 1 failed"),
        "the deliveries GitHub recorded: {table}"
    );
    for line in [
        "webhook secret",
        "GitHub App",
        "App permissions",
        "installation permissions",
        "webhook deliveries",
        "installation token",
        "LLM",
        "store",
        "queue",
        ".parley.yml",
    ] {
        let row = table
            .lines()
            .find(|l| l.starts_with(line))
            .unwrap_or_else(|| panic!("{line}: {table}"));
        assert!(row.contains(" OK "), "{row}");
    }
    assert!(
        rig.llm
            .prompts()
            .iter()
            .any(|p| p.text().contains("Reply with the word OK")),
        "one tiny LLM call"
    );
    // Told to call a tool, this model answered in words: a limit worth knowing, not a
    // failure (the exit status above); then a model that calls it, and a server that
    // refuses tools.
    let tools_row = |table: &str| {
        table
            .lines()
            .find(|l| l.starts_with("LLM tools"))
            .unwrap_or_else(|| panic!("{table}"))
            .to_string()
    };
    let row = tools_row(&table);
    parley_tests::expect::says_all(
        &row,
        &[" WARN ", "answered in words", "chatml-function-calling"],
    );
    rig.llm.call_tools(
        "Call the read_file tool",
        &[("read_file", serde_json::json!({"path": "README.md"}))],
    );
    let out = run(&rig, args(&["doctor", REPO]), app_env()).await;
    parley_tests::expect::says_all(
        &tools_row(&stdout(&out)),
        &[" OK ", "the model called read_file"],
    );
    rig.llm.refuse_tools();
    let mut ollama = app_env();
    ollama.retain(|(k, _)| !k.starts_with("LLM_"));
    ollama.extend([
        ("LLM_PROVIDER".to_string(), "openai".to_string()),
        ("LLM_BASE_URL".to_string(), format!("{}/v1", rig.llm.url)),
        ("LLM_MODEL".to_string(), "tiny:1b".to_string()),
    ]);
    let out = run(&rig, args(&["doctor", REPO]), ollama).await;
    assert!(out.status.success(), "{}", stdout(&out));
    parley_tests::expect::says_all(&tools_row(&stdout(&out)), &[" WARN ", "refused", "--jinja"]);

    let broken: Vec<(&str, Option<&str>, &str, &str)> = vec![
        (
            "GITHUB_WEBHOOK_SECRET",
            None,
            "webhook secret",
            "openssl rand -hex 32",
        ),
        (
            "GITHUB_WEBHOOK_SECRET",
            Some("short"),
            "webhook secret",
            "shorter than 16",
        ),
        ("GITHUB_APP_ID", None, "GitHub App", "GITHUB_APP_ID is not"),
        ("LLM_PROVIDER", None, "LLM", "LLM_PROVIDER"),
        (
            "LLM_BASE_URL",
            Some("http://127.0.0.1:9"),
            "LLM",
            "check LLM_PROVIDER",
        ),
        ("PARLEY_STORE", Some("postgres"), "store", "PARLEY_STORE"),
    ];
    for (name, value, row_name, fix) in broken {
        let mut env = app_env();
        env.retain(|(k, _)| k != name);
        if let Some(value) = value {
            env.push((name.to_string(), value.to_string()));
        }
        let out = run(&rig, args(&["doctor", REPO]), env).await;
        let table = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{name}: {table}");
        let row = table
            .lines()
            .find(|l| l.starts_with(row_name) && l.contains("FAIL"))
            .unwrap_or_else(|| panic!("{name}: no failing {row_name} row: {table}"));
        assert!(row.contains(fix), "{name}: {row}");
    }

    // A GitHub without the delivery log (an Enterprise Server without it): said as such.
    rig.fakes
        .github
        .answer_next_listing(404, serde_json::json!({ "message": "Not Found" }));
    let out = run(&rig, args(&["doctor", REPO]), app_env()).await;
    let table = stdout(&out);
    let row = table
        .lines()
        .find(|l| l.starts_with("webhook deliveries"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("keeps no webhook delivery log"), "{row}");
    assert!(row.contains("PARLEY_REDELIVERY_MINUTES=0"), "{row}");

    // An App made before Parley used merge queues: a warning naming what to add; one
    // that cannot post reviews or checks fails.
    let setup_row = |table: &str| {
        table
            .lines()
            .find(|l| l.starts_with("App permissions"))
            .unwrap_or_else(|| panic!("{table}"))
            .to_string()
    };
    let older = serde_json::json!({
        "pull_requests": "write", "issues": "write", "contents": "read", "checks": "write",
        "metadata": "read", "members": "read",
    });
    let events: Vec<&str> = (parley_cli::manifest::EVENTS.into_iter())
        .filter(|e| *e != "merge_group")
        .collect();
    rig.fakes.github.set_app_setup(older, &events);
    let out = run(&rig, args(&["doctor", REPO]), app_env()).await;
    assert!(out.status.success(), "{}", stdout(&out));
    parley_tests::expect::says_all(
        &setup_row(&stdout(&out)),
        &[
            " WARN ",
            "merge_queues: read",
            "the merge_group event",
            "accept",
        ],
    );
    let read_only = serde_json::json!({
        "pull_requests": "read", "issues": "write", "contents": "read", "metadata": "read",
        "merge_queues": "read", "members": "read",
    });
    rig.fakes.github.set_app_setup(read_only, &events);
    let out = run(&rig, args(&["doctor", REPO]), app_env()).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let row = setup_row(&stdout(&out));
    parley_tests::expect::says_all(
        &row,
        &[
            " FAIL ",
            "pull_requests: write",
            "checks: write",
            "the merge_group event",
        ],
    );
    assert!(!row.contains("issues: write"), "{row}");

    // The App asks for all of it, but the installation has not accepted merge queues.
    rig.fakes.github.reset_app_setup();
    rig.fakes.github.set_installation_setup(
        serde_json::json!({
            "pull_requests": "write", "issues": "write", "contents": "read",
            "checks": "write", "metadata": "read", "members": "read",
        }),
        &parley_cli::manifest::EVENTS,
    );
    let out = run(&rig, args(&["doctor", REPO]), app_env()).await;
    assert!(out.status.success(), "{}", stdout(&out));
    let table = stdout(&out);
    assert!(setup_row(&table).contains(" OK "), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("installation permissions"))
        .unwrap_or_else(|| panic!("{table}"));
    parley_tests::expect::says_all(row, &[" WARN ", "merge_queues: read", "accept"]);

    // The App not installed on the repository.
    let out = run(&rig, args(&["doctor", "octo-org/elsewhere"]), app_env()).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("not installed on octo-org/elsewhere"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn app_manifest_and_config_schema_print_json() {
    let rig = Rig::start().await;
    let out = run(
        &rig,
        args(&["app", "manifest", "--url", "https://parley.example.com"]),
        Vec::new(),
    )
    .await;
    assert!(out.status.success());
    let manifest: Value = serde_json::from_slice(&out.stdout).expect("manifest json");
    assert_eq!(
        manifest["hook_attributes"]["url"],
        "https://parley.example.com/webhook"
    );
    assert_eq!(manifest["default_permissions"]["pull_requests"], "write");

    let out = run(&rig, args(&["config", "schema"]), Vec::new()).await;
    let schema: Value = serde_json::from_slice(&out.stdout).expect("schema json");
    assert_eq!(schema["title"], "Parley configuration (.parley.yml)");
}
