//! The phrases Parley answers to, as one table of families.
//!
//! A family is a set of trigger phrases sharing one meaning. A command is recognised by
//! the longest trigger its first words match, and only that family then decides: when it
//! refuses ("remember that" with nothing after it), no shorter trigger gets a second go,
//! so "remember that" never becomes a rule reading "that".
//!
//! Words compare case-insensitively and ignore apostrophes, so "don't", "dont" and "don’t"
//! (the typographic apostrophe many editors insert) are one word.

use super::scope::PathMode;
use super::words::{same_word, words};
use super::{Direction, LearningKind, ScopeWord};

/// A family of phrases that mean the same thing.
pub(super) struct Family {
    /// For tests and for reading the table; never shown to users.
    #[cfg_attr(not(test), allow(dead_code))]
    pub name: &'static str,
    /// Each trigger is words separated by single spaces.
    pub triggers: &'static [&'static str],
    pub action: Action,
}

pub(super) enum Action {
    /// The trigger is the whole command.
    Exact(Simple),
    /// The trigger is the whole command, and it may be asked as a question ("stats?").
    Query(Simple),
    /// `dismiss`/`resolve` a finding by its id.
    Finding,
    /// `forget` a learning by id or quoted text.
    Forget,
    /// Something to learn.
    Learn(LearnRule),
}

/// Commands that carry nothing but their name.
#[derive(Debug, Clone, Copy)]
pub(super) enum Simple {
    Review,
    FullReview,
    Pause,
    Resume,
    Learnings,
    Stats,
    Configuration,
    Help,
}

/// How the words of a learning become a [`super::Learn`].
pub(super) struct LearnRule {
    pub kind: LearningKind,
    pub direction: Option<Direction>,
    /// The rule is the whole sentence, trigger included ("we use tabs in this repo").
    pub whole_sentence: bool,
    /// The rule must end in one of these words ("ignore … issues"); they stay in it.
    pub suffix: &'static [&'static str],
    /// The phrase means something only with this scope ("we use … in this repo").
    pub needs_scope: Option<ScopeWord>,
    /// The scope when none is named.
    pub default_scope: Option<ScopeWord>,
    /// Only in a finding's thread, where there is a finding to refer to.
    pub in_thread_only: bool,
    /// With nothing after the trigger on its line, the rule is the next paragraph.
    pub paragraph: bool,
    pub paths: PathMode,
}

impl LearnRule {
    const fn new(kind: LearningKind) -> Self {
        LearnRule {
            kind,
            direction: None,
            whole_sentence: false,
            suffix: &[],
            needs_scope: None,
            default_scope: None,
            in_thread_only: false,
            paragraph: false,
            // A fact often names a file it is about ("config lives in config/app.yml");
            // only globs and directories limit where a fact applies.
            paths: match kind {
                LearningKind::Remember => PathMode::GlobsAndDirectories,
                LearningKind::Dismiss | LearningKind::Adjust => PathMode::Any,
            },
        }
    }

    const fn toward(mut self, direction: Direction) -> Self {
        self.direction = Some(direction);
        self
    }

    const fn ending_in(mut self, suffix: &'static [&'static str]) -> Self {
        self.suffix = suffix;
        self
    }

    const fn in_thread(mut self) -> Self {
        self.in_thread_only = true;
        // The finding's PR: one finding being fine is not yet a rule for the repository.
        self.default_scope = Some(ScopeWord::Pr);
        self
    }
}

const REMEMBER: LearnRule = LearnRule::new(LearningKind::Remember);
const DISMISS: LearnRule = LearnRule::new(LearningKind::Dismiss);
const STRICTER: LearnRule = LearnRule::new(LearningKind::Adjust).toward(Direction::Stricter);
const LENIENT: LearnRule = LearnRule::new(LearningKind::Adjust).toward(Direction::Lenient);

