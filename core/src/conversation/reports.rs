//! Commands that ask what Parley knows: `learnings`, `stats`, `configuration`, `help`.
//! Each returns the text of its one reply, read from the store and the repository's
//! settings; none changes anything. What they show is what the reader may see: an
//! organisation learning taught elsewhere loses its link, and the installation's spend
//! only reaches people who may write to the repository.

use super::error::ConversationError;
use super::snapshot::PrSnapshot;
use super::teach::{Taught, Turn, summary_of};
use crate::config::RepoConfig;
use crate::learning::memory::{self, RepoMemory};
use crate::learning::record::{Learning, LearningKind};
use crate::learning::stats;
use crate::mention::Handles;
use crate::ports::github::Permission;
use crate::repo::LoadedConfig;
use time::OffsetDateTime;

/// `learnings`: the active learnings, as a table.
pub async fn learnings(turn: &Turn<'_>) -> Result<(String, Taught), ConversationError> {
    let snap = turn.snap;
    let memory = memory::load(turn.store, &snap.repo, &snap.org).await?;
    Ok((
        render_learnings(&memory, &snap.repo, &snap.handles),
        Taught::Reported("learnings"),
    ))
}

/// The active learnings as a table. An organisation learning taught in another
/// repository is shown without its link (which names that repository, perhaps a private
/// one the reader cannot see): its text and author only.
pub fn render_learnings(memory: &RepoMemory, here: &str, parley: &Handles) -> String {
    let active: Vec<&Learning> = memory.active().collect();
    if active.is_empty() {
        return format!(
            "I have no learnings for this repository yet. Teach me with {}, {} or {}.",
            parley.command("remember …"),
            parley.command("don't flag …"),
            parley.command("be stricter about …")
        );
    }
    let mut out =
        String::from("| id | scope | kind | learning | by | added |\n|---|---|---|---|---|---|\n");
    for l in &active {
        let date = l
            .created_at
            .format(time::macros::format_description!("[year]-[month]-[day]"))
            .unwrap_or_default();
        let by = if l.source_url.is_empty() || l.repo != here {
            l.author.clone()
        } else {
            format!("[{}]({})", l.author, l.source_url)
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {by} | {date} |\n",
            l.id,
            l.scope.name(),
            l.kind.name(),
            table_cell(&summary_of(l)),
        ));
    }
    let forgotten = memory.learnings.len() - active.len();
    if forgotten > 0 {
        out.push_str(&format!("\n{forgotten} forgotten learning(s) not shown.\n"));
    }
    out
}

/// `stats`: how findings fared, the threshold, and the cost.
pub async fn stats(turn: &Turn<'_>) -> Result<(String, Taught), ConversationError> {
    let snap = turn.snap;
    let memory = memory::load(turn.store, &snap.repo, &snap.org).await?;
    let month = crate::llm::usage::spent_this_month(turn.store, &snap.repo).await?;
    let reviews_this_month = turn
        .store
        .counter(
            &crate::llm::usage::month_scope(&snap.repo, OffsetDateTime::now_utc()),
            crate::llm::usage::counters::REVIEWS,
        )
        .await?;
    let config = &snap.config.config;
    let standing = crate::budget::standing(
        turn.store,
        turn.budget,
        snap.scope.installation_id,
        OffsetDateTime::now_utc(),
    )
    .await?;
    let mut text = render_stats(&memory.stats, config, &month, reviews_this_month);
    // The installation's spend covers every repository it is installed on: people who
    // cannot write to this one (a fork PR's author) do not see it.
    let writer = turn
        .permissions
        .at_least(
            turn.github,
            snap,
            &turn.trigger.author.login,
            Permission::Write,
        )
        .await?
        .is_ok();
    if writer {
        text.push_str(&render_budget(&standing));
    }
    Ok((text, Taught::Reported("stats")))
}

