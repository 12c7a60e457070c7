//! HLS (RFC 8216) playlists: the master and media playlists the uRR writes, and a reader for
//! those and for playlists written by other tools (CRLF line ends, a byte-order mark, blank
//! lines, comments, relative URIs, byte ranges, tags it does not need).
//!
//! Written playlists list one absolute URI per segment, so a player that resolves against the
//! pre-redirect URL and one that resolves against the final URL fetch the same thing. Version 3
//! (decimal EXTINF durations) for MPEG-2 TS; 7 for fMP4, whose init segment needs EXT-X-MAP.

use super::content::Container;
use super::manifest::{
    seconds_ms, ByteRange, InitRef, ManifestError, Presentation, Rendition, SegmentRef,
};
use super::policy::Links;
use super::url::resolve;

fn version(container: Container) -> u32 {
    match container {
        Container::Ts => 3,
        Container::Fmp4 => 7,
    }
}

/// The master playlist: one EXT-X-STREAM-INF per quality, in the video's order.
pub(crate) fn master(links: &Links<'_>) -> String {
    let video = links.video().video();
    let mut out = format!(
        "#EXTM3U\n#EXT-X-VERSION:{}\n#EXT-X-INDEPENDENT-SEGMENTS\n",
        version(video.container())
    );
    for (q, quality) in video.qualities().iter().enumerate() {
        out.push_str(&format!(
            "#EXT-X-STREAM-INF:BANDWIDTH={}",
            quality.bitrate_bps
        ));
        if let Some(codecs) = &quality.codecs {
            out.push_str(&format!(",CODECS=\"{codecs}\""));
        }
        out.push('\n');
        out.push_str(&links.media_playlist_url(q));
        out.push('\n');
    }
    out
}

/// The media playlist of quality `quality`: every segment with its duration and URL.
pub(crate) fn media(links: &Links<'_>, quality: usize) -> String {
    let video = links.video().video();
    let ms = video.segment_duration_ms();
    // EXTINF rounded to the nearest integer must not exceed the target: ceil is always safe.
    let target = ms.div_ceil(1000);
    let mut out = format!(
        "#EXTM3U\n#EXT-X-VERSION:{}\n#EXT-X-TARGETDURATION:{target}\n#EXT-X-MEDIA-SEQUENCE:0\n#EXT-X-PLAYLIST-TYPE:VOD\n",
        version(video.container())
    );
    if video.container() == Container::Fmp4 {
        out.push_str(&format!("#EXT-X-MAP:URI=\"{}\"\n", links.init_url(quality)));
    }
    let extinf = format!("#EXTINF:{},\n", seconds_ms(ms));
    for index in 0..video.segments() {
        out.push_str(&extinf);
        out.push_str(&links.segment_url(quality, index));
        out.push('\n');
    }
    out.push_str("#EXT-X-ENDLIST\n");
    out
}

/// One EXT-X-STREAM-INF entry of a master playlist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub bandwidth_bps: u64,
    pub codecs: Option<String>,
    /// The media playlist's absolute URL.
    pub url: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MediaPlaylist {
    /// EXT-X-TARGETDURATION; some writers omit it.
    pub target_duration_s: Option<u64>,
    pub media_sequence: u64,
    pub init: Option<InitRef>,
    pub segments: Vec<SegmentRef>,
    /// EXT-X-ENDLIST seen: the playlist is complete (VOD).
    pub ended: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Playlist {
    Master(Vec<Variant>),
    Media(MediaPlaylist),
}

/// Parses a master playlist fetched from `url` (relative URIs resolve against it). Only the
/// tests need the master alone: the client reads either kind with `parse_playlist`.
#[cfg(test)]
pub fn parse_master(text: &str, url: &str) -> Result<Vec<Variant>, ManifestError> {
    match parse_playlist(text, url)? {
        Playlist::Master(variants) => Ok(variants),
        Playlist::Media(_) => Err(ManifestError::whole(
            "expected a master playlist, found a media playlist",
        )),
    }
}

/// Parses a media playlist fetched from `url` (relative URIs resolve against it).
pub fn parse_media(text: &str, url: &str) -> Result<MediaPlaylist, ManifestError> {
    match parse_playlist(text, url)? {
        Playlist::Media(media) => Ok(media),
        Playlist::Master(_) => Err(ManifestError::whole(
            "expected a media playlist, found a master playlist",
        )),
    }
}

/// A rendition for each variant, from the variant and its parsed media playlist.
pub fn presentation(variants: Vec<(Variant, MediaPlaylist)>) -> Presentation {
    Presentation::sorted(
        variants
            .into_iter()
            .map(|(variant, media)| Rendition {
                id: None,
                bitrate_bps: variant.bandwidth_bps,
                codecs: variant.codecs,
                init: media.init,
                segments: media.segments,
            })
            .collect(),
    )
}

/// Parses either kind of playlist, telling which it is by its tags.
pub fn parse_playlist(text: &str, url: &str) -> Result<Playlist, ManifestError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty());
    match lines.next() {
        Some((_, "#EXTM3U")) => {}
        Some((line, _)) => {
            return Err(ManifestError::at(
                line,
                "a playlist must start with #EXTM3U",
            ))
        }
        None => return Err(ManifestError::whole("the playlist is empty")),
    }
    let mut p = Parser {
        url,
        ..Parser::default()
    };
    for (line, text) in lines {
        p.line(line, text)?;
    }
    p.finish()
}

