//! `parley review`: one review from the terminal, with the worker's own review code.
//!
//! A PR (`owner/repo#N` or its URL) is read from GitHub with a personal token or the
//! App's credentials; a local change (`--git`, `--diff`) never touches GitHub. Either
//! way the change goes through [`parley_core::review::analyse`] — the same specialists,
//! merge, learnings, judge and thresholds as a posted review — and the findings are
//! printed. Nothing is posted unless `--post` asks for it.

pub mod annotations;
mod error;
pub mod local;
pub mod progress;
pub mod render;
pub mod sarif;
pub mod target;

use parley_core::config::{PassDeadline, RepoConfig};
use parley_core::learning::apply::Suppressed;
use parley_core::llm::{MeteredLlm, UsageTally};
use parley_core::mention::Handles;
use parley_core::ports::github::RepoScope;
use parley_core::ports::llm::{Llm, LlmError};
use parley_core::ports::{GitHub, GitHubError, Severity, Store};
use parley_core::repo::{ConfigLoader, read_rules};
use parley_core::retrieval::Recall;
use parley_core::review::analyse::{self, Analysis, Subject};
use parley_core::review::inputs::NotReviewed;
use parley_core::review::merge::Candidate;
use parley_core::review::publish::{self, Identified};
use parley_core::review::pull_files::PullFiles;
use parley_core::review::specialists::NotNeeded;
use parley_core::review::{ReviewError, rules_change, summary};
use parley_github::{GitHubClient, GitHubConfig};
use parley_runtime::clients::Env;
use parley_store::sqlite::SqliteStore;
use render::Format;
use std::path::PathBuf;
use std::sync::Arc;
use target::PullRef;

use error::unusable;
pub use error::{CliError, first_run_message};

#[derive(Debug, Clone, clap::Args)]
pub struct ReviewArgs {
    /// The PR: `https://github.com/OWNER/REPO/pull/N` or `OWNER/REPO#N`.
    #[arg(conflicts_with_all = ["git", "diff"], required_unless_present_any = ["git", "diff"])]
    pub pull: Option<String>,
    /// Review a local git range BASE..HEAD; without a value, the merge base with the
    /// default branch up to the working tree.
    #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "BASE..HEAD", conflicts_with = "diff")]
    pub git: Option<String>,
    /// Review a unified diff from a file, or stdin with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub diff: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Post the review on the PR (one review, inline comments and a summary).
    #[arg(long, conflicts_with_all = ["git", "diff"])]
    pub post: bool,
    /// The repository directory for --git and --diff.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub repo_dir: PathBuf,
    /// Print only the result and errors: no progress bar, no warnings.
    #[arg(long, short)]
    pub quiet: bool,
    /// Exit with status 1 when a reported finding is at or above this severity (0
    /// otherwise; 2 stays "could not review"), for a CI job that should fail on them.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Exit with status 3 when the review is partial (a pass failed, or changed files
    /// were left out for the token budget) and nothing reached `--fail-on`: for a CI job
    /// that must not pass on a review that did not see everything.
    #[arg(long)]
    pub fail_on_partial: bool,
    /// Diagnostic log records on stderr (RUST_LOG picks them finer).
    #[arg(long, short)]
    pub verbose: bool,
}

/// The severities `--fail-on` takes, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Nit,
    Low,
    Medium,
    High,
    Critical,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Nit => Severity::Nit,
            FailOn::Low => Severity::Low,
            FailOn::Medium => Severity::Medium,
            FailOn::High => Severity::High,
            FailOn::Critical => Severity::Critical,
        }
    }
}

impl Report {
    /// The exit status: 1 for a reported finding (inline or in the summary) at or above
    /// `--fail-on`, else 3 for a partial review under `--fail-on-partial`, else 0. A
    /// finding outranks partiality: what was found stands whatever was missed.
    pub fn exit_status(&self, fail_on: Option<FailOn>, fail_on_partial: bool) -> u8 {
        let found = fail_on.is_some_and(|bar| {
            self.inline
                .iter()
                .chain(&self.in_summary)
                .any(|c| c.severity >= bar.severity())
        });
        if found {
            1
        } else if fail_on_partial && self.partial {
            3
        } else {
            0
        }
    }

