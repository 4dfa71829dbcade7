use super::*;

#[test]
fn absent_or_empty_file_is_all_defaults() {
    assert_eq!(parse(""), (RepoConfig::default(), vec![]));
    assert_eq!(parse("# nothing\n"), (RepoConfig::default(), vec![]));
}

#[test]
fn valid_values_are_read() {
    let (config, warnings) = parse(
        r#"
mention:
  allowedUsers: [alice, bob]
  minPermission: maintain
  claudeAlias: true
  conversation:
    replyWithoutMention: false
    maxTurnsPerPr: 3
    contextBudgetChars: 2000
dispute:
  humanReviewers: [carol]
  resolveThreadOnConcede: false
review:
  triggers: { synchronize: false }
  skipAuthors: ["renovate[bot]"]
  skipLabels: [no-review]
  baseBranches: [main, "release/*"]
  skipPaths: ["docs/**"]
  specialists: [security, correctness]
  minConfidence: 60
  maxInlineComments: 5
  inlineMinSeverity: medium
gate:
  blockOn: [critical]
"#,
    );
    assert_eq!(warnings, vec![]);
    assert_eq!(config.mention.allowed_users, vec!["alice", "bob"]);
    assert_eq!(config.mention.min_permission, PermissionLevel::Maintain);
    assert!(config.mention.claude_alias);
    assert!(!config.mention.reply_without_mention);
    assert_eq!(config.mention.max_turns_per_pr, 3);
    assert_eq!(config.mention.context_budget_chars, 2000);
    assert_eq!(config.dispute.human_reviewers, vec!["carol"]);
    assert!(!config.dispute.resolve_thread_on_concede);
    assert!(!config.review.triggers.synchronize);
    assert!(config.review.triggers.opened);
    assert_eq!(config.review.skip_paths, vec!["docs/**"]);
    assert_eq!(config.review.skip_labels, vec!["no-review"]);
    assert_eq!(config.review.base_branches, vec!["main", "release/*"]);
    assert_eq!(config.review.specialists, vec!["security", "correctness"]);
    assert_eq!(config.review.min_confidence, 60);
    assert_eq!(config.review.inline_min_severity, Severity::Medium);
    assert_eq!(config.gate.block_on, vec![Severity::Critical]);
}

#[test]
fn bad_values_fall_back_one_by_one_with_reasons() {
    let (config, warnings) = parse(
        r#"
mention:
  minPermission: superuser
  conversation:
    maxTurnsPerPr: 99
    contextBudgetChars: lots
review:
  minConfidence: 80
  specialists: [security, vibes]
  skipPaths: ["src/[oops"]
  baseBranches: ["release/[oops"]
  inlineMinSeverity: loud
gate:
  blockOn: [urgent]
revew:
  typo: 1
"#,
    );
    let d = RepoConfig::default();
    assert_eq!(config.mention.min_permission, d.mention.min_permission);
    assert_eq!(config.mention.max_turns_per_pr, 10);
    assert_eq!(config.mention.context_budget_chars, 8000);
    assert_eq!(
        config.review.min_confidence, 80,
        "good keys beside bad ones still apply"
    );
    assert_eq!(config.review.specialists, d.review.specialists);
    assert_eq!(config.review.skip_paths, d.review.skip_paths);
    assert!(
        config.review.base_branches.is_empty(),
        "a bad glob leaves every base branch reviewed"
    );
    assert_eq!(config.gate.block_on, d.gate.block_on);
    let keys: Vec<_> = warnings.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "mention.minPermission",
            "mention.conversation.maxTurnsPerPr",
            "mention.conversation.contextBudgetChars",
            "review.baseBranches",
            "review.skipPaths",
            "review.specialists",
            "review.inlineMinSeverity",
            "gate.blockOn",
            "revew.typo",
        ]
    );
    assert!(
        warnings[1].to_string().contains("from 1 to 50"),
        "{}",
        warnings[1]
    );
}

#[test]
fn invalid_yaml_is_reported_not_ignored() {
    let (config, warnings) = parse("mention: [unclosed");
    assert_eq!(config, RepoConfig::default());
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].message.contains("not valid YAML"));
}