#[derive(Default)]
struct Parser<'a> {
    url: &'a str,
    variants: Vec<Variant>,
    /// An EXT-X-STREAM-INF waiting for its URI line: (line, bandwidth, codecs).
    stream_inf: Option<(usize, u64, Option<String>)>,
    /// An EXTINF waiting for its URI line: (line, duration).
    extinf: Option<(usize, f64)>,
    byte_range: Option<ByteRange>,
    /// End of the previous segment's byte range: where an EXT-X-BYTERANGE without `@offset`
    /// starts.
    range_end: Option<u64>,
    is_media: bool,
    target_duration_s: Option<u64>,
    media_sequence: u64,
    init: Option<InitRef>,
    segments: Vec<SegmentRef>,
    ended: bool,
}

impl Parser<'_> {
    fn line(&mut self, line: usize, text: &str) -> Result<(), ManifestError> {
        if !text.starts_with('#') {
            return self.uri(line, text);
        }
        // Lines starting with `#` but not `#EXT` are comments.
        if !text.starts_with("#EXT") {
            return Ok(());
        }
        let (tag, value) = text.split_once(':').unwrap_or((text, ""));
        match tag {
            "#EXT-X-STREAM-INF" => {
                let attrs = attributes(value, line)?;
                let bandwidth = find(&attrs, "BANDWIDTH")
                    .ok_or_else(|| ManifestError::at(line, "EXT-X-STREAM-INF without BANDWIDTH"))?;
                let bandwidth = number(bandwidth, line, "BANDWIDTH")?;
                self.stream_inf =
                    Some((line, bandwidth, find(&attrs, "CODECS").map(str::to_string)));
            }
            "#EXTINF" => {
                self.is_media = true;
                let duration = value.split(',').next().unwrap_or("").trim();
                let duration: f64 = duration
                    .parse()
                    .ok()
                    .filter(|d: &f64| d.is_finite() && *d >= 0.0)
                    .ok_or_else(|| {
                        ManifestError::at(
                            line,
                            format!("EXTINF duration {duration:?} is not a number of seconds"),
                        )
                    })?;
                self.extinf = Some((line, duration));
            }
            "#EXT-X-TARGETDURATION" => {
                self.is_media = true;
                self.target_duration_s = Some(number(value, line, "EXT-X-TARGETDURATION")?);
            }
            "#EXT-X-MEDIA-SEQUENCE" => {
                self.is_media = true;
                self.media_sequence = number(value, line, "EXT-X-MEDIA-SEQUENCE")?;
            }
            "#EXT-X-BYTERANGE" => self.byte_range = Some(self.range(value, line)?),
            "#EXT-X-MAP" => {
                let attrs = attributes(value, line)?;
                let uri = find(&attrs, "URI")
                    .ok_or_else(|| ManifestError::at(line, "EXT-X-MAP without URI"))?;
                let byte_range = match find(&attrs, "BYTERANGE") {
                    // EXT-X-MAP's BYTERANGE always has its offset.
                    Some(range) if range.contains('@') => Some(self.range(range, line)?),
                    Some(_) => {
                        return Err(ManifestError::at(
                            line,
                            "EXT-X-MAP BYTERANGE needs an @offset",
                        ))
                    }
                    None => None,
                };
                self.init = Some(InitRef {
                    url: self.resolve(uri, line)?,
                    byte_range,
                });
            }
            "#EXT-X-ENDLIST" => self.ended = true,
            _ => {}
        }
        Ok(())
    }

    /// `length[@offset]`, continuing the previous segment's range without an offset.
    fn range(&self, value: &str, line: usize) -> Result<ByteRange, ManifestError> {
        let (length, offset) = match value.split_once('@') {
            Some((length, offset)) => (length, Some(number(offset, line, "byte range offset")?)),
            None => (value, None),
        };
        let length = number(length, line, "byte range length")?;
        let offset = match offset.or(self.range_end) {
            Some(offset) => offset,
            None => {
                return Err(ManifestError::at(
                    line,
                    "EXT-X-BYTERANGE without @offset and no previous range to continue",
                ))
            }
        };
        Ok(ByteRange { offset, length })
    }

    fn resolve(&self, uri: &str, line: usize) -> Result<String, ManifestError> {
        resolve(self.url, uri).map_err(|e| ManifestError::at(line, e.to_string()))
    }

    fn uri(&mut self, line: usize, uri: &str) -> Result<(), ManifestError> {
        if let Some((_, bandwidth_bps, codecs)) = self.stream_inf.take() {
            let url = self.resolve(uri, line)?;
            self.variants.push(Variant {
                bandwidth_bps,
                codecs,
                url,
            });
        } else if let Some((_, duration_s)) = self.extinf.take() {
            let url = self.resolve(uri, line)?;
            let byte_range = self.byte_range.take();
            self.range_end = byte_range.map(|r| r.offset.saturating_add(r.length));
            self.segments.push(SegmentRef {
                url,
                byte_range,
                duration_s,
            });
        } else {
            return Err(ManifestError::at(
                line,
                format!("URI {uri:?} follows neither #EXTINF nor #EXT-X-STREAM-INF"),
            ));
        }
        Ok(())
    }

    fn finish(self) -> Result<Playlist, ManifestError> {
        if let Some((line, _, _)) = self.stream_inf {
            return Err(ManifestError::at(
                line,
                "EXT-X-STREAM-INF without a URI line after it",
            ));
        }
        if let Some((line, _)) = self.extinf {
            return Err(ManifestError::at(
                line,
                "EXTINF without a URI line after it",
            ));
        }
        match (self.variants.is_empty(), self.is_media) {
            (false, true) => Err(ManifestError::whole(
                "the playlist mixes variant streams and media segments",
            )),
            (false, false) => Ok(Playlist::Master(self.variants)),
            (true, true) => Ok(Playlist::Media(MediaPlaylist {
                target_duration_s: self.target_duration_s,
                media_sequence: self.media_sequence,
                init: self.init,
                segments: self.segments,
                ended: self.ended,
            })),
            (true, false) => Err(ManifestError::whole(
                "the playlist has neither variant streams nor media segments",
            )),
        }
    }
}

