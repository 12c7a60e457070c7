//! The first line of a TCP connection to `probe serve`, which says what the server should do,
//! and the server's reply to a sink.
//!
//! - `SINK` — read and discard until EOF, then reply `<bytes>\n`.
//! - `SINK <warmup_seconds>` — the same, and reply `<bytes> <window_bytes> <window_ns>\n`: the
//!   bytes that arrived from `warmup_seconds` after the first byte until EOF, and how long that
//!   took on the server's clock, so an upload's goodput is measured where it is received.
//! - `SOURCE <seconds>` — send as fast as possible for that long, then close.
//!
//! Seconds are decimal numbers (`1.5`). The line ends with `\n` and is at most `MAX_LINE` bytes.

/// The longest command line accepted, newline included.
pub const MAX_LINE: usize = 128;

/// The longest transfer a command may ask for, so one connection cannot hold a server thread
/// for ever.
pub const MAX_SECONDS: f64 = 3600.0;

/// What a connection asks the server to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Count incoming bytes until EOF; with a warmup, also measure the window after it.
    Sink { warmup_ns: Option<u64> },
    /// Send for `duration_ns`, then close.
    Source { duration_ns: u64 },
}

/// Bytes received during a measurement window and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub bytes: u64,
    pub ns: u64,
}

impl Window {
    /// The window's goodput in Mbit/s (10⁶ bit/s, as tc's `mbit`).
    pub fn mbps(&self) -> f64 {
        if self.ns == 0 {
            0.0
        } else {
            self.bytes as f64 * 8.0 * 1e3 / self.ns as f64
        }
    }
}

/// The server's answer to a sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkReply {
    pub total_bytes: u64,
    /// Present when the sink was given a warmup and data arrived after it.
    pub window: Option<Window>,
}

/// Reads a decimal number of seconds within 0..=`MAX_SECONDS` as nanoseconds.
fn parse_seconds(text: &str) -> Result<u64, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(0.0..=MAX_SECONDS).contains(&seconds) {
        return Err(format!("{text} s is outside 0..={MAX_SECONDS} s"));
    }
    Ok((seconds * 1e9).round() as u64)
}

/// Writes nanoseconds as exact decimal seconds.
fn format_seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// Parses a command line (without or with its newline).
pub fn parse_command(line: &str) -> Result<Command, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["SINK"] => Ok(Command::Sink { warmup_ns: None }),
        ["SINK", warmup] => Ok(Command::Sink {
            warmup_ns: Some(parse_seconds(warmup).map_err(|e| format!("SINK warmup: {e}"))?),
        }),
        ["SOURCE", seconds] => Ok(Command::Source {
            duration_ns: parse_seconds(seconds).map_err(|e| format!("SOURCE: {e}"))?,
        }),
        _ => Err(format!(
            "unknown command `{}`; expected `SINK [WARMUP_S]` or `SOURCE SECONDS`",
            line.trim()
        )),
    }
}

/// Writes a command line, newline included.
pub fn format_command(command: &Command) -> String {
    match command {
        Command::Sink { warmup_ns: None } => "SINK\n".to_string(),
        Command::Sink {
            warmup_ns: Some(ns),
        } => format!("SINK {}\n", format_seconds(*ns)),
        Command::Source { duration_ns } => format!("SOURCE {}\n", format_seconds(*duration_ns)),
    }
}

/// Writes the sink's reply, newline included.
pub fn format_sink_reply(reply: &SinkReply) -> String {
    match reply.window {
        None => format!("{}\n", reply.total_bytes),
        Some(window) => format!("{} {} {}\n", reply.total_bytes, window.bytes, window.ns),
    }
}

/// Parses the sink's reply.
pub fn parse_sink_reply(text: &str) -> Result<SinkReply, String> {
    let numbers: Vec<u64> = text
        .split_whitespace()
        .map(|word| word.parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("sink reply `{}` is not made of byte counts", text.trim()))?;
    match numbers.as_slice() {
        [total_bytes] => Ok(SinkReply {
            total_bytes: *total_bytes,
            window: None,
        }),
        [total_bytes, bytes, ns] => Ok(SinkReply {
            total_bytes: *total_bytes,
            window: Some(Window {
                bytes: *bytes,
                ns: *ns,
            }),
        }),
        _ => Err(format!(
            "sink reply `{}` should be `BYTES` or `BYTES WINDOW_BYTES WINDOW_NS`",
            text.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        for command in [
            Command::Sink { warmup_ns: None },
            Command::Sink {
                warmup_ns: Some(1_500_000_000),
            },
            Command::Source {
                duration_ns: 6_000_000_001,
            },
        ] {
            assert_eq!(parse_command(&format_command(&command)), Ok(command));
        }
        assert_eq!(
            parse_command("SOURCE 5\r\n"),
            Ok(Command::Source {
                duration_ns: 5_000_000_000
            })
        );
    }

    #[test]
    fn bad_commands_are_named() {
        assert!(parse_command("GET / HTTP/1.1")
            .unwrap_err()
            .contains("unknown command `GET"));
        assert!(parse_command("SOURCE")
            .unwrap_err()
            .contains("unknown command"));
        assert!(parse_command("SOURCE five")
            .unwrap_err()
            .contains("`five` is not a number"));
        assert!(parse_command("SOURCE 3601")
            .unwrap_err()
            .contains("outside"));
        assert!(parse_command("SOURCE -1").unwrap_err().contains("outside"));
        assert!(parse_command("SINK NaN").unwrap_err().contains("outside"));
    }

    #[test]
    fn sink_replies_round_trip() {
        let plain = SinkReply {
            total_bytes: 42,
            window: None,
        };
        let windowed = SinkReply {
            total_bytes: 100,
            window: Some(Window { bytes: 60, ns: 7 }),
        };
        assert_eq!(format_sink_reply(&plain), "42\n");
        for reply in [plain, windowed] {
            assert_eq!(parse_sink_reply(&format_sink_reply(&reply)), Ok(reply));
        }
        assert!(parse_sink_reply("1 2").unwrap_err().contains("should be"));
        assert!(parse_sink_reply("ERR x")
            .unwrap_err()
            .contains("byte counts"));
    }

    #[test]
    fn window_rate_is_in_megabits() {
        // 125 000 bytes in 10 ms is 100 Mbit/s.
        let window = Window {
            bytes: 125_000,
            ns: 10_000_000,
        };
        assert!((window.mbps() - 100.0).abs() < 1e-9);
        assert_eq!(Window { bytes: 5, ns: 0 }.mbps(), 0.0);
    }
}
