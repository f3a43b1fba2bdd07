//! [`ReadGuard`]: the client connection's socket with two clocks on what the client sends —
//! `KEEPALIVE_IDLE_SECONDS` while the connection waits for a request's first byte, and
//! `REQUEST_READ_TIMEOUT_SECONDS` from that byte to the end of the request head (slowloris).
//!
//! Hand-written because the HTTP library has neither clock as the gateway needs it: hyper's
//! `header_read_timeout` starts when the connection starts waiting, so it is the idle limit and the
//! slow-head limit in one number, and when it fires hyper closes the connection without a word.
//! Here the idle limit closes a quiet connection (nothing was asked, nothing is owed), and the head
//! limit first writes a 408 with a JSON body straight to the socket — hyper has written nothing on
//! the connection since its last response, so the bytes cannot interleave with a response of its
//! own — and then ends the connection. hyper's own timer stays on as a backstop at the sum of both.
//!
//! The head ends at the first empty line (`\n\n`, carriage returns ignored); until then what is
//! read is scanned (line feeds found with `memchr`, the bytes between them checked for anything but
//! carriage returns), after it nothing until the gateway writes its answer.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// Where the connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request's first byte (a new connection, or after an answer).
    Idle,
    /// A request head is arriving; `newline` when the last byte that counts was a line feed.
    Head { newline: bool },
    /// The head is in: the request is being read or answered.
    Busy,
}

/// The phase after `bytes` more of what the client sends: [`step`] over each byte, a line feed at
/// a time.
fn scan(mut phase: Phase, mut bytes: &[u8]) -> Phase {
    loop {
        if phase == Phase::Busy || bytes.is_empty() {
            return phase;
        }
        let (line, rest) = match memchr::memchr(b'\n', bytes) {
            Some(at) => (&bytes[..at], Some(&bytes[at + 1..])),
            None => (bytes, None),
        };
        // Bytes before the line feed: any but a carriage return makes it a line with content, and
        // any at all starts the head.
        let content = line.iter().any(|&b| b != b'\r');
        if content || (!line.is_empty() && phase == Phase::Idle) {
            phase = Phase::Head { newline: false };
        }
        match rest {
            Some(rest) => {
                phase = step(phase, b'\n');
                bytes = rest;
            }
            None => return phase,
        }
    }
}

/// The phase after one more byte of what the client sends.
fn step(phase: Phase, byte: u8) -> Phase {
    let newline = match phase {
        Phase::Busy => return Phase::Busy,
        Phase::Idle => false,
        Phase::Head { newline } => newline,
    };
    match byte {
        b'\n' if newline => Phase::Busy,
        b'\n' => Phase::Head { newline: true },
        b'\r' => Phase::Head { newline },
        _ => Phase::Head { newline: false },
    }
}

/// A client socket with the idle and slow-head clocks.
pub(crate) struct ReadGuard {
    stream: TcpStream,
    phase: Phase,
    /// When the current clock (idle or head) runs out; meaningless while busy.
    deadline: Instant,
    /// The deadline `timer` is set to, to reset it only when it moved.
    timer_at: Instant,
    timer: Pin<Box<Sleep>>,
    idle: Duration,
    head: Duration,
    /// The 408 answer, written once when the head clock runs out.
    timeout_answer: Bytes,
    head_timeouts: Counter,
}

impl ReadGuard {
    /// Guards `stream`: `idle` until a request's first byte, then `head` until its head is in.
    /// `timeout_answer` is the complete HTTP response sent when the head is too slow.
    pub(crate) fn new(
        stream: TcpStream,
        idle: Duration,
        head: Duration,
        timeout_answer: Bytes,
        head_timeouts: Counter,
    ) -> Self {
        let deadline = Instant::now() + idle;
        Self {
            stream,
            phase: Phase::Idle,
            deadline,
            timer_at: deadline,
            timer: Box::pin(tokio::time::sleep_until(deadline)),
            idle,
            head,
            timeout_answer,
            head_timeouts,
        }
    }

    /// Follows the request head through newly read bytes.
    fn observe(&mut self, bytes: &[u8]) {
        if self.phase == Phase::Idle && !bytes.is_empty() {
            self.deadline = Instant::now() + self.head;
        }
        self.phase = scan(self.phase, bytes);
    }

    /// The gateway wrote (an answer): the connection waits for the next request.
    fn wrote(&mut self) {
        self.phase = Phase::Idle;
        self.deadline = Instant::now() + self.idle;
    }

    /// Whether the running clock has run out (registering for a wake-up when it has not).
    fn clock_ran_out(&mut self, cx: &mut Context<'_>) -> bool {
        if self.timer_at != self.deadline {
            self.timer.as_mut().reset(self.deadline);
            self.timer_at = self.deadline;
        }
        self.timer.as_mut().poll(cx).is_ready()
    }
}

impl AsyncRead for ReadGuard {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.phase != Phase::Busy {
                    this.observe(&buf.filled()[before..]);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
            Poll::Pending => {
                let phase = this.phase;
                if phase == Phase::Busy || !this.clock_ran_out(cx) {
                    return Poll::Pending;
                }
                if phase == Phase::Idle {
                    // End of stream: hyper closes a connection that owes nobody an answer.
                    return Poll::Ready(Ok(()));
                }
                this.head_timeouts.inc();
                // Best effort: the socket's buffer takes a few hundred bytes unless the client
                // stopped reading too, and then nobody is there to read them.
                let _ = this.stream.try_write(&this.timeout_answer);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "request head too slow",
                )))
            }
        }
    }
}

impl AsyncWrite for ReadGuard {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.stream).poll_write(cx, buf));
        if matches!(written, Ok(n) if n > 0) {
            this.wrote();
        }
        Poll::Ready(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.stream).poll_write_vectored(cx, bufs));
        if matches!(written, Ok(n) if n > 0) {
            this.wrote();
        }
        Poll::Ready(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The line-feed scan ends where the byte-by-byte rule does, however the reads split.
        #[test]
        fn the_scan_follows_the_byte_rule(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a')], 0..40),
            cut in 0usize..40,
        ) {
            let cut = cut.min(bytes.len());
            let (first, second) = bytes.split_at(cut);
            prop_assert_eq!(scan(scan(Phase::Idle, first), second), phase_after(&[first, second]));
        }
    }

    fn phase_after(chunks: &[&[u8]]) -> Phase {
        chunks
            .iter()
            .flat_map(|chunk| chunk.iter())
            .fold(Phase::Idle, |phase, &byte| step(phase, byte))
    }

    #[test]
    fn the_head_ends_at_the_first_empty_line_across_reads() {
        assert_eq!(
            phase_after(&[b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]),
            Phase::Busy
        );
        assert_eq!(
            phase_after(&[b"GET / HTTP/1.1\r\n", b"Host: x\r", b"\n\r", b"\n"]),
            Phase::Busy
        );
        assert_eq!(phase_after(&[b"GET / HTTP/1.1\n\n"]), Phase::Busy);
        assert_eq!(
            phase_after(&[b"GET / HTTP/1.1\r\nHost: x\r\n"]),
            Phase::Head { newline: true }
        );
        assert_eq!(phase_after(&[b"GET / HTT"]), Phase::Head { newline: false });
        assert_eq!(
            phase_after(&[b"GET / HTTP/1.1\r\n\r\nbody\n\n"]),
            Phase::Busy
        );
    }
}
