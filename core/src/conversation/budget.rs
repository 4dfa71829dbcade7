//! Fitting a conversation's history into `mention.conversation.contextBudgetChars`.
//!
//! A long thread must not crowd out the finding or the question, and must not make the
//! prompt's size depend on how chatty a PR was. The rule, deterministic so the same thread
//! always yields the same prompt:
//! 1. every comment is capped at [`per_comment_cap`] (a quarter of the budget, at most
//!    2 000 characters), so the finding and the three most recent turns always fit whole;
//! 2. while over budget, turns older than the last three are cut to their first sentence,
//!    oldest first;
//! 3. if that is still not enough, the oldest shortened turns are left out.
//!
//! The finding counts against the budget but is never cut (beyond its cap). A note says
//! how many turns were shortened or left out.

/// Turns at the end of the history that are always kept whole.
pub const KEEP_WHOLE: usize = 3;
const MAX_COMMENT_CHARS: usize = 2_000;
/// A "first sentence" longer than this is cut too.
const MAX_SENTENCE_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub author: String,
    pub parley: bool,
    pub text: String,
}

impl Turn {
    /// How the turn is rendered in the prompt; its length is what the budget counts.
    pub fn render(&self) -> String {
        let who = if self.parley {
            "Parley (you)".to_string()
        } else {
            format!("@{}", self.author)
        };
        format!("{who}: {}", self.text)
    }

    fn cost(&self) -> usize {
        self.render().chars().count()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub turns: Vec<Turn>,
    /// Turns cut to their first sentence.
    pub shortened: usize,
    /// Oldest turns left out entirely.
    pub omitted: usize,
}

impl Fitted {
    /// The note for the prompt, when anything was cut.
    pub fn note(&self) -> Option<String> {
        match (self.shortened, self.omitted) {
            (0, 0) => None,
            (s, 0) => Some(format!(
                "{s} older turn(s) were shortened to their first sentence to fit the context budget."
            )),
            (s, o) => Some(format!(
                "{s} older turn(s) were shortened to their first sentence and the {o} oldest were left out to fit the context budget."
            )),
        }
    }

