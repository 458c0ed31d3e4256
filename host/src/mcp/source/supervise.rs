//! Keeping a server up: connecting, listing its tools within a deadline,
//! noticing that it went away, and restarting it with backoff.
//!
//! A server is up only once it has listed its tools: one that connects but
//! never answers `tools/list` (within `list_timeout_ms`), or answers with
//! more than one message may hold, is down, says why, and is restarted
//! like one whose process exited.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::ServiceError;
use tokio::sync::Notify;

use super::Link;
use super::decl::Plan;
use crate::mcp::{Heard, Upstream, connect};
use crate::tools::{Backoff, ExecOptions, ToolError, ToolErrorKind};

/// A connection that lasted this long counts as healthy: the next restart
/// starts again from the shortest pause.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);

/// The pause before the first restart; later ones double, with jitter.
pub(super) const FIRST_RESTART_PAUSE: Duration = Duration::from_millis(250);

impl Link {
    pub(super) fn set_down(&self, reason: String) {
        let reason = self.plan.bounds.redact.redact(&reason).into_owned();
        tracing::warn!(
            "MCP server `{}` is down: {}; restarting it with backoff",
            self.plan.name,
            crate::text::escape_controls(&reason)
        );
        let mut state = self.state();
        state.connection = None;
        state.down = Some(reason);
    }

    /// List the server's tools (within the declaration's `list_timeout_ms`)
    /// and bring every attached registry up to date. The error says why
    /// the listing failed.
    pub(super) async fn refresh(self: &Arc<Self>, connection: &Upstream) -> Result<(), String> {
        let timeout = self.plan.list_timeout;
        let listing = connection.list_tools(self.plan.max_tools);
        let listed = match tokio::time::timeout(timeout, listing).await {
            Ok(Ok(listed)) => listed,
            Err(_) => {
                return Err(format!(
                    "it did not answer `tools/list` within {} ms (`list_timeout_ms` in its [[mcp]] declaration)",
                    timeout.as_millis()
                ));
            }
            Ok(Err(e)) => {
                if let ServiceError::McpError(data) = &e
                    && let Some(too_large) = crate::mcp::too_large(data)
                {
                    return Err(format!(
                        "its `tools/list` answer has {} bytes, more than the {} bytes one message may have; have it list fewer tools, or page its list",
                        too_large.bytes, too_large.cap
                    ));
                }
                return Err(format!("listing its tools failed: {e}"));
            }
        };
        let tools = self.check_tools(listed);
        let old = std::mem::replace(&mut self.state().tools, tools.clone());
        let registries = self.live_registries();
        for registry in &registries {
            self.sync_into(registry, &old, &tools);
        }
        Ok(())
    }
}

/// The pause before restart number `attempt` (0 for the first): the
/// registry's own exponential, jittered backoff, from
/// [`FIRST_RESTART_PAUSE`] up to [`MAX_RETRY_PAUSE`](crate::tools::MAX_RETRY_PAUSE).
pub(super) fn restart_pause(attempt: u32) -> Duration {
    let restarts = ExecOptions {
        retries: u32::MAX,
        retry_delay: FIRST_RESTART_PAUSE,
        backoff: Backoff::Exponential,
        retry_on: vec![ToolErrorKind::Unavailable],
        timeout: None,
        needs_approval: false,
    };
    restarts
        .retry_pause(attempt, &ToolError::new(ToolErrorKind::Unavailable, ""))
        .unwrap_or(crate::tools::MAX_RETRY_PAUSE)
}

/// Keep the server connected and its tools current, until the server is
/// dropped (which aborts this task and so closes the connection).
pub(super) async fn supervise(link: Weak<Link>) {
    let mut attempt = 0u32;
    loop {
        let Some(strong) = link.upgrade() else { return };
        let plan = strong.plan.clone();
        drop(strong);
        let Some(down) = connection(&link, &plan).await else {
            return;
        };
        if down.healthy {
            attempt = 0;
        }
        if let Some(strong) = link.upgrade() {
            strong.attempts.send_modify(|n| *n += 1);
        }
        tracing::debug!(
            "MCP server `{}`: {}",
            plan.name,
            crate::text::escape_controls(&plan.bounds.redact.redact(&down.reason))
        );
        tokio::time::sleep(restart_pause(attempt)).await;
        attempt = attempt.saturating_add(1);
    }
}

