//! Waiting on events instead of sleeping: a test that sleeps a guessed
//! while and then asserts is flaky on a loaded machine and slow on an idle
//! one. Wait instead for what the test needs to have happened: a line a
//! child process writes (the hostile plugins log `sleep started` and
//! `spin started` once their call is in flight, and `toolhost serve` writes
//! a plugin's log lines to its stderr), or a condition polled a few
//! milliseconds apart up to a generous deadline that fails with a message
//! saying what never happened.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a test waits for something that takes milliseconds on an idle
/// machine before it says it never happened.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How often a condition is polled.
const POLL: Duration = Duration::from_millis(10);

/// Wait until `ok()` holds, polling it every few milliseconds.
///
/// # Panics
///
/// When it still does not hold after `within`, with "never `what`".
pub fn wait_until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "never {what} (waited {within:?})"
        );
        std::thread::sleep(POLL);
    }
}

/// [`wait_until`] for async tests: polls without blocking the runtime.
///
/// # Panics
///
/// As [`wait_until`].
pub async fn until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(
            Instant::now() < deadline,
            "never {what} (waited {within:?})"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// The lines a child process writes to a pipe, read on a thread of their
/// own (so the child never blocks on a full pipe) and kept for the test to
/// wait on.
#[derive(Debug)]
pub struct LogLines {
    incoming: Mutex<Receiver<String>>,
    seen: Mutex<Vec<String>>,
}

impl LogLines {
    /// Start reading `pipe`, one line at a time, until it closes.
    pub fn read(pipe: impl Read + Send + 'static) -> Self {
        Self::from_lines(BufReader::new(pipe).lines().map_while(Result::ok))
    }

    /// Keep what `lines` yields (on a thread of its own) until it ends.
    pub fn from_lines(lines: impl Iterator<Item = String> + Send + 'static) -> Self {
        let (send, incoming) = channel();
        std::thread::spawn(move || {
            for line in lines {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            incoming: Mutex::new(incoming),
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Wait until `count` of the lines written so far (from the first on)
    /// contain `needle`.
    ///
    /// # Panics
    ///
    /// When fewer have come after `within`, or the pipe closed first, with
    /// every line seen.
    pub fn wait_for(&self, needle: &str, count: usize, within: Duration) {
        let deadline = Instant::now() + within;
        let incoming = self.incoming.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let found = seen.iter().filter(|line| line.contains(needle)).count();
            if found >= count {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match incoming.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(why) => {
                    let why = match why {
                        RecvTimeoutError::Timeout => format!("after {within:?}"),
                        RecvTimeoutError::Disconnected => "before the pipe closed".to_owned(),
                    };
                    panic!(
                        "{found} of {count} lines with {needle:?} {why}; the lines:\n{}",
                        seen.join("\n")
                    );
                }
            }
        }
    }

    /// Every line written so far.
    pub fn lines(&self) -> Vec<String> {
        let incoming = self.incoming.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.extend(incoming.try_iter());
        seen.clone()
    }
}

/// The plugin log lines of the calls made with a [`CallContext`] given
/// [`CallLog::sink`]: how a library test knows that a call is in flight.
///
/// [`CallContext`]: toolhost::tools::CallContext
#[derive(Debug)]
pub struct CallLog {
    incoming: tokio::sync::mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl CallLog {
    /// A log and the sink (lines at info and above) that feeds it; give
    /// the sink to each call to watch with `CallContext::with_logs`.
    pub fn sink() -> (toolhost::tools::LogSink, Self) {
        let (send, incoming) = tokio::sync::mpsc::unbounded_channel();
        let sink = toolhost::tools::LogSink::new(toolhost::tools::LogLevel::Info, move |line| {
            let _ = send.send(line.message);
        });
        let log = Self {
            incoming,
            seen: Vec::new(),
        };
        (sink, log)
    }

    /// Wait until `count` of the lines logged so far contain `needle`.
    ///
    /// # Panics
    ///
    /// When fewer have come after `within`, with every line seen.
    pub async fn wait_for(&mut self, needle: &str, count: usize, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let found = self.seen.iter().filter(|l| l.contains(needle)).count();
            if found >= count {
                return;
            }
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(line)) => self.seen.push(line),
                // Every sink is gone: no line will come. Or too late.
                Ok(None) | Err(_) => panic!(
                    "{found} of {count} log lines with {needle:?} within {within:?}; the lines:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }
}