fn number(text: &str, line: usize, what: &str) -> Result<u64, ManifestError> {
    text.trim().parse().map_err(|_| {
        ManifestError::at(
            line,
            format!("{what} {text:?} is not a non-negative integer"),
        )
    })
}

/// An attribute list (`KEY=value,KEY="quoted, with commas"`) as (key, value) pairs, quotes
/// removed.
fn attributes(list: &str, line: usize) -> Result<Vec<(&str, &str)>, ManifestError> {
    let mut attrs = Vec::new();
    let mut rest = list.trim();
    while !rest.is_empty() {
        let (key, after) = rest
            .split_once('=')
            .ok_or_else(|| ManifestError::at(line, format!("attribute without '=' in {list:?}")))?;
        let key = key.trim();
        if key.is_empty()
            || !key
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(ManifestError::at(
                line,
                format!("bad attribute name {key:?}"),
            ));
        }
        let after = after.trim_start();
        let (value, remainder) = match after.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"').ok_or_else(|| {
                    ManifestError::at(line, format!("unterminated quoted value of {key}"))
                })?;
                let remainder = quoted[end + 1..].trim_start();
                if !remainder.is_empty() && !remainder.starts_with(',') {
                    return Err(ManifestError::at(
                        line,
                        format!("text after the quoted value of {key}"),
                    ));
                }
                (&quoted[..end], remainder)
            }
            None => match after.find(',') {
                Some(comma) => (after[..comma].trim(), &after[comma..]),
                None => (after.trim(), ""),
            },
        };
        attrs.push((key, value));
        rest = remainder
            .strip_prefix(',')
            .unwrap_or(remainder)
            .trim_start();
    }
    Ok(attrs)
}

fn find<'a>(attrs: &[(&str, &'a str)], key: &str) -> Option<&'a str> {
    attrs.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
}
