//! Progress while plugins compile: a live line on a terminal, plain log
//! lines otherwise, so nobody stares at a silent terminal for the seconds a
//! Python or JavaScript component takes to compile.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use toolhost::plugin::{LoadEvent, LoadObserver};
use toolhost::text::escape_controls;

/// The observer the CLI hands to the plugin host.
///
/// Plugins in a directory load side by side, so several can be compiling at
/// once: one live line names all of them.
pub fn observer(quiet: bool) -> LoadObserver {
    let tty = std::io::stderr().is_terminal();
    let live: Mutex<Live> = Mutex::new(Live::default());
    Arc::new(move |event: &LoadEvent| match event {
        LoadEvent::Compiling { plugin, bytes } => {
            // A plugin's name is its file name: shown escaped.
            let plugin = escape_controls(plugin).into_owned();
            if quiet {
            } else if tty {
                let mut live = live.lock().unwrap_or_else(|p| p.into_inner());
                live.compiling.insert(plugin.clone(), *bytes);
                live.relabel();
            } else {
                eprintln!(
                    "toolhost: compiling plugin {plugin} ({:.1} MB, once; then cached)",
                    *bytes as f64 / 1e6
                );
            }
        }
        LoadEvent::Compiled { plugin, elapsed } => {
            let plugin = escape_controls(plugin).into_owned();
            let done = format!(
                "toolhost: compiled plugin {plugin} in {:.1} s",
                elapsed.as_secs_f64()
            );
            if quiet {
            } else if tty {
                let mut live = live.lock().unwrap_or_else(|p| p.into_inner());
                live.compiling.remove(&plugin);
                // Over the live line; it is drawn again below on its next tick.
                let _ = writeln!(std::io::stderr().lock(), "\r\x1b[2K{done}");
                live.relabel();
            } else {
                eprintln!("{done}");
            }
        }
        _ => {}
    })
}

/// What is compiling now, and the live line that shows it.
#[derive(Default)]
struct Live {
    compiling: std::collections::BTreeMap<String, usize>,
    spinner: Option<Spinner>,
}

impl Live {
    fn relabel(&mut self) {
        if self.compiling.is_empty() {
            if let Some(spinner) = self.spinner.take() {
                spinner.stop();
            }
            return;
        }
        let names: Vec<&str> = self.compiling.keys().map(String::as_str).collect();
        let bytes: usize = self.compiling.values().sum();
        let label = format!(
            "compiling plugin{} {} ({:.1} MB, once; then cached)",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            bytes as f64 / 1e6
        );
        match &self.spinner {
            Some(spinner) => *spinner.label.lock().unwrap_or_else(|p| p.into_inner()) = label,
            None => self.spinner = Some(Spinner::start(label)),
        }
    }
}

