//! What Parley reads before answering: the PR (or a plain issue's title and body), the
//! finding under discussion, the code around the commented line, the repository's
//! guidelines (base branch; default branch for an issue), and the conversation so far,
//! fitted to the budget. Everything user-written is sanitised here,
//! once, so the prompt only ever sees clean data.

use super::budget::{self, Fitted, Turn};
use super::caches::TtlCache;
use super::error::ConversationError;
use super::since::{self, Since};
use super::snapshot::{DEFAULT_BRANCH, PrSnapshot, Subject};
use super::thread::Conversation;
use super::trigger::Trigger;
use crate::markers::{self, FindingMarker};
use crate::ports::github::{GitHub, PageLimit};
use crate::ports::{Finding, Store};
use crate::repo::{Guideline, instructions_for, load_guidelines};
use crate::retrieval::queries::{self, QuestionContext};
use crate::retrieval::{Candidate, Recall, Retrieved};
use crate::review::linked_issues::{self, LinkedIssue};
use crate::sanitize;
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

/// Guideline files are read at the base SHA, which never changes; the TTL only bounds
/// memory and lets an edited base branch (a new base SHA) be seen. On a plain issue they
/// are read from the default branch, which moves: the TTL bounds how stale they get.
pub const GUIDELINE_TTL: Duration = Duration::from_secs(300);
/// Lines of diff shown above the commented line.
const HUNK_LINES: usize = 30;
/// The PR description is context, not the conversation; keep it short.
const DESCRIPTION_CHARS: usize = 1_500;
/// A plain issue's description is all the context there is besides the conversation, so
/// it gets more room than a PR's: up to the webhook's own cap on it.
const ISSUE_DESCRIPTION_CHARS: usize = 4_000;
/// Changed files named in a top-level answer's context.
const MAX_FILES: usize = 50;

/// (installation, repo, base SHA, commented path).
pub type GuidelineCache = TtlCache<(u64, String, String, String), Arc<Vec<Guideline>>>;

#[derive(Debug, Clone)]
pub struct PrSummary {
    pub number: u64,
    pub title: String,
    pub description: String,
    pub author: String,
    pub base: String,
    pub head: String,
    pub changed_files: Option<u64>,
    pub additions: Option<u64>,
    pub deletions: Option<u64>,
    /// `path (+a -d)`; listed for top-level questions only (inline ones have their hunk).
    pub files: Vec<String>,
}

/// A plain issue, from the job's copy of its title and description.
#[derive(Debug, Clone)]
pub struct IssueSummary {
    pub number: u64,
    pub title: String,
    pub description: String,
}

/// What the conversation is on.
#[derive(Debug, Clone)]
pub enum About {
    Pull(PrSummary),
    Issue(IssueSummary),
}

/// The finding a thread is about, and whether the store knew it (else it was rebuilt from
/// the comment's marker and will be stored when its state changes).
#[derive(Debug, Clone)]
pub struct FindingInPlay {
    pub finding: Finding,
    pub stored: bool,
}

#[derive(Debug, Clone)]
pub struct Context {
    pub about: About,
    pub finding: Option<FindingInPlay>,
    /// `path`, and line when known, of an inline comment.
    pub path: Option<String>,
    pub line: Option<u64>,
    pub diff_hunk: Option<String>,
    pub guidelines: Arc<Vec<Guideline>>,
    pub history: Fitted,
    pub question_author: String,
    pub question: String,
    /// The question replied to a comment that is gone; the model is told it has no thread.
    pub parent_missing: bool,
    /// The repository's learnings that concern this conversation (`[L-3f9a] kind: text`),
    /// so an answer respects what the team taught and can cite it.
    pub learnings: Vec<String>,
    /// Related code, past findings and threads of earlier PRs, and learnings about other
    /// files, found for this question ([`crate::retrieval`]); empty when retrieval is
    /// off, found nothing, or the conversation left no room.
    pub retrieved: Retrieved,
    /// The code around the commented line, read from the repository at the PR's head
    /// ([`crate::context::around_line`]); empty when there is none to read.
    pub code: String,
    /// That repository, for the answer's tool calls; `None` when it could not be read.
    pub codebase: Option<OpenCode>,
    /// `language` in `.parley.yml`: what an answer is written in when the question's own
    /// language is unclear.
    pub language: Option<crate::config::Language>,
    /// On a PR, the issues its description says it resolves: what the change is for, which
    /// a question ("does this fix #12?") or a dispute may turn on.
    pub issues: Vec<LinkedIssue>,
    /// On an outdated thread (or about a finding named from an earlier commit), what
    /// changed at its lines since and where they stand now (`code` is read there): "fixed,
    /// have another look" is checked against the code as it is.
    pub since: Option<Since>,
}

