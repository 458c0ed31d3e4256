//! A guest's stderr: the tail of what the running call wrote.
//!
//! A Rust guest's panic message lands on stderr just before it traps, so the
//! host keeps the last [`STDERR_KEPT`] bytes of each call to put in the
//! `trap` error. Writes never fail and never wait: past the cap the oldest
//! bytes are dropped (a guest whose `eprintln!` failed would panic, turning
//! chatty logging into a crash). The buffer is emptied when a call starts,
//! so a stateful session's earlier output never explains a later trap.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// Bytes of a call's stderr the host keeps (the last ones written).
pub(crate) const STDERR_KEPT: usize = 16 << 10;

/// How much one write may hand over; any amount is accepted.
const WRITE_PERMIT: usize = 64 << 10;

/// The guest's stderr; clones share one buffer.
#[derive(Debug, Clone, Default)]
pub(crate) struct StderrCapture {
    tail: Arc<Mutex<VecDeque<u8>>>,
}

impl StderrCapture {
    fn lock(&self) -> MutexGuard<'_, VecDeque<u8>> {
        // A plain byte buffer: a panic elsewhere leaves it usable.
        self.tail.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forget what earlier calls wrote.
    pub(crate) fn reset(&self) {
        self.lock().clear();
    }

    /// The last bytes written since the call started.
    pub(crate) fn contents(&self) -> Vec<u8> {
        self.lock().iter().copied().collect()
    }

    fn keep(&self, data: &[u8]) {
        let mut tail = self.lock();
        let data = &data[data.len().saturating_sub(STDERR_KEPT)..];
        let over = (tail.len() + data.len()).saturating_sub(STDERR_KEPT);
        tail.drain(..over);
        tail.extend(data);
    }
}

impl IsTerminal for StderrCapture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrCapture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for StderrCapture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.keep(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrCapture {
    async fn ready(&mut self) {}
}

impl AsyncWrite for StderrCapture {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.keep(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_and_never_refuses_a_write() {
        let mut capture = StderrCapture::default();
        for _ in 0..100 {
            OutputStream::write(&mut capture, Bytes::from(vec![b'a'; 1000])).unwrap();
        }
        OutputStream::write(&mut capture, Bytes::from_static(b"panicked at the end")).unwrap();
        let kept = capture.contents();
        assert_eq!(kept.len(), STDERR_KEPT);
        assert!(kept.ends_with(b"panicked at the end"));
        assert!(capture.check_write().unwrap() > 0);

        OutputStream::write(&mut capture, Bytes::from(vec![b'b'; 3 * STDERR_KEPT])).unwrap();
        assert_eq!(capture.contents(), vec![b'b'; STDERR_KEPT]);

        capture.reset();
        assert!(capture.contents().is_empty());
    }
}
