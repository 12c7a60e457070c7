//! Fetching and checking the presentation: an HLS master playlist and every media playlist it
//! lists, or a DASH MPD, turned into the ladder and segment list the player walks.
//!
//! Every media playlist is fetched up front (concurrently), unlike players that fetch one when
//! they first switch to its quality: a playlist fetched mid-stream would sit inside a segment's
//! download time and blur the per-segment log.

use tokio::task::JoinSet;

use crate::cdn::manifest_hls::{self, Playlist};
use crate::cdn::{manifest_dash, Presentation, Rendition};
use crate::has::Ladder;

use super::fetch::{Body, Fetcher};

/// The fetched presentation and what fetching it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub presentation: Presentation,
    /// Body bytes of every manifest fetched.
    pub bytes: u64,
    /// Retries the manifest requests needed.
    pub retries: u32,
}

/// The most variants a master playlist may list: each is a media playlist fetched and kept
/// (up to 16 MiB each), and a ladder of more qualities than this is no real stream's.
pub const MAX_VARIANTS: usize = 64;

/// How many media playlists are fetched at once.
const PARALLEL_PLAYLISTS: usize = 8;

/// Fetches the manifest at `url` (HLS or DASH, told by its content) and, for HLS, every media
/// playlist. Errors name the URL.
pub async fn load(fetcher: &Fetcher, url: &str) -> Result<Loaded, String> {
    let (text, final_url, bytes, retries) = fetch_text(fetcher, url).await?;
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with("#EXTM3U") {
        let variants = match manifest_hls::parse_playlist(&text, &final_url) {
            Ok(Playlist::Master(variants)) => variants,
            Ok(Playlist::Media(_)) => {
                return Err(format!(
                    "manifest {url}: a media playlist; give the master playlist, which names the qualities"
                ))
            }
            Err(e) => return Err(format!("manifest {url}: {e}")),
        };
        if variants.is_empty() {
            return Err(format!(
                "manifest {url}: the master playlist lists no variant"
            ));
        }
        if variants.len() > MAX_VARIANTS {
            return Err(format!(
                "manifest {url}: the master playlist lists {} variants; at most {MAX_VARIANTS} are played",
                variants.len()
            ));
        }
        let mut tasks = JoinSet::new();
        let mut media = vec![None; variants.len()];
        let mut total_bytes = bytes;
        let mut total_retries = retries;
        let mut next = 0;
        while next < variants.len() || !tasks.is_empty() {
            while next < variants.len() && tasks.len() < PARALLEL_PLAYLISTS {
                let fetcher = fetcher.clone();
                let media_url = variants[next].url.clone();
                let i = next;
                tasks.spawn(async move { (i, fetch_text(&fetcher, &media_url).await) });
                next += 1;
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let (i, fetched) = joined.map_err(|e| format!("manifest {url}: a fetch task: {e}"))?;
            let (text, final_url, bytes, retries) = fetched?;
            total_bytes += bytes;
            total_retries += retries;
            let playlist = manifest_hls::parse_media(&text, &final_url)
                .map_err(|e| format!("media playlist {}: {e}", variants[i].url))?;
            media[i] = Some(playlist);
        }
        let pairs = variants
            .into_iter()
            .zip(media)
            .map(|(variant, playlist)| {
                playlist
                    .map(|p| (variant, p))
                    .ok_or_else(|| format!("manifest {url}: a media playlist was not fetched"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Loaded {
            presentation: manifest_hls::presentation(pairs),
            bytes: total_bytes,
            retries: total_retries,
        })
    } else if trimmed.starts_with('<') && text.contains("<MPD") {
        let presentation =
            manifest_dash::parse_mpd(&text, &final_url).map_err(|e| format!("MPD {url}: {e}"))?;
        Ok(Loaded {
            presentation,
            bytes,
            retries,
        })
    } else {
        Err(format!(
            "manifest {url}: neither an HLS playlist (#EXTM3U) nor a DASH MPD"
        ))
    }
}

/// GETs a manifest: its text, the URL it came from after redirects (which relative URIs
/// resolve against, per RFC 3986), its size and the retries it took.
async fn fetch_text(fetcher: &Fetcher, url: &str) -> Result<(String, String, u64, u32), String> {
    let fetched = fetcher
        .get(url, None, Body::Keep)
        .await
        .map_err(|e| format!("manifest {e}"))?;
    let text = String::from_utf8(fetched.body).map_err(|e| {
        format!(
            "manifest {url}: not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok((text, fetched.final_url, fetched.bytes, fetched.attempts - 1))
}

/// The longest segment played, as the playback model accepts: a longer (or zero) duration would
/// have the player wait for ever for room or divide by nothing.
const MAX_SEGMENT_S: f64 = 3600.0;

/// The renditions a player can walk: a valid ladder and the segments every quality has.
#[derive(Debug, Clone, PartialEq)]
pub struct Stream {
    pub ladder: Ladder,
    /// Ascending bitrate, as the ladder.
    pub renditions: Vec<Rendition>,
    /// Segments to play: the fewest any quality lists, capped by the config.
    pub segments: usize,
}

impl Stream {
    /// Checks the presentation: at least one quality, distinct positive bitrates, segments of
    /// sane durations in every quality. Qualities listing different numbers of segments are cut to the shortest,
    /// since a switch must find the segment in the new quality.
    pub fn new(presentation: Presentation, cap: Option<usize>) -> Result<Stream, String> {
        let renditions = presentation.renditions;
        let ladder = Ladder::new(renditions.iter().map(|r| r.bitrate_bps).collect())?;
        let listed = renditions
            .iter()
            .map(|r| r.segments.len())
            .min()
            .unwrap_or(0);
        if listed == 0 {
            return Err("a quality lists no segments".into());
        }
        let segments = cap.map_or(listed, |cap| cap.min(listed));
        for rendition in &renditions {
            for (index, segment) in rendition.segments[..segments].iter().enumerate() {
                let d = segment.duration_s;
                if !(d > 0.0 && d <= MAX_SEGMENT_S) {
                    return Err(format!(
                        "segment {index} of the {} bit/s quality lasts {d} s; a segment must last more than 0 and at most {MAX_SEGMENT_S} s",
                        rendition.bitrate_bps
                    ));
                }
            }
        }
        Ok(Stream {
            ladder,
            renditions,
            segments,
        })
    }

    /// The duration of segment `index` as the lowest quality lists it: what the player plans
    /// with before it has chosen a quality.
    pub fn nominal_duration_s(&self, index: usize) -> f64 {
        self.renditions[0].segments[index].duration_s
    }
}
