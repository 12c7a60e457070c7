//! What `cdnlab run` shows while its clients play: the time since they started, how far each
//! client has got (the rows of the `segments.csv` a HAS client appends to as segments arrive;
//! `running`, `done` or `failed` for any other client), and each timeline event as it fires.
//! On a terminal a status line redrawn a few times a second; otherwise a plain line every
//! [`PLAIN_EVERY`]. All of it goes to stderr: stdout keeps the table (or `--json`).

use crate::line_tail::LineTail;
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

/// The rows (lines after the header) of a client's `segments.csv` so far, counted as the file
/// grows.
struct SegmentRows(LineTail);

impl SegmentRows {
    fn new(path: PathBuf) -> SegmentRows {
        SegmentRows(LineTail::new(path))
    }

    /// The rows so far, or `None` while the file does not exist.
    fn rows(&mut self) -> Option<usize> {
        self.0.next_lines()?;
        Some(self.0.lines.saturating_sub(1))
    }
}

/// One client as the display knows it.
struct Client {
    name: String,
    segments: SegmentRows,
    /// Whether it succeeded, once it has finished.
    finished: Option<bool>,
}

impl Client {
    fn state(&mut self) -> ClientState {
        match self.finished {
            Some(true) => ClientState::Done,
            Some(false) => ClientState::Failed,
            None => self
                .segments
                .rows()
                .map_or(ClientState::Running, ClientState::Segments),
        }
    }
}

/// The progress display of one run.
pub struct Progress {
    clients: Vec<Client>,
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
                .map(|(name, dir)| Client {
                    name,
                    segments: SegmentRows::new(dir.join("segments.csv")),
                    finished: None,
                })
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

    /// Client `name` has finished, successfully or not.
    pub fn finished(&mut self, name: &str, ok: bool) {
        if let Some(client) = self.clients.iter_mut().find(|c| c.name == name) {
            client.finished = Some(ok);
        }
    }

    /// Shows where the clients stand, if it is time to.
    pub fn tick(&mut self, elapsed: Duration) {
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
            .iter_mut()
            .map(|client| (client.name.clone(), client.state()))
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
    fn segments_are_the_rows_below_the_header_counted_as_the_file_grows() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("cdnlab-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("segments.csv");
        let mut rows = SegmentRows::new(path.clone());
        assert_eq!(rows.rows(), None);
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(b"index,quality\n").unwrap();
        assert_eq!(rows.rows(), Some(0));
        // A row half written is not counted until its newline arrives.
        file.write_all(b"0,1\n1,").unwrap();
        assert_eq!(rows.rows(), Some(1));
        file.write_all(b"2\n").unwrap();
        assert_eq!(rows.rows(), Some(2));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