    /// What a person should know on stderr besides the result: one line each.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .passes_failed
            .iter()
            .map(|(pass, reason)| format!("warning: the {pass} pass failed: {reason}"))
            .collect();
        if self.partial && self.passes_failed.is_empty() {
            lines.push("warning: the review is partial (see \"Not reviewed\")".to_string());
        }
        lines
    }
}

/// The outcome of a review, whatever it was run on.
#[derive(Default)]
pub struct Report {
    /// `owner/repo#N`, or `owner/repo base..head` for a local change.
    pub subject: String,
    pub repo: String,
    pub pr: Option<u64>,
    pub base: String,
    pub head: String,
    pub inline: Vec<Candidate>,
    pub in_summary: Vec<Candidate>,
    /// The files the passes read: none means nothing was reviewed, which "No findings"
    /// would hide.
    pub files_reviewed: Vec<String>,
    pub not_reviewed: Vec<NotReviewed>,
    /// GitHub listed only part of the PR's files.
    pub listing_truncated: bool,
    /// See [`parley_core::review::analyse::Analysis::partial`].
    pub partial: bool,
    pub passes_ok: Vec<&'static str>,
    pub passes_failed: Vec<(&'static str, String)>,
    /// How many parts the diff was read in (each by every pass).
    pub parts: usize,
    /// Passes the change gave nothing to look at (only documentation or data changed).
    pub passes_not_needed: Vec<NotNeeded>,
    pub below_threshold: usize,
    pub min_confidence: u8,
    /// Findings taken out (by a learning, the judge, or for naming code the review could
    /// not see), each with why: a count alone would leave the person guessing.
    pub suppressed: Vec<Suppressed>,
    pub usage: UsageTally,
    /// The posted review's URL, with `--post`.
    pub posted: Option<String>,
    /// What retrieval put in the prompts from the local store's earlier reviews, one line
    /// each.
    pub context_used: Vec<String>,
    /// What the change does, a paragraph a part, as a posted summary opens with it.
    pub overview: Vec<String>,
}

/// Run one review and return what to print.
pub async fn run(args: &ReviewArgs, env: &Env) -> Result<Report, CliError> {
    // A bad reference is reported before anything else is set up.
    let pull = args.pull.as_deref().map(target::parse).transpose()?;
    let llm = llm(env).await?;
    let prices =
        Arc::new(parley_runtime::clients::prices(env).map_err(|e| CliError::Setup(e.to_string()))?);
    let store = local_store(env).await?;
    let deadline =
        parley_runtime::clients::pass_deadline(env).map_err(|e| CliError::Setup(e.to_string()))?;
    // What `parley serve` remembered in the same file is searched too (read only: a
    // terminal review writes nothing for later retrieval). No embeddings provider means
    // lexical search, as in the App.
    let embedder = parley_runtime::clients::embedder_from_env(env)
        .await
        .map_err(|e| CliError::Setup(e.to_string()))?;
    let recall = Recall {
        corpus: store.as_ref(),
        embedder: embedder.as_deref(),
    };
    let silenced = Handles::new(
        &env("GITHUB_APP_SLUG").unwrap_or_else(|| "parley".into()),
        &[],
    );
    let progress = progress::Bar::new(args.quiet);
    let metered = MeteredLlm::new(llm, prices);
    let session = Session {
        store: store.as_ref(),
        recall,
        llm: &metered,
        silenced: &silenced,
        progress: &progress,
        quiet: args.quiet,
        deadline,
    };
    let report = match (&args.pull, &args.git, &args.diff) {
        (Some(_), _, _) => {
            let Some(pull) = &pull else {
                return Err(CliError::Setup("no PR reference".into()));
            };
            let reference = args.pull.as_deref().unwrap_or_default();
            review_pull(pull, reference, args.post, env, &session).await?
        }
        (None, Some(range), _) => {
            let range = Some(range.as_str()).filter(|r| !r.is_empty());
            let change = local::from_git(&args.repo_dir, range)?;
            review_local(change, &session).await?
        }
        (None, None, Some(source)) => {
            let change = local::from_diff(source, &args.repo_dir)?;
            review_local(change, &session).await?
        }
        (None, None, None) => {
            return Err(CliError::Setup(
                "give a PR (OWNER/REPO#N or its URL), --git [BASE..HEAD] or --diff FILE".into(),
            ));
        }
    };
    progress.finish();
    Ok(report)
}

/// What every review run here shares: the local store (learnings, earlier findings, and
/// the corpora retrieval searches), the metered model, the bot's handles, the progress bar.
struct Session<'a> {
    store: &'a dyn Store,
    recall: Recall<'a>,
    llm: &'a MeteredLlm,
    silenced: &'a Handles,
    progress: &'a progress::Bar,
    /// `--quiet`: warnings are not printed.
    quiet: bool,
    /// How long a pass may run (`PARLEY_PASS_TIMEOUT_SECS`; a slow local model needs more).
    deadline: PassDeadline,
}

