//! `.parley.yml`: per-repository settings, read from the default branch only.
//!
//! Every key has a default, so an absent file is a complete configuration. A bad value
//! never makes Parley ignore the file silently or fail the job: that one key falls back to
//! its default and a [`ConfigWarning`] says why, for the reply footer or the review summary.

pub mod deadline;
mod describe;
pub mod instructions;
pub mod language;
pub mod layers;
mod read;
pub mod schema;

pub use deadline::{PassDeadline, PassDeadlineError};
pub use describe::describe;
pub use instructions::PathInstruction;
pub use language::Language;
pub use layers::{Layered, parse_layered};

use crate::ports::Severity;
use read::Reader;

pub const FILE_NAME: &str = ".parley.yml";

/// A value that was rejected, with the default used instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    /// Dotted key, e.g. `mention.conversation.maxTurnsPerPr`.
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.key, self.message)
    }
}

/// Whether a login in `.parley.yml` (`review.skipAuthors`, `mention.allowedUsers`)
/// names `login`: as GitHub compares logins, without regard to case, with or without a
/// leading `@`, and an App's account (`dependabot[bot]`) by its name as people write it
/// too (`dependabot`), or a team that meant to skip the bot reviews its PRs.
pub fn names_login(entry: &str, login: &str) -> bool {
    let entry = entry.trim().trim_start_matches('@');
    entry.eq_ignore_ascii_case(login)
        || login
            .strip_suffix("[bot]")
            .is_some_and(|app| entry.eq_ignore_ascii_case(app))
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RepoConfig {
    pub mention: MentionConfig,
    pub dispute: DisputeConfig,
    pub review: ReviewConfig,
    pub gate: GateConfig,
    pub retrieval: RetrievalConfig,
    /// The language the passes and the judge write findings in, and answers fall back
    /// to where a question's own is unclear ([`language`]); `None`: English.
    pub language: Option<Language>,
    /// Keys `.parley.yml` set to a valid value (`review.minConfidence`, …): where each
    /// value in force came from, for `@parley configuration` and for the threshold, where
    /// a team's explicit choice wins over a tuned one.
    pub explicit: std::collections::BTreeSet<String>,
}

/// Tokens of code context a review gets by default: room for a dozen functions.
pub const DEFAULT_CONTEXT_MAX_TOKENS: u32 = 6000;

/// A permission on the repository, by GitHub's names. Lowest first, so `>=` reads as
/// "at least".
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "Permission")]
pub enum PermissionLevel {
    Read,
    Triage,
    Write,
    Maintain,
    Admin,
}

impl PermissionLevel {
    const ALL: [Self; 5] = [
        Self::Read,
        Self::Triage,
        Self::Write,
        Self::Maintain,
        Self::Admin,
    ];

    /// The level a name stands for, whatever its case.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|level| level.name().eq_ignore_ascii_case(value))
    }

    /// The name `.parley.yml` and GitHub use for the level.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Triage => "triage",
            Self::Write => "write",
            Self::Maintain => "maintain",
            Self::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct MentionConfig {
    /// When non-empty, only these logins may talk to Parley.
    pub allowed_users: Vec<String>,
    /// Otherwise: the PR author, and anyone with at least this permission.
    pub min_permission: PermissionLevel,
    /// Whether `@claude` also summons Parley.
    pub claude_alias: bool,
    pub reply_without_mention: bool,
    pub max_turns_per_pr: u32,
    pub context_budget_chars: u32,
}

