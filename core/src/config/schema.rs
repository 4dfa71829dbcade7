//! The JSON Schema of `.parley.yml`, for editors (`yaml-language-server`) and CI.
//!
//! Generated with schemars from the file's shape below, whose defaults come from
//! [`RepoConfig::default`] and whose keys a test holds to exactly the keys the reader in
//! `super::parse` knows: a setting added to one and not the other fails the build's tests.
//! The checked-in `schema/parley.schema.json` is compared with [`json`] by a test too.

use super::{Incomplete, PermissionLevel, RepoConfig};
use crate::ports::Severity;
use schemars::JsonSchema;
use serde::Serialize;

/// The schema as pretty-printed JSON (what `parley config schema` prints).
pub fn json() -> String {
    let schema = schemars::schema_for!(ParleyFile);
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

/// Parley's per-repository settings, read from the default branch. Every key is
/// optional; a bad value falls back to its default with a warning in the review summary.
#[derive(Serialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[schemars(title = "Parley configuration (.parley.yml)")]
struct ParleyFile {
    mention: Mention,
    dispute: Dispute,
    review: Review,
    gate: Gate,
    retrieval: Retrieval,
    /// The language findings are written in (a BCP 47 tag: de, ja, pt-BR); answers follow
    /// the question's language, this one where that is unclear. Unset: English.
    #[schemars(pattern(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$"))]
    language: Option<String>,
}

/// What Parley remembers of earlier PRs and brings into prompts.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Retrieval {
    /// Off: no related snippets, findings or threads in prompts, and nothing embedded.
    enabled: bool,
    hunk_embedding: HunkEmbedding,
    /// Characters of retrieved text a prompt may carry.
    #[schemars(range(min = 500, max = 50000))]
    budget_chars: u32,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct HunkEmbedding {
    /// Off: the hunks of reviewed PRs are not embedded (still searchable lexically).
    enabled: bool,
}

impl Default for Retrieval {
    fn default() -> Self {
        let d = RepoConfig::default().retrieval;
        Retrieval {
            enabled: d.enabled,
            hunk_embedding: HunkEmbedding {
                enabled: d.hunk_embedding,
            },
            budget_chars: d.budget_chars,
        }
    }
}

impl Default for HunkEmbedding {
    fn default() -> Self {
        HunkEmbedding {
            enabled: RepoConfig::default().retrieval.hunk_embedding,
        }
    }
}

/// Who may talk to Parley, and how conversations run.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Mention {
    /// When non-empty, only these logins may talk to Parley.
    allowed_users: Vec<String>,
    /// Otherwise: the PR author, and anyone with at least this permission.
    min_permission: PermissionLevel,
    /// Whether `@claude` also summons Parley.
    claude_alias: bool,
    conversation: Conversation,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Conversation {
    /// Answer replies in a thread on a finding without an @-mention.
    reply_without_mention: bool,
    /// Replies Parley posts per PR, at most.
    #[schemars(range(min = 1, max = 50))]
    max_turns_per_pr: u32,
    /// Characters of thread and code context per reply.
    #[schemars(range(min = 1000, max = 50000))]
    context_budget_chars: u32,
}

/// Disputed findings.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Dispute {
    /// Logins, or teams as `org/team`, asked to weigh in when Parley escalates a dispute;
    /// empty: the code owners of the finding's file, by the default branch's `CODEOWNERS`.
    human_reviewers: Vec<String>,
    /// Resolve the finding's thread when Parley concedes.
    resolve_thread_on_concede: bool,
}

