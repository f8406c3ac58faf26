//! Progress of a long CLI command: a bar on a terminal (`indicatif`),
//! plain lines every few seconds otherwise (a log file, a pipe).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    label: String,
    total: u64,
    done: u64,
    last_line: Instant,
}

const LINE_EVERY: Duration = Duration::from_secs(3);

impl Progress {
    pub fn new(label: &str, total: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta} left)")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.to_string());
            bar
        });
        Progress {
            bar,
            label: label.to_string(),
            total,
            done: 0,
            last_line: Instant::now(),
        }
    }

    /// One more item done.
    pub fn inc(&mut self) {
        self.inc_by(1);
    }

    /// `done` items done (a count reported from elsewhere).
    pub fn set(&mut self, done: u64) {
        if done <= self.done {
            return;
        }
        self.inc_by(done - self.done);
    }

    fn inc_by(&mut self, n: u64) {
        self.done += n;
        match &self.bar {
            Some(bar) => bar.inc(n),
            None if self.last_line.elapsed() >= LINE_EVERY => {
                eprintln!("{}: {}/{}", self.label, self.done, self.total);
                self.last_line = Instant::now();
            }
            None => {}
        }
    }

    /// A line of output above the bar (on stdout without one).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => println!("{line}"),
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
