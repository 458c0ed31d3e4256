//! The HTTP sessions whose `tools/call`s the fast lane ([`super::direct`])
//! may answer: registered when a session finishes its handshake, taken out
//! when its handler drops or the session ends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderName};
use futures::future::BoxFuture;

use super::handler::{Client, Lane};
use super::sessions::SessionEnd;

/// The header that names a session (a `HeaderName` made once: looking one
/// up by `&str` parses the name on every request).
pub(super) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");

/// The HTTP sessions whose calls may be answered directly, by
/// `Mcp-Session-Id`.
#[derive(Debug)]
pub(super) struct DirectSessions {
    sessions: RwLock<HashMap<Box<str>, Arc<Session>>>,
    /// The `Host` values (names, or name:port) the server accepts.
    hosts: Vec<String>,
    /// How long a session's requests may all go direct before one goes
    /// through rmcp, to keep its idle timer from running out.
    refresh: Duration,
    clock: Instant,
    /// Woken when a session is registered.
    registered: tokio::sync::Notify,
}

/// One session's entry.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) conn: Weak<Client>,
    /// When rmcp last saw a request of this session, in milliseconds
    /// since [`DirectSessions::clock`].
    pub(super) rmcp_saw: AtomicU64,
    /// The session cap was told this session made a call
    /// ([`CappedSessions::mark_used`]).
    pub(super) used: AtomicBool,
}

/// A session's place among the direct ones; dropping it (with the
/// session's handler) takes the session out.
#[derive(Debug)]
pub(super) struct DirectEntry {
    sessions: Arc<DirectSessions>,
    id: Box<str>,
}

impl Drop for DirectEntry {
    fn drop(&mut self) {
        let mut sessions = self
            .sessions
            .sessions
            .write()
            .unwrap_or_else(|e| e.into_inner());
        sessions.remove(&self.id);
    }
}

impl DirectSessions {
    /// Sessions of a server that accepts `hosts` and ends sessions idle
    /// for `idle_timeout`.
    pub(super) fn new(hosts: Vec<String>, idle_timeout: Duration) -> Self {
        Self {
            sessions: RwLock::default(),
            hosts,
            refresh: idle_timeout / 4,
            clock: Instant::now(),
            registered: tokio::sync::Notify::new(),
        }
    }

    /// Let the calls of the session named in `headers` (those of its
    /// `notifications/initialized`) be answered directly by `conn`.
    pub(super) fn register(
        self: &Arc<Self>,
        headers: &HeaderMap,
        conn: &Arc<Client>,
    ) -> Option<DirectEntry> {
        let id: Box<str> = headers.get(&SESSION_HEADER)?.to_str().ok()?.into();
        let session = Arc::new(Session {
            conn: Arc::downgrade(conn),
            rmcp_saw: AtomicU64::new(self.now()),
            used: AtomicBool::new(false),
        });
        self.sessions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), session);
        self.registered.notify_waiters();
        Some(DirectEntry {
            sessions: Arc::clone(self),
            id,
        })
    }

    /// Before session `id` is closed: stop its calls and let their answers
    /// out ([`Client::end_calls`]). Its entry goes now, not when its
    /// handler drops.
    pub(super) async fn end(&self, id: &str) {
        let conn = {
            let mut sessions = self.sessions.write().unwrap_or_else(|e| e.into_inner());
            sessions
                .remove(id)
                .and_then(|session| session.conn.upgrade())
        };
        if let Some(conn) = conn {
            conn.end_calls().await;
        }
    }

    pub(super) fn now(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The connection of the session named in `headers`, if it is
    /// registered.
    pub(super) fn conn(&self, headers: &HeaderMap) -> Option<Arc<Client>> {
        self.session(headers)
            .and_then(|(_, session)| session.conn.upgrade())
    }

    /// Wait (at most `within`) until the session named in `headers` is
    /// registered; whether it is.
    pub(super) async fn registered(&self, headers: &HeaderMap, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.registered.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.session(headers).is_some() {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// How long a session's requests may all go direct before one goes
    /// through rmcp.
    pub(super) fn refresh(&self) -> Duration {
        self.refresh
    }

    /// The `Host` values (names, or name:port) the server accepts.
    pub(super) fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The session named in `headers`, and its id.
    pub(super) fn session<'h>(&self, headers: &'h HeaderMap) -> Option<(&'h str, Arc<Session>)> {
        let id = headers.get(&SESSION_HEADER)?.to_str().ok()?;
        let sessions = self.sessions.read().unwrap_or_else(|e| e.into_inner());
        Some((id, sessions.get(id).cloned()?))
    }
}

impl SessionEnd for DirectSessions {
    fn ending<'a>(&'a self, id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.end(id))
    }
}

impl Lane for DirectSessions {
    fn register(
        self: Arc<Self>,
        headers: &HeaderMap,
        conn: &Arc<Client>,
    ) -> Option<Box<dyn std::any::Any + Send + Sync>> {
        DirectSessions::register(&self, headers, conn)
            .map(|entry| Box::new(entry) as Box<dyn std::any::Any + Send + Sync>)
    }
}
