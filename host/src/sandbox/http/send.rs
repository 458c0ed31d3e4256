//! Sending one checked request: resolve the name, check every address,
//! connect to one that passed, TLS, HTTP/1.1, and a response body that
//! counts against the call's byte cap and stops at its deadline.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::net::TcpStream;
use tokio::time::Sleep;
use tokio_rustls::rustls;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

use super::CallRecord;
use crate::egress::{Scheme, private_range};

/// A request that passed the origin check, with what sending it needs.
pub(super) struct Checked {
    pub(super) request: http::Request<WasiBody>,
    /// The URL, clipped and fit for messages.
    pub(super) url: String,
    pub(super) scheme: Scheme,
    /// Normalized (see `origin::normalize_host`).
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) private_ok: bool,
    pub(super) deadline: Instant,
    pub(super) call: Arc<CallRecord>,
}

/// What `WasiHttpHooks::send_request` hands back: the response, and the
/// task driving the connection (which wasi:http keeps for the body's life).
pub(super) type Sent = (
    http::Response<WasiBody>,
    Box<dyn Future<Output = Result<(), Error>> + Send>,
);

/// Send `checked`'s request on a connection of its own, and hand back the
/// response with a body capped by the call's byte cap and deadline.
pub(super) async fn send(checked: Checked) -> Result<Sent, Error> {
    let Checked {
        mut request,
        url,
        scheme,
        host,
        port,
        private_ok,
        deadline,
        call,
    } = checked;
    let addresses = resolve(&host, port, deadline).await?;
    let allowed = allowed_addresses(addresses, &host, &url, private_ok, &call)?;
    let stream = connect(&allowed, deadline).await?;
    let io = secure(stream, scheme, &host, deadline).await?;
    let (mut sender, connection) = until(
        deadline,
        hyper::client::conn::http1::handshake(io),
        Error::ConnectionTimeout,
    )
    .await??;
    // The connection runs as a task that ends at the deadline at the
    // latest, and is aborted when wasi:http drops its handle.
    let connection = wasmtime_wasi::runtime::spawn(async move {
        match until(deadline, connection, Error::HttpResponseTimeout).await {
            Ok(done) => done.map_err(Error::from),
            Err(timeout) => Err(timeout),
        }
    });
    // Origin-form request target: the scheme and authority are for a proxy.
    let target = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(target)
        .build()
        .map_err(|_| Error::HttpRequestUriInvalid)?;
    let response = until(
        deadline,
        sender.send_request(request),
        Error::ConnectionReadTimeout,
    )
    .await??;
    let response = response.map(|incoming| {
        CappedBody {
            incoming,
            call,
            url,
            deadline: Box::pin(tokio::time::sleep_until(deadline.into())),
        }
        .boxed_unsync()
    });
    Ok((response, Box::new(connection)))
}

/// The addresses of `host` that may be reached: all of them when
/// `private_ok`, else the public ones. None left is refused (and recorded
/// on `call`), naming the first refused address.
fn allowed_addresses(
    addresses: Vec<SocketAddr>,
    host: &str,
    url: &str,
    private_ok: bool,
    call: &CallRecord,
) -> Result<Vec<SocketAddr>, Error> {
    // Connect only to addresses that passed: the name is never resolved
    // again, so a second DNS answer cannot swap in another address.
    let mut allowed = Vec::with_capacity(addresses.len());
    let mut refused = None;
    for address in addresses {
        match private_range(address.ip()) {
            Some(range) if !private_ok => refused = refused.or(Some((address.ip(), range))),
            _ => allowed.push(address),
        }
    }
    if allowed.is_empty() {
        let Some((ip, range)) = refused else {
            return Err(Error::DestinationNotFound);
        };
        let what = if host.parse::<IpAddr>().is_ok() {
            format!("{host} is a {range} address")
        } else {
            format!("{host} resolves to {ip}, a {range} address")
        };
        return Err(call.deny(format!(
            "the request to {url} was refused: {what}, and this host does not let plugins reach private or local addresses (`allow.http_private` in the host config)"
        )));
    }
    Ok(allowed)
}

/// `stream` as the scheme has it: plain for `http`, TLS to `host` (within
/// `deadline`) for `https`.
async fn secure(
    stream: TcpStream,
    scheme: Scheme,
    host: &str,
    deadline: Instant,
) -> Result<TokioIo<Box<dyn Stream>>, Error> {
    Ok(match scheme {
        Scheme::Http => TokioIo::new(Box::new(stream) as Box<dyn Stream>),
        Scheme::Https => {
            let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                .map_err(|_| Error::HttpRequestUriInvalid)?;
            let tls = tokio_rustls::TlsConnector::from(crate::tls::client_config());
            let stream = until(
                deadline,
                tls.connect(name, stream),
                Error::ConnectionTimeout,
            )
            .await?
            .map_err(Error::Tls)?;
            TokioIo::new(Box::new(stream) as Box<dyn Stream>)
        }
    })
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

/// `future`, or `timeout` once `deadline` has passed.
async fn until<T>(
    deadline: Instant,
    future: impl Future<Output = T>,
    timeout: Error,
) -> Result<T, Error> {
    tokio::time::timeout_at(deadline.into(), future)
        .await
        .map_err(|_| timeout)
}

/// Every address `host` names (an IP literal names itself).
async fn resolve(host: &str, port: u16, deadline: Instant) -> Result<Vec<SocketAddr>, Error> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let found = until(
        deadline,
        tokio::net::lookup_host((host, port)),
        Error::DnsTimeout,
    )
    .await?
    .map_err(|e| Error::DnsError {
        rcode: Some(e.to_string()),
        info_code: None,
    })?;
    Ok(found.collect())
}

/// A connection to the first of `addresses` that answers.
async fn connect(addresses: &[SocketAddr], deadline: Instant) -> Result<TcpStream, Error> {
    let mut last = Error::ConnectionRefused;
    for address in addresses {
        match until(
            deadline,
            TcpStream::connect(address),
            Error::ConnectionTimeout,
        )
        .await?
        {
            Ok(stream) => {
                // Requests are small and answered at once; no Nagle delay.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = Error::Connect(e),
        }
    }
    Err(last)
}

/// A response body that adds what it reads to the call's byte count, fails
/// once the count passes the call's cap, and ends at the call's deadline.
struct CappedBody {
    incoming: Incoming,
    call: Arc<CallRecord>,
    url: String,
    deadline: Pin<Box<Sleep>>,
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
        }
        let frame = match Pin::new(&mut self.incoming).poll_frame(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(Error::from(e)))),
            Poll::Ready(Some(Ok(frame))) => frame,
        };
        if let Some(data) = frame.data_ref() {
            let url = &self.url;
            if let Err(e) = self.call.read_response_bytes(data.len(), url) {
                return Poll::Ready(Some(Err(e)));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.incoming.size_hint()
    }
}