pub fn render_stats(
    stats: &stats::RepoStats,
    config: &RepoConfig,
    this_month: &crate::llm::usage::SpentOnPr,
    reviews_this_month: u64,
) -> String {
    let totals = stats.totals_by_category();
    let mut categories: Vec<&str> = totals.keys().copied().collect();
    for key in stats
        .posted
        .keys()
        .chain(stats.suppressed_by_category.keys())
    {
        if !categories.contains(&key.as_str()) {
            categories.push(key);
        }
    }
    categories.sort_unstable();
    let mut out = format!("**{} review(s)** on this repository.\n\n", stats.reviews);
    out.push_str("| category | posted | suppressed | accepted | rejected | ignored | acceptance |\n|---|---:|---:|---:|---:|---:|---:|\n");
    let rate = |c: &stats::Counts| {
        if c.decided() == 0 {
            "—".to_string()
        } else {
            format!("{:.0}%", 100.0 * c.accepted as f64 / c.decided() as f64)
        }
    };
    for category in &categories {
        let c = totals.get(category).copied().unwrap_or_default();
        out.push_str(&format!(
            "| {category} | {} | {} | {} | {} | {} | {} |\n",
            stats.posted.get(*category).copied().unwrap_or(0),
            stats
                .suppressed_by_category
                .get(*category)
                .copied()
                .unwrap_or(0),
            c.accepted,
            c.rejected,
            c.ignored,
            rate(&c)
        ));
    }
    let total = stats.total();
    out.push_str(&format!(
        "| **all** | {} | {} | {} | {} | {} | {} |\n",
        stats.posted.values().sum::<u64>(),
        stats.suppressed_by_category.values().sum::<u64>(),
        total.accepted,
        total.rejected,
        total.ignored,
        rate(&total)
    ));
    if !stats.by_severity.is_empty() {
        out.push_str("\n| severity | accepted | rejected | ignored | acceptance |\n|---|---:|---:|---:|---:|\n");
        for severity in ["critical", "high", "medium", "low", "nit"] {
            if let Some(c) = stats.by_severity.get(severity) {
                out.push_str(&format!(
                    "| {severity} | {} | {} | {} | {} |\n",
                    c.accepted,
                    c.rejected,
                    c.ignored,
                    rate(c)
                ));
            }
        }
    }
    if !stats.doubted.is_empty() {
        let d = &stats.doubted;
        out.push_str(&format!(
            "\nBlocking findings the judge doubted but could not drop: {} accepted, {} rejected (people agreed with the judge), {} ignored.\n",
            d.accepted, d.rejected, d.ignored
        ));
    }
    let (threshold, source) = stats::threshold_in_force(
        config.review.min_confidence,
        config.explicit.contains("review.minConfidence"),
        config.review.auto_tune,
        stats,
    );
    let tuned = match stats.tuned_threshold() {
        Some(t) => format!("tuned value {t} from {} decided findings", total.decided()),
        None if total.decided() >= stats::MIN_DECIDED => format!(
            "not tuned: no threshold reaches {:.0}% acceptance over {} decided findings, so the configured value stands",
            stats::TARGET_ACCEPTANCE * 100.0,
            total.decided()
        ),
        None => format!(
            "not tuned yet ({} of {} decided findings needed)",
            total.decided(),
            stats::MIN_DECIDED
        ),
    };
    out.push_str(&format!(
        "\nConfidence threshold in force: **{threshold}** ({}); {tuned}.\n",
        match source {
            stats::ThresholdSource::Default => "default",
            stats::ThresholdSource::File => "`.parley.yml`",
            stats::ThresholdSource::Tuned { .. } => "tuned",
        }
    ));
    let dollars = this_month.cost_micro_usd as f64 / 1_000_000.0;
    let per_review = if reviews_this_month == 0 {
        "—".to_string()
    } else {
        format!("${:.4}", dollars / reviews_this_month as f64)
    };
    out.push_str(&format!(
        "LLM cost this month: ${dollars:.4} over {reviews_this_month} review(s) (reviews and conversation turns; {per_review} per review).\n"
    ));
    if this_month.cache_read_tokens > 0 {
        out.push_str(&format!(
            "The prompt cache saved ≈ ${:.4} this month ({} input tokens read from it instead of sent again).\n",
            this_month.saved_micro_usd as f64 / 1_000_000.0,
            this_month.cache_read_tokens
        ));
    }
    out
}

