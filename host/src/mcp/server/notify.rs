//! What a call tells its client while it runs: `notifications/progress` for
//! a request that sent a progress token, and the tool's log lines as
//! `notifications/message` for a client that asked for them.
//!
//! A client asks for log lines in one of two ways: `logging/setLevel` for
//! the rest of its session (2025-11-25 and before), or the
//! [`LOG_LEVEL_META_KEY`] in one request's `_meta` (2026-07-28, which has
//! no sessions). A call whose client asked for neither gets no log sink,
//! and its plugin's lines cost nothing beyond the server's own log.
//!
//! Logging is deprecated as of 2026-07-28 (SEP-2577) and rmcp marks its
//! types so; it stays in the specification for a year, and clients still
//! ask for it, so the deprecated items are used here, and only here.
#![expect(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577 but still part of every revision toolhost serves"
)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    JsonObject, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde::Deserialize as _;
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::tools::{LogLevel, LogLine, LogSink, Progress, ProgressSink};

/// The request `_meta` key with which a 2026-07-28 client asks for the
/// request's log lines, and from which level.
pub(super) const LOG_LEVEL_META_KEY: &str = "io.modelcontextprotocol/logLevel";

/// MCP's levels, least severe first.
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// The level a session's client set with `logging/setLevel`; none until
/// it does.
#[derive(Debug, Default)]
pub(super) struct SessionLevel(AtomicU8);

impl SessionLevel {
    pub(super) fn set(&self, level: LoggingLevel) {
        let rank = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        // 0 is "not set".
        self.0.store(rank as u8 + 1, Ordering::Relaxed);
    }

    pub(super) fn get(&self) -> Option<LoggingLevel> {
        let stored = self.0.load(Ordering::Relaxed);
        LEVELS.get(usize::from(stored.checked_sub(1)?)).copied()
    }

    pub(super) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }
}

/// The level a request asks for its log lines from: its `_meta`'s
/// (2026-07-28), else its session's (`logging/setLevel`); none: no lines.
///
/// # Errors
///
/// Invalid params for a `_meta` value that is no MCP level, as the
/// 2026-07-28 revision says.
pub(super) fn requested_level(
    meta: &JsonObject,
    session: &SessionLevel,
) -> Result<Option<LoggingLevel>, McpError> {
    match meta.get(LOG_LEVEL_META_KEY) {
        None => Ok(session.get()),
        Some(value) => LoggingLevel::deserialize(value).map(Some).map_err(|_| {
            McpError::invalid_params(
                format!(
                    "`_meta` key `{LOG_LEVEL_META_KEY}` must be an MCP log level: debug, info, \
                     notice, warning, error, critical, alert or emergency"
                ),
                None,
            )
        }),
    }
}

/// The least severe plugin level a client asking from `level` hears;
/// none when a plugin has no line that severe (its worst is `error`).
pub(super) fn min_plugin_level(level: LoggingLevel) -> Option<LogLevel> {
    match level {
        // Trace lines go out as debug: MCP has nothing finer.
        LoggingLevel::Debug => Some(LogLevel::Trace),
        LoggingLevel::Info => Some(LogLevel::Info),
        LoggingLevel::Notice | LoggingLevel::Warning => Some(LogLevel::Warn),
        LoggingLevel::Error => Some(LogLevel::Error),
        LoggingLevel::Critical | LoggingLevel::Alert | LoggingLevel::Emergency => None,
    }
}

/// The MCP level a plugin's line goes out at.
fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Trace | LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warn => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
    }
}

/// What a call has to tell its client.
enum Note {
    Progress(Progress),
    Log(LogLine),
}

