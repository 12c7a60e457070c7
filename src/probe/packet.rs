//! The echo datagram of `rtt` and `stream`: who sent it, its sequence number and when.
//!
//! Everything the client needs to match a reply travels in the payload: a magic tag and a
//! per-session random id (to ignore stray datagrams, e.g. late replies to an earlier session
//! from the same port), the sequence number, and the send time on the client's monotonic clock
//! in nanoseconds. The server echoes a datagram unchanged but for one field, which the client
//! sends as 0: how long the server held it, from the kernel's receive stamp to its reply, so
//! the client can take the server's own wake-up out of the round trip (`stamped`). Integers are
//! big-endian; the rest is zero padding up to the requested size.

/// Marks a probe datagram.
const MAGIC: [u8; 4] = *b"CDNP";

/// Bytes of magic, session, sequence number, send time and hold time; the smallest datagram.
pub const HEADER_LEN: usize = 4 + 8 + 8 + 8 + 8;

/// Where the server writes how long it held the datagram.
const HELD_AT: usize = 28;

/// The largest UDP payload over IPv4.
pub const MAX_LEN: usize = 65_507;

/// The decoded header of an echo datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    pub session: u64,
    pub seq: u64,
    pub sent_ns: u64,
    /// Nanoseconds the echo server held the datagram before replying (0 from the client).
    pub held_ns: u64,
}

impl Echo {
    /// Writes the header at the start of `buf` (whose length is the datagram size, at least
    /// `HEADER_LEN`; the caller checked it) and leaves the padding as it is.
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&MAGIC);
        buf[4..12].copy_from_slice(&self.session.to_be_bytes());
        buf[12..20].copy_from_slice(&self.seq.to_be_bytes());
        buf[20..HELD_AT].copy_from_slice(&self.sent_ns.to_be_bytes());
        buf[HELD_AT..HEADER_LEN].copy_from_slice(&self.held_ns.to_be_bytes());
    }

    /// Writes the server's hold time into a received datagram, if it is a probe datagram;
    /// returns whether it was one. Anything else is echoed unchanged.
    pub fn write_held(buf: &mut [u8], held_ns: u64) -> bool {
        if Echo::read(buf).is_none() {
            return false;
        }
        buf[HELD_AT..HEADER_LEN].copy_from_slice(&held_ns.to_be_bytes());
        true
    }

    /// Reads a header; `None` when the datagram is too short or not ours.
    pub fn read(buf: &[u8]) -> Option<Echo> {
        if buf.len() < HEADER_LEN || buf[0..4] != MAGIC {
            return None;
        }
        let word = |at: usize| buf[at..at + 8].try_into().ok().map(u64::from_be_bytes);
        Some(Echo {
            session: word(4)?,
            seq: word(12)?,
            sent_ns: word(20)?,
            held_ns: word(HELD_AT)?,
        })
    }
}

/// Checks a requested datagram size, naming the allowed range when it is outside.
pub fn check_size(size: usize) -> Result<usize, String> {
    if (HEADER_LEN..=MAX_LEN).contains(&size) {
        Ok(size)
    } else {
        Err(format!(
            "datagram size {size} is outside {HEADER_LEN}..={MAX_LEN} bytes"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_with_padding() {
        let echo = Echo {
            session: 0x0102_0304_0506_0708,
            seq: 42,
            sent_ns: 123_456_789,
            held_ns: 0,
        };
        let mut buf = vec![0xAA; 64];
        echo.write(&mut buf);
        assert_eq!(Echo::read(&buf), Some(echo));
        assert!(buf[HEADER_LEN..].iter().all(|&b| b == 0xAA));
        assert_eq!(Echo::read(&buf[..HEADER_LEN]), Some(echo));
    }

    #[test]
    fn foreign_or_short_datagrams_are_rejected() {
        let mut buf = vec![0; HEADER_LEN];
        Echo {
            session: 1,
            seq: 2,
            sent_ns: 3,
            held_ns: 0,
        }
        .write(&mut buf);
        assert_eq!(Echo::read(&buf[..HEADER_LEN - 1]), None);
        buf[0] = b'X';
        assert_eq!(Echo::read(&buf), None);
    }

    #[test]
    fn the_server_writes_its_hold_time_into_probe_datagrams_only() {
        let echo = Echo {
            session: 7,
            seq: 1,
            sent_ns: 99,
            held_ns: 0,
        };
        let mut buf = vec![0xAA; 80];
        echo.write(&mut buf);
        assert!(Echo::write_held(&mut buf, 42_000));
        assert_eq!(
            Echo::read(&buf),
            Some(Echo {
                held_ns: 42_000,
                ..echo
            })
        );
        assert!(buf[HEADER_LEN..].iter().all(|&b| b == 0xAA));
        let mut foreign = b"not a probe datagram, long enough to hold a header".to_vec();
        let before = foreign.clone();
        assert!(!Echo::write_held(&mut foreign, 42_000));
        assert_eq!(foreign, before);
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(check_size(64), Ok(64));
        assert_eq!(check_size(HEADER_LEN), Ok(HEADER_LEN));
        assert!(check_size(HEADER_LEN - 1).unwrap_err().contains("outside"));
        assert!(check_size(MAX_LEN + 1).is_err());
    }
}