    /// Characters of the history as rendered.
    pub fn chars(&self) -> usize {
        self.turns.iter().map(Turn::cost).sum()
    }
}

/// Each comment's cap for a given budget: a quarter, less room for the author's handle
/// and the truncation mark, so the finding and three whole turns fit together.
pub fn per_comment_cap(budget: usize) -> usize {
    (budget / 4)
        .saturating_sub(60)
        .clamp(150, MAX_COMMENT_CHARS)
}

/// Fit `turns` (oldest first) into `budget` characters, of which `reserved` are already
/// taken by the finding.
pub fn fit(turns: Vec<Turn>, budget: usize, reserved: usize) -> Fitted {
    let cap = per_comment_cap(budget);
    let mut turns: Vec<Turn> = turns
        .into_iter()
        .map(|t| Turn {
            text: crate::sanitize::truncate(&t.text, cap),
            ..t
        })
        .collect();
    let older = turns.len().saturating_sub(KEEP_WHOLE);
    let mut total = reserved + turns.iter().map(Turn::cost).sum::<usize>();
    let mut shortened = vec![false; turns.len()];
    for (turn, was_cut) in turns.iter_mut().zip(shortened.iter_mut()).take(older) {
        if total <= budget {
            break;
        }
        let short = first_sentence(&turn.text);
        if short.chars().count() < turn.text.chars().count() {
            let before = turn.cost();
            turn.text = short;
            total = total - before + turn.cost();
            *was_cut = true;
        }
    }
    let mut omitted = 0;
    while total > budget && omitted < older {
        total -= turns[omitted].cost();
        omitted += 1;
    }
    let turns = turns.split_off(omitted);
    Fitted {
        turns,
        shortened: shortened[omitted..].iter().filter(|cut| **cut).count(),
        omitted,
    }
}

/// Up to the first sentence end (`.`, `!` or `?` followed by a space, or a line break),
/// marked with an ellipsis when something was cut.
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let mut end = text.len();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '\n' {
            end = at;
            break;
        }
        if matches!(c, '.' | '!' | '?') && chars.peek().is_some_and(|(_, n)| n.is_whitespace()) {
            end = at + c.len_utf8();
            break;
        }
    }
    let sentence = &text[..end];
    let sentence = match sentence.char_indices().nth(MAX_SENTENCE_CHARS) {
        Some((cut, _)) => &sentence[..cut],
        None => sentence,
    };
    if sentence.len() < text.len() {
        format!("{} …", sentence.trim_end())
    } else {
        sentence.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(i: usize, text: &str) -> Turn {
        Turn {
            author: format!("user{i}"),
            parley: false,
            text: text.to_string(),
        }
    }

    fn long(i: usize) -> String {
        format!(
            "Turn {i} opens here. {}",
            "More detail that only matters in full. ".repeat(8)
        )
    }

    #[test]
    fn short_history_is_untouched() {
        let turns = vec![turn(1, "Why?"), turn(2, "Because.")];
        let fitted = fit(turns.clone(), 8000, 500);
        assert_eq!(fitted.turns, turns);
        assert_eq!(fitted.note(), None);
    }

    #[test]
    fn older_turns_shortened_oldest_first_last_three_whole() {
        let turns: Vec<Turn> = (0..10).map(|i| turn(i, &long(i))).collect();
        let budget = 2500;
        let fitted = fit(turns.clone(), budget, 300);
        assert!(fitted.chars() + 300 <= budget);
        assert_eq!(fitted.omitted, 0);
        for (kept, original) in fitted.turns.iter().rev().take(3).zip(turns.iter().rev()) {
            assert_eq!(kept.text, original.text);
        }
        // Oldest first: the first is shortened, and if any is whole among the older
        // ones, all after it are whole too.
        assert_eq!(fitted.turns[0].text, "Turn 0 opens here. …");
        let whole: Vec<bool> = fitted.turns[..7]
            .iter()
            .zip(&turns)
            .map(|(a, b)| a.text == b.text)
            .collect();
        assert!(whole.windows(2).all(|w| !w[0] || w[1]), "{whole:?}");
        assert!(
            fitted
                .note()
                .unwrap()
                .contains(&format!("{} older", fitted.shortened))
        );
    }

    #[test]
    fn very_long_threads_drop_the_oldest_and_stay_inside() {
        let turns: Vec<Turn> = (0..60).map(|i| turn(i, &long(i))).collect();
        let fitted = fit(turns.clone(), 1000, 200);
        assert!(fitted.chars() + 200 <= 1000, "{}", fitted.chars());
        assert!(fitted.omitted > 0);
        assert_eq!(fitted.turns.len() + fitted.omitted, 60);
        let last = fitted.turns.last().unwrap();
        assert_eq!(
            last.text,
            crate::sanitize::truncate(&turns[59].text, per_comment_cap(1000))
        );
    }

    #[test]
    fn deterministic() {
        let turns: Vec<Turn> = (0..30).map(|i| turn(i, &long(i))).collect();
        assert_eq!(fit(turns.clone(), 3000, 100), fit(turns, 3000, 100));
    }

    #[test]
    fn first_sentences() {
        assert_eq!(first_sentence("One. Two."), "One. …");
        assert_eq!(first_sentence("Why? Because"), "Why? …");
        assert_eq!(first_sentence("v1.2 is out\nnext"), "v1.2 is out …");
        assert_eq!(first_sentence("No end"), "No end");
    }

    #[test]
    fn per_comment_cap_applies() {
        let fitted = fit(vec![turn(0, &"x".repeat(5000))], 8000, 0);
        assert!(fitted.turns[0].text.chars().count() <= 2000 + 20);
    }
}
