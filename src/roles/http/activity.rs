//! What the timers of a connection served by hyper need to know: how many of its requests are
//! in progress and since when none has been (its idle timer), and when a write last carried
//! bytes of an answer.
//! hyper has no write timeout, so without the second an HTTP/1.1 client that stops reading an
//! answer (its window shut, its kernel still acknowledging) would hold its connection, and
//! whatever the answer holds, for ever. Once the idle timer has asked for a graceful shutdown,
//! a connection whose writes then carry nothing of an answer for another idle time is closed:
//! a client that stops reading an answer at its head loses it after two idle times (150 s),
//! and a link down for longer than one mid-answer can lose it too, as it would under nginx's
//! `send_timeout` (60 s by default, counted from the last write). Only writes of answers'
//! bytes count (`answer_bytes`): over h2c, pings would keep a client that stopped reading.
//! Plain atomics rather than a channel: every request touches them twice, and waking a timer
//! task per request was a measurable part of a 302's cost.

use super::answer_bytes::AnswerBytes;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub(super) struct Activity {
    in_progress: AtomicUsize,
    /// Nanoseconds from `start` to when the count last went to zero.
    idle_since_ns: AtomicU64,
    /// Nanoseconds from `start` to when a write last carried bytes of an answer, or the stall
    /// timer began, if later.
    wrote_ns: AtomicU64,
    start: Instant,
}

impl Activity {
    pub(super) fn new() -> Activity {
        Activity {
            in_progress: AtomicUsize::new(0),
            idle_since_ns: AtomicU64::new(0),
            wrote_ns: AtomicU64::new(0),
            start: Instant::now(),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Resolves once no request has been in progress for `limit` without a break.
    pub(super) async fn idle_for(&self, limit: Duration) {
        let busy = || self.in_progress.load(Ordering::Acquire) > 0;
        self.quiet_for(&self.idle_since_ns, busy, limit).await;
    }

    /// Resolves once no write has carried a byte of an answer for `limit`, counted from now at
    /// the earliest:
    /// what the connection has still to write when this is asked (an HTTP/2 GOAWAY, say) has
    /// the whole of `limit` to go.
    pub(super) async fn stalled_for(&self, limit: Duration) {
        self.wrote();
        self.quiet_for(&self.wrote_ns, || false, limit).await;
    }

    fn wrote(&self) {
        self.wrote_ns.store(self.now_ns(), Ordering::Release);
    }

    /// Resolves once `busy` is false and `since` (an instant in ns from `start`) lies `limit`
    /// back: sleeps until the earliest instant that could be true, then looks again.
    async fn quiet_for(&self, since: &AtomicU64, busy: impl Fn() -> bool, limit: Duration) {
        loop {
            let wait = if busy() {
                limit
            } else {
                let quiet = self.now_ns().saturating_sub(since.load(Ordering::Acquire));
                match limit.checked_sub(Duration::from_nanos(quiet)) {
                    Some(left) if !left.is_zero() => left,
                    _ => return,
                }
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// One request of a connection in progress (until its response is ready): counted while it
/// lives, so the connection's idle timer runs only while none is.
pub(super) struct Working(Arc<Activity>);

impl Working {
    pub(super) fn new(activity: Arc<Activity>) -> Working {
        activity.in_progress.fetch_add(1, Ordering::AcqRel);
        Working(activity)
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        // The time first: whoever reads a count of zero then reads an instant no earlier than
        // the last request's end.
        let now = self.0.now_ns();
        self.0.idle_since_ns.store(now, Ordering::Release);
        self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection whose writes note in its [`Activity`] when they take bytes of an answer.
pub(super) struct Timed<I> {
    io: I,
    activity: Arc<Activity>,
    answer: AnswerBytes,
}

impl<I> Timed<I> {
    pub(super) fn new(io: I, activity: Arc<Activity>) -> Timed<I> {
        Timed {
            io,
            activity,
            answer: AnswerBytes::new(),
        }
    }

    /// Notes a write of `bufs`, of which `written` took the first bytes.
    fn note<'a>(
        &mut self,
        written: Poll<io::Result<usize>>,
        bufs: impl IntoIterator<Item = &'a [u8]>,
    ) -> Poll<io::Result<usize>> {
        if let Poll::Ready(Ok(mut n)) = written {
            let taken = bufs.into_iter().map(|buf| {
                let part = &buf[..n.min(buf.len())];
                n -= part.len();
                part
            });
            if self.answer.carry_answer(taken) {
                self.activity.wrote();
            }
        }
        written
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Timed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            self.answer.read(&buf.filled()[before..]);
        }
        read
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Timed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write(cx, buf);
        self.note(written, [buf])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.note(written, bufs.iter().map(|buf| &buf[..]))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