/// Every phrase Parley answers to.
pub(super) const FAMILIES: &[Family] = &[
    Family {
        name: "review",
        triggers: &["review"],
        action: Action::Exact(Simple::Review),
    },
    Family {
        name: "full review",
        triggers: &["full review"],
        action: Action::Exact(Simple::FullReview),
    },
    Family {
        name: "pause",
        triggers: &["pause", "pause reviews", "pause reviewing"],
        action: Action::Exact(Simple::Pause),
    },
    Family {
        name: "resume",
        triggers: &["resume", "resume reviews", "resume reviewing"],
        action: Action::Exact(Simple::Resume),
    },
    Family {
        name: "dismiss finding",
        triggers: &["dismiss", "resolve"],
        action: Action::Finding,
    },
    Family {
        name: "forget",
        triggers: &["forget"],
        action: Action::Forget,
    },
    Family {
        name: "learnings",
        triggers: &[
            "learnings",
            "list learnings",
            "list the learnings",
            "show learnings",
            "show the learnings",
            "what have you learned",
            "what have you learnt",
        ],
        action: Action::Query(Simple::Learnings),
    },
    Family {
        name: "stats",
        triggers: &["stats", "statistics", "show stats", "show statistics"],
        action: Action::Query(Simple::Stats),
    },
    Family {
        name: "configuration",
        triggers: &[
            "configuration",
            "config",
            "show config",
            "show configuration",
            "show the config",
            "show the configuration",
        ],
        action: Action::Query(Simple::Configuration),
    },
    Family {
        name: "help",
        triggers: &["help", "commands", "what can you do"],
        action: Action::Query(Simple::Help),
    },
    Family {
        name: "remember",
        triggers: &["remember", "remember that", "for future reviews"],
        action: Action::Learn(REMEMBER),
    },
    Family {
        name: "remember this",
        triggers: &["remember this:"],
        action: Action::Learn(LearnRule {
            paragraph: true,
            ..REMEMBER
        }),
    },
    Family {
        name: "we use in this repo",
        triggers: &["we use"],
        action: Action::Learn(LearnRule {
            whole_sentence: true,
            needs_scope: Some(ScopeWord::Repo),
            ..REMEMBER
        }),
    },
    Family {
        name: "our convention",
        triggers: &["our convention is"],
        action: Action::Learn(LearnRule {
            whole_sentence: true,
            ..REMEMBER
        }),
    },
    Family {
        name: "don't flag",
        triggers: &[
            "don't flag",
            "do not flag",
            "i don't care about",
            "i do not care about",
        ],
        action: Action::Learn(DISMISS),
    },
    Family {
        name: "ignore issues",
        triggers: &["ignore"],
        action: Action::Learn(DISMISS.ending_in(&["issues", "findings", "warnings"])),
    },
    Family {
        name: "skip checks",
        triggers: &["skip"],
        action: Action::Learn(DISMISS.ending_in(&["checks", "check"])),
    },
    Family {
        name: "won't fix",
        triggers: &["won't fix", "will not fix", "this is fine because"],
        action: Action::Learn(DISMISS.in_thread()),
    },
    Family {
        name: "stricter",
        triggers: &[
            "be stricter about",
            "be stricter with",
            "be more strict about",
            "be more strict with",
            "focus more on",
        ],
        action: Action::Learn(STRICTER),
    },
    Family {
        name: "lenient",
        triggers: &[
            "be more lenient with",
            "be more lenient about",
            "be less strict about",
            "be less strict with",
            "focus less on",
        ],
        action: Action::Learn(LENIENT),
    },
];