struct Spinner {
    label: Arc<Mutex<String>>,
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Spinner {
    fn start(label: String) -> Self {
        let label = Arc::new(Mutex::new(label));
        let done = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let done = Arc::clone(&done);
            let label = Arc::clone(&label);
            move || {
                let start = Instant::now();
                let frames = ['|', '/', '-', '\\'];
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
                    let what = label.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    let mut err = std::io::stderr().lock();
                    let _ = write!(
                        err,
                        "\r\x1b[2K{} {what} {:.1} s",
                        frames[i % frames.len()],
                        start.elapsed().as_secs_f64()
                    );
                    let _ = err.flush();
                    drop(err);
                    i += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
            }
        });
        Self {
            label,
            done,
            thread,
        }
    }

    fn stop(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

/// The live line of `toolhost run` for tool calls that report progress:
/// once a call has been reporting for [`CallProgress::DELAY`], one line on
/// stderr says `tool: done/total message` for each such call, redrawn in
/// place as reports arrive and cleared when the call ends. Nothing without
/// a terminal or with `-q`: a log gets the calls' result lines only.
///
/// The library delivers the reports
/// ([`ToolRunner::on_progress`](toolhost::runner::ToolRunner::on_progress));
/// this only draws them. The message is plugin text the host has already
/// clipped and escaped; the tool name is the model's: both are escaped
/// again here, and the line is clipped to one terminal row.
#[derive(Clone)]
pub struct CallProgress {
    live: Option<Arc<Mutex<LiveCalls>>>,
}

#[derive(Default)]
struct LiveCalls {
    /// Calls that reported, in the order of their first report.
    calls: Vec<LiveCall>,
    /// Whether the line is on the screen now.
    drawn: bool,
    /// Whether the thread that draws it runs.
    painting: bool,
}

struct LiveCall {
    id: String,
    tool: String,
    since: Instant,
    progress: toolhost::tools::Progress,
}

impl CallProgress {
    /// How long a call reports before its line shows: a call that ends
    /// sooner never flickers a line.
    pub const DELAY: Duration = Duration::from_millis(300);
    /// How often the line is redrawn.
    const TICK: Duration = Duration::from_millis(100);
    /// The widest line drawn, in characters: a longer one would wrap, and
    /// a carriage return would then redraw only its last row.
    const WIDTH: usize = 79;

    /// A live line on stderr when it is a terminal and `quiet` is off;
    /// else one that draws nothing.
    pub fn new(quiet: bool) -> Self {
        let live = (!quiet && std::io::stderr().is_terminal())
            .then(|| Arc::new(Mutex::new(LiveCalls::default())));
        Self { live }
    }

    /// Whether it draws anything.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    /// Note a report of call `id` of `tool`.
    pub fn report(&self, id: &str, tool: &str, progress: &toolhost::tools::Progress) {
        let Some(live) = &self.live else { return };
        let mut state = lock(live);
        match state.calls.iter_mut().find(|c| c.id == id) {
            Some(call) => call.progress = progress.clone(),
            None => state.calls.push(LiveCall {
                id: id.to_owned(),
                tool: escape_controls(tool).into_owned(),
                since: Instant::now(),
                progress: progress.clone(),
            }),
        }
        if !state.painting {
            state.painting = true;
            let live = Arc::clone(live);
            std::thread::spawn(move || paint(&live));
        }
    }

    /// Call `id` ended: take it off the line (clearing the line) and run
    /// `print`, so that the line is never drawn into what `print` writes.
    pub fn finish(&self, id: &str, print: impl FnOnce()) {
        let Some(live) = &self.live else {
            print();
            return;
        };
        let mut state = lock(live);
        state.calls.retain(|c| c.id != id);
        state.clear_line();
        print();
    }

    /// The run ended: clear the line, whatever calls are still on it.
    pub fn clear(&self) {
        if let Some(live) = &self.live {
            let mut state = lock(live);
            state.calls.clear();
            state.clear_line();
        }
    }
}

impl LiveCalls {
    fn clear_line(&mut self) {
        if std::mem::take(&mut self.drawn) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    /// `tool: done/total message` for each call shown, clipped to a row;
    /// `None` while no call has reported for [`CallProgress::DELAY`].
    fn line(&self) -> Option<String> {
        let shown: Vec<String> = self
            .calls
            .iter()
            .filter(|c| c.since.elapsed() >= CallProgress::DELAY)
            .map(|c| {
                let p = &c.progress;
                let mut text = format!("{}: {}", c.tool, number(p.done));
                if let Some(total) = p.total {
                    text.push_str(&format!("/{}", number(total)));
                }
                if let Some(message) = &p.message {
                    text.push(' ');
                    text.push_str(&escape_controls(message));
                }
                text
            })
            .collect();
        if shown.is_empty() {
            return None;
        }
        Some(
            format!("  {}", shown.join(" · "))
                .chars()
                .take(CallProgress::WIDTH)
                .collect(),
        )
    }
}

/// Redraw the line every tick until no call is left on it.
fn paint(live: &Mutex<LiveCalls>) {
    loop {
        std::thread::sleep(CallProgress::TICK);
        let mut state = lock(live);
        if state.calls.is_empty() {
            state.clear_line();
            state.painting = false;
            return;
        }
        if let Some(line) = state.line() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{line}");
            let _ = err.flush();
            state.drawn = true;
        }
    }
}

/// `3`, not `3.0`; `2.5` as it is.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n:.1}")
    }
}

fn lock(live: &Mutex<LiveCalls>) -> std::sync::MutexGuard<'_, LiveCalls> {
    live.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_shows_once_it_has_reported_for_the_delay_with_done_total_and_message() {
        let progress = |done, total, message: Option<&str>| toolhost::tools::Progress {
            done,
            total,
            message: message.map(str::to_owned),
        };
        let mut calls = LiveCalls::default();
        calls.calls.push(LiveCall {
            id: "c1".into(),
            tool: "index".into(),
            since: Instant::now(),
            progress: progress(3.0, Some(10.0), Some("reading b.txt")),
        });
        assert_eq!(calls.line(), None, "not before the delay");
        calls.calls[0].since = Instant::now() - CallProgress::DELAY;
        assert_eq!(calls.line().as_deref(), Some("  index: 3/10 reading b.txt"));
        calls.calls.push(LiveCall {
            id: "c2".into(),
            tool: "fetch".into(),
            since: Instant::now() - CallProgress::DELAY,
            progress: progress(2.5, None, Some(&"x".repeat(200))),
        });
        let line = calls.line().unwrap();
        assert!(
            line.starts_with("  index: 3/10 reading b.txt · fetch: 2.5 xxx"),
            "{line}"
        );
        assert_eq!(line.chars().count(), CallProgress::WIDTH);
    }
}
