//! Where the feed's messages meet the browsers: every message is kept (up to [`MAX_HISTORY`]
//! messages and [`MAX_HISTORY_BYTES`])
//! and sent to every connected page; a page that connects late gets everything kept so far
//! first, so it draws the whole run, then what comes next.

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::broadcast;

/// Messages kept for pages that connect later: about 80 minutes of a 20-link lab at 10
/// samples/s with its events and segments. Past it the oldest go first.
pub const MAX_HISTORY: usize = 50_000;
/// And at most this many bytes of them (some messages carry lists: a controller's period).
pub const MAX_HISTORY_BYTES: usize = 256 << 20;
/// Messages a connected page may fall behind by before it is dropped (its browser reconnects
/// and starts over from the history).
const LAG: usize = 1024;

#[derive(Default)]
struct History {
    messages: VecDeque<Bytes>,
    bytes: usize,
}

pub struct Hub {
    history: Mutex<History>,
    live: broadcast::Sender<Bytes>,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            history: Mutex::new(History::default()),
            live: broadcast::channel(LAG).0,
        }
    }
}

impl Hub {
    /// Keeps `message` and sends it to every connected page, as one Server-Sent Event.
    pub fn publish(&self, message: &serde_json::Value) {
        let event = Bytes::from(format!("data: {message}\n\n"));
        let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        history.bytes += event.len();
        history.messages.push_back(event.clone());
        while history.messages.len() > MAX_HISTORY || history.bytes > MAX_HISTORY_BYTES {
            let Some(oldest) = history.messages.pop_front() else {
                break;
            };
            history.bytes -= oldest.len();
        }
        // Sent under the lock, so a page that subscribes misses nothing and sees nothing twice.
        let _ = self.live.send(event);
    }

    /// Everything kept so far, and the messages from now on.
    pub fn subscribe(&self) -> (Vec<Bytes>, broadcast::Receiver<Bytes>) {
        let history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        (
            history.messages.iter().cloned().collect(),
            self.live.subscribe(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_late_page_gets_the_history_then_what_follows_once_each() {
        let hub = Hub::default();
        hub.publish(&json!({"n": 1}));
        let (past, mut next) = hub.subscribe();
        hub.publish(&json!({"n": 2}));
        assert_eq!(past, vec![Bytes::from("data: {\"n\":1}\n\n")]);
        assert_eq!(next.try_recv().unwrap(), Bytes::from("data: {\"n\":2}\n\n"));
        assert!(next.try_recv().is_err());
        for n in 0..MAX_HISTORY {
            hub.publish(&json!({ "n": n }));
        }
        let (past, _) = hub.subscribe();
        assert_eq!(past.len(), MAX_HISTORY);
        assert_eq!(past[0], Bytes::from("data: {\"n\":0}\n\n"));
        // Large messages: as many as fit in the bytes, the newest.
        let big = "x".repeat(MAX_HISTORY_BYTES / 10);
        for n in 0..12 {
            hub.publish(&json!({ "n": n, "big": big }));
        }
        let (past, _) = hub.subscribe();
        assert!(past.iter().map(Bytes::len).sum::<usize>() <= MAX_HISTORY_BYTES);
        assert_eq!(past.len(), 9, "{} kept", past.len());
        let newest = String::from_utf8_lossy(&past[8]);
        assert!(newest.contains("\"n\":11"), "the newest is kept");
    }
}