/// Automatic reviews.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Review {
    triggers: Triggers,
    /// Logins whose PRs are not reviewed automatically (bots, release accounts).
    skip_authors: Vec<String>,
    /// Labels that hold automatic reviews off a PR (e.g. `no-review`); case-insensitive.
    skip_labels: Vec<String>,
    /// Globs of the base branches whose PRs are reviewed automatically (e.g. `main`,
    /// `release/*`); empty: every base branch.
    base_branches: Vec<String>,
    /// Globs of paths never reviewed; replaces the defaults when set.
    skip_paths: Vec<String>,
    /// What to keep in mind for the files some globs match: read by every pass of a
    /// review that touches them, and by answers about them.
    #[schemars(length(max = 20))]
    instructions: Vec<Instruction>,
    /// The specialist passes to run.
    specialists: Vec<Specialist>,
    /// Findings below this confidence are counted, not shown. Setting it turns off the
    /// tuned threshold.
    #[schemars(range(min = 0, max = 100))]
    min_confidence: u8,
    #[schemars(range(min = 0, max = 100))]
    max_inline_comments: u32,
    /// Findings under this severity go to the summary, not inline; blocking ones
    /// (`gate.blockOn`) stay inline whatever their severity.
    inline_min_severity: SeverityName,
    /// Budget for the patches sent to each specialist, in estimated tokens.
    #[schemars(range(min = 1000, max = 500000))]
    max_patch_tokens: u32,
    /// A diff over `maxPatchTokens` is reviewed in up to this many parts, each by every
    /// pass (each part costs about one review); 1 lists what does not fit as not reviewed.
    #[schemars(range(min = 1, max = 10))]
    max_parts: u32,
    /// Deadline for the specialist passes (they run side by side), in seconds. Where
    /// Parley runs may allow less: on Lambda 240, with `parley serve` what its operator
    /// sets (PARLEY_PASS_TIMEOUT_SECS); asking for more gets that, and a warning.
    #[schemars(range(min = 1, max = 3600))]
    pass_timeout_secs: u32,
    /// Reviews asked for by comment per PR per hour; 0 turns them off.
    #[schemars(range(min = 0, max = 60))]
    manual_reviews_per_hour: u32,
    /// Use the threshold tuned from accepted and rejected findings.
    auto_tune: bool,
    /// Run the judge pass over the merged findings.
    judge: bool,
    /// Open the review's summary with a few sentences on what the change does.
    overview: bool,
    /// A push (or a move to another base) with nothing new to say posts no review, only its
    /// check.
    quiet_pushes: bool,
    /// Ask whether a push fixed the open findings whose lines it changed, and resolve
    /// those it fixed (their threads too).
    resolve_fixed: bool,
    /// Read the issues the PR says it resolves (`Fixes #12` in its description, then its
    /// sidebar's links; this repository's, at most three) into reviews and answers.
    linked_issues: bool,
    context: ReviewContext,
}

// Only the shape is used (the default list is empty), so nothing constructs one.
/// One entry of `review.instructions`: the files it is for, and what to keep in mind.
#[allow(dead_code)]
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Instruction {
    /// A glob or a list of globs, as in `skipPaths`.
    paths: GlobOrGlobs,
    /// The instruction, up to 1,500 characters.
    #[schemars(length(min = 1, max = 1500))]
    text: String,
}

/// A glob, or a list of globs.
#[allow(dead_code)]
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum GlobOrGlobs {
    One(String),
    Several(#[schemars(length(min = 1))] Vec<String>),
}

/// The code around a change, read from the repository at the head (docs/context.md).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ReviewContext {
    /// Off: reviews see the diff alone.
    enabled: bool,
    /// Tokens of that code a review's prompt may carry.
    #[schemars(range(min = 500, max = 50000))]
    max_tokens: u32,
    tools: ReviewTools,
}

impl Default for ReviewContext {
    fn default() -> Self {
        let d = RepoConfig::default().review;
        ReviewContext {
            enabled: d.context_enabled,
            max_tokens: d.context_max_tokens,
            tools: ReviewTools::default(),
        }
    }
}

/// Read-only tools the passes may call on the snapshot (`read_file`, `search`,
/// `find_definition`, `find_references`, `list_dir`), where the provider takes tool calls.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ReviewTools {
    /// Off: the passes read the static context alone.
    enabled: bool,
    #[schemars(range(min = 1, max = 50))]
    max_calls_per_pass: u32,
    #[schemars(range(min = 1, max = 200))]
    max_calls_per_review: u32,
    /// Bytes of tool results one pass may read.
    #[schemars(range(min = 1000, max = 500000))]
    max_bytes_per_pass: u32,
    /// Wall time one pass may spend reading before it must answer.
    #[schemars(range(min = 5, max = 200))]
    max_seconds_per_pass: u32,
}

impl Default for ReviewTools {
    fn default() -> Self {
        let d = RepoConfig::default().review.tools;
        ReviewTools {
            enabled: d.enabled,
            max_calls_per_pass: d.max_calls_per_pass,
            max_calls_per_review: d.max_calls_per_review,
            max_bytes_per_pass: d.max_bytes_per_pass,
            max_seconds_per_pass: d.max_secs_per_pass,
        }
    }
}

/// Which pull request events start a review.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Triggers {
    opened: bool,
    reopened: bool,
    ready_for_review: bool,
    synchronize: bool,
}

/// The "Parley review" check run.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Gate {
    /// Severities that fail the check while open.
    block_on: Vec<SeverityName>,
    /// Who may lift a blocking finding without changing its code.
    resolve_by: PermissionLevel,
    /// When nothing blocks but the head was not reviewed in full (a pass failed, files
    /// over the budget, the model down, the budget spent): `pass` concludes `neutral`,
    /// which branch protection lets through; `hold` concludes `action_required`, which it
    /// does not, until a complete review.
    incomplete: Incomplete,
}

#[derive(Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum SeverityName {
    Critical,
    High,
    Medium,
    Low,
    Nit,
}

#[derive(Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Specialist {
    Security,
    Correctness,
    Tests,
    Style,
    Guidelines,
}

