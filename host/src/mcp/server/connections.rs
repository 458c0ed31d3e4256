//! The HTTP connections of the server, each on a budget.
//!
//! Everything here happens before a request reaches the router, so before
//! its bearer token is checked: anyone who can connect gets this far. So
//! nothing a client does (or fails to do) holds the process for long:
//!
//! - at most [`ConnectionBudgets::max_connections`] connections are open; one more is
//!   answered `503` with a message and closed (never read, never queued);
//! - a connection has [`ConnectionBudgets::header_timeout`] from the moment it opens
//!   or sends the first byte of a request to finish that request's head;
//! - a request has [`ConnectionBudgets::body_timeout`] from its head to the end of
//!   its body;
//! - a kept-alive connection with no request in flight is closed after
//!   [`ConnectionBudgets::idle_timeout`];
//! - on shutdown the server stops accepting, lets answers in flight
//!   finish for up to [`ConnectionBudgets::shutdown_grace`], then closes whatever is
//!   still open.
//!
//! A connection over a time budget is closed (a client mid-request sees the
//! connection end). One sweeper task checks every connection a few times a
//! budget, so a request pays for no timer of its own.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http_body::Body as _;
use http_body::Frame;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// What answers each request of a connection ([`serve`]): the router, or
/// whatever stands in front of it.
pub(super) trait App: Clone + Send + Sync + 'static {
    /// The answer to `request`.
    fn answer(
        self,
        request: axum::extract::Request,
    ) -> impl Future<Output = axum::response::Response> + Send + 'static;
}

impl App for axum::Router {
    async fn answer(mut self, request: axum::extract::Request) -> axum::response::Response {
        match tower_service::Service::call(&mut self, request).await {
            Ok(response) => response,
            Err(infallible) => match infallible {},
        }
    }
}

/// The budgets every HTTP connection is held to. They apply before a
/// request reaches the bearer-token check: anyone who can connect is held
/// to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionBudgets {
    /// Connections open at once; the next one gets `503` and is closed.
    /// Default 512 (`toolhost serve --max-connections`).
    pub max_connections: usize,
    /// From a connection's opening, or a request's first byte, to the end
    /// of that request's head. Default 10 s (`--header-timeout`).
    pub header_timeout: Duration,
    /// From a request's head to the end of its body. Default 30 s
    /// (`--body-timeout`).
    pub body_timeout: Duration,
    /// A kept-alive connection with no request in flight. Default 60 s
    /// (`--idle-timeout`).
    pub idle_timeout: Duration,
    /// How long answers in flight may run on after
    /// [`HttpServer::shutdown`](super::HttpServer::shutdown). Default
    /// 10 s (`--shutdown-grace`).
    pub shutdown_grace: Duration,
}

