//! Everything a person can tell Parley to do, parsed in one place.
//!
//! Every comment surface (PR conversation, review threads, review bodies) hands its text
//! here, so `@parley remember …` means the same wherever it is written. A command counts
//! only when it *starts* the text after a mention of Parley (or, in a finding's thread,
//! the comment itself): "@parley do you remember why?" is a question for the model, not a
//! rule to store. The phrases live in one table ([`phrases`]), each family tested with the
//! near misses that must stay questions.
//!
//! Parsing is pure, linear in the comment's length and never panics, whatever the input:
//! a comment is untrusted text from anyone who can comment.

mod phrases;
mod recognise;
mod scope;
#[cfg(test)]
mod tests;
mod words;

use crate::job::ReviewTrigger;
use crate::mention::Handles;
use phrases::{Action, LearnRule, Simple};
use recognise::Candidate;

/// What a comment asks Parley to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `review`: review what changed since the last review.
    Review,
    /// `full review`: review the whole PR from scratch.
    FullReview,
    /// `pause`: stop reviewing this PR's pushes until `resume` (see
    /// [`crate::review::pause`]).
    Pause,
    /// `resume`: review pushes again, starting with what came while paused.
    Resume,
    /// `dismiss f_…` / `resolve f_…`: lift a finding by its id, the way out for findings
    /// listed only in a review summary, which have no thread to reply in.
    DismissFinding { finding: String },
    /// `remember …`, `don't flag …`, `be stricter about …`: something to learn.
    Learn(Learn),
    /// `forget L-3f9a` / `forget "…"`: take a learning back.
    Forget(Forget),
    /// `learnings`: list what Parley has learned here.
    Learnings,
    /// `stats`: how Parley's findings have fared.
    Stats,
    /// `configuration`: the settings in force, with any problems in `.parley.yml`.
    Configuration,
    /// `help`: the commands themselves.
    Help,
}

impl Command {
    /// The review a review command asks for; `None` for other commands. Lets the
    /// conversation worker hand review requests to the review queue without matching.
    pub fn trigger(&self) -> Option<ReviewTrigger> {
        match self {
            Command::Review => Some(ReviewTrigger::ManualIncremental),
            Command::FullReview => Some(ReviewTrigger::ManualFull),
            _ => None,
        }
    }
}

/// A learning as the person phrased it, before anything (a model, the store) interprets
/// it. Kept close to the words so the learning list can show what was actually asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Learn {
    pub kind: LearningKind,
    /// The rule as written, trimmed, without the trigger phrase and without the scope and
    /// path words (which are in `scope` and `paths`). For `we use …` and `our convention
    /// is …` the sentence itself is the rule, so it stays whole. For `ignore … issues` and
    /// `skip … checks` the last word stays: "null checks" says what "null" alone cannot.
    pub text: String,
    /// `None` means the default, the repository. In-thread `won't fix` and `this is fine
    /// because` say `Some(Pr)` themselves, so `None` never depends on the phrase used.
    pub scope: Option<ScopeWord>,
    /// Globs the learning is limited to; a directory `src/legacy/` becomes `src/legacy/**`.
    pub paths: Vec<String>,
    /// Which way an `Adjust` moves; `None` for the other kinds.
    pub direction: Option<Direction>,
    /// The category named, lowercased as written: always tried for `Adjust`, and for
    /// `Dismiss` only when the rule is nothing but a category ("don't flag style issues").
    pub category: Option<String>,
}

/// What a learning asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LearningKind {
    /// A fact or convention to take into account.
    Remember,
    /// Findings like these are not wanted.
    Dismiss,
    /// Be stricter or more lenient about a category.
    Adjust,
}

/// Which way an `Adjust` learning moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Stricter,
    Lenient,
}

/// The scope a person named. Only words: which thread or PR they mean is known to the
/// caller, not to the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeWord {
    Thread,
    Pr,
    Repo,
    Org,
}

/// Which learning to take back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forget {
    /// Canonical: `L-` and lowercase hex, however it was typed.
    Id(String),
    /// The quoted text, to be matched against learnings' text by the caller.
    Text(String),
}

/// What the parser cannot see in the text itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseContext {
    /// The comment replies in the thread of one of Parley's findings: there a reply may
    /// be a command without mentioning Parley, and `won't fix: …` has a finding to refer to.
    pub in_finding_thread: bool,
}

/// The command in `body`, if one starts right after a mention of Parley (or, in a
/// finding's thread, at the start of the comment). The first one found wins.
pub fn parse(body: &str, handles: &Handles, ctx: ParseContext) -> Option<Command> {
    recognise::candidates(body, handles, ctx.in_finding_thread)
        .iter()
        .find_map(|candidate| command(candidate, ctx))
}

fn command(candidate: &Candidate<'_>, ctx: ParseContext) -> Option<Command> {
    let (family, rest) = phrases::matched(candidate.line, ctx.in_finding_thread)?;
    match &family.action {
        Action::Exact(simple) | Action::Query(simple) => {
            rest.trim().is_empty().then(|| simple_command(*simple))
        }
        Action::Finding => dismiss_finding(rest),
        Action::Forget => forget(rest).map(Command::Forget),
        Action::Learn(rule) => learn(rule, candidate, rest).map(Command::Learn),
    }
}