/// The installation's spend this month against its budget: the counter the budget is
/// enforced on, so what `stats` shows is what the gate sees.
pub fn render_budget(standing: &crate::budget::Standing) -> String {
    let spent = standing.spent_usd();
    match standing.limit {
        Some((limit, _)) => format!(
            "Monthly LLM budget of this installation: ${spent:.4} of ${limit:.2} spent in {}{}.\n",
            standing.month,
            if standing.exhausted() {
                " (used up: reviews and answers wait for next month)"
            } else {
                ""
            }
        ),
        None => format!(
            "This installation has spent ${spent:.4} on the LLM in {}; no monthly budget is set.\n",
            standing.month
        ),
    }
}

/// `configuration`: every setting in force and where it came from, and on a PR what its
/// base branch's rules make of the merge gate (`gate`, from [`merge_gate`]).
/// `paused`: automatic reviews of this PR are paused ([`crate::review::pause`]), which
/// no setting shows.
pub fn configuration(
    snap: &PrSnapshot,
    memory: Option<&RepoMemory>,
    paused: bool,
    gate: Option<&str>,
) -> String {
    let mut out = render_configuration(&snap.config, memory, &snap.handles);
    if paused {
        out.push_str(&format!(
            "\nAutomatic reviews of this pull request are paused; {} resumes them.\n",
            snap.handles.command("resume")
        ));
    }
    if let Some(gate) = gate {
        out.push_str(&format!("\nMerge gate: {gate}\n"));
    }
    // A team that wrote organisation settings and sees none applied has usually not
    // installed the App on the `.github` repository (GitHub answers 404 for a repository
    // outside the installation, as for one that does not exist): say where they are read.
    if snap.config.org.is_none() && snap.scope.name != crate::config::layers::ORG_REPO {
        out.push_str(&format!(
            "\nNo organisation settings were read. An organisation's (or account's) `.parley.yml` is read under this one from the default branch of `{}/{}`, when the App is installed on that repository too.\n",
            crate::sanitize::inline_name(&snap.scope.owner),
            crate::config::layers::ORG_REPO
        ));
    }
    out
}

/// What the rules of the PR's base branch make of the merge gate
/// ([`crate::review::gate::protection`]), for `configuration`: the people who read it are
/// the ones who can change those rules. GitHub's refusal is said, not hidden.
pub async fn merge_gate(
    github: &dyn crate::ports::github::GitHub,
    identity: &crate::repo::BotIdentity,
    snap: &PrSnapshot,
    branch: &str,
) -> String {
    use crate::review::gate::protection;
    let shown = crate::sanitize::inline_name(branch);
    let rules = async {
        let app_id = identity.app_id(github).await?;
        let required = github.required_checks(&snap.scope, branch).await?;
        Ok::<_, crate::ports::GitHubError>(protection::judge(&required, app_id))
    };
    match rules.await {
        Ok(rules) => rules.describe(&shown, snap.handles.slug()),
        Err(err) => {
            tracing::warn!(repo = %snap.repo, branch = %branch, error = %err, "could not read the branch's required checks");
            protection::not_known(&format!("the rules of `{shown}`"), err.public_reason())
        }
    }
}

