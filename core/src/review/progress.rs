//! The check run's "2 of 5 passes done" while a review runs.
//!
//! On a self-hosted model serving one request at a time a review takes minutes, and an
//! "in progress" check that never changes looks hung. A finished pass updates the check's
//! summary, bounded: nothing in the first [`INTERVAL`] (a review on a hosted model is done
//! by then), then at most one call per interval and per pass, and none after a failed
//! update (GitHub is in trouble: the conclusion matters more than progress). An update is
//! never a failure of the review; a lost one is a stale line until the check concludes.

use crate::ports::github::{CheckRunOutput, CheckRunUpdate, GitHub, RepoScope};
use crate::review::prompts::SpecialistPrompt;
use crate::review::specialists::PassProgress;
use async_trait::async_trait;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The least time between two progress updates, and before the first.
pub const INTERVAL: Duration = Duration::from_secs(10);

pub struct CheckProgress<'a> {
    github: &'a dyn GitHub,
    scope: &'a RepoScope,
    check_run_id: Option<u64>,
    interval: Duration,
    /// Passes finished so far, by name, for the summary line; and when the check was
    /// last updated (the review's start before the first update).
    state: Mutex<(Vec<(&'static str, bool)>, Instant)>,
    gave_up: AtomicBool,
    /// The parts a diff too large for one budget is read in (each pass once a part).
    parts: AtomicUsize,
}

impl<'a> CheckProgress<'a> {
    pub fn new(github: &'a dyn GitHub, scope: &'a RepoScope, check_run_id: Option<u64>) -> Self {
        Self::with_interval(github, scope, check_run_id, INTERVAL)
    }

    pub fn with_interval(
        github: &'a dyn GitHub,
        scope: &'a RepoScope,
        check_run_id: Option<u64>,
        interval: Duration,
    ) -> Self {
        CheckProgress {
            github,
            scope,
            check_run_id,
            interval,
            state: Mutex::new((Vec::new(), Instant::now())),
            gave_up: AtomicBool::new(false),
            parts: AtomicUsize::new(1),
        }
    }
}

#[async_trait]
impl PassProgress for CheckProgress<'_> {
    fn started(&self, _passes: &[&'static SpecialistPrompt], parts: usize) {
        self.parts.store(parts, Ordering::SeqCst);
    }

    async fn pass_done(&self, specialist: &'static str, ok: bool, done: usize, total: usize) {
        let Some(id) = self.check_run_id else { return };
        let lines = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.0.push((specialist, ok));
            if state.1.elapsed() < self.interval || self.gave_up.load(Ordering::SeqCst) {
                return;
            }
            state.1 = Instant::now();
            pass_lines(&state.0, self.parts.load(Ordering::SeqCst))
        };
        let update = CheckRunUpdate {
            output: Some(progress_output(done, total, &lines)),
            ..CheckRunUpdate::default()
        };
        if let Err(err) = self.github.update_check_run(self.scope, id, &update).await {
            self.gave_up.store(true, Ordering::SeqCst);
            tracing::info!(check_run_id = id, error = %err, "could not show review progress on the check run; no more progress updates for this review");
        }
    }
}

/// A line per pass finished so far; read in parts, a pass's parts in one line.
fn pass_lines(done: &[(&'static str, bool)], parts: usize) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in done {
        if seen.contains(name) {
            continue;
        }
        seen.push(name);
        let (ok, failed) =
            done.iter()
                .filter(|(n, _)| n == name)
                .fold((0, 0), |(ok, failed), (_, fine)| {
                    if *fine {
                        (ok + 1, failed)
                    } else {
                        (ok, failed + 1)
                    }
                });
        lines.push(match (parts, failed) {
            (1, 0) => format!("- {name}: done"),
            (1, _) => format!("- {name}: failed"),
            (_, 0) => format!("- {name}: {ok} of {parts} parts done"),
            (_, _) => format!("- {name}: {ok} of {parts} parts done, {failed} failed"),
        });
    }
    lines.join("\n")
}

fn progress_output(done: usize, total: usize, lines: &str) -> CheckRunOutput {
    CheckRunOutput {
        title: format!("Reviewing: {done} of {total} passes done"),
        summary: format!(
            "Parley is reviewing this commit: {done} of {total} specialist passes are done.\n\n{lines}"
        ),
        text: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_read_in_parts_is_one_line() {
        let done = [
            ("security", true),
            ("tests", false),
            ("security", true),
            ("tests", true),
        ];
        assert_eq!(
            pass_lines(&done, 3),
            "- security: 2 of 3 parts done\n- tests: 1 of 3 parts done, 1 failed"
        );
        assert_eq!(
            pass_lines(&[("security", true), ("tests", false)], 1),
            "- security: done\n- tests: failed"
        );
    }

    #[test]
    fn says_how_far_the_review_got() {
        let out = progress_output(2, 5, "- security: done\n- tests: failed");
        assert_eq!(out.title, "Reviewing: 2 of 5 passes done");
        assert!(out.summary.contains("2 of 5 specialist passes"));
        assert!(out.summary.contains("- tests: failed"));
    }
}
