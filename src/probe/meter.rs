//! The receiving side's goodput meter: bytes per read event, a warmup counted from the first
//! byte (to leave TCP slow start out), and the window that follows it.
//!
//! The window runs from the last read that completed within the warmup to the last read seen,
//! and counts the bytes of the reads after its start: both ends are read events, so bytes and
//! time cover exactly the same span, whatever the read sizes.

use super::protocol::Window;

/// Counts received bytes and measures the window after the warmup.
#[derive(Debug, Clone)]
pub struct WindowMeter {
    warmup_ns: u64,
    first_ns: Option<u64>,
    total_bytes: u64,
    /// (time, bytes so far) at the window's start.
    start: Option<(u64, u64)>,
    /// (time, bytes so far) at the last read after the warmup.
    last: Option<(u64, u64)>,
}

impl WindowMeter {
    /// A meter whose window opens `warmup_ns` after the first byte.
    pub fn new(warmup_ns: u64) -> WindowMeter {
        WindowMeter {
            warmup_ns,
            first_ns: None,
            total_bytes: 0,
            start: None,
            last: None,
        }
    }

    /// Records a read of `bytes` that completed at `now_ns`.
    pub fn on_bytes(&mut self, now_ns: u64, bytes: u64) {
        self.total_bytes = self.total_bytes.saturating_add(bytes);
        let first = *self.first_ns.get_or_insert(now_ns);
        if now_ns <= first.saturating_add(self.warmup_ns) {
            self.start = Some((now_ns, self.total_bytes));
        } else {
            self.last = Some((now_ns, self.total_bytes));
        }
    }

    /// Whether the window is older than `duration_ns` (a reader may stop then).
    pub fn window_longer_than(&self, duration_ns: u64) -> bool {
        matches!((self.start, self.last), (Some((t0, _)), Some((t1, _))) if t1.saturating_sub(t0) >= duration_ns)
    }

    /// Every byte received, warmup included.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// The window after the warmup; `None` until a read completes after it.
    pub fn window(&self) -> Option<Window> {
        let ((t0, b0), (t1, b1)) = (self.start?, self.last?);
        Some(Window {
            bytes: b1.saturating_sub(b0),
            ns: t1.saturating_sub(t0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn window_excludes_the_warmup() {
        let mut meter = WindowMeter::new(100 * MS);
        // Slow start: small reads in the first 100 ms after the first byte at t = 50 ms.
        meter.on_bytes(50 * MS, 10);
        meter.on_bytes(100 * MS, 20);
        meter.on_bytes(150 * MS, 40);
        assert_eq!(meter.window(), None);
        // Steady state: 1000 bytes per 10 ms.
        for k in 1..=10 {
            meter.on_bytes(150 * MS + k * 10 * MS, 1000);
        }
        assert_eq!(meter.total_bytes(), 10_070);
        assert_eq!(
            meter.window(),
            Some(Window {
                bytes: 10_000,
                ns: 100 * MS
            })
        );
        assert!(meter.window_longer_than(100 * MS));
        assert!(!meter.window_longer_than(101 * MS));
    }

    #[test]
    fn without_warmup_the_first_read_opens_the_window() {
        let mut meter = WindowMeter::new(0);
        meter.on_bytes(5 * MS, 500);
        meter.on_bytes(6 * MS, 300);
        assert_eq!(meter.window(), Some(Window { bytes: 300, ns: MS }));
    }
}
