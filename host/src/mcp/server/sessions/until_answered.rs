//! A request's event stream that cancels the request when the client
//! closes it before the answer.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage, ClientNotification,
    RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionHandle;

/// A request's event stream, which cancels the request (as
/// `notifications/cancelled` would) when it is dropped before the answer
/// went out: the client closed the stream or went away.
pub(super) struct UntilAnswered {
    pub(super) stream: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    /// The request and its session; `None` once answered.
    pub(super) pending: Option<(RequestId, LocalSessionHandle)>,
}

impl Stream for UntilAnswered {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.stream.as_mut().poll_next(cx);
        match &next {
            Poll::Ready(None) => self.pending = None,
            Poll::Ready(Some(event)) => {
                let answered = match event.message.as_deref() {
                    Some(ServerJsonRpcMessage::Response(r)) => {
                        self.pending.as_ref().is_some_and(|(id, _)| *id == r.id)
                    }
                    Some(ServerJsonRpcMessage::Error(e)) => self
                        .pending
                        .as_ref()
                        .is_some_and(|(id, _)| e.id.as_ref() == Some(id)),
                    _ => false,
                };
                if answered {
                    self.pending = None;
                }
            }
            Poll::Pending => {}
        }
        next
    }
}

impl Drop for UntilAnswered {
    fn drop(&mut self) {
        let Some((id, session)) = self.pending.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::debug!(request = %id, "an MCP request's stream closed before its answer: cancelling it");
        let cancelled =
            ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(
                CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("the client closed the request's stream".to_owned()),
                )),
            ));
        runtime.spawn(async move {
            // A session already closed has nothing left to cancel.
            let _ = session.push_message(cancelled, None).await;
        });
    }
}