/// The family whose trigger starts `line` (the longest match), and the text after the
/// trigger. Queries match with a trailing `?` set aside.
pub(super) fn matched(line: &str, in_thread: bool) -> Option<(&'static Family, &str)> {
    let question = line.trim_end_matches('?').trim_end();
    // Every trigger is compared with the same few first words: normalise them once.
    let (plain, asked) = (Head::new(line), Head::new(question));
    let mut best: Option<(&'static Family, &str, usize)> = None;
    for family in FAMILIES {
        let (head, punctuation) = match &family.action {
            Action::Learn(rule) if rule.in_thread_only && !in_thread => continue,
            // "remember: …", "won't fix, …": a learning's trigger may end in `:` or `,`.
            Action::Learn(_) => (&plain, true),
            Action::Query(_) => (&asked, false),
            Action::Exact(_) | Action::Finding | Action::Forget => (&plain, false),
        };
        for trigger in family.triggers {
            let words = trigger.split(' ').count();
            if best.is_some_and(|(_, _, n)| n >= words) {
                continue;
            }
            if let Some(end) = head.starts_with(trigger, punctuation) {
                best = Some((family, &head.text[end..], words));
            }
        }
    }
    best.map(|(family, rest, _)| (family, rest))
}

/// The longest trigger, in words.
pub(super) const MAX_TRIGGER_WORDS: usize = 5;

/// The first words of a line, lowercased and without apostrophes, with where each ends.
struct Head<'a> {
    text: &'a str,
    words: Vec<(String, usize)>,
}

impl<'a> Head<'a> {
    fn new(text: &'a str) -> Self {
        let words = words(text)
            .take(MAX_TRIGGER_WORDS)
            .map(|(start, end)| (normalise(&text[start..end]), end))
            .collect();
        Head { text, words }
    }

    /// The byte offset after `trigger` when the line starts with it.
    fn starts_with(&self, trigger: &str, punctuation: bool) -> Option<usize> {
        let mut end = 0;
        let mut pattern = trigger.split(' ').peekable();
        let mut words = self.words.iter();
        while let Some(want) = pattern.next() {
            let (word, stop) = words.next()?;
            let same = |w: &str| w.chars().eq(want.chars().filter(|c| *c != '\''));
            let last = pattern.peek().is_none();
            let matches = same(word)
                || (last && punctuation && word.strip_suffix([':', ',']).is_some_and(same));
            if !matches {
                return None;
            }
            end = *stop;
        }
        Some(end)
    }
}

fn normalise(word: &str) -> String {
    word.chars()
        .filter(|c| *c != '\'' && *c != '’')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether `text` ends in one of `suffix` and has something before it: "ignore issues"
/// names nothing to ignore.
pub(super) fn ends_with_suffix(text: &str, suffix: &[&str]) -> bool {
    let mut words = text.rsplit(char::is_whitespace).filter(|w| !w.is_empty());
    let last = words.next().unwrap_or("");
    suffix.iter().any(|s| same_word(last, s)) && words.next().is_some()
}

/// Words that name a kind of finding rather than a category.
const GENERIC: &[&str] = &[
    "issues", "issue", "findings", "finding", "checks", "check", "warnings", "problems", "comments",
];

/// Categories people name; a dismissal made of one of these alone is a category dismissal.
const CATEGORIES: &[&str] = &[
    "security",
    "tests",
    "testing",
    "test coverage",
    "style",
    "formatting",
    "performance",
    "correctness",
    "bugs",
    "documentation",
    "docs",
    "error handling",
    "maintainability",
    "readability",
    "naming",
    "concurrency",
    "accessibility",
    "guidelines",
    "logging",
    "complexity",
    "typing",
    "types",
    "dependencies",
    "nits",
    "nitpicks",
    "spelling",
    "typos",
];

/// The category `text` names, lowercased as written. An adjustment is always about a
/// category, so a short rule is taken as one ("sql injection") and a long one by its
/// known first words ("error handling in the payment code"); a dismissal has one only
/// when it is nothing but a known category ("style issues").
pub(super) fn category(kind: LearningKind, text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let core = match words.split_last() {
        Some((last, init)) if !init.is_empty() && GENERIC.contains(last) => init,
        _ => &words[..],
    };
    let named = core.join(" ");
    match kind {
        LearningKind::Remember => None,
        LearningKind::Dismiss => CATEGORIES.contains(&named.as_str()).then_some(named),
        LearningKind::Adjust if (1..=3).contains(&core.len()) => Some(named),
        LearningKind::Adjust => CATEGORIES
            .iter()
            .filter(|c| {
                named
                    .strip_prefix(**c)
                    .is_some_and(|rest| rest.starts_with(' '))
            })
            .max_by_key(|c| c.len())
            .map(|c| c.to_string()),
    }
}
