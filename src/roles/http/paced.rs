//! A body sent at an even pace over a set time: byte k of n leaves no earlier than k/n of
//! the duration after the first poll, in steps of at most `STEP`, and the last byte at the
//! end. The farm's content servers serve a transfer this way, so its service time is the
//! one they drew, whatever the link's rate above what the pace needs. Whoever made it learns
//! how it ended: whole, or dropped early (the client went away).

use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

/// The longest gap between two frames of a paced body.
const STEP: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub struct Paced {
    bytes: Bytes,
    sent: usize,
    duration: Duration,
    started: Option<Instant>,
    sleep: Option<Pin<Box<Sleep>>>,
    done: Option<oneshot::Sender<bool>>,
}

impl Paced {
    /// `bytes` sent evenly over `duration`; `done` receives true once the last byte is handed
    /// on, false if the body is dropped before.
    pub fn new(bytes: Bytes, duration: Duration, done: oneshot::Sender<bool>) -> Paced {
        Paced {
            bytes,
            sent: 0,
            duration,
            started: None,
            sleep: None,
            done: Some(done),
        }
    }

    pub fn remaining(&self) -> u64 {
        (self.bytes.len() - self.sent) as u64
    }

    /// The next frame, or Pending until its time.
    pub fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let total = self.bytes.len();
        if self.sent == total {
            if let Some(done) = self.done.take() {
                let _ = done.send(true);
            }
            return Poll::Ready(None);
        }
        let now = Instant::now();
        let started = *self.started.get_or_insert(now);
        if let Some(sleep) = &mut self.sleep {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        let elapsed = now.saturating_duration_since(started);
        let due = if self.duration.is_zero() || elapsed >= self.duration {
            total
        } else {
            (total as f64 * elapsed.as_secs_f64() / self.duration.as_secs_f64()) as usize
        };
        if due > self.sent {
            let frame = self.bytes.slice(self.sent..due);
            self.sent = due;
            return Poll::Ready(Some(frame));
        }
        // Nothing due yet: wake at the next step, or at the end.
        let wake = (now + STEP).min(started + self.duration);
        let mut sleep = Box::pin(tokio::time::sleep_until(wake));
        if sleep.as_mut().poll(cx).is_ready() {
            cx.waker().wake_by_ref();
        } else {
            self.sleep = Some(sleep);
        }
        Poll::Pending
    }
}

impl Drop for Paced {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let _ = done.send(self.sent == self.bytes.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// 100 kB over 300 ms arrive whole, not before 300 ms, and the sender hears `true`.
    #[tokio::test]
    async fn a_paced_body_takes_its_duration_and_reports_it_ended_whole() {
        let (tx, rx) = oneshot::channel();
        let bytes = Bytes::from(vec![7u8; 100_000]);
        let body = crate::roles::http::Body::Paced(Paced::new(
            bytes.clone(),
            Duration::from_millis(300),
            tx,
        ));
        let started = std::time::Instant::now();
        let collected = body.collect().await.unwrap().to_bytes();
        let took = started.elapsed();
        assert_eq!(collected, bytes);
        assert!(took >= Duration::from_millis(295), "{took:?}");
        assert!(took < Duration::from_millis(600), "{took:?}");
        assert_eq!(rx.await, Ok(true));
    }

    /// A body dropped before its end tells the sender `false`.
    #[tokio::test]
    async fn a_paced_body_dropped_early_reports_it() {
        let (tx, rx) = oneshot::channel();
        let body = Paced::new(Bytes::from(vec![1u8; 10]), Duration::from_secs(5), tx);
        drop(body);
        assert_eq!(rx.await, Ok(false));
    }
}
