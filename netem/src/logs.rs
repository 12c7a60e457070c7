//! The logs of every cdnlab binary — the shaper daemon, the role binaries, `cdnlab` itself —
//! through `tracing`, as lines on stderr (a node's log file). It lives in this crate because
//! it is the one with I/O that all of them link.
//!
//! - Levels: `RUST_LOG` as a list of targets (`debug`, `warn,cdnlab=debug`); info without it.
//! - Timestamps: RFC 3339 in UTC from the system clock, with microseconds — the clock of the
//!   lab's `events.jsonl` (`time_unix_s`), so a log line and a link change line up.
//! - `CDNLAB_LOG_FORMAT=json`: one JSON object per line (`timestamp`, `level`, `target`,
//!   `fields`) for tools; plain text otherwise. No colour codes: logs are files.

use std::str::FromStr;

use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The variable that selects JSON lines.
pub const FORMAT: &str = "CDNLAB_LOG_FORMAT";

/// Installs the subscriber once per process; a second call changes nothing. A `RUST_LOG` that
/// does not parse is reported on the log and info is used instead.
pub fn init() {
    let (filter, refused) = filter(std::env::var("RUST_LOG").ok().as_deref());
    let json = std::env::var(FORMAT).is_ok_and(|v| v == "json");
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let installed = if json {
        tracing_subscriber::registry()
            .with(layer.json())
            .with(filter)
            .try_init()
    } else {
        tracing_subscriber::registry()
            .with(layer)
            .with(filter)
            .try_init()
    };
    if let (Ok(()), Some(why)) = (installed, refused) {
        tracing::warn!("RUST_LOG ignored ({why}); logging at info");
    }
}

/// The level filter `RUST_LOG` asks for, or info and why it was refused.
fn filter(rust_log: Option<&str>) -> (Targets, Option<String>) {
    let info = Targets::new().with_default(LevelFilter::INFO);
    match rust_log.map(str::trim).filter(|v| !v.is_empty()) {
        None => (info, None),
        Some(text) => match Targets::from_str(text) {
            Ok(targets) => (targets, None),
            Err(e) => (info, Some(format!("{text:?}: {e}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn rust_log_sets_levels_per_target() {
        let (targets, refused) = filter(Some("warn,cdnlab=debug"));
        assert!(refused.is_none());
        assert!(targets.would_enable("cdnlab::roles", &Level::DEBUG));
        assert!(!targets.would_enable("hyper", &Level::INFO));
        assert!(targets.would_enable("hyper", &Level::WARN));
        let (plain, _) = filter(Some("debug"));
        assert!(plain.would_enable("anything", &Level::DEBUG));
    }

    #[test]
    fn no_or_bad_rust_log_means_info() {
        let (unset, refused) = filter(None);
        assert!(refused.is_none());
        assert!(unset.would_enable("x", &Level::INFO));
        assert!(!unset.would_enable("x", &Level::DEBUG));
        let (bad, refused) = filter(Some("=nonsense=="));
        assert!(refused.is_some());
        assert!(bad.would_enable("x", &Level::INFO));
    }
}