impl Default for ConnectionBudgets {
    fn default() -> Self {
        Self {
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

impl ConnectionBudgets {
    /// How often the sweeper looks: a fifth of the shortest time budget,
    /// so a budget is overrun by at most a fifth.
    fn sweep_every(&self) -> Duration {
        let shortest = self
            .header_timeout
            .min(self.body_timeout)
            .min(self.idle_timeout);
        (shortest / 5).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// Refusals being written at once; past that, a connection over the cap is
/// closed without a word, so refusing never costs more descriptors than
/// this.
const REFUSALS_IN_FLIGHT: usize = 64;

/// How long a refusal may take to write and to see the client go.
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// Serve `app` on `listener` until `shutdown` resolves, then give answers
/// in flight up to [`ConnectionBudgets::shutdown_grace`]. `on_grace_over` runs when
/// the grace period ends with connections still open.
pub(super) async fn serve(
    listener: TcpListener,
    app: impl App,
    budgets: ConnectionBudgets,
    shutdown: impl Future<Output = ()>,
    on_grace_over: impl FnOnce(),
) {
    let open = Arc::new(Semaphore::new(budgets.max_connections));
    let refusals = Arc::new(Semaphore::new(REFUSALS_IN_FLIGHT));
    let watched = Arc::new(Watched::default());
    let closing = CancellationToken::new();
    let sweeper = tokio::spawn(sweep(Arc::downgrade(&watched), budgets));
    let mut http = hyper::server::conn::http1::Builder::new();
    // The budgets above replace hyper's own header timer.
    http.header_read_timeout(None);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (EMFILE) or a connection reset
                    // before it was accepted: wait a moment rather than
                    // spin on the same error.
                    tracing::warn!("cannot accept an HTTP connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Without TCP_NODELAY a response written in two pieces (headers,
        // then the event stream) waits for the client's delayed ACK: 40 ms
        // a call.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
        }
        let Ok(slot) = Arc::clone(&open).try_acquire_owned() else {
            refuse(tcp, &refusals, budgets.max_connections);
            continue;
        };
        let service = ConnectionService {
            app: app.clone(),
            activity: watched.add(),
            peer,
        };
        spawn_connection(&http, tcp, service, slot, closing.clone());
    }
    drop(listener);
    closing.cancel();
    wait_for_close(&open, budgets, on_grace_over).await;
    sweeper.abort();
}

/// Serve the connection `tcp` with `service` (its activity watched) in a
/// task of its own, until it ends, goes over a time budget, or, once
/// `closing` is cancelled, has finished the answer in flight; then free
/// its `slot`.
fn spawn_connection<A: App>(
    http: &hyper::server::conn::http1::Builder,
    tcp: TcpStream,
    service: ConnectionService<A>,
    slot: OwnedSemaphorePermit,
    closing: CancellationToken,
) {
    let activity = Arc::clone(&service.activity);
    let io = TokioIo::new(Tracked {
        tcp,
        activity: Arc::clone(&activity),
    });
    let conn = http.serve_connection(io, service);
    tokio::spawn(async move {
        let mut conn = std::pin::pin!(conn);
        let mut draining = false;
        loop {
            tokio::select! {
                done = conn.as_mut() => {
                    if let Err(e) = done {
                        tracing::debug!("HTTP connection ended: {e}");
                    }
                    break;
                }
                () = activity.expired.cancelled() => {
                    tracing::debug!("closing an HTTP connection: {}", activity.reason());
                    break;
                }
                () = closing.cancelled(), if !draining => {
                    // Finish the answer in flight, if any, then close.
                    conn.as_mut().graceful_shutdown();
                    draining = true;
                }
            }
        }
        drop(slot);
    });
}

/// Wait for every connection's slot of `open` to be freed, for up to
/// [`ConnectionBudgets::shutdown_grace`]; run `on_grace_over` when the
/// grace period ends with connections still open.
async fn wait_for_close(
    open: &Semaphore,
    budgets: ConnectionBudgets,
    on_grace_over: impl FnOnce(),
) {
    let everyone = u32::try_from(budgets.max_connections).unwrap_or(u32::MAX);
    let all_closed = open.acquire_many(everyone);
    if tokio::time::timeout(budgets.shutdown_grace, all_closed)
        .await
        .is_err()
    {
        let still = budgets.max_connections - open.available_permits();
        tracing::info!(
            "the {}s grace period is over: closing {still} HTTP connections still open",
            budgets.shutdown_grace.as_secs_f64()
        );
        on_grace_over();
    }
}

/// Answer a connection over the cap with `503` and close it, in the
/// background; drop it at once when too many refusals are in flight.
fn refuse(mut tcp: TcpStream, refusals: &Arc<Semaphore>, max: usize) {
    let Ok(slot) = Arc::clone(refusals).try_acquire_owned() else {
        return;
    };
    tracing::debug!("refusing an HTTP connection: {max} are open (max_connections)");
    tokio::spawn(async move {
        let body = format!(
            "toolhost serve: too many open connections (at most {max}, \
             `ConnectionBudgets::max_connections`, --max-connections); \
             retry later\n"
        );
        let response = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
             retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let _ = tokio::time::timeout(REFUSAL_TIME, async {
            tcp.write_all(response.as_bytes()).await?;
            tcp.shutdown().await?;
            // Closing with the request unread would reset the connection
            // and could discard the answer before the client reads it:
            // read (and drop) until the client closes, briefly.
            let mut sink = [0u8; 4096];
            while tokio::io::AsyncReadExt::read(&mut tcp, &mut sink).await? > 0 {}
            io::Result::Ok(())
        })
        .await;
        drop(slot);
    });
}

/// Every open connection, for the sweeper.
#[derive(Debug, Default)]
struct Watched(Mutex<Vec<Weak<Activity>>>);

impl Watched {
    fn add(&self) -> Arc<Activity> {
        let activity = Arc::new(Activity::new());
        lock(&self.0).push(Arc::downgrade(&activity));
        activity
    }
}

/// Close every connection over a time budget, a few times a budget; the
/// entries of closed connections go at the same time.
async fn sweep(watched: Weak<Watched>, budgets: ConnectionBudgets) {
    let mut tick = tokio::time::interval(budgets.sweep_every());
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(watched) = watched.upgrade() else {
            return;
        };
        let now = Instant::now();
        lock(&watched.0).retain(|entry| {
            let Some(activity) = entry.upgrade() else {
                return false;
            };
            activity.check(now, &budgets);
            true
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The state stays consistent even if a holder panicked.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where one connection is, and since when.
#[derive(Debug)]
struct Activity {
    phase: Mutex<Phase>,
    /// Cancelled when a budget is over: the connection task closes it.
    expired: CancellationToken,
}

#[derive(Debug)]
struct Phase {
    /// Requests whose head has arrived and whose answer has not ended.
    requests: u32,
    /// With no request in flight: when the next request's head began (or
    /// the connection opened).
    head_since: Option<Instant>,
    /// With no request in flight and no head begun: since when.
    idle_since: Option<Instant>,
    /// A request whose body has not ended: since its head arrived.
    body_since: Option<Instant>,
    /// What closed it, for the log.
    reason: &'static str,
}

impl Activity {
    fn new() -> Self {
        Self {
            // A new connection owes its first request's head at once.
            phase: Mutex::new(Phase {
                requests: 0,
                head_since: Some(Instant::now()),
                idle_since: None,
                body_since: None,
                reason: "",
            }),
            expired: CancellationToken::new(),
        }
    }

    /// Bytes arrived.
    fn read_some(&self) {
        let mut phase = lock(&self.phase);
        if phase.requests == 0 && phase.head_since.is_none() {
            phase.head_since = Some(Instant::now());
            phase.idle_since = None;
        }
    }

    /// A request's head arrived.
    fn request_started(&self, body_pending: bool) {
        let mut phase = lock(&self.phase);
        phase.requests += 1;
        phase.head_since = None;
        phase.idle_since = None;
        phase.body_since = body_pending.then(Instant::now);
    }

    fn body_ended(&self) {
        lock(&self.phase).body_since = None;
    }

    /// A request's answer ended (or was dropped).
    fn request_ended(&self) {
        let mut phase = lock(&self.phase);
        phase.requests = phase.requests.saturating_sub(1);
        if phase.requests == 0 {
            phase.body_since = None;
            phase.idle_since = Some(Instant::now());
        }
    }

    fn check(&self, now: Instant, budgets: &ConnectionBudgets) {
        let mut phase = lock(&self.phase);
        let over = |since: Option<Instant>, budget: Duration| {
            since.is_some_and(|since| now.saturating_duration_since(since) > budget)
        };
        let reason = if over(phase.head_since, budgets.header_timeout) {
            "its request head took longer than the header timeout (header_timeout)"
        } else if over(phase.body_since, budgets.body_timeout) {
            "its request body took longer than the body timeout (body_timeout)"
        } else if over(phase.idle_since, budgets.idle_timeout) {
            "it was idle longer than the idle timeout (idle_timeout)"
        } else {
            return;
        };
        if phase.reason.is_empty() {
            phase.reason = reason;
            self.expired.cancel();
        }
    }

    fn reason(&self) -> &'static str {
        lock(&self.phase).reason
    }
}

/// The socket, telling its [`Activity`] when bytes arrive.
#[derive(Debug)]
struct Tracked {
    tcp: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_some();
        }
        read
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// One TCP connection's requests, into the router (a hyper service).
#[derive(Debug, Clone)]
struct ConnectionService<A> {
    app: A,
    activity: Arc<Activity>,
    /// Who is connected: each request carries it as
    /// `ConnectInfo<SocketAddr>` (the session cap's client key).
    peer: std::net::SocketAddr,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

impl<A: App> hyper::service::Service<Request<Incoming>> for ConnectionService<A> {
    // The answer's body as hyper sees it: the router's, wrapped once (not
    // boxed again into another `Body`: hyper polls it for every frame).
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Answer;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.activity
            .request_started(!request.body().is_end_stream());
        let guard = InFlight(Arc::clone(&self.activity));
        let activity = Arc::clone(&self.activity);
        let mut request = request.map(|body| RequestBody {
            body,
            activity: Some(activity),
        });
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        let app = self.app.clone();
        Box::pin(async move {
            let response = app.answer(request.map(Body::new)).await;
            Ok(response.map(|body| ResponseBody {
                body,
                _in_flight: guard,
            }))
        })
    }
}

/// Ends its request in the [`Activity`] when the answer is done or dropped.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// A request body that tells its [`Activity`] when it has all arrived.
#[derive(Debug)]
struct RequestBody {
    body: Incoming,
    /// Until the body ended.
    activity: Option<Arc<Activity>>,
}

impl RequestBody {
    fn ended(&mut self) {
        if let Some(activity) = self.activity.take() {
            activity.body_ended();
        }
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        self.ended();
    }
}

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(None | Some(Err(_)))) || self.body.is_end_stream() {
            self.ended();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The answer's body, holding its request in flight until it is done.
#[derive(Debug)]
struct ResponseBody {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