/// An opened snapshot of the repository (its `Debug` says only how many files).
#[derive(Clone)]
pub struct OpenCode(pub std::sync::Arc<dyn crate::ports::code::Codebase>);

impl std::fmt::Debug for OpenCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenCode({} files)", self.0.files())
    }
}

pub struct Sources<'a> {
    pub github: &'a dyn GitHub,
    pub store: &'a dyn Store,
    pub guidelines: &'a GuidelineCache,
    pub recall: Recall<'a>,
    /// Where the repository's code is read from; `None`: the diff hunk only.
    pub code: Option<&'a dyn crate::ports::code::CodeSource>,
}

pub async fn assemble(
    sources: &Sources<'_>,
    snap: &PrSnapshot,
    trigger: &Trigger,
    conversation: &Conversation,
) -> Result<Context, ConversationError> {
    let finding = load_finding(sources.store, snap, conversation, trigger).await?;
    // A question in the PR's conversation about a finding it names is about its lines.
    let named = finding
        .as_ref()
        .filter(|_| conversation.root.is_none())
        .map(|f| &f.finding);
    let head = snap.pull().map(|pr| pr.head.sha.as_str());
    let path = conversation
        .root
        .as_ref()
        .map(|r| r.path.clone())
        .or_else(|| trigger.path.clone())
        .or_else(|| named.map(|f| f.path.clone()))
        .filter(|p| !p.is_empty());
    let line = conversation
        .root
        .as_ref()
        .and_then(|r| r.line.or(r.original_line).map(u64::from))
        .or(trigger.line)
        .or(named.map(|f| u64::from(f.line)));
    let head_line = match &conversation.root {
        Some(root) => crate::conversation::trigger::head_line(root),
        None => trigger.head_line.or_else(|| {
            named
                .filter(|f| Some(f.head_sha.as_str()) == head)
                .map(|f| u64::from(f.line))
        }),
    };
    let anchor = match (&conversation.root, named, head) {
        (Some(root), _, Some(head)) => since::Anchor::outdated(root, head),
        (None, Some(finding), Some(head)) => since::Anchor::finding(finding, head),
        _ => None,
    };
    let diff_hunk = conversation
        .root
        .as_ref()
        .map(|r| r.diff_hunk.clone())
        .filter(|h| !h.is_empty())
        .or_else(|| trigger.diff_hunk.clone())
        .map(|h| tail_lines(&h, HUNK_LINES));
    // Independent reads, side by side.
    let ((files_read, (paths, files)), (issues, since)) = crate::concurrently::join2(
        crate::concurrently::join2(guideline_files(sources, snap, path.as_deref()), async {
            match snap.pull() {
                Some(_) if !trigger.is_inline() => changed_files(sources.github, snap).await,
                _ => Default::default(),
            }
        }),
        crate::concurrently::join2(issues_resolved(sources.github, snap), async {
            match anchor {
                Some(anchor) => since::since(sources.github, snap, anchor).await,
                None => None,
            }
        }),
    )
    .await;
    let touched = match &path {
        Some(path) => vec![path.clone()],
        None => paths,
    };
    let guidelines = with_instructions(files_read, snap, &touched);

    let budget_chars = snap.config.config.mention.context_budget_chars as usize;
    let cap = budget::per_comment_cap(budget_chars);
    // The issues take their room from the thread's, as the finding does.
    let issues: Vec<LinkedIssue> = issues
        .into_iter()
        .map(|issue| LinkedIssue {
            body: sanitize::truncate(&issue.body, cap),
            ..issue
        })
        .collect();
    let reserved = finding
        .as_ref()
        .map_or(0, |f| finding_text(&f.finding, cap).chars().count())
        + linked_issues::prompt_section(&issues).chars().count();
    let turns = conversation
        .history
        .iter()
        .map(|said| Turn {
            author: said.author.clone(),
            parley: said.parley,
            text: if said.parley {
                said.body.clone()
            } else {
                sanitize::user_text(&said.body)
            },
        })
        .collect();
    let history = budget::fit(turns, budget_chars, reserved);
    let (learnings, other_learnings) = learnings(
        sources.store,
        snap,
        conversation,
        path_for_learnings(trigger),
    )
    .await;
    let question = sanitize::truncate(
        &sanitize::user_text(&markers::strip(&trigger.body)),
        cap.max(2_000),
    );
    // Retrieval fills what the finding, the issues and the thread leave of the budget.
    let room = budget_chars.saturating_sub(reserved + history.chars());
    let finding_about = finding
        .as_ref()
        .map(|f| format!("{}\n{}", f.finding.title, finding_text(&f.finding, cap)));
    let history_text: Vec<String> = history.turns.iter().map(|t| t.text.clone()).collect();
    let about = QuestionContext {
        finding: finding_about.as_deref(),
        history: &history_text,
        path: path.as_deref(),
        diff_hunk: diff_hunk.as_deref(),
    };
    let retrieved = match queries::settings(&snap.config.config.retrieval, room) {
        Some(settings) => {
            let query = queries::for_question(&question, &about, Some(snap.number));
            sources
                .recall
                .retrieve(&snap.repo, &query, other_learnings, &settings)
                .await
        }
        None => Retrieved::default(),
    };

    // An outdated thread's code is read where its lines stand now.
    let (code_path, code_line) = match &since {
        Some(since) if head_line.is_none() => {
            (Some(since.path.as_str()), since.line.map(u64::from))
        }
        _ => (path.as_deref(), head_line),
    };
    let (code, codebase) = code_around(sources, snap, code_path, code_line).await;

    let about = match &snap.subject {
        Subject::Pull(pr) => About::Pull(PrSummary {
            number: pr.number,
            title: sanitize::user_text(&pr.title),
            description: sanitize::truncate(
                &sanitize::user_text(&markers::strip(&pr.body)),
                DESCRIPTION_CHARS,
            ),
            author: snap.author().unwrap_or("ghost").to_string(),
            base: pr.base.ref_name.clone(),
            head: pr.head.ref_name.clone(),
            changed_files: pr.changed_files,
            additions: pr.additions,
            deletions: pr.deletions,
            files,
        }),
        Subject::Issue(topic) => {
            let (title, body) = topic
                .as_ref()
                .map_or(("", ""), |t| (t.title.as_str(), t.body.as_str()));
            About::Issue(IssueSummary {
                number: snap.number,
                title: sanitize::user_text(title),
                description: sanitize::truncate(
                    &sanitize::user_text(&markers::strip(body)),
                    ISSUE_DESCRIPTION_CHARS,
                ),
            })
        }
    };
    Ok(Context {
        about,
        finding,
        path,
        line,
        diff_hunk,
        guidelines,
        history,
        question_author: trigger.author.login.clone(),
        question,
        parent_missing: conversation.parent_missing,
        learnings,
        retrieved,
        code,
        codebase,
        language: snap.config.config.language.clone(),
        issues,
        since,
    })
}

