//! Progress on stderr for work that can take a while: which stage it is
//! in, and how far along when the amount is known. Shown only when stderr
//! is a terminal; otherwise nothing is drawn and stderr stays as it was.
//!
//! ```no_run
//! # use ptefs::cli::progress::Progress;
//! let p = Progress::new("model.pte");
//! p.stage("parsing");
//! p.bytes("reading the flatbuffer", 1 << 20);
//! p.inc(4096);
//! p.finish(); // or drop it: the line is cleared either way
//! ```

use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A line on stderr naming the current stage of the work on one subject.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    subject: String,
    drawn: Cell<bool>,
}

/// How often the spinner moves, so a long stage still shows it is alive.
const TICK: Duration = Duration::from_millis(120);

/// A stage of unknown length: the time spent in it.
const STAGE: &str = "{spinner} {prefix}: {msg} ({elapsed})";
/// A stage of counted items.
const COUNT: &str = "{spinner} {prefix}: {msg} {pos}/{len} ({elapsed})";
/// A stage of counted bytes.
const BYTES: &str = "{spinner} {prefix}: {msg} {bytes}/{total_bytes} ({bytes_per_sec}, {elapsed})";

impl Progress {
    /// Progress of the work on `subject` (a file name, a URL), drawn when
    /// stderr is a terminal.
    pub fn new(subject: &str) -> Progress {
        let bar = std::io::stderr()
            .is_terminal()
            .then(|| ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()));
        Progress {
            bar,
            subject: crate::escape::escape(subject).into_owned(),
            drawn: Cell::new(false),
        }
    }

    /// Progress that draws nothing, wherever stderr goes.
    pub fn hidden() -> Progress {
        Progress {
            bar: None,
            subject: String::new(),
            drawn: Cell::new(false),
        }
    }

    /// Whether anything is drawn.
    pub fn is_shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Enters `stage`, whose amount of work is not known: a spinner, the
    /// stage and the time spent in it.
    pub fn stage(&self, stage: &str) {
        self.enter(stage, None, STAGE);
    }

    /// Enters `stage`, which handles `total` items (files, tensors); count
    /// them with [`Progress::inc`].
    pub fn count(&self, stage: &str, total: u64) {
        self.enter(stage, Some(total), COUNT);
    }

    /// Enters `stage`, which moves `total` bytes; count them with
    /// [`Progress::inc`].
    pub fn bytes(&self, stage: &str, total: u64) {
        self.enter(stage, Some(total), BYTES);
    }

    /// Counts `n` more items or bytes of the current stage.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Replaces the current stage's message (`indexing, 3.2 MiB read,`).
    pub fn message(&self, msg: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg.to_owned());
        }
    }

    /// Runs `f` with the line taken off the terminal, for printing to
    /// stderr without mixing with it.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Takes the line off the terminal for good.
    pub fn finish(self) {}

    fn enter(&self, stage: &str, total: Option<u64>, template: &str) {
        let Some(bar) = &self.bar else {
            return;
        };
        // The templates are this module's constants, tested to parse.
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar.set_prefix(self.subject.clone());
        bar.set_length(total.unwrap_or(0));
        bar.set_position(0);
        bar.reset_elapsed();
        bar.set_message(stage.to_owned());
        // Drawn from the first stage on, so no line is drawn before it.
        if !self.drawn.replace(true) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(TICK);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_progress_accepts_every_call_and_draws_nothing() {
        let p = Progress::hidden();
        assert!(!p.is_shown());
        p.stage("parsing");
        p.count("comparing", 3);
        p.inc(1);
        p.bytes("reading", 10);
        p.inc(10);
        assert_eq!(p.suspend(|| 7), 7);
        p.finish();
    }

    #[test]
    fn templates_parse() {
        for t in [STAGE, COUNT, BYTES] {
            assert!(ProgressStyle::with_template(t).is_ok(), "{t}");
        }
    }
}
