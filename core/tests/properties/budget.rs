//! The context budget fitter: the history it keeps fits the budget whenever the rules
//! say it can, the newest turns are never cut, and the result depends only on the input.

use crate::common::{MEGABYTE, config, grow, huge_config, text, timed};
use parley_core::conversation::{Turn, fit, per_comment_cap};
use proptest::prelude::*;

/// GitHub logins: up to 39 characters of letters, digits and hyphens.
fn turn() -> impl Strategy<Value = Turn> {
    (
        "[a-zA-Z0-9-]{1,39}",
        any::<bool>(),
        prop_oneof![
            3 => text(),
            1 => (text(), 1usize..40).prop_map(|(t, n)| format!("{}. ", t.replace(['.', '!', '?'], "")).repeat(n)),
            1 => (text(), 100usize..3000).prop_map(|(t, n)| grow(&t, n)),
        ],
    )
        .prop_map(|(author, parley, text)| Turn {
            author,
            parley,
            text,
        })
}

/// `.parley.yml` allows 1 000 to 50 000 characters.
fn budget() -> impl Strategy<Value = usize> {
    prop_oneof![Just(1000usize), Just(50_000usize), 1000usize..=50_000]
}

fn cost(turn: &Turn) -> usize {
    turn.render().chars().count()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_fitted_history_keeps_the_rules(
        turns in prop::collection::vec(turn(), 0..40),
        budget in budget(),
        reserved_quarter in 0usize..=4,
    ) {
        // The finding takes up to a quarter of the budget, as its own cap allows.
        let reserved = budget / 4 * reserved_quarter / 4;
        let cap = per_comment_cap(budget);
        let fitted = timed("fit", || fit(turns.clone(), budget, reserved))?;

        // Nothing invented: the kept turns are the newest ones, in order.
        prop_assert_eq!(fitted.turns.len() + fitted.omitted, turns.len());
        prop_assert!(fitted.omitted <= turns.len().saturating_sub(3));
        prop_assert!(fitted.shortened <= fitted.turns.len().saturating_sub(3));
        let kept = &turns[fitted.omitted..];
        let newest = kept.len().saturating_sub(3);
        for (i, (got, original)) in fitted.turns.iter().zip(kept).enumerate() {
            prop_assert_eq!(&got.author, &original.author);
            prop_assert_eq!(got.parley, original.parley);
            let capped = parley_core::sanitize::truncate(&original.text, cap);
            if i >= newest {
                prop_assert_eq!(&got.text, &capped, "a newest turn was cut");
            } else {
                prop_assert!(
                    got.text == capped || got.text.chars().count() < capped.chars().count(),
                    "an older turn grew"
                );
            }
        }
        prop_assert_eq!(fitted.chars(), fitted.turns.iter().map(cost).sum::<usize>());

        // The budget holds: three capped turns and a finding of a quarter always fit.
        prop_assert!(
            fitted.chars() + reserved <= budget,
            "{} + {reserved} > {budget}",
            fitted.chars()
        );
        prop_assert_eq!(fitted.note().is_some(), fitted.shortened + fitted.omitted > 0);

        // Deterministic.
        prop_assert_eq!(&fit(turns, budget, reserved), &fitted);
    }

    /// Whatever is reserved, the newest three turns stay and the older ones go first.
    #[test]
    fn an_oversized_finding_only_costs_older_turns(
        turns in prop::collection::vec(turn(), 0..12),
        budget in budget(),
        reserved in any::<u32>(),
    ) {
        let reserved = reserved as usize;
        let fitted = fit(turns.clone(), budget, reserved);
        prop_assert!(fitted.turns.len() >= turns.len().min(3));
        if fitted.chars() + reserved > budget {
            prop_assert_eq!(fitted.omitted, turns.len().saturating_sub(3));
        }
    }
}

proptest! {
    #![proptest_config(huge_config())]

    /// Megabyte turns, and thousands of turns: bounded time, and the budget still holds.
    #[test]
    fn huge_histories_fit_in_bounded_time(unit in text(), budget in budget(), many in any::<bool>()) {
        let turns: Vec<Turn> = if many {
            (0..20_000)
                .map(|i| Turn { author: format!("u{i}"), parley: i % 2 == 0, text: grow(&unit, 50) })
                .collect()
        } else {
            (0..4)
                .map(|i| Turn { author: format!("u{i}"), parley: false, text: grow(&unit, MEGABYTE) })
                .collect()
        };
        let reserved = budget / 4;
        let fitted = timed("fit", || fit(turns, budget, reserved))?;
        prop_assert!(fitted.chars() + reserved <= budget);
    }
}
