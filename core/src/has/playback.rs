//! A sans-IO model of the player's buffer: segments arrive, media plays in real time, playback
//! starts once enough segments are buffered and stalls when the buffer runs dry.
//!
//! Time is `u64` nanoseconds on the client's clock, passed to every call; the model only moves
//! when told the time. A stall is the time between the buffer running dry during playback and the
//! next segment's arrival (the player resumes with one segment, as the paper's client waits "for
//! the next chunk"); the wait before playback first starts is start-up, not a stall.

use std::collections::VecDeque;

use serde::Serialize;

/// goDASH starts after 2 segments, AStream and the paper's client after 1.
pub const DEFAULT_STARTUP_SEGMENTS: usize = 1;

/// The longest segment accepted, in seconds: anything longer is a manifest error.
const MAX_SEGMENT_S: f64 = 3600.0;

/// The player's buffer size and start-up rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaybackConfig {
    /// P: the most media (seconds) the player holds; a segment is requested only if it fits.
    pub buffer_s: f64,
    /// Segments buffered before playback starts.
    pub startup_segments: usize,
}

impl PlaybackConfig {
    pub fn new(buffer_s: f64, startup_segments: usize) -> Result<PlaybackConfig, String> {
        if !(buffer_s.is_finite() && buffer_s > 0.0) {
            return Err(format!(
                "the player buffer must be a positive number of seconds, not {buffer_s}"
            ));
        }
        if startup_segments == 0 {
            return Err("playback needs at least 1 start-up segment".into());
        }
        Ok(PlaybackConfig {
            buffer_s,
            startup_segments,
        })
    }
}

/// A stall: playback frozen from `start_ns` to `end_ns` for want of media.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stall {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A segment that started playing, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayedSegment {
    pub index: usize,
    pub quality: usize,
    pub bitrate_bps: u64,
    pub start_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Startup,
    Playing,
    Stalled { since_ns: u64 },
    Ended,
}

#[derive(Debug, Clone)]
struct Queued {
    index: usize,
    quality: usize,
    bitrate_bps: u64,
    remaining_ns: u64,
    started: bool,
}

/// The player's buffer and playback clock (see the module documentation).
#[derive(Debug, Clone)]
pub struct Playback {
    buffer_ns: u64,
    startup_segments: usize,
    queue: VecDeque<Queued>,
    buffered_ns: u64,
    state: State,
    clock_ns: u64,
    start_ns: Option<u64>,
    end_ns: Option<u64>,
    stalls: Vec<Stall>,
    played: Vec<PlayedSegment>,
}

impl Playback {
    pub fn new(config: PlaybackConfig) -> Playback {
        Playback {
            buffer_ns: seconds_to_ns(config.buffer_s),
            startup_segments: config.startup_segments,
            queue: VecDeque::new(),
            buffered_ns: 0,
            state: State::Startup,
            clock_ns: 0,
            start_ns: None,
            end_ns: None,
            stalls: Vec::new(),
            played: Vec::new(),
        }
    }

    /// Plays media up to `now_ns`. Earlier times than the last one are ignored.
    pub fn advance(&mut self, now_ns: u64) {
        if now_ns <= self.clock_ns {
            return;
        }
        if self.state == State::Playing {
            let mut t = self.clock_ns;
            while t < now_ns {
                let Some(front) = self.queue.front_mut() else {
                    break;
                };
                if !front.started {
                    front.started = true;
                    self.played.push(PlayedSegment {
                        index: front.index,
                        quality: front.quality,
                        bitrate_bps: front.bitrate_bps,
                        start_ns: t,
                    });
                }
                let step = front.remaining_ns.min(now_ns - t);
                front.remaining_ns -= step;
                self.buffered_ns -= step;
                t += step;
                if front.remaining_ns == 0 {
                    self.queue.pop_front();
                }
            }
            if self.queue.is_empty() {
                self.state = State::Stalled { since_ns: t };
            }
        }
        self.clock_ns = now_ns;
    }