/// Tokens of code an answer gets: the commented function, what it calls, who calls it.
const ANSWER_CODE_TOKENS: usize = 3000;

/// The code around an inline comment's line, read at the PR's head: what "the caller
/// checks for null" is checked against, and the opened repository for the answer's tool
/// calls. Without a line in the head's file (a comment on a removed line, an outdated
/// one) only the tools read it. Fail open: without it the answer has the hunk.
async fn code_around(
    sources: &Sources<'_>,
    snap: &PrSnapshot,
    path: Option<&str>,
    head_line: Option<u64>,
) -> (String, Option<OpenCode>) {
    let (Some(source), Some(pr), Some(path)) = (sources.code, snap.pull(), path) else {
        return (String::new(), None);
    };
    match source.open(sources.github, &snap.scope, &pr.head.sha).await {
        Ok(code) => (
            head_line
                .and_then(|line| u32::try_from(line).ok())
                .map(|line| {
                    crate::context::around_line(code.as_ref(), path, line, ANSWER_CODE_TOKENS)
                        .rendered
                })
                .unwrap_or_default(),
            Some(OpenCode(code)),
        ),
        Err(why) => {
            tracing::info!(repo = %snap.scope.full_name(), pr = snap.number, %why, "answering from the diff hunk alone");
            (String::new(), None)
        }
    }
}