fn simple_command(simple: Simple) -> Command {
    match simple {
        Simple::Review => Command::Review,
        Simple::FullReview => Command::FullReview,
        Simple::Pause => Command::Pause,
        Simple::Resume => Command::Resume,
        Simple::Learnings => Command::Learnings,
        Simple::Stats => Command::Stats,
        Simple::Configuration => Command::Configuration,
        Simple::Help => Command::Help,
    }
}

/// `dismiss f_…`, `dismiss finding f_…`: the id and nothing else, so that "dismiss
/// f_0a1b2c please, it is wrong" is left for the conversation to answer.
fn dismiss_finding(rest: &str) -> Option<Command> {
    let mut words = rest.split_whitespace();
    let mut id = words.next()?;
    if id.eq_ignore_ascii_case("finding") {
        id = words.next()?;
    }
    if words.next().is_some() {
        return None;
    }
    finding_id(id).map(|finding| Command::DismissFinding { finding })
}

/// The finding ids `text` names (`is f_0a1b2c3d4e5f really a bug?`), each once, in the
/// order named: how a question about a finding listed only in a summary, which has no
/// thread, says which one it is about.
pub fn named_findings(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || ",.;:!?()[]<>*".contains(c)) {
        if let Some(id) = finding_id(word)
            && !ids.contains(&id)
        {
            ids.push(id);
        }
    }
    ids
}

/// A finding id as Parley writes them: `f_` and hex digits (twelve today; six to 32
/// accepted), lowercased.
fn finding_id(word: &str) -> Option<String> {
    let word = word
        .trim_matches(|c| c == '`' || c == '"' || c == '\'')
        .to_ascii_lowercase();
    let hex = word.strip_prefix("f_")?;
    ((6..=32).contains(&hex.len()) && hex.chars().all(|c| c.is_ascii_hexdigit())).then_some(word)
}

/// `forget L-3f9a`, `forget learning L-3f9a`, `forget "text"`. Unquoted text is not
/// accepted: "forget about it" must not delete anything.
fn forget(rest: &str) -> Option<Forget> {
    let rest = rest.trim();
    if rest.ends_with('?') {
        return None;
    }
    let mut words = rest.split_whitespace();
    let mut first = words.next()?;
    if first.eq_ignore_ascii_case("learning") {
        first = words.next()?;
    }
    if words.next().is_none()
        && let Some(id) = learning_id(first)
    {
        return Some(Forget::Id(id));
    }
    quoted(rest).map(Forget::Text)
}

/// `L-3F9A`, `` `l-3f9a` `` → `L-3f9a`: four to eight hex digits, as the learning store
/// writes them (four, six on a clash).
fn learning_id(word: &str) -> Option<String> {
    let word = word.trim_matches(|c| c == '`' || c == '"' || c == '\'');
    let (prefix, hex) = word.split_at_checked(2)?;
    (prefix.eq_ignore_ascii_case("L-")
        && (4..=8).contains(&hex.len())
        && hex.chars().all(|c| c.is_ascii_hexdigit()))
    .then(|| format!("L-{}", hex.to_ascii_lowercase()))
}

/// The inside of `"…"`, `'…'`, `“…”`, `‘…’` or `` `…` `` when the quotes enclose the whole
/// of `text`.
fn quoted(text: &str) -> Option<String> {
    const PAIRS: [(char, char); 5] = [('"', '"'), ('\'', '\''), ('“', '”'), ('‘', '’'), ('`', '`')];
    let mut chars = text.chars();
    let open = chars.next()?;
    let close = chars.next_back()?;
    let inner = chars.as_str().trim();
    // `"a" and "b"` is two quotes, not one text.
    (PAIRS.contains(&(open, close)) && !inner.is_empty() && !inner.contains(close))
        .then(|| inner.to_string())
}

fn learn(rule: &LearnRule, candidate: &Candidate<'_>, rest: &str) -> Option<Learn> {
    // "remember that we use tabs?" asks; it does not teach.
    if candidate.line.ends_with('?') {
        return None;
    }
    let mut raw = if rule.whole_sentence {
        candidate.line
    } else {
        rest
    };
    if rule.paragraph && raw.trim().is_empty() {
        raw = candidate.paragraph()?;
        if raw.ends_with('?') {
            return None;
        }
    }
    // "our convention is" alone: the sentence needs more than its trigger.
    if rule.whole_sentence && scope::extract(rest, rule.paths).text.is_empty() {
        return None;
    }
    let found = scope::extract(raw, rule.paths);
    if found.text.is_empty() {
        return None;
    }
    if !rule.suffix.is_empty() && !phrases::ends_with_suffix(&found.text, rule.suffix) {
        return None;
    }
    if rule.needs_scope.is_some() && found.scope != rule.needs_scope {
        return None;
    }
    let category = phrases::category(rule.kind, &found.text);
    Some(Learn {
        kind: rule.kind,
        text: found.text,
        scope: found.scope.or(rule.default_scope),
        paths: found.paths,
        direction: rule.direction,
        category,
    })
}
