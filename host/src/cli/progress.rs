//! Progress while plugins compile: a live line on a terminal, plain log
//! lines otherwise, so nobody stares at a silent terminal for the seconds a
//! Python or JavaScript component takes to compile.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use toolhost::plugin::{LoadEvent, LoadObserver};

/// The observer the CLI hands to the plugin host.
pub fn observer(quiet: bool) -> LoadObserver {
    let tty = std::io::stderr().is_terminal();
    let spinner: Mutex<Option<Spinner>> = Mutex::new(None);
    Arc::new(move |event: &LoadEvent| match event {
        LoadEvent::Compiling { plugin, bytes } => {
            let what = format!(
                "compiling plugin {plugin} ({:.1} MB, once; then cached)",
                *bytes as f64 / 1e6
            );
            if quiet {
            } else if tty {
                *spinner.lock().unwrap_or_else(|p| p.into_inner()) = Some(Spinner::start(what));
            } else {
                eprintln!("toolhost: {what}");
            }
        }
        LoadEvent::Compiled { plugin, elapsed } => {
            if let Some(s) = spinner.lock().unwrap_or_else(|p| p.into_inner()).take() {
                s.stop();
            }
            if !quiet {
                eprintln!(
                    "toolhost: compiled plugin {plugin} in {:.1} s",
                    elapsed.as_secs_f64()
                );
            }
        }
        _ => {}
    })
}

struct Spinner {
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Spinner {
    fn start(what: String) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let done = Arc::clone(&done);
            move || {
                let start = Instant::now();
                let frames = ['|', '/', '-', '\\'];
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
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
        Self { done, thread }
    }

    fn stop(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}