async fn review_pull(
    pull: &PullRef,
    reference: &str,
    post: bool,
    env: &Env,
    session: &Session<'_>,
) -> Result<Report, CliError> {
    let (store, llm) = (session.store, session.llm);
    let client = github(env, pull, reference, post)?;
    let installation = if client.is_app() {
        client
            .repo_installation(&pull.owner, &pull.name)
            .await
            .map_err(|err| match err {
                GitHubError::NotFound(_) => CliError::NotFound(format!(
                    "an installation of the App on {}/{}",
                    pull.owner, pull.name
                )),
                other => CliError::from_github(other, &pull.to_string()),
            })?
            .id
    } else {
        0
    };
    let github: Arc<dyn GitHub> = Arc::new(client);
    let scope = RepoScope::new(installation, pull.owner.clone(), pull.name.clone());
    let pr = github
        .get_pull_request(&scope, pull.number)
        .await
        .map_err(|e| CliError::from_github(e, &pull.to_string()))?;
    // What was typed may differ from the repository's name (case, a rename GitHub
    // redirects): what Parley keeps is keyed by the name GitHub gives.
    let scope = canonical_scope(scope, &pr);
    let repo = scope.full_name();
    let tenant = scope.tenant();
    let loaded = ConfigLoader::new(github.clone(), ConfigLoader::DEFAULT_TTL)
        .with_pass_deadline(session.deadline)
        .for_pull(&scope, &pr)
        .await;
    let listing = PullFiles::fetch(github.as_ref(), &scope, pull.number)
        .await
        .map_err(|e| CliError::from_github(e, &pull.to_string()))?;
    let ((guidelines, attributes), issues) = tokio::join!(
        read_rules(
            github.as_ref(),
            &scope,
            &pr.base.ref_name,
            &loaded,
            &listing.paths,
        ),
        parley_core::review::linked_issues::read(
            github.as_ref(),
            &scope,
            &pr,
            &loaded.config.review
        ),
    );
    let earlier = store
        .findings_for_pr(&tenant.repo, pull.number)
        .await
        .map_err(|e| CliError::Setup(format!("the local store: {e}")))?;
    // The repository at the head, as the worker reads it (fail open).
    let code = {
        use parley_core::ports::code::CodeSource;
        // The same disk cache as `parley serve`: a second run on the same head does not
        // download the archive again.
        parley_code::GitHubCode::from_env(|name| std::env::var(name).ok())
            .open(github.as_ref(), &scope, &pr.head.sha)
            .await
    };
    // Files whose own header says a tool wrote them, on the default branch too, as the
    // worker leaves them out.
    let read = parley_core::review::inputs::select(
        listing.files.clone(),
        listing.truncated,
        &loaded.config.review,
        &attributes,
    );
    let headed = parley_core::repo::generated::marked_in_files(
        github.as_ref(),
        &scope,
        &loaded.branch,
        code.as_ref().ok().map(|c| c.as_ref()),
        &read.files,
    );
    let attributes = attributes.with_headers(headed.await);
    let subject = Subject {
        repo: &repo,
        tenant: &tenant,
        code: code.as_ref().map(|c| c.as_ref()).map_err(Clone::clone),
        number: pull.number,
        title: &pr.title,
        description: &pr.body,
        base_sha: &pr.base.sha,
        head_sha: &pr.head.sha,
        incremental: false,
        files: listing.files.clone(),
        truncated: listing.truncated,
        pull: &listing,
        guidelines: &guidelines,
        issues: &issues,
        attributes: &attributes,
        earlier: &earlier,
        recall: Some(session.recall),
    };
    let analysis = analysis(session, &loaded.config, &subject).await?;
    let mut report = report(
        &analysis,
        llm,
        pull.to_string(),
        &repo,
        Some(pull.number),
        &pr.base.sha,
        &pr.head.sha,
    );
    if post {
        // The PR's own page names its server (github.com or an Enterprise host).
        let repo_url = pr
            .html_url
            .rsplit_once("/pull/")
            .map(|(repo_url, _)| repo_url.to_string())
            .unwrap_or_else(|| format!("https://github.com/{repo}"));
        let usage = llm.tally();
        let in_force = rules_change::InForce {
            config: &loaded.config,
            under: &loaded.under,
            attributes: &attributes,
            deadline: session.deadline,
        };
        let rules_changed = rules_change::rules_changed(
            github.as_ref(),
            &scope,
            &pr.head.sha,
            &listing.files,
            &in_force,
        )
        .await;
        let summary = analysis.summary(analyse::Framing {
            repo_url: &repo_url,
            head_sha: &pr.head.sha,
            base_sha: &pr.base.sha,
            incremental: false,
            narrowed: None,
            trigger: "cli",
            rerun_of: None,
            guidelines: &guidelines,
            config_warnings: &loaded.warnings,
            rules_changed: &rules_changed,
            usage: &usage,
            spent_on_pr: None,
            silenced: session.silenced,
        });
        report.posted = Some(
            post_review(
                github.as_ref(),
                store,
                &scope,
                pull.number,
                &pr.head.sha,
                &analysis,
                &summary,
            )
            .await?,
        );
    }
    Ok(report)
}

