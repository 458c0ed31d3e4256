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