impl From<Severity> for SeverityName {
    fn from(severity: Severity) -> Self {
        match severity {
            Severity::Critical => SeverityName::Critical,
            Severity::High => SeverityName::High,
            Severity::Medium => SeverityName::Medium,
            Severity::Low => SeverityName::Low,
            Severity::Nit => SeverityName::Nit,
        }
    }
}

fn specialist(name: &str) -> Option<Specialist> {
    match name {
        "security" => Some(Specialist::Security),
        "correctness" => Some(Specialist::Correctness),
        "tests" => Some(Specialist::Tests),
        "style" => Some(Specialist::Style),
        "guidelines" => Some(Specialist::Guidelines),
        _ => None,
    }
}

// The defaults, from the one place they are defined.

impl Default for Mention {
    fn default() -> Self {
        let d = RepoConfig::default().mention;
        Mention {
            allowed_users: d.allowed_users,
            min_permission: d.min_permission,
            claude_alias: d.claude_alias,
            conversation: Conversation::default(),
        }
    }
}

impl Default for Conversation {
    fn default() -> Self {
        let d = RepoConfig::default().mention;
        Conversation {
            reply_without_mention: d.reply_without_mention,
            max_turns_per_pr: d.max_turns_per_pr,
            context_budget_chars: d.context_budget_chars,
        }
    }
}

impl Default for Dispute {
    fn default() -> Self {
        let d = RepoConfig::default().dispute;
        Dispute {
            human_reviewers: d.human_reviewers,
            resolve_thread_on_concede: d.resolve_thread_on_concede,
        }
    }
}

impl Default for Review {
    fn default() -> Self {
        let d = RepoConfig::default().review;
        Review {
            triggers: Triggers::default(),
            skip_authors: d.skip_authors,
            skip_labels: d.skip_labels,
            base_branches: d.base_branches,
            skip_paths: d.skip_paths,
            instructions: Vec::new(),
            specialists: d.specialists.iter().filter_map(|s| specialist(s)).collect(),
            min_confidence: d.min_confidence,
            max_inline_comments: d.max_inline_comments,
            inline_min_severity: d.inline_min_severity.into(),
            max_patch_tokens: d.max_patch_tokens,
            max_parts: d.max_parts,
            pass_timeout_secs: d.pass_timeout_secs,
            manual_reviews_per_hour: d.manual_reviews_per_hour,
            auto_tune: d.auto_tune,
            judge: d.judge,
            overview: d.overview,
            quiet_pushes: d.quiet_pushes,
            resolve_fixed: d.resolve_fixed,
            linked_issues: d.linked_issues,
            context: ReviewContext::default(),
        }
    }
}

impl Default for Triggers {
    fn default() -> Self {
        let d = RepoConfig::default().review.triggers;
        Triggers {
            opened: d.opened,
            reopened: d.reopened,
            ready_for_review: d.ready_for_review,
            synchronize: d.synchronize,
        }
    }
}

impl Default for Gate {
    fn default() -> Self {
        let d = RepoConfig::default().gate;
        Gate {
            block_on: d.block_on.into_iter().map(Into::into).collect(),
            resolve_by: d.resolve_by,
            incomplete: d.incomplete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeSet;

    /// Dotted paths of the schema's leaf settings.
    fn leaves(schema: &Value, defs: &Value, prefix: &str, out: &mut BTreeSet<String>) {
        let schema = match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => {
                let name = reference.trim_start_matches("#/$defs/");
                &defs[name]
            }
            None => schema,
        };
        match schema.get("properties").and_then(Value::as_object) {
            Some(props) => {
                for (key, sub) in props {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    leaves(sub, defs, &path, out);
                }
            }
            None => {
                out.insert(prefix.to_string());
            }
        }
    }

    #[test]
    fn the_schema_has_exactly_the_keys_parley_reads() {
        let schema: Value = serde_json::from_str(&json()).unwrap();
        let mut in_schema = BTreeSet::new();
        leaves(&schema, &schema["$defs"], "", &mut in_schema);
        assert_eq!(in_schema, super::super::known_keys());
    }

    #[test]
    fn defaults_and_ranges_are_the_code_s() {
        let schema: Value = serde_json::from_str(&json()).unwrap();
        let review = &schema["$defs"]["Review"]["properties"];
        assert_eq!(review["minConfidence"]["default"], 75);
        assert_eq!(review["passTimeoutSecs"]["maximum"], 3600);
        assert_eq!(
            schema["$defs"]["Gate"]["properties"]["blockOn"]["default"],
            serde_json::json!(["critical", "high"])
        );
    }

    /// CI keeps the checked-in file (what editors fetch) equal to the code's schema:
    /// regenerate with `cargo run -p parley-cli -- config schema > schema/parley.schema.json`.
    #[test]
    fn the_checked_in_schema_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../schema/parley.schema.json");
        let checked_in = std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(
            checked_in.trim_end(),
            json(),
            "schema/parley.schema.json is stale: run `cargo run -p parley-cli -- config schema > schema/parley.schema.json`"
        );
    }
}