async fn review_local(
    mut change: local::LocalChange,
    session: &Session<'_>,
) -> Result<Report, CliError> {
    session
        .deadline
        .apply(&mut change.config, &mut change.warnings);
    let listing = PullFiles::from_files(change.files.clone(), false);
    // The working tree is the head: its files are read as they are.
    let code = parley_code::source::open_dir(&change.root, parley_code::Limits::default());
    let subject = Subject {
        repo: &change.repo,
        tenant: &change.tenant(),
        code: code.as_ref().map(|c| c.as_ref()).map_err(Clone::clone),
        number: 0,
        title: &change.title,
        description: "",
        base_sha: &change.base,
        head_sha: &change.head,
        incremental: false,
        files: change.files.clone(),
        truncated: false,
        pull: &listing,
        guidelines: &change.guidelines,
        issues: &Default::default(),
        attributes: &change.attributes,
        earlier: &[],
        recall: Some(session.recall),
    };
    if !session.quiet {
        for warning in &change.warnings {
            eprintln!("warning: .parley.yml {warning}");
        }
    }
    let analysis = analysis(session, &change.config, &subject).await?;
    let name = format!(
        "{} {}..{}",
        change.repo,
        summary::short(&change.base),
        summary::short(&change.head)
    );
    Ok(report(
        &analysis,
        session.llm,
        name,
        &change.repo,
        None,
        &change.base,
        &change.head,
    ))
}

