//! Every setting in force as `(key, value)`, in `.parley.yml`'s own spelling, for
//! `@parley configuration`. One list, so a new key is shown the day it is added.

use super::RepoConfig;
use crate::ports::Severity;

pub fn describe(config: &RepoConfig) -> Vec<(String, String)> {
    let list = |items: &[String]| {
        if items.is_empty() {
            "[]".to_string()
        } else {
            format!("[{}]", items.join(", "))
        }
    };
    let m = &config.mention;
    let d = &config.dispute;
    let r = &config.review;
    let g = &config.gate;
    let rt = &config.retrieval;
    let severities: Vec<String> = g
        .block_on
        .iter()
        .map(|s| severity(*s).to_string())
        .collect();
    [
        ("mention.allowedUsers", list(&m.allowed_users)),
        ("mention.minPermission", m.min_permission.name().to_string()),
        ("mention.claudeAlias", m.claude_alias.to_string()),
        (
            "mention.conversation.replyWithoutMention",
            m.reply_without_mention.to_string(),
        ),
        (
            "mention.conversation.maxTurnsPerPr",
            m.max_turns_per_pr.to_string(),
        ),
        (
            "mention.conversation.contextBudgetChars",
            m.context_budget_chars.to_string(),
        ),
        ("dispute.humanReviewers", list(&d.human_reviewers)),
        (
            "dispute.resolveThreadOnConcede",
            d.resolve_thread_on_concede.to_string(),
        ),
        ("review.triggers.opened", r.triggers.opened.to_string()),
        ("review.triggers.reopened", r.triggers.reopened.to_string()),
        (
            "review.triggers.readyForReview",
            r.triggers.ready_for_review.to_string(),
        ),
        (
            "review.triggers.synchronize",
            r.triggers.synchronize.to_string(),
        ),
        ("review.skipAuthors", list(&r.skip_authors)),
        ("review.skipLabels", list(&r.skip_labels)),
        ("review.baseBranches", list(&r.base_branches)),
        ("review.skipPaths", list(&r.skip_paths)),
        ("review.instructions", instructions(&r.instructions)),
        ("review.specialists", list(&r.specialists)),
        ("review.minConfidence", r.min_confidence.to_string()),
        (
            "review.maxInlineComments",
            r.max_inline_comments.to_string(),
        ),
        (
            "review.inlineMinSeverity",
            severity(r.inline_min_severity).to_string(),
        ),
        ("review.maxPatchTokens", r.max_patch_tokens.to_string()),
        ("review.maxParts", r.max_parts.to_string()),
        ("review.passTimeoutSecs", r.pass_timeout_secs.to_string()),
        (
            "review.manualReviewsPerHour",
            r.manual_reviews_per_hour.to_string(),
        ),
        ("review.autoTune", r.auto_tune.to_string()),
        ("review.judge", r.judge.to_string()),
        ("review.overview", r.overview.to_string()),
        ("review.quietPushes", r.quiet_pushes.to_string()),
        ("review.resolveFixed", r.resolve_fixed.to_string()),
        ("review.linkedIssues", r.linked_issues.to_string()),
        ("review.context.enabled", r.context_enabled.to_string()),
        ("review.context.maxTokens", r.context_max_tokens.to_string()),
        ("review.context.tools.enabled", r.tools.enabled.to_string()),
        (
            "review.context.tools.maxCallsPerPass",
            r.tools.max_calls_per_pass.to_string(),
        ),
        (
            "review.context.tools.maxCallsPerReview",
            r.tools.max_calls_per_review.to_string(),
        ),
        (
            "review.context.tools.maxBytesPerPass",
            r.tools.max_bytes_per_pass.to_string(),
        ),
        (
            "review.context.tools.maxSecondsPerPass",
            r.tools.max_secs_per_pass.to_string(),
        ),
        ("gate.blockOn", list(&severities)),
        ("gate.resolveBy", g.resolve_by.name().to_string()),
        ("gate.incomplete", g.incomplete.name().to_string()),
        ("retrieval.enabled", rt.enabled.to_string()),
        (
            "retrieval.hunkEmbedding.enabled",
            rt.hunk_embedding.to_string(),
        ),
        ("retrieval.budgetChars", rt.budget_chars.to_string()),
        (
            "language",
            config
                .language
                .as_ref()
                .map_or("(not set: English)".to_string(), ToString::to_string),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Each entry's globs and how long its text is: the text itself is in `.parley.yml`, and
/// a reply that echoed it would carry whatever it says (a mention, a table's `|`).
fn instructions(entries: &[super::PathInstruction]) -> String {
    let shown: Vec<String> = entries
        .iter()
        .map(|entry| {
            format!(
                "{} ({} characters)",
                entry.paths.join(", "),
                entry.text.chars().count()
            )
        })
        .collect();
    format!("[{}]", shown.join("; "))
}

fn severity(severity: Severity) -> &'static str {
    severity.name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_the_reader_knows_is_described() {
        // Every key a full file sets is one `describe` lists, and none is unknown.
        let keys: Vec<String> = describe(&RepoConfig::default())
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let (config, warnings) = super::super::parse(
            "mention: {allowedUsers: [a], minPermission: read, claudeAlias: true, conversation: {replyWithoutMention: false, maxTurnsPerPr: 5, contextBudgetChars: 2000}}\n\
             dispute: {humanReviewers: [b], resolveThreadOnConcede: false}\n\
             review: {triggers: {opened: false, reopened: false, readyForReview: false, synchronize: false}, skipAuthors: [c], skipLabels: [wip], baseBranches: [main], skipPaths: ['x/**'], instructions: [{paths: 'db/**', text: 'Reversible.'}], specialists: [security], minConfidence: 80, maxInlineComments: 5, inlineMinSeverity: low, maxPatchTokens: 2000, maxParts: 2, passTimeoutSecs: 20, manualReviewsPerHour: 1, autoTune: false, judge: false, overview: false, quietPushes: false, resolveFixed: false, linkedIssues: false, context: {enabled: false, maxTokens: 1000, tools: {enabled: false, maxCallsPerPass: 3, maxCallsPerReview: 9, maxBytesPerPass: 9000, maxSecondsPerPass: 30}}}\n\
             gate: {blockOn: [critical], resolveBy: admin, incomplete: hold}\n\
             retrieval: {enabled: false, hunkEmbedding: {enabled: false}, budgetChars: 900}\n\
             language: ja\n",
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        let explicit: Vec<String> = config.explicit.iter().cloned().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(explicit, sorted);
    }
}