#[test]
fn pass_timeout_is_read_and_bounded_at_an_hour() {
    assert_eq!(RepoConfig::default().review.pass_timeout_secs, 180);
    let (config, warnings) = parse("review:\n  passTimeoutSecs: 2\n");
    assert_eq!(warnings, vec![]);
    assert_eq!(config.review.pass_timeout_secs, 2);
    // What this deployment allows is applied after parsing (`PassDeadline`).
    let (config, warnings) = parse("review:\n  passTimeoutSecs: 600\n");
    assert_eq!(warnings, vec![]);
    assert_eq!(config.review.pass_timeout_secs, 600);
    for bad in ["0", "3601", "soon"] {
        let (config, warnings) = parse(&format!("review:\n  passTimeoutSecs: {bad}\n"));
        assert_eq!(config.review.pass_timeout_secs, 180, "{bad}");
        let keys: Vec<_> = warnings.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(keys, vec!["review.passTimeoutSecs"], "{bad}");
    }
}

#[test]
fn retrieval_defaults_and_values() {
    let d = RepoConfig::default().retrieval;
    assert!(d.enabled);
    assert!(d.hunk_embedding);
    assert_eq!(d.budget_chars, 6000);

    let (config, warnings) = parse(
        "retrieval:\n  enabled: false\n  hunkEmbedding:\n    enabled: false\n  budgetChars: 2500\n",
    );
    assert_eq!(warnings, vec![]);
    assert!(!config.retrieval.enabled);
    assert!(!config.retrieval.hunk_embedding);
    assert_eq!(config.retrieval.budget_chars, 2500);
}

#[test]
fn bad_retrieval_values_fall_back_with_reasons() {
    let (config, warnings) = parse(
        "retrieval:\n  enabled: maybe\n  hunkEmbedding:\n    enabled: 3\n  budgetChars: 10\n",
    );
    assert_eq!(config.retrieval, RetrievalConfig::default());
    let keys: Vec<_> = warnings.iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "retrieval.enabled",
            "retrieval.hunkEmbedding.enabled",
            "retrieval.budgetChars"
        ]
    );
    assert!(
        warnings[2].message.contains("from 500 to 50000"),
        "{}",
        warnings[2]
    );
}

/// A mistake in one entry of `review.instructions` leaves the key at the layer below
/// (here the organisation's list), says which entry and why, and the other keys stand.
#[test]
fn a_bad_instruction_keeps_the_list_below_and_says_which_entry() {
    let (org, _) = parse("review:\n  instructions: [{paths: 'db/**', text: 'Reversible.'}]\n");
    let (config, warnings) = parse_over(
        "review:\n  minConfidence: 60\n  instructions:\n    - {paths: 'a/**', text: 'fine'}\n    - {paths: 'b/[', text: 'bad glob'}\n",
        &org,
    );
    assert_eq!(config.review.min_confidence, 60);
    assert_eq!(config.review.instructions, org.review.instructions);
    assert!(!config.explicit.contains("review.instructions"));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].key, "review.instructions");
    assert!(
        warnings[0]
            .message
            .starts_with("entry 2: \"b/[\" is not a valid glob; using the default"),
        "{}",
        warnings[0]
    );
    let shown = describe(&config)
        .into_iter()
        .find(|(key, _)| key == "review.instructions")
        .map(|(_, value)| value);
    assert_eq!(shown.as_deref(), Some("[db/** (11 characters)]"));
}

#[test]
fn a_login_is_named_with_or_without_at_and_an_app_without_its_bot_suffix() {
    assert!(names_login("dependabot", "dependabot[bot]"));
    assert!(names_login("Dependabot[bot]", "dependabot[bot]"));
    assert!(names_login("@renovate", "renovate[bot]"));
    assert!(names_login("Alice", "alice"));
    assert!(names_login(" @carol", "carol"));
    assert!(
        !names_login("dependabot[bot]", "dependabot"),
        "a person is not the App"
    );
    assert!(!names_login("alice", "alice-bot[bot]"));
    assert!(!names_login("bot", "dependabot[bot]"));
}