impl Default for MentionConfig {
    fn default() -> Self {
        MentionConfig {
            allowed_users: Vec::new(),
            min_permission: PermissionLevel::Write,
            claude_alias: false,
            reply_without_mention: true,
            max_turns_per_pr: 10,
            context_budget_chars: 8000,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DisputeConfig {
    /// Logins asked to weigh in when Parley escalates a dispute.
    pub human_reviewers: Vec<String>,
    pub resolve_thread_on_concede: bool,
}

impl Default for DisputeConfig {
    fn default() -> Self {
        DisputeConfig {
            human_reviewers: Vec::new(),
            resolve_thread_on_concede: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewTriggers {
    pub opened: bool,
    pub reopened: bool,
    pub ready_for_review: bool,
    pub synchronize: bool,
}

impl Default for ReviewTriggers {
    fn default() -> Self {
        ReviewTriggers {
            opened: true,
            reopened: true,
            ready_for_review: true,
            synchronize: true,
        }
    }
}

pub const SPECIALISTS: [&str; 5] = ["security", "correctness", "tests", "style", "guidelines"];

/// Paths skipped by default: generated, vendored, lock and binary files.
pub const DEFAULT_SKIP_PATHS: &[&str] = &[
    "**/*.lock",
    "**/package-lock.json",
    "**/npm-shrinkwrap.json",
    "**/pnpm-lock.yaml",
    "**/bun.lockb",
    "**/go.sum",
    "**/go.work.sum",
    "**/vendor/**",
    "**/node_modules/**",
    "**/third_party/**",
    "**/dist/**",
    "**/*.min.js",
    "**/*.min.css",
    "**/*.map",
    "**/*.pb.go",
    "**/*_pb2.py",
    "**/*.generated.*",
    "**/generated/**",
    // Test snapshots (Jest, Vitest, insta): written by the tool, reviewed as the test's output.
    "**/__snapshots__/**",
    "**/*.snap",
    // What GitHub collapses as generated in a PR's diff by path alone (linguist's list):
    // a Yarn Plug'n'Play resolver alone can be tens of thousands of lines, and read it
    // would take a review's budget and leave the code beside it unread.
    "**/.pnp.*",
    "**/.yarn/releases/**",
    "**/__generated__/**",
    "**/.terraform.lock.hcl",
    "**/Package.resolved",
    "**/packages.lock.json",
    "**/gradle.lockfile",
    "**/*.[Dd]esigner.{cs,vb}",
    "**/*.feature.cs",
    "**/*.pb.{h,cc}",
    "**/*_pb2.pyi",
    "**/*_pb2_grpc.py",
    "**/Pods/**",
    "**/Carthage/Build/**",
    "**/Godeps/**",
    "**/.idea/**",
    "**/*.{nib,xcworkspacedata,xcuserstate}",
    "**/*.{png,jpg,jpeg,gif,ico,webp,avif,bmp,tiff,pdf,zip,gz,tgz,xz,bz2,7z,rar,jar,class,pyc,wasm,woff,woff2,ttf,otf,eot,so,dylib,dll,exe,bin,o,a,mp3,mp4,mov,wav}",
];

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewConfig {
    pub triggers: ReviewTriggers,
    pub skip_authors: Vec<String>,
    /// Labels that hold automatic reviews off a PR (`no-review`, `wip`). Labels, not
    /// title words: only people with triage access label a PR, while its author writes
    /// the title, and a skipped head's check does not block.
    pub skip_labels: Vec<String>,
    /// Globs of the base branches whose PRs are reviewed automatically; empty: every one.
    pub base_branches: Vec<String>,
    /// Globs of paths never reviewed; replaces the defaults when set.
    pub skip_paths: Vec<String>,
    /// The team's words for the files some globs match, read by every pass of a review
    /// that touches them and by answers about them (see [`instructions`]).
    pub instructions: Vec<PathInstruction>,
    pub specialists: Vec<String>,
    pub min_confidence: u8,
    pub max_inline_comments: u32,
    /// Findings under this severity are listed in the summary rather than posted inline
    /// (`review.inlineMinSeverity`, for teams that want nits out of the diff), unless the
    /// gate counts them: a blocking finding keeps its thread, where it is resolved.
    pub inline_min_severity: Severity,
    /// Budget for the patches sent to each specialist, in estimated tokens.
    pub max_patch_tokens: u32,
    /// A diff over `max_patch_tokens` is reviewed in up to this many parts, each by every
    /// pass: a large PR is reviewed whole (at that many times the cost) rather than left
    /// partial. 1 reviews one budget's worth and lists the rest as not reviewed.
    pub max_parts: u32,
    /// Deadline for all the specialist passes together, in seconds: a pass still running
    /// then is reported failed and the others publish. Well under the review worker's
    /// 300 s Lambda timeout, which must also cover reading inputs and publishing.
    pub pass_timeout_secs: u32,
    /// Reviews asked for by comment (`@parley review`, `@parley full review`) per PR per
    /// clock hour: each one is paid for, and asking needs no push. 0 turns them off.
    pub manual_reviews_per_hour: u32,
    /// Use the threshold tuned from this repository's accepted and rejected findings
    /// (when `minConfidence` is not set explicitly and there is enough evidence).
    pub auto_tune: bool,
    /// Run the judge pass over the merged findings (one more LLM call per review).
    pub judge: bool,
    /// Open the review's summary with what the change does, in a few sentences one pass
    /// writes beside its findings (see `review::overview`).
    pub overview: bool,
    /// A push whose commits (or a move to another base whose new diff) give nothing new
    /// to say posts no review, only its check (see `review::publish::quiet`); off, every
    /// push and move is said in a review.
    pub quiet_pushes: bool,
    /// A review asks whether the code changed at an open finding's lines fixed it, and
    /// resolves those it fixed (see `review::fixed`); off, people resolve them.
    pub resolve_fixed: bool,
    /// Read the issues a PR says it resolves into its reviews and answers
    /// (see `review::linked_issues`); off, they see the description alone.
    pub linked_issues: bool,
    /// Read the repository at the head for the code around the change (`review.context`):
    /// off, reviews see the diff alone.
    pub context_enabled: bool,
    /// Tokens of that code a review's prompt may carry.
    pub context_max_tokens: u32,
    /// Let the passes call read-only tools on the snapshot where the provider takes tool
    /// calls (`review.context.tools`), within these bounds.
    pub tools: ToolBounds,
}

/// How much a review may read through tool calls (`review.context.tools.*`): each call
/// is a round trip to the model and its result is paid for as input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolBounds {
    pub enabled: bool,
    pub max_calls_per_pass: u32,
    pub max_calls_per_review: u32,
    /// Bytes of tool results one pass may read.
    pub max_bytes_per_pass: u32,
    /// Wall time one pass may spend exploring before it must answer.
    pub max_secs_per_pass: u32,
}

impl Default for ToolBounds {
    fn default() -> Self {
        ToolBounds {
            enabled: true,
            max_calls_per_pass: 8,
            max_calls_per_review: 30,
            max_bytes_per_pass: 60_000,
            max_secs_per_pass: 60,
        }
    }
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            triggers: ReviewTriggers::default(),
            skip_authors: Vec::new(),
            skip_labels: Vec::new(),
            base_branches: Vec::new(),
            skip_paths: DEFAULT_SKIP_PATHS.iter().map(|s| s.to_string()).collect(),
            instructions: Vec::new(),
            specialists: SPECIALISTS.iter().map(|s| s.to_string()).collect(),
            min_confidence: 75,
            max_inline_comments: 15,
            inline_min_severity: Severity::Nit,
            max_patch_tokens: 60_000,
            max_parts: 3,
            pass_timeout_secs: 180,
            manual_reviews_per_hour: 3,
            auto_tune: true,
            judge: true,
            overview: true,
            quiet_pushes: true,
            resolve_fixed: true,
            linked_issues: true,
            context_enabled: true,
            context_max_tokens: DEFAULT_CONTEXT_MAX_TOKENS,
            tools: ToolBounds::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GateConfig {
    pub block_on: Vec<Severity>,
    /// Who may lift a blocking finding without changing its code (resolving its thread,
    /// winning a dispute, `@parley dismiss`). The PR's author never may without a code
    /// change: otherwise the author alone could turn the required check green.
    pub resolve_by: PermissionLevel,
    /// What the check says when nothing blocks but the head was not reviewed in full.
    pub incomplete: Incomplete,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            resolve_by: PermissionLevel::Write,
            block_on: vec![Severity::Critical, Severity::High],
            incomplete: Incomplete::Pass,
        }
    }
}

/// What the "Parley review" check concludes when nothing blocks but the head was not
/// reviewed in full: a pass failed, files were left out (over the budget, unreadable),
/// the model was down, or the installation's budget was spent. Branch protection lets a
/// `neutral` check through, so by default Parley's trouble never stops a merge. But a PR's
/// own content can leave a review partial (a diff over the budget, text that derails a
/// pass), and a team that requires the check may not want that to be a way past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Incomplete {
    /// `neutral`, saying what was not reviewed: the merge is not held up.
    Pass,
    /// `action_required`, which a required check does not let through: the merge waits
    /// for a complete review (Re-run once the cause is gone completes the head), or for
    /// someone with `gate.resolveBy` other than the PR's author to press "Let it through"
    /// on the check.
    Hold,
}

impl Incomplete {
    /// The value by its `.parley.yml` name, whatever its case.
    pub fn parse(value: &str) -> Option<Self> {
        [Self::Pass, Self::Hold]
            .into_iter()
            .find(|it| it.name().eq_ignore_ascii_case(value))
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Hold => "hold",
        }
    }
}

/// Every dotted key the reader knows: what the JSON Schema must describe.
pub fn known_keys() -> std::collections::BTreeSet<String> {
    let empty = serde_json::Value::Null;
    let mut reader = Reader::new(&empty);
    read_all(&mut reader, &RepoConfig::default());
    reader.known().clone()
}

/// Retrieval: what Parley remembers of earlier PRs and brings into prompts.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalConfig {
    /// Off: no related snippets, findings or threads in prompts, and nothing embedded.
    pub enabled: bool,
    /// Off: the hunks of reviewed PRs are not embedded (they stay searchable lexically);
    /// findings and threads still are.
    pub hunk_embedding: bool,
    /// How much retrieved text a prompt may carry, in characters, inside the prompt's
    /// own context budget.
    pub budget_chars: u32,
}

impl Default for RetrievalConfig {
    fn default() -> Self {
        RetrievalConfig {
            enabled: true,
            hunk_embedding: true,
            budget_chars: 6000,
        }
    }
}

/// Parse `.parley.yml` text. Never fails: see the module docs.
pub fn parse(text: &str) -> (RepoConfig, Vec<ConfigWarning>) {
    parse_over(text, &RepoConfig::default())
}

/// Parse `.parley.yml` text over `defaults` (Parley's own, or an organisation's; see
/// [`layers`]): a key the text does not set, or sets to a value that is rejected, keeps
/// the default's value. `explicit` holds the keys the text set.
pub fn parse_over(text: &str, defaults: &RepoConfig) -> (RepoConfig, Vec<ConfigWarning>) {
    let value: serde_json::Value = if text.trim().is_empty() {
        serde_json::Value::Null
    } else {
        match serde_norway::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                let warning = ConfigWarning {
                    key: FILE_NAME.to_string(),
                    message: format!("is not valid YAML ({err}); none of it is used"),
                };
                let config = RepoConfig {
                    explicit: Default::default(),
                    ..defaults.clone()
                };
                return (config, vec![warning]);
            }
        }
    };
    let mut r = Reader::new(&value);
    let mut config = read_all(&mut r, defaults);
    config.explicit = r.explicit();
    let warnings = r.finish();
    (config, warnings)
}