async fn analysis(
    session: &Session<'_>,
    config: &RepoConfig,
    subject: &Subject<'_>,
) -> Result<Analysis, CliError> {
    let Session {
        store,
        llm,
        silenced,
        progress,
        ..
    } = *session;
    analyse::analyse(store, llm, config, subject, silenced, progress)
        .await
        .map_err(|err| match err {
            ReviewError::AllPassesFailed(LlmError::InvalidOutput { cut_off, .. }) => {
                unusable(cut_off)
            }
            ReviewError::AllPassesFailed(e @ LlmError::Timeout(_)) => {
                CliError::TooSlow(e.to_string())
            }
            ReviewError::AllPassesFailed(e) => CliError::Llm(e.public_reason().to_string()),
            other => CliError::Setup(other.to_string()),
        })
}

fn report(
    analysis: &Analysis,
    llm: &MeteredLlm,
    subject: String,
    repo: &str,
    pr: Option<u64>,
    base: &str,
    head: &str,
) -> Report {
    Report {
        subject,
        repo: repo.to_string(),
        pr,
        base: base.to_string(),
        head: head.to_string(),
        inline: analysis.filtered.inline.clone(),
        in_summary: analysis.filtered.in_summary.clone(),
        files_reviewed: analysis
            .inputs
            .files
            .iter()
            .map(|f| f.path.clone())
            .collect(),
        not_reviewed: analysis.inputs.not_reviewed.clone(),
        listing_truncated: analysis.inputs.listing_truncated,
        partial: analysis.partial(),
        passes_ok: analysis.passes_ok(),
        parts: analysis.inputs.parts(),
        passes_failed: analysis.passes_failed(),
        passes_not_needed: analysis.not_needed.clone(),
        below_threshold: analysis.filtered.below_threshold.len(),
        min_confidence: analysis.filtered.min_confidence,
        suppressed: analysis.suppressed.clone(),
        usage: llm.tally(),
        posted: None,
        context_used: analysis.retrieved.citations(),
        overview: parley_core::review::overview::collect(&analysis.results),
    }
}

/// One review on the PR, its findings kept in the local store (a later `parley review`
/// of the same PR does not report them again).
async fn post_review(
    github: &dyn GitHub,
    store: &dyn Store,
    scope: &RepoScope,
    number: u64,
    head_sha: &str,
    analysis: &Analysis,
    summary: &summary::Summary<'_>,
) -> Result<String, CliError> {
    let inline: Vec<Identified> = analysis
        .filtered
        .inline
        .iter()
        .map(|c| Identified::new(c.clone(), head_sha))
        .collect();
    let in_summary: Vec<Identified> = analysis
        .filtered
        .in_summary
        .iter()
        .map(|c| Identified::new(c.clone(), head_sha))
        .collect();
    let posted = publish::post_review(
        github,
        scope,
        number,
        head_sha,
        &inline,
        &summary.render(false),
        &summary.render(true),
    )
    .await
    .map_err(|err| match err {
        GitHubError::Forbidden(m) => CliError::CannotPost(m),
        GitHubError::NotFound(m) => CliError::CannotPost(m),
        other => CliError::GitHub(other),
    })?;
    if let Err(err) = publish::record_findings(
        github,
        store,
        scope,
        number,
        head_sha,
        posted.review.id,
        &inline,
        &in_summary,
    )
    .await
    {
        // Posted already: a local bookkeeping failure must not read as "not posted".
        eprintln!("warning: the review is posted, but its findings were not stored locally: {err}");
    }
    Ok(posted.review.html_url)
}