pub fn render_configuration(
    loaded: &LoadedConfig,
    memory: Option<&RepoMemory>,
    parley: &Handles,
) -> String {
    let (config, warnings) = (&loaded.config, &loaded.warnings);
    let mut out = String::from("| setting | value | from |\n|---|---|---|\n");
    for (key, value) in crate::config::describe(config) {
        let mut from = match &loaded.org {
            Some(org) if loaded.from_org.contains(&key) => format!("`{org}` (organisation)"),
            _ if config.explicit.contains(&key) => "`.parley.yml`".to_string(),
            _ => "default".to_string(),
        };
        let mut value = value;
        if key == "review.minConfidence"
            && let Some(memory) = memory
        {
            let (threshold, source) = stats::threshold_in_force(
                config.review.min_confidence,
                config.explicit.contains(&key),
                config.review.auto_tune,
                &memory.stats,
            );
            if let stats::ThresholdSource::Tuned { decided } = source {
                value = threshold.to_string();
                from = format!("learned (tuned from {decided} decided findings)");
            }
        }
        out.push_str(&format!("| `{key}` | {} | {from} |\n", table_cell(&value)));
    }
    if let Some(memory) = memory {
        let adjust = memory
            .active()
            .filter(|l| l.kind == LearningKind::Adjust)
            .count();
        if adjust > 0 {
            out.push_str(&format!(
                "\n{adjust} learning(s) adjust category thresholds (see {}).\n",
                parley.command("learnings")
            ));
        }
    }
    if warnings.is_empty() {
        out.push_str("\nNo problems in `.parley.yml`.\n");
    } else {
        out.push_str("\nProblems in `.parley.yml` (defaults used for these):\n\n");
        for warning in warnings {
            out.push_str(&format!("- {warning}\n"));
        }
    }
    // Settings name people (`dispute.humanReviewers: ['@carol']`): shown, never paged
    // each time someone asks.
    crate::sanitize::quiet_mentions(&out)
}

/// `help`: every command, one line each, spelt with this App's handle.
pub fn help(parley: &Handles) -> String {
    let mut rows = vec![
        "| command | what it does |".to_string(),
        "|---|---|".to_string(),
    ];
    for row in HELP {
        let (words, what) = match row {
            Help::Command(alternatives, what) => (
                alternatives
                    .iter()
                    .map(|words| parley.command(words))
                    .collect::<Vec<_>>()
                    .join(" / "),
                what,
            ),
            Help::Qualifier(forms, what) => (
                forms
                    .iter()
                    .map(|form| format!("`{form}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                what,
            ),
        };
        rows.push(format!("| {words} | {what} |"));
    }
    rows.join("\n")
}

/// A row of the help table.
enum Help {
    /// The words after the handle, one entry an alternative.
    Command(&'static [&'static str], &'static str),
    /// What a teaching command may end with; shown without the handle.
    Qualifier(&'static [&'static str], &'static str),
}

const HELP: &[Help] = &[
    Help::Command(
        &["review", "full review"],
        "review what changed since the last review / the whole PR again (needs `mention.minPermission`)",
    ),
    Help::Command(
        &["remember <rule>"],
        "a convention for future reviews and answers (also `for future reviews: …`, `we use … in this repo`, `our convention is …`)",
    ),
    Help::Command(
        &["don't flag <kind>"],
        "stop reporting such findings (also `ignore … issues`, `skip … checks`; `won't fix: …` in a finding's thread)",
    ),
    Help::Command(
        &["be stricter about <category>"],
        "report more of a category (`be more lenient with …`, `focus more/less on …`)",
    ),
    Help::Qualifier(
        &["… in <path glob>", "… for this PR", "… for all repos"],
        "limit a learning to paths, this PR, or widen it to the organisation",
    ),
    Help::Command(
        &["forget L-3f9a", "forget \"text\""],
        "take a learning back",
    ),
    Help::Command(&["learnings"], "list what Parley has learned here"),
    Help::Command(
        &["pause", "resume"],
        "stop reviewing this PR's pushes (maintainers) / review them again, starting with what came meanwhile",
    ),
    Help::Command(&["dismiss f_…"], "lift one finding by its id (maintainers)"),
    Help::Command(
        &["is f_… really a bug?"],
        "ask about one finding by its id, as in its thread (for one listed only in the summary)",
    ),
    Help::Command(
        &["stats"],
        "how findings fared, the confidence threshold, the LLM cost",
    ),
    Help::Command(
        &["configuration"],
        "every setting in force and where it came from; on a PR, whether its base branch makes Parley's check a merge gate only Parley passes",
    ),
    Help::Command(&["help"], "this table"),
];

fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
