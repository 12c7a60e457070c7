//! Where the feed's messages meet the browsers: every message is kept (up to [`MAX_HISTORY`]
//! messages and [`MAX_HISTORY_BYTES`])
//! and sent to every connected page; a page that connects late gets everything kept so far
//! first, so it draws the whole run, then what comes next. The messages every later one
//! builds on (`hello`, a controller's first line: [`PINNED_KINDS`]) are kept apart, never
//! dropped for newer ones, and sent first.

use crate::newest::Newest;
use bytes::Bytes;
use std::sync::Mutex;
use tokio::sync::broadcast;

/// Messages kept for pages that connect later: about 80 minutes of a 20-link lab at 10
/// samples/s with its events and segments. Past it the oldest go first.
pub const MAX_HISTORY: usize = 50_000;
/// And at most this many bytes of them (some messages carry lists: a controller's period).
pub const MAX_HISTORY_BYTES: usize = 256 << 20;
/// The kinds of message a page cannot draw without, whatever it missed: the lab's (a page
/// starts over on it) and each ICN controller's description.
pub const PINNED_KINDS: [&str; 2] = ["hello", "controller"];
/// At most this many of them are kept apart; past it they age as the others do.
const MAX_PINNED: usize = 64;
/// Messages a connected page may fall behind by before it is dropped (its browser reconnects
/// and starts over from the history).
const LAG: usize = 1024;

struct History {
    pinned: Vec<Bytes>,
    messages: Newest,
}

pub struct Hub {
    history: Mutex<History>,
    live: broadcast::Sender<Bytes>,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            history: Mutex::new(History {
                pinned: Vec::new(),
                messages: Newest::new(MAX_HISTORY, MAX_HISTORY_BYTES),
            }),
            live: broadcast::channel(LAG).0,
        }
    }
}

impl Hub {
    /// Keeps `message` and sends it to every connected page, as one Server-Sent Event.
    pub fn publish(&self, message: &serde_json::Value) {
        let event = Bytes::from(format!("data: {message}\n\n"));
        let mut history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        let pinned = (message["kind"].as_str()).is_some_and(|kind| PINNED_KINDS.contains(&kind));
        if pinned && history.pinned.len() < MAX_PINNED {
            history.pinned.push(event.clone());
            let _ = self.live.send(event);
            return;
        }
        history.messages.push(event.clone());
        // Sent under the lock, so a page that subscribes misses nothing and sees nothing twice.
        let _ = self.live.send(event);
    }

    /// Everything kept so far, the pinned messages first, and the messages from now on.
    pub fn subscribe(&self) -> (Vec<Bytes>, broadcast::Receiver<Bytes>) {
        let history = self.history.lock().unwrap_or_else(|e| e.into_inner());
        let past = (history.pinned.iter())
            .chain(history.messages.iter())
            .cloned()
            .collect();
        (past, self.live.subscribe())
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

    /// `hello` and a controller's description outlive the history's bounds and come first,
    /// once each; live pages get them as they come.
    #[test]
    fn pinned_messages_are_never_dropped_and_come_first() {
        let hub = Hub::default();
        let (_, mut live) = hub.subscribe();
        hub.publish(&json!({"kind": "hello", "lab": "l"}));
        assert!(live
            .try_recv()
            .unwrap()
            .starts_with(b"data: {\"kind\":\"hello\""));
        for n in 0..MAX_HISTORY {
            hub.publish(&json!({ "kind": "links", "n": n }));
        }
        hub.publish(&json!({"kind": "controller", "sites": []}));
        hub.publish(&json!({"kind": "links", "n": "last"}));
        let (past, _) = hub.subscribe();
        assert_eq!(past.len(), 2 + MAX_HISTORY);
        assert!(past[0].starts_with(b"data: {\"kind\":\"hello\""));
        assert!(past[1].starts_with(b"data: {\"kind\":\"controller\""));
        let count = |kind: &str| {
            let needle = format!("\"kind\":\"{kind}\"");
            (past.iter())
                .filter(|m| String::from_utf8_lossy(m).contains(&needle))
                .count()
        };
        assert_eq!((count("hello"), count("controller")), (1, 1));
        assert!(
            String::from_utf8_lossy(&past[2]).contains("\"n\":1}"),
            "the oldest went"
        );
    }
}