    /// A segment of `duration_s` seconds was fully received at `now_ns`. Starts playback once
    /// the start-up segments are in, and ends a stall.
    pub fn segment_arrived(
        &mut self,
        now_ns: u64,
        index: usize,
        quality: usize,
        bitrate_bps: u64,
        duration_s: f64,
    ) -> Result<(), String> {
        if !(duration_s.is_finite() && duration_s > 0.0 && duration_s <= MAX_SEGMENT_S) {
            return Err(format!(
                "segment {index} lasts {duration_s} s; a segment must last more than 0 and at most {MAX_SEGMENT_S} s"
            ));
        }
        if self.state == State::Ended {
            return Err(format!(
                "segment {index} arrived after the end of the stream"
            ));
        }
        self.advance(now_ns);
        let duration_ns = seconds_to_ns(duration_s).max(1);
        self.queue.push_back(Queued {
            index,
            quality,
            bitrate_bps,
            remaining_ns: duration_ns,
            started: false,
        });
        self.buffered_ns += duration_ns;
        match self.state {
            State::Startup if self.queue.len() >= self.startup_segments => self.start(now_ns),
            State::Stalled { since_ns } => {
                if now_ns > since_ns {
                    self.stalls.push(Stall {
                        start_ns: since_ns,
                        end_ns: now_ns,
                    });
                }
                self.state = State::Playing;
            }
            _ => {}
        }
        Ok(())
    }

    /// No segment will arrive after `now_ns` (the last one came, or the download failed). A stall
    /// in progress ends here; start-up with fewer segments than required plays what there is; the
    /// rest of the buffer plays out without interruption, so it is accounted as played at once.
    /// Returns when playback ends.
    pub fn end_of_stream(&mut self, now_ns: u64) -> u64 {
        if let Some(end_ns) = self.end_ns {
            return end_ns;
        }
        self.advance(now_ns);
        match self.state {
            State::Startup if !self.queue.is_empty() => self.start(now_ns),
            State::Stalled { since_ns } if now_ns > since_ns => self.stalls.push(Stall {
                start_ns: since_ns,
                end_ns: now_ns,
            }),
            _ => {}
        }
        let mut t = now_ns;
        if self.state == State::Playing {
            t += self.buffered_ns;
            self.advance(t);
        }
        self.state = State::Ended;
        self.end_ns = Some(t);
        t
    }

    fn start(&mut self, now_ns: u64) {
        self.start_ns = Some(now_ns);
        self.state = State::Playing;
    }

    /// Seconds of media buffered (as of the last time given).
    pub fn buffer_s(&self) -> f64 {
        self.buffered_ns as f64 / 1e9
    }

    /// Whether a segment of `duration_s` may be requested at `now_ns`: it fits in the buffer
    /// (buffer + duration ≤ P). Before playback starts the start-up segments may always be
    /// fetched, and an empty buffer always takes one segment, so a P smaller than the start-up
    /// segments or than one segment cannot stall the player for good.
    pub fn may_request(&mut self, now_ns: u64, duration_s: f64) -> bool {
        self.wait_for_room_ns(now_ns, duration_s) == Some(0)
    }

    /// How long after `now_ns` a segment of `duration_s` may be requested: 0 if now, the time
    /// playback takes to free the room if it is playing, `None` if only a segment's arrival or
    /// the end of the stream can change it.
    pub fn wait_for_room_ns(&mut self, now_ns: u64, duration_s: f64) -> Option<u64> {
        self.advance(now_ns);
        if self.state == State::Ended {
            return None;
        }
        let needed_ns = self
            .buffered_ns
            .saturating_add(seconds_to_ns(duration_s.max(0.0)));
        let fits = needed_ns <= self.buffer_ns;
        let starting = self.state == State::Startup && self.queue.len() < self.startup_segments;
        if fits || starting || self.queue.is_empty() {
            Some(0)
        } else if self.state == State::Playing {
            Some(needed_ns - self.buffer_ns)
        } else {
            None
        }
    }

    /// When playback started, if it has.
    pub fn started_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// Whether the player is frozen waiting for media (start-up excluded), for the tests.
    #[cfg(test)]
    pub fn is_stalled(&self) -> bool {
        matches!(self.state, State::Stalled { .. })
    }

    /// The stalls that have ended, in order.
    pub fn stalls(&self) -> &[Stall] {
        &self.stalls
    }

    /// The segments that started playing, in order.
    pub fn played(&self) -> &[PlayedSegment] {
        &self.played
    }
}

/// Seconds to whole nanoseconds (callers have checked the value is finite and not negative).
fn seconds_to_ns(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}
