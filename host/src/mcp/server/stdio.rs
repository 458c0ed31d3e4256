//! stdin and stdout as the MCP transport, driven by the runtime's epoll.
//!
//! tokio's `stdin()`/`stdout()` (what `rmcp::transport::stdio()` uses) hand
//! every read and every write to a blocking-pool thread: on a request-answer
//! protocol that is four thread hand-offs per call, most of a stdio round
//! trip on a busy machine. MCP clients spawn the server with pipes (Python,
//! Rust) or with a Unix socket pair (Node's libuv, so Electron apps), and
//! both can be polled: those are registered with the runtime instead.
//! Anything else (a terminal, a file) keeps tokio's blocking-pool stdio.
//!
//! The reading half (of stdin or of any reader) also says when its input
//! ends: rmcp, seeing the end, lets the calls in flight run on (for up to
//! 5 s) to send answers nobody will read; the server cancels them at once
//! instead.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

pub(super) type Reader = Box<dyn AsyncRead + Send + Unpin>;
pub(super) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// What stdin or stdout is.
enum Kind {
    Pipe,
    Socket,
    Other,
}

fn kind(fd: &OwnedFd) -> Kind {
    let Ok(meta) = fd
        .try_clone()
        .and_then(|dup| std::fs::File::from(dup).metadata())
    else {
        return Kind::Other;
    };
    use std::os::unix::fs::FileTypeExt;
    let file_type = meta.file_type();
    if file_type.is_fifo() {
        Kind::Pipe
    } else if file_type.is_socket() {
        Kind::Socket
    } else {
        Kind::Other
    }
}

fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(stream)
}

/// The reading half: stdin.
fn reader() -> io::Result<Reader> {
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd) {
        Kind::Pipe => Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?),
        Kind::Socket => Box::new(socket(fd)?),
        Kind::Other => Box::new(tokio::io::stdin()),
    })
}

/// The writing half: stdout.
fn writer() -> io::Result<Writer> {
    let fd = io::stdout().as_fd().try_clone_to_owned()?;
    Ok(match kind(&fd) {
        Kind::Pipe => Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?),
        Kind::Socket => Box::new(socket(fd)?),
        Kind::Other => Box::new(tokio::io::stdout()),
    })
}

/// stdin and stdout, polled where they can be. Call it inside the runtime.
///
/// # Errors
///
/// When stdin or stdout cannot be duplicated or registered with the
/// runtime (a closed descriptor).
pub(super) fn stdin_stdout() -> io::Result<(Reader, Writer)> {
    Ok((reader()?, writer()?))
}

/// A reader that cancels a token at its end (or its first error).
pub(super) struct EndSignalling {
    pub(super) reader: Reader,
    pub(super) closed: CancellationToken,
}

impl AsyncRead for EndSignalling {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.reader).poll_read(cx, buf);
        let ended = match &read {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.closed.cancel();
        }
        read
    }
}