fn path_for_learnings(trigger: &Trigger) -> Option<&str> {
    trigger.path.as_deref()
}

/// The active learnings whose scope covers this PR (or issue) and thread: as prompt lines
/// those whose paths (if any) match the commented file, which the answer must respect;
/// as retrieval candidates the others (about other files), which the question may still
/// be about. Fail open: a turn without them is still a turn.
async fn learnings(
    store: &dyn Store,
    snap: &PrSnapshot,
    conversation: &Conversation,
    path: Option<&str>,
) -> (Vec<String>, Vec<Candidate>) {
    let memory = match crate::learning::memory::load(store, &snap.repo, &snap.org).await {
        Ok(memory) => memory,
        Err(err) => {
            tracing::warn!(repo = %snap.repo, error = %err, "could not read learnings; answering without them");
            return (Vec::new(), Vec::new());
        }
    };
    let root = conversation.root.as_ref().map(|r| r.id);
    let (relevant, elsewhere): (Vec<crate::learning::Learning>, Vec<_>) = memory
        .active()
        .filter(|l| l.scope.covers(snap.number, root))
        .cloned()
        .partition(|l| {
            l.hints.paths.is_empty()
                || path.is_none_or(|p| {
                    l.hints.paths.iter().any(|g| {
                        globset::Glob::new(g).is_ok_and(|g| g.compile_matcher().is_match(p))
                    })
                })
        });
    (
        crate::learning::apply::prompt_lines(&relevant, true),
        elsewhere.iter().map(Candidate::learning).collect(),
    )
}

/// The finding's text as the prompt shows it (and the budget counts it).
pub fn finding_text(finding: &Finding, cap: usize) -> String {
    // Parley wrote it, but from a model that read user text: fenced like data.
    sanitize::truncate(&sanitize::fence_safe(&markers::strip(&finding.body)), cap)
}

/// The finding behind the thread: the store's record by (repo, root comment id), or what
/// the root's marker carries when the store has none (an older finding). In the PR's
/// conversation, the one finding of this PR the question names by id, if it names one.
async fn load_finding(
    store: &dyn Store,
    snap: &PrSnapshot,
    conversation: &Conversation,
    trigger: &Trigger,
) -> Result<Option<FindingInPlay>, ConversationError> {
    if conversation.root.is_none() && !trigger.is_inline() && snap.pull().is_some() {
        return named_finding(store, snap, trigger).await;
    }
    let (Some(root), Some(marker)) = (&conversation.root, &conversation.finding) else {
        return Ok(None);
    };
    if let Some(finding) = store.finding_by_comment(&snap.repo, root.id).await? {
        return Ok(Some(FindingInPlay {
            finding,
            stored: true,
        }));
    }
    tracing::info!(repo = %snap.repo, comment = root.id, finding = %marker.id,
        "finding not in the store; using what its marker carries");
    Ok(Some(FindingInPlay {
        finding: from_marker(snap, root, marker),
        stored: false,
    }))
}

/// The finding of this PR `trigger` names by its id (`is f_0a1b2c3d4e5f really a bug?`):
/// one listed only in the summary has no thread to ask in. A question naming several is
/// about none of them in particular.
async fn named_finding(
    store: &dyn Store,
    snap: &PrSnapshot,
    trigger: &Trigger,
) -> Result<Option<FindingInPlay>, ConversationError> {
    let named = crate::commands::named_findings(&trigger.body);
    let [id] = named.as_slice() else {
        return Ok(None);
    };
    let found = store
        .findings_for_pr(&snap.repo, snap.number)
        .await?
        .into_iter()
        .find(|f| &f.id == id);
    Ok(found.map(|finding| FindingInPlay {
        finding,
        stored: true,
    }))
}

