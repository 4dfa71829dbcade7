//! How long a review pass may run where this Parley runs.
//!
//! A repository's `.parley.yml` may ask for up to an hour a pass (`review.passTimeoutSecs`):
//! a self-hosted model on a CPU answers in minutes, and a pass cut off at four minutes
//! reviews nothing. But a Lambda worker is stopped at 300 s, and the repository cannot
//! know where Parley runs. So the operator says (`PARLEY_PASS_TIMEOUT_SECS`, read by
//! `parley serve` and `parley review`; on Lambda never more than 240 s): the deadline for
//! repositories that do not set one, and the most one may ask for. A repository that asks
//! for more gets the most, and a warning it sees where its other configuration warnings
//! show.

use super::{ConfigWarning, RepoConfig};
use std::time::Duration;

/// The operator's setting: whole seconds, 1 to [`MAX_SECS`].
pub const ENV: &str = "PARLEY_PASS_TIMEOUT_SECS";

/// The most any deployment allows a pass.
pub const MAX_SECS: u32 = 3600;

/// The most a pass may take on Lambda: the workers' 300 s timeout, less room for the
/// judge and for publishing.
pub const LAMBDA_MAX_SECS: u32 = 240;

const KEY: &str = "review.passTimeoutSecs";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassDeadline {
    /// For repositories whose `.parley.yml` does not set `review.passTimeoutSecs`.
    pub default_secs: u32,
    /// The most a repository may set.
    pub max_secs: u32,
}

#[derive(Debug, thiserror::Error)]
#[error("{ENV}: {value:?} is not a whole number of seconds from 1 to {MAX_SECS}")]
pub struct PassDeadlineError {
    pub value: String,
}

impl Default for PassDeadline {
    fn default() -> Self {
        PassDeadline::LAMBDA
    }
}

impl PassDeadline {
    /// Every deployment's unless its operator says otherwise; what Lambda allows.
    pub const LAMBDA: PassDeadline = PassDeadline {
        default_secs: 180,
        max_secs: LAMBDA_MAX_SECS,
    };

    /// From the value of [`ENV`] (blank counts as unset): the operator's number is both
    /// the default and the most. `on_lambda`: no more than [`LAMBDA_MAX_SECS`], whatever
    /// was set (a worker stopped mid-review would lose the review; refusing to start
    /// would lose every job).
    pub fn from_env_value(value: Option<&str>, on_lambda: bool) -> Result<Self, PassDeadlineError> {
        let Some(text) = value.map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(PassDeadline::LAMBDA);
        };
        let secs = text
            .parse::<u32>()
            .ok()
            .filter(|secs| (1..=MAX_SECS).contains(secs))
            .ok_or_else(|| PassDeadlineError {
                value: text.to_string(),
            })?;
        let secs = if on_lambda && secs > LAMBDA_MAX_SECS {
            tracing::warn!(
                setting = ENV,
                secs,
                "over what a Lambda worker can wait; {LAMBDA_MAX_SECS} s applies"
            );
            LAMBDA_MAX_SECS
        } else {
            secs
        };
        Ok(PassDeadline {
            default_secs: secs,
            max_secs: secs,
        })
    }

    /// Puts the deadline into a repository's parsed configuration.
    pub fn apply(self, config: &mut RepoConfig, warnings: &mut Vec<ConfigWarning>) {
        let asked = config.review.pass_timeout_secs;
        if !config.explicit.contains(KEY) {
            config.review.pass_timeout_secs = self.default_secs.min(self.max_secs);
        } else if asked > self.max_secs {
            config.review.pass_timeout_secs = self.max_secs;
            warnings.push(ConfigWarning {
                key: KEY.to_string(),
                message: format!(
                    "{asked} is more than this Parley allows a pass; using {}",
                    self.max_secs
                ),
            });
        }
    }

    /// The longest a review job can take once its passes have this deadline: the
    /// passes run side by side, then the judge; what is left is for reading the pull
    /// request and publishing. A local queue must hide a job at least this long, or a
    /// second worker would start the same review while the first is still at it.
    pub fn job_bound(self) -> Duration {
        Duration::from_secs(2 * u64::from(self.max_secs) + 300)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn applied(deadline: PassDeadline, text: &str) -> (u32, Vec<ConfigWarning>) {
        let (mut config, mut warnings) = parse(text);
        deadline.apply(&mut config, &mut warnings);
        (config.review.pass_timeout_secs, warnings)
    }

    #[test]
    fn unset_means_what_lambda_allows() {
        for value in [None, Some(""), Some("  ")] {
            let deadline = PassDeadline::from_env_value(value, false).expect("unset");
            assert_eq!(deadline, PassDeadline::LAMBDA, "{value:?}");
        }
        assert_eq!(applied(PassDeadline::LAMBDA, ""), (180, vec![]));
        assert_eq!(
            applied(PassDeadline::LAMBDA, "review:\n  passTimeoutSecs: 240\n"),
            (240, vec![])
        );
    }

    #[test]
    fn the_operators_number_is_the_default_and_the_most() {
        let slow = PassDeadline::from_env_value(Some("900"), false).expect("900");
        assert_eq!(
            slow,
            PassDeadline {
                default_secs: 900,
                max_secs: 900
            }
        );
        assert_eq!(applied(slow, ""), (900, vec![]));
        assert_eq!(
            applied(slow, "review:\n  passTimeoutSecs: 60\n"),
            (60, vec![])
        );
        let (secs, warnings) = applied(slow, "review:\n  passTimeoutSecs: 1800\n");
        assert_eq!(secs, 900);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].key, "review.passTimeoutSecs");
        assert!(warnings[0].message.contains("using 900"), "{warnings:?}");
    }

    #[test]
    fn lambda_never_waits_past_its_worker() {
        let deadline = PassDeadline::from_env_value(Some("900"), true).expect("clamped");
        assert_eq!(deadline.max_secs, LAMBDA_MAX_SECS);
        assert_eq!(deadline.default_secs, LAMBDA_MAX_SECS);
        let lower = PassDeadline::from_env_value(Some("90"), true).expect("lower");
        assert_eq!(applied(lower, "").0, 90);
        let (secs, warnings) = applied(PassDeadline::LAMBDA, "review:\n  passTimeoutSecs: 600\n");
        assert_eq!(secs, 240);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn a_rejected_value_takes_the_deployments_default() {
        let slow = PassDeadline::from_env_value(Some("900"), false).expect("900");
        let (secs, warnings) = applied(slow, "review:\n  passTimeoutSecs: soon\n");
        assert_eq!(secs, 900);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn bad_operator_values_are_refused() {
        for bad in ["0", "3601", "-5", "soon", "1.5"] {
            let err = PassDeadline::from_env_value(Some(bad), false).expect_err(bad);
            assert!(err.to_string().contains(ENV), "{err}");
        }
    }

    #[test]
    fn a_queue_hides_a_job_for_two_deadlines_and_five_minutes() {
        assert_eq!(PassDeadline::LAMBDA.job_bound(), Duration::from_secs(780));
    }
}