/// How one connection of the server ended.
struct Down {
    /// Why the server is down.
    reason: String,
    /// It was up for [`HEALTHY_AFTER`] or longer: the backoff starts over.
    healthy: bool,
}

/// One connection of the server, from connecting until it is down: up only
/// once it has listed its tools (a server that never does is down, and
/// restarted). `None` once the server is dropped.
async fn connection(link: &Weak<Link>, plan: &Plan) -> Option<Down> {
    let (heard, lost) = {
        let strong = link.upgrade()?;
        let weak = Weak::clone(link);
        let heard = Heard {
            tools_changed: Arc::clone(&strong.tools_changed),
            offers_changed: Arc::clone(&strong.offers_changed),
            updated: Arc::new(move |uri: &str| {
                if let Some(link) = weak.upgrade() {
                    link.resource_updated(uri);
                }
            }),
        };
        (heard, Arc::clone(&strong.lost))
    };
    let connected = connect(&plan.endpoint, &plan.name, heard.clone(), &plan.bounds).await;
    let strong = link.upgrade()?;
    let connected = match connected {
        Ok(connected) => connected,
        Err(e) => {
            let reason = chain(&e);
            strong.set_down(reason.clone());
            return Some(Down {
                reason,
                healthy: false,
            });
        }
    };
    let connection = connected.connection;
    let mut closed = connected.closed;
    let up_since = Instant::now();
    let listed = strong.refresh(&connection).await;
    if listed.is_ok() {
        strong.refresh_offers(&connection).await;
    }
    match &listed {
        Ok(()) => {
            let mut state = strong.state();
            state.connection = Some(connection.clone());
            state.down = None;
            drop(state);
            tracing::debug!("MCP server `{}` is up", plan.name);
        }
        Err(reason) => strong.set_down(reason.clone()),
    }
    strong.attempts.send_modify(|n| *n += 1);
    drop(strong);
    if let Err(reason) = listed {
        return Some(Down {
            reason,
            healthy: false,
        });
    }
    let reason = until_down(link, &connection, &mut closed, &lost, &heard).await?;
    link.upgrade()?.set_down(reason.clone());
    Some(Down {
        reason,
        healthy: up_since.elapsed() >= HEALTHY_AFTER,
    })
}

/// Wait, while the server is up on `connection`, for it to go down: the
/// connection `closed`, a call could not reach it (`lost`), or a changed
/// tool list (`heard.tools_changed`, each change listed again) could not
/// be listed. A changed resource or prompt list is listed again too (one
/// that fails offers nothing, the server stays up). Why it went down;
/// `None` once the server is dropped.
async fn until_down(
    link: &Weak<Link>,
    connection: &Upstream,
    closed: &mut BoxFuture<'static, ()>,
    lost: &Notify,
    heard: &Heard,
) -> Option<String> {
    loop {
        tokio::select! {
            () = &mut *closed => return Some("its connection closed (did the process exit?)".to_owned()),
            () = lost.notified() => return Some("a call could not reach it".to_owned()),
            () = heard.tools_changed.notified() => {
                let strong = link.upgrade()?;
                if let Err(reason) = strong.refresh(connection).await {
                    return Some(reason);
                }
            }
            () = heard.offers_changed.notified() => {
                link.upgrade()?.refresh_offers(connection).await;
            }
        }
    }
}

/// `error` and its sources as one line.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off_with_jitter_up_to_the_cap() {
        for _ in 0..20 {
            let first = restart_pause(0);
            assert!(first >= FIRST_RESTART_PAUSE / 2 && first <= FIRST_RESTART_PAUSE);
            let late = restart_pause(30);
            assert!(late >= crate::tools::MAX_RETRY_PAUSE / 2);
            assert!(late <= crate::tools::MAX_RETRY_PAUSE);
        }
    }
}