fn from_marker(
    snap: &PrSnapshot,
    root: &crate::ports::github::ReviewComment,
    marker: &FindingMarker,
) -> Finding {
    let head_sha = if root.commit_id.is_empty() {
        snap.pull()
            .map(|pr| pr.head.sha.clone())
            .unwrap_or_default()
    } else {
        root.commit_id.clone()
    };
    let created_at = root.created_at.min(OffsetDateTime::now_utc());
    Finding {
        review_id: root.pull_request_review_id,
        comment_id: Some(root.id),
        ..marker.finding(&snap.repo, snap.number, &root.body, head_sha, created_at)
    }
}

/// The guideline files, then the `review.instructions` for the files the question is
/// about (`touched`: the commented file, or for a top-level question the PR's changed
/// files); none on a plain issue, which has no code.
fn with_instructions(
    files: Arc<Vec<Guideline>>,
    snap: &PrSnapshot,
    touched: &[String],
) -> Arc<Vec<Guideline>> {
    let instructions = match snap.pull() {
        Some(_) => instructions_for(&snap.config.config.review.instructions, touched),
        None => None,
    };
    match instructions {
        None => files,
        Some(instructions) => {
            let mut all = files.as_ref().clone();
            all.push(instructions);
            Arc::new(all)
        }
    }
}

/// Guideline files at the base SHA, for the root and the commented file's directories;
/// on a plain issue, the root files on the default branch (there is no base). Cached;
/// the instructions are not (the config has a cache of its own, and a changed
/// `.parley.yml` must not hide behind this one).
async fn guideline_files(
    sources: &Sources<'_>,
    snap: &PrSnapshot,
    path: Option<&str>,
) -> Arc<Vec<Guideline>> {
    let base_sha = match snap.pull() {
        Some(pr) if pr.base.sha.is_empty() => pr.base.ref_name.clone(),
        Some(pr) => pr.base.sha.clone(),
        None => DEFAULT_BRANCH.to_string(),
    };
    let cache_key = (
        snap.scope.installation_id,
        snap.repo.clone(),
        base_sha.clone(),
        path.unwrap_or("").to_string(),
    );
    if let Some(hit) = sources.guidelines.get(&cache_key) {
        return hit;
    }
    let touched: Vec<String> = path.map(|p| vec![p.to_string()]).unwrap_or_default();
    let found = Arc::new(load_guidelines(sources.github, &snap.scope, &base_sha, &touched).await);
    sources.guidelines.put(cache_key, found.clone());
    found
}

/// The issues a PR's description says it resolves (none on a plain issue).
async fn issues_resolved(github: &dyn GitHub, snap: &PrSnapshot) -> Vec<LinkedIssue> {
    match snap.pull() {
        Some(pr) => {
            let review = &snap.config.config.review;
            linked_issues::read(github, &snap.scope, pr, review)
                .await
                .read
        }
        None => Vec::new(),
    }
}

/// The changed files of a top-level question's PR: their paths, and a line each for the
/// prompt. An extra: on failure the answer goes on with the PR's counts only.
async fn changed_files(github: &dyn GitHub, snap: &PrSnapshot) -> (Vec<String>, Vec<String>) {
    match github
        .list_pull_request_files(&snap.scope, snap.number, PageLimit::items(MAX_FILES))
        .await
    {
        Ok(listing) => listing
            .items
            .iter()
            .map(|f| {
                let line = format!("{} (+{} -{})", f.filename, f.additions, f.deletions);
                (f.filename.clone(), line)
            })
            .unzip(),
        Err(err) => {
            tracing::warn!(repo = %snap.repo, pr = snap.number, error = %err, "could not list changed files; going on without them");
            Default::default()
        }
    }
}

/// The last `n` lines: a review comment's hunk ends at the commented line.
fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