/// The LLM, or the first-run message naming the three ways to get one.
async fn llm(env: &Env) -> Result<Arc<dyn Llm>, CliError> {
    let lookup = |name: &str| env(name);
    if let Err(err) = parley_llm::LlmConfig::from_lookup(lookup) {
        let reason = match env(parley_llm::config::PROVIDER_ENV) {
            None => "none is configured".to_string(),
            Some(_) => err.to_string(),
        };
        return Err(CliError::NoLlm(first_run_message(&reason)));
    }
    parley_runtime::clients::llm_from_env(env)
        .await
        .map_err(|e| CliError::Setup(e.to_string()))
}

/// The local SQLite store (`PARLEY_DB_PATH`): what `parley serve` learned applies here too.
async fn local_store(env: &Env) -> Result<Arc<SqliteStore>, CliError> {
    let path = env("PARLEY_DB_PATH").unwrap_or_else(|| ".parley/parley.db".into());
    let store = SqliteStore::open(std::path::Path::new(&path))
        .map_err(|e| CliError::Setup(format!("cannot open the local store at {path}: {e}")))?;
    Ok(Arc::new(store))
}

/// `scope` named as GitHub names the PR's base repository.
fn canonical_scope(scope: RepoScope, pr: &parley_core::ports::github::PullRequest) -> RepoScope {
    let canonical = pr
        .base
        .repo
        .as_ref()
        .and_then(|repo| repo.full_name.split_once('/'))
        .filter(|(owner, name)| !owner.is_empty() && !name.is_empty());
    // Its ids key what Parley keeps, as they do for the webhook's jobs.
    let ids = |scope: RepoScope| match pr.base.repo.as_ref() {
        Some(repo) => {
            let owner_id = repo.owner.as_ref().map_or(0, |owner| owner.id);
            scope.with_ids(repo.id, owner_id)
        }
        None => scope,
    };
    match canonical {
        Some((owner, name)) => ids(RepoScope::new(scope.installation_id, owner, name)),
        None => ids(scope),
    }
}

/// A person's token first (it is what someone running this by hand has), else the App.
/// The server is the one the PR's URL names, unless `GITHUB_API_URL` says otherwise; with
/// `--post`, a `GITHUB_API_URL` on another server than the URL's is refused.
fn github(
    env: &Env,
    pull: &PullRef,
    reference: &str,
    post: bool,
) -> Result<GitHubClient, CliError> {
    let configured = env(parley_github::config::ENV_API_URL).filter(|u| !u.trim().is_empty());
    let api_url = match (&configured, pull.api_url()) {
        (Some(api_url), Some(derived)) if post && !pull.served_by(api_url) => {
            return Err(CliError::HostMismatch {
                url: reference.trim().to_string(),
                origin: pull.origin.clone().unwrap_or_default(),
                api_url: api_url.clone(),
                derived,
            });
        }
        (Some(api_url), _) => Some(api_url.clone()),
        (None, derived) => derived,
    };
    let config = GitHubConfig::from_lookup(|name| {
        if name == parley_github::config::ENV_API_URL {
            api_url.clone()
        } else {
            env(name)
        }
    })
    .map_err(|e| CliError::Setup(e.to_string()))?;
    let config = match env(parley_github::config::ENV_TOKEN).filter(|t| !t.trim().is_empty()) {
        Some(token) => GitHubConfig {
            app_id: None,
            private_key_pem: None,
            ..config
        }
        .with_token(token),
        None if config.has_credentials() => config,
        None => return Err(CliError::NoGitHub(format!("{}/{}", pull.owner, pull.name))),
    };
    GitHubClient::new(config).map_err(|e| CliError::Setup(e.to_string()))
}

/// A finding as the passes report one, for the renderers' tests.
#[cfg(test)]
pub(crate) fn sample_finding(path: &str, severity: Severity, category: &str) -> Candidate {
    Candidate {
        path: path.into(),
        line: 3,
        start_line: None,
        severity,
        category: category.into(),
        confidence: 90,
        title: "title".into(),
        body: "body".into(),
        suggestion: None,
        passes: vec!["security".into()],
        fingerprint: "f".into(),
        site: String::new(),
        code: String::new(),
        on_diff: true,
        doubt: None,
    }
}