/// Read every setting (each with its default): one list of keys for parsing and for
/// [`known_keys`].
fn read_all(r: &mut Reader<'_>, d: &RepoConfig) -> RepoConfig {
    RepoConfig {
        mention: MentionConfig {
            allowed_users: r.strings("mention.allowedUsers", &d.mention.allowed_users),
            min_permission: r.parsed(
                "mention.minPermission",
                d.mention.min_permission,
                "read, triage, write, maintain or admin",
                PermissionLevel::parse,
            ),
            claude_alias: r.bool("mention.claudeAlias", d.mention.claude_alias),
            reply_without_mention: r.bool(
                "mention.conversation.replyWithoutMention",
                d.mention.reply_without_mention,
            ),
            max_turns_per_pr: r.number(
                "mention.conversation.maxTurnsPerPr",
                d.mention.max_turns_per_pr,
                1..=50,
            ),
            context_budget_chars: r.number(
                "mention.conversation.contextBudgetChars",
                d.mention.context_budget_chars,
                1000..=50_000,
            ),
        },
        dispute: DisputeConfig {
            human_reviewers: r.strings("dispute.humanReviewers", &d.dispute.human_reviewers),
            resolve_thread_on_concede: r.bool(
                "dispute.resolveThreadOnConcede",
                d.dispute.resolve_thread_on_concede,
            ),
        },
        review: ReviewConfig {
            triggers: ReviewTriggers {
                opened: r.bool("review.triggers.opened", d.review.triggers.opened),
                reopened: r.bool("review.triggers.reopened", d.review.triggers.reopened),
                ready_for_review: r.bool(
                    "review.triggers.readyForReview",
                    d.review.triggers.ready_for_review,
                ),
                synchronize: r.bool("review.triggers.synchronize", d.review.triggers.synchronize),
            },
            skip_authors: r.strings("review.skipAuthors", &d.review.skip_authors),
            skip_labels: r.strings("review.skipLabels", &d.review.skip_labels),
            base_branches: r.globs("review.baseBranches", &d.review.base_branches),
            skip_paths: r.globs("review.skipPaths", &d.review.skip_paths),
            instructions: r.shaped(
                "review.instructions",
                d.review.instructions.clone(),
                instructions::parse,
            ),
            specialists: r.subset("review.specialists", &d.review.specialists, &SPECIALISTS),
            min_confidence: r.number("review.minConfidence", d.review.min_confidence, 0..=100),
            max_inline_comments: r.number(
                "review.maxInlineComments",
                d.review.max_inline_comments,
                0..=100,
            ),
            inline_min_severity: r.parsed(
                "review.inlineMinSeverity",
                d.review.inline_min_severity,
                "critical, high, medium, low or nit",
                parse_severity,
            ),
            max_patch_tokens: r.number(
                "review.maxPatchTokens",
                d.review.max_patch_tokens,
                1000..=500_000,
            ),
            max_parts: r.number("review.maxParts", d.review.max_parts, 1..=10),
            pass_timeout_secs: r.number(
                "review.passTimeoutSecs",
                d.review.pass_timeout_secs,
                1..=deadline::MAX_SECS,
            ),
            manual_reviews_per_hour: r.number(
                "review.manualReviewsPerHour",
                d.review.manual_reviews_per_hour,
                0..=60,
            ),
            auto_tune: r.bool("review.autoTune", d.review.auto_tune),
            judge: r.bool("review.judge", d.review.judge),
            overview: r.bool("review.overview", d.review.overview),
            quiet_pushes: r.bool("review.quietPushes", d.review.quiet_pushes),
            resolve_fixed: r.bool("review.resolveFixed", d.review.resolve_fixed),
            linked_issues: r.bool("review.linkedIssues", d.review.linked_issues),
            context_enabled: r.bool("review.context.enabled", d.review.context_enabled),
            context_max_tokens: r.number(
                "review.context.maxTokens",
                d.review.context_max_tokens,
                500..=50_000,
            ),
            tools: ToolBounds {
                enabled: r.bool("review.context.tools.enabled", d.review.tools.enabled),
                max_calls_per_pass: r.number(
                    "review.context.tools.maxCallsPerPass",
                    d.review.tools.max_calls_per_pass,
                    1..=50,
                ),
                max_calls_per_review: r.number(
                    "review.context.tools.maxCallsPerReview",
                    d.review.tools.max_calls_per_review,
                    1..=200,
                ),
                max_bytes_per_pass: r.number(
                    "review.context.tools.maxBytesPerPass",
                    d.review.tools.max_bytes_per_pass,
                    1_000..=500_000,
                ),
                max_secs_per_pass: r.number(
                    "review.context.tools.maxSecondsPerPass",
                    d.review.tools.max_secs_per_pass,
                    5..=200,
                ),
            },
        },
        gate: GateConfig {
            resolve_by: r.parsed(
                "gate.resolveBy",
                d.gate.resolve_by,
                "read, triage, write, maintain or admin",
                PermissionLevel::parse,
            ),
            block_on: r.list_of(
                "gate.blockOn",
                &d.gate.block_on,
                "critical, high, medium, low or nit",
                parse_severity,
            ),
            incomplete: r.parsed(
                "gate.incomplete",
                d.gate.incomplete,
                "pass or hold",
                Incomplete::parse,
            ),
        },
        retrieval: RetrievalConfig {
            enabled: r.bool("retrieval.enabled", d.retrieval.enabled),
            hunk_embedding: r.bool(
                "retrieval.hunkEmbedding.enabled",
                d.retrieval.hunk_embedding,
            ),
            budget_chars: r.number(
                "retrieval.budgetChars",
                d.retrieval.budget_chars,
                500..=50_000,
            ),
        },
        language: r.shaped("language", d.language.clone(), language::parse),
        explicit: Default::default(),
    }
}

fn parse_severity(value: &str) -> Option<Severity> {
    match value.to_ascii_lowercase().as_str() {
        "critical" => Some(Severity::Critical),
        "high" => Some(Severity::High),
        "medium" => Some(Severity::Medium),
        "low" => Some(Severity::Low),
        "nit" => Some(Severity::Nit),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