/// Sends a call's progress reports and log lines to the client, one at a
/// time and in the order the call made them, from its own task (a report
/// comes from the guest's thread, which must not wait on the client).
pub(super) struct CallNotifier {
    sender: Arc<Mutex<Option<UnboundedSender<Note>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl CallNotifier {
    /// A notifier for a call of tool `logger`: progress goes out for
    /// `token` (none: progress is dropped), log lines name the tool.
    pub(super) fn start(
        token: Option<ProgressToken>,
        logger: &str,
        peer: Peer<RoleServer>,
    ) -> Self {
        let (sender, mut notes) = unbounded_channel::<Note>();
        let logger = logger.to_owned();
        let task = tokio::spawn(async move {
            while let Some(note) = notes.recv().await {
                let sent = match note {
                    Note::Progress(report) => {
                        let Some(token) = &token else { continue };
                        let mut param = ProgressNotificationParam::new(token.clone(), report.done);
                        param.total = report.total;
                        param.message = report.message;
                        peer.notify_progress(param).await
                    }
                    Note::Log(line) => {
                        let param = LoggingMessageNotificationParam::new(
                            mcp_level(line.level),
                            Value::String(line.message),
                        )
                        .with_logger(logger.clone());
                        peer.notify_logging_message(param).await
                    }
                };
                if sent.is_err() {
                    // The client is gone; the call ends on its own.
                    break;
                }
            }
        });
        Self {
            sender: Arc::new(Mutex::new(Some(sender))),
            task,
        }
    }

    fn send(sender: &Mutex<Option<UnboundedSender<Note>>>, note: Note) {
        let sender = sender.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = sender.as_ref() {
            let _ = sender.send(note);
        }
    }

    /// Where the call's progress reports go.
    pub(super) fn progress_sink(&self) -> ProgressSink {
        let sender = Arc::clone(&self.sender);
        ProgressSink::new(move |report| Self::send(&sender, Note::Progress(report)))
    }

    /// Where the call's log lines at `min` and above go.
    pub(super) fn log_sink(&self, min: LogLevel) -> LogSink {
        let sender = Arc::clone(&self.sender);
        LogSink::new(min, move |line| Self::send(&sender, Note::Log(line)))
    }

    /// Close the channel and wait until everything sent so far has gone
    /// out, so that nothing arrives after the result.
    pub(super) async fn finish(self) {
        self.sender.lock().unwrap_or_else(|p| p.into_inner()).take();
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_session_level_is_kept_and_a_meta_level_wins() {
        let session = SessionLevel::default();
        assert!(!session.is_set());
        assert_eq!(requested_level(&JsonObject::new(), &session).unwrap(), None);
        session.set(LoggingLevel::Warning);
        assert!(session.is_set());
        assert_eq!(
            requested_level(&JsonObject::new(), &session).unwrap(),
            Some(LoggingLevel::Warning)
        );
        let meta = |v: Value| {
            let mut m = JsonObject::new();
            m.insert(LOG_LEVEL_META_KEY.into(), v);
            m
        };
        assert_eq!(
            requested_level(&meta(json!("debug")), &session).unwrap(),
            Some(LoggingLevel::Debug)
        );
        for bad in [json!("verbose"), json!(3), json!(null)] {
            let e = requested_level(&meta(bad), &session).unwrap_err();
            assert!(e.message.contains(LOG_LEVEL_META_KEY), "{e:?}");
        }
        for level in LEVELS {
            session.set(level);
            assert_eq!(session.get(), Some(level));
        }
    }

    #[test]
    fn plugin_levels_map_onto_mcp_levels_both_ways() {
        assert_eq!(min_plugin_level(LoggingLevel::Debug), Some(LogLevel::Trace));
        assert_eq!(min_plugin_level(LoggingLevel::Notice), Some(LogLevel::Warn));
        assert_eq!(min_plugin_level(LoggingLevel::Critical), None);
        assert_eq!(mcp_level(LogLevel::Trace), LoggingLevel::Debug);
        assert_eq!(mcp_level(LogLevel::Warn), LoggingLevel::Warning);
        // A line at the plugin level a client's level maps to goes out at
        // that client level or above.
        for level in LEVELS {
            if let Some(min) = min_plugin_level(level) {
                let out = LEVELS.iter().position(|l| *l == mcp_level(min));
                let asked = LEVELS.iter().position(|l| *l == level);
                assert!(out >= asked, "{level:?}");
            }
        }
    }
}
