//! Event-stream answers to `POST /mcp` in one write where they can be.
//!
//! In a session (the 2025-11-25 revision) rmcp answers every POST with an
//! event stream that opens with a priming event (an event id and a retry
//! interval, so the client can resume a dropped stream), then sends the
//! answer and ends. hyper writes each piece as it comes: the head with the
//! priming event, then the answer: two `writev`s per call, and on loopback
//! the sender also pays for the receiving side of each. Gathering what the
//! stream yields within [`HOLD`] before the head goes out sends a quick
//! call's whole answer in one write; a slower call still gets its head and
//! priming event after [`HOLD`], and the client sees the same events in the
//! same order either way.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http_body_util::BodyExt;

/// The longest an event-stream answer is held back to gather its first
/// events into one write.
pub(super) const HOLD: Duration = Duration::from_millis(2);

/// Middleware: gather the start of every event-stream answer to a POST.
pub(super) async fn gather_event_stream_start(request: Request, next: Next) -> Response {
    let post = request.method() == Method::POST;
    let response = next.run(request).await;
    let event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !(post && event_stream) {
        return response;
    }
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, gather(body, HOLD).await)
}

/// `body` with what it yields within `hold` (or up to its end, if that
/// comes first) gathered into its first frame.
async fn gather(mut body: Body, hold: Duration) -> Body {
    let mut head = BytesMut::new();
    let deadline = tokio::time::Instant::now() + hold;
    // What ended the gathering early: the end, an error or a trailer frame.
    let mut stop = None;
    let ended = loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_elapsed) => break false,
            Ok(None) => break true,
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => head.extend_from_slice(&data),
                // Trailers: SSE has none, but never drop one.
                Err(trailers) => {
                    stop = Some(Ok(trailers));
                    break false;
                }
            },
            Ok(Some(Err(e))) => {
                stop = Some(Err(e));
                break true;
            }
        }
    };
    let head = (!head.is_empty()).then(|| Ok(Frame::data(head.freeze())));
    let first = futures::stream::iter(head.into_iter().chain(stop));
    if ended {
        return Body::new(http_body_util::StreamBody::new(first));
    }
    let rest = http_body_util::BodyStream::new(body);
    Body::new(http_body_util::StreamBody::new(first.chain(rest)))
}

type Frame = http_body::Frame<Bytes>;

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    /// A body of `parts`; each waits its duration before it is produced,
    /// and `produced[i]` is set once part `i` exists.
    fn body_of(parts: Vec<(&'static str, Duration)>) -> (Body, Vec<Arc<AtomicBool>>) {
        let produced: Vec<_> = parts.iter().map(|_| Arc::default()).collect();
        let flags = produced.clone();
        let stream = futures::stream::iter(parts.into_iter().zip(flags)).then(
            |((text, wait), flag): (_, Arc<AtomicBool>)| async move {
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                flag.store(true, Ordering::SeqCst);
                Ok::<_, std::convert::Infallible>(Bytes::from_static(text.as_bytes()))
            },
        );
        (Body::from_stream(stream), produced)
    }

    /// The rest of the frames of `body`, as they come.
    async fn frames(body: &mut Body) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            out.push(frame.unwrap().into_data().unwrap());
        }
        out
    }

    #[tokio::test]
    async fn an_answer_that_follows_at_once_leaves_with_the_priming_event() {
        let (body, _) = body_of(vec![
            ("data: \nid: 0\nretry: 3000\n\n", Duration::ZERO),
            ("data: {}\nid: 1\n\n", Duration::ZERO),
        ]);
        let mut body = gather(body, Duration::from_secs(5)).await;
        assert_eq!(
            frames(&mut body).await,
            vec![Bytes::from(
                "data: \nid: 0\nretry: 3000\n\ndata: {}\nid: 1\n\n"
            )]
        );
    }

    #[tokio::test]
    async fn a_slow_answer_gets_the_priming_event_before_the_answer_exists() {
        let (body, produced) = body_of(vec![
            ("prime", Duration::ZERO),
            ("answer", Duration::from_millis(500)),
            ("more", Duration::ZERO),
        ]);
        let mut body = gather(body, HOLD).await;
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(first, "prime");
        assert!(
            !produced[1].load(Ordering::SeqCst),
            "the priming event waited for the answer"
        );
        let rest = frames(&mut body).await;
        assert_eq!(rest, vec![Bytes::from("answer"), Bytes::from("more")]);
    }

    #[tokio::test]
    async fn an_empty_body_stays_empty() {
        let mut body = gather(Body::empty(), HOLD).await;
        assert!(frames(&mut body).await.is_empty());
    }
}
