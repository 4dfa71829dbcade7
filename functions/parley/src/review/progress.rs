//! The passes' progress bar on stderr, so stdout stays clean for `--format json|sarif`.

use async_trait::async_trait;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parley_core::review::prompts::SpecialistPrompt;
use parley_core::review::specialists::PassProgress;

pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// Hidden with `quiet`, and whenever stderr is not a terminal (indicatif's own rule).
    pub fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
        };
        Bar { bar }
    }

    fn start(&self, passes: &[&SpecialistPrompt], parts: usize) {
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} reviewing [{bar:20}] {pos}/{len} passes {msg} ({elapsed})",
        ) {
            self.bar.set_style(style.progress_chars("=> "));
        }
        self.bar.set_length((passes.len() * parts) as u64);
        let names: Vec<&str> = passes.iter().map(|p| p.name).collect();
        let parts = if parts > 1 {
            format!(" ({parts} parts)")
        } else {
            String::new()
        };
        self.bar.set_message(format!("{}{parts}", names.join(", ")));
        self.bar
            .enable_steady_tick(std::time::Duration::from_millis(200));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[async_trait]
impl PassProgress for Bar {
    fn started(&self, passes: &[&'static SpecialistPrompt], parts: usize) {
        self.start(passes, parts);
    }

    async fn pass_done(&self, specialist: &'static str, ok: bool, _done: usize, _total: usize) {
        self.bar.inc(1);
        if !ok {
            self.bar
                .println(format!("  pass {specialist} failed; the others go on"));
        }
        self.bar.set_message(format!("({specialist} done)"));
    }
}
