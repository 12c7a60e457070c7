//! What `cdnlab run` shows while its clients play: the time since they started, how far each
//! client has got (the rows of the `segments.csv` a HAS client appends to as segments arrive;
//! `running`, `done` or `failed` for any other client), and each timeline event as it fires.
//! On a terminal a status line redrawn a few times a second; otherwise a plain line every
//! [`PLAIN_EVERY`]. All of it goes to stderr: stdout keeps the table (or `--json`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often a plain (not a terminal) progress line is written.
pub const PLAIN_EVERY: Duration = Duration::from_secs(10);
/// How often the terminal's status line is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(250);

/// Where one client stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientState {
    Running,
    /// Rows in its `segments.csv` so far.
    Segments(usize),
    Done,
    Failed,
}

/// The progress line: `12.3 s  c-upstream-rr 5 segments · c-direct-cs done`.
pub fn line(elapsed: Duration, clients: &[(String, ClientState)]) -> String {
    let states: Vec<String> = clients
        .iter()
        .map(|(name, state)| match state {
            ClientState::Running => format!("{name} running"),
            ClientState::Segments(1) => format!("{name} 1 segment"),
            ClientState::Segments(n) => format!("{name} {n} segments"),
            ClientState::Done => format!("{name} done"),
            ClientState::Failed => format!("{name} failed"),
        })
        .collect();
    format!("{:>7.1} s  {}", elapsed.as_secs_f64(), states.join(" · "))
}

/// The line of a timeline event that fired `at` after the clients started.
pub fn event_line(at: Duration, what: &str) -> String {
    format!("{:>7.1} s  event: {what}", at.as_secs_f64())
}

/// The rows (lines after the header) of a client's `segments.csv`, if it has one.
fn segments_so_far(path: &std::path::Path) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.lines().count().saturating_sub(1))
}

/// The progress display of one run.
pub struct Progress {
    /// Each client's name and the `segments.csv` it may append to.
    clients: Vec<(String, PathBuf)>,
    bar: Option<indicatif::ProgressBar>,
    last_shown: Option<Instant>,
}

impl Progress {
    /// `clients`: each client's name and its output directory.
    pub fn new(clients: Vec<(String, PathBuf)>) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar
        });
        Progress {
            clients: clients
                .into_iter()
                .map(|(name, dir)| (name, dir.join("segments.csv")))
                .collect(),
            bar,
            last_shown: None,
        }
    }

    /// A timeline event fired: shown at once, on its own line.
    pub fn event(&self, at: Duration, what: &str) {
        let text = event_line(at, what);
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// Shows where the clients stand, if it is time to; `finished` holds each finished client's
    /// name and whether it succeeded.
    pub fn tick(&mut self, elapsed: Duration, finished: &[(String, bool)]) {
        let every = if self.bar.is_some() {
            REDRAW_EVERY
        } else {
            PLAIN_EVERY
        };
        if self.last_shown.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        self.last_shown = Some(Instant::now());
        let states: Vec<(String, ClientState)> = self
            .clients
            .iter()
            .map(|(name, segments)| {
                let state = match finished.iter().find(|(n, _)| n == name) {
                    Some((_, true)) => ClientState::Done,
                    Some((_, false)) => ClientState::Failed,
                    None => segments_so_far(segments)
                        .map_or(ClientState::Running, ClientState::Segments),
                };
                (name.clone(), state)
            })
            .collect();
        let text = line(elapsed, &states);
        match &self.bar {
            Some(bar) => {
                bar.set_message(text);
                bar.tick();
            }
            None => eprintln!("{text}"),
        }
    }
}

/// The status line goes when the clients are done, however that came about: the table (or an
/// error) follows.
impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_each_clients_progress() {
        let clients = [
            ("a".to_string(), ClientState::Segments(12)),
            ("b".to_string(), ClientState::Segments(1)),
            ("c".to_string(), ClientState::Running),
            ("d".to_string(), ClientState::Done),
            ("e".to_string(), ClientState::Failed),
        ];
        assert_eq!(
            line(Duration::from_millis(12_345), &clients),
            "   12.3 s  a 12 segments · b 1 segment · c running · d done · e failed"
        );
        assert_eq!(
            event_line(Duration::from_secs(10), "set router-server: delay 200ms"),
            "   10.0 s  event: set router-server: delay 200ms"
        );
    }

    #[test]
    fn segments_are_the_rows_below_the_header() {
        let dir = std::env::temp_dir().join(format!("cdnlab-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("segments.csv");
        assert_eq!(segments_so_far(&path), None);
        std::fs::write(&path, "index,quality\n").unwrap();
        assert_eq!(segments_so_far(&path), Some(0));
        std::fs::write(&path, "index,quality\n0,1\n1,2\n").unwrap();
        assert_eq!(segments_so_far(&path), Some(2));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
