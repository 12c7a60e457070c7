//! DASH MPDs (ISO/IEC 23009-1): the static MPD the uRR writes — one Period, one video
//! AdaptationSet, a Representation per quality with a SegmentList of absolute SegmentURLs —
//! and a reader for SegmentList MPDs written by other tools: BaseURL at every level, SegmentList
//! inherited from the AdaptationSet or Period, SegmentTimeline durations, mediaRange,
//! Initialization, audio AdaptationSets skipped. SegmentTemplate and SegmentBase MPDs, live
//! (`type="dynamic"`) MPDs and several Periods are refused with an error that says so.

use super::content::Container;
use super::manifest::{
    seconds_ms, ByteRange, InitRef, ManifestError, Presentation, Rendition, SegmentRef,
};
use super::policy::Links;
use super::url::resolve;
use super::xml::{self, Element};

/// The MPD for the links' video and policy.
pub(crate) fn mpd(links: &Links<'_>) -> String {
    let video = links.video().video();
    let ms = video.segment_duration_ms();
    let (mime, profile) = match video.container() {
        Container::Ts => ("video/mp2t", "urn:mpeg:dash:profile:mp2t-main:2011"),
        Container::Fmp4 => ("video/mp4", "urn:mpeg:dash:profile:isoff-main:2011"),
    };
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" profiles=\"{profile}\" type=\"static\" \
         mediaPresentationDuration=\"PT{}S\" minBufferTime=\"PT{}S\">\n\
         \x20 <Period id=\"0\" start=\"PT0S\">\n\
         \x20   <AdaptationSet id=\"0\" contentType=\"video\" mimeType=\"{mime}\" segmentAlignment=\"true\" startWithSAP=\"1\">\n",
        seconds_ms(video.duration_ms()),
        seconds_ms(ms),
    );
    for (q, quality) in video.qualities().iter().enumerate() {
        out.push_str(&format!(
            "      <Representation id=\"{}\" bandwidth=\"{}\"",
            escape(&quality.id),
            quality.bitrate_bps
        ));
        if let Some(codecs) = &quality.codecs {
            out.push_str(&format!(" codecs=\"{}\"", escape(codecs)));
        }
        out.push_str(&format!(
            ">\n        <SegmentList timescale=\"1000\" duration=\"{ms}\">\n"
        ));
        if video.container() == Container::Fmp4 {
            out.push_str(&format!(
                "          <Initialization sourceURL=\"{}\"/>\n",
                escape(&links.init_url(q))
            ));
        }
        for index in 0..video.segments() {
            out.push_str(&format!(
                "          <SegmentURL media=\"{}\"/>\n",
                escape(&links.segment_url(q, index))
            ));
        }
        out.push_str("        </SegmentList>\n      </Representation>\n");
    }
    out.push_str("    </AdaptationSet>\n  </Period>\n</MPD>\n");
    out
}

/// Escapes text for a double-quoted XML attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Parses an MPD fetched from `url` (BaseURLs and segment URLs resolve against it).
pub fn parse_mpd(text: &str, url: &str) -> Result<Presentation, ManifestError> {
    let root = xml::parse(text).map_err(|e| ManifestError::at(e.line, e.message))?;
    if root.name != "MPD" {
        return Err(ManifestError::at(
            root.line,
            format!("the root element is <{}>, not <MPD>", root.name),
        ));
    }
    if root.attr("type") == Some("dynamic") {
        return Err(ManifestError::at(
            root.line,
            "live (type=\"dynamic\") MPDs are not supported",
        ));
    }
    let base = base_url(&root, url)?;
    let mut periods = root.children_named("Period");
    let period = periods
        .next()
        .ok_or_else(|| ManifestError::at(root.line, "the MPD has no <Period>"))?;
    if let Some(second) = periods.next() {
        return Err(ManifestError::at(
            second.line,
            "MPDs with several <Period>s are not supported",
        ));
    }
    let base = base_url(period, &base)?;
    let sets: Vec<&Element> = period.children_named("AdaptationSet").collect();
    let marked = sets.iter().any(|&set| content_type(set, None).is_some());
    let mut renditions = Vec::new();
    for &set in &sets {
        let set_base = base_url(set, &base)?;
        for rep in set.children_named("Representation") {
            // Without any contentType or mimeType, every set is taken to be video.
            if marked && content_type(set, Some(rep)) != Some("video") {
                continue;
            }
            renditions.push(representation(period, set, rep, &set_base)?);
        }
    }
    if renditions.is_empty() {
        return Err(ManifestError::at(
            period.line,
            "the Period has no video Representation",
        ));
    }
    Ok(Presentation::sorted(renditions))
}

/// `video`, `audio`, … from contentType or the mimeType's type, on the Representation or its
/// AdaptationSet.
fn content_type<'a>(set: &'a Element, rep: Option<&'a Element>) -> Option<&'a str> {
    let of = |e: &'a Element| {
        e.attr("contentType")
            .or_else(|| e.attr("mimeType").and_then(|m| m.split('/').next()))
    };
    rep.and_then(of).or_else(|| of(set)).or_else(|| {
        // A set with no marking of its own is classified by its first Representation.
        set.child("Representation")
            .and_then(|r| r.attr("mimeType"))
            .and_then(|m| m.split('/').next())
    })
}

/// `base` with the element's first BaseURL child applied.
fn base_url(element: &Element, base: &str) -> Result<String, ManifestError> {
    match element.child("BaseURL") {
        Some(b) => {
            resolve(base, b.text.trim()).map_err(|e| ManifestError::at(b.line, e.to_string()))
        }
        None => Ok(base.to_string()),
    }
}

fn representation(
    period: &Element,
    set: &Element,
    rep: &Element,
    base: &str,
) -> Result<Rendition, ManifestError> {
    let line = rep.line;
    let bandwidth = rep
        .attr("bandwidth")
        .ok_or_else(|| ManifestError::at(line, "<Representation> without bandwidth"))?;
    let bitrate_bps = bandwidth.trim().parse().map_err(|_| {
        ManifestError::at(line, format!("bandwidth {bandwidth:?} is not an integer"))
    })?;
    let base = base_url(rep, base)?;
    // SegmentList at the Representation, else inherited from the AdaptationSet or the Period;
    // attributes and children missing at a lower level come from the levels above.
    let lists: Vec<&Element> = [rep, set, period]
        .into_iter()
        .filter_map(|e| e.child("SegmentList"))
        .collect();
    if lists.is_empty() {
        let other = [rep, set, period].into_iter().find_map(|e| {
            e.child("SegmentTemplate")
                .or_else(|| e.child("SegmentBase"))
        });
        let what = other.map_or("no SegmentList", |e| {
            if e.name == "SegmentTemplate" {
                "SegmentTemplate"
            } else {
                "SegmentBase"
            }
        });
        return Err(ManifestError::at(
            line,
            format!("<Representation> uses {what}; only SegmentList is supported"),
        ));
    }
    let attr = |name: &str| lists.iter().find_map(|l| l.attr(name));
    let timescale = match attr("timescale") {
        Some(t) => t
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&t| t > 0)
            .ok_or_else(|| {
                ManifestError::at(line, format!("timescale {t:?} is not a positive integer"))
            })?,
        None => 1,
    };
    let urls: Vec<&Element> = lists
        .iter()
        .map(|l| l.children_named("SegmentURL").collect::<Vec<_>>())
        .find(|urls| !urls.is_empty())
        .ok_or_else(|| ManifestError::at(line, "<SegmentList> has no <SegmentURL>"))?;
    let durations = durations(&lists, urls.len(), timescale, line)?;
    let mut segments = Vec::with_capacity(urls.len());
    for (segment, duration_s) in urls.iter().zip(durations) {
        let url = match segment.attr("media") {
            Some(media) => {
                resolve(&base, media).map_err(|e| ManifestError::at(segment.line, e.to_string()))?
            }
            None => base.clone(),
        };
        let byte_range = segment
            .attr("mediaRange")
            .map(|r| range(r, segment.line))
            .transpose()?;
        segments.push(SegmentRef {
            url,
            byte_range,
            duration_s,
        });
    }
    let init = match lists.iter().find_map(|l| l.child("Initialization")) {
        Some(init) => Some(InitRef {
            url: match init.attr("sourceURL") {
                Some(source) => resolve(&base, source)
                    .map_err(|e| ManifestError::at(init.line, e.to_string()))?,
                None => base.clone(),
            },
            byte_range: init
                .attr("range")
                .map(|r| range(r, init.line))
                .transpose()?,
        }),
        None => None,
    };
    Ok(Rendition {
        id: rep.attr("id").map(str::to_string),
        bitrate_bps,
        codecs: rep
            .attr("codecs")
            .or_else(|| set.attr("codecs"))
            .map(str::to_string),
        init,
        segments,
    })
}

/// Each segment's duration in seconds, from the lowest-level SegmentList that gives a
/// SegmentTimeline or a constant `duration` (a lower level overrides the levels above).
fn durations(
    lists: &[&Element],
    count: usize,
    timescale: u64,
    line: usize,
) -> Result<Vec<f64>, ManifestError> {
    let scale = timescale as f64;
    for list in lists {
        if let Some(timeline) = list.child("SegmentTimeline") {
            return timeline_durations(timeline, count, scale);
        }
        if let Some(duration) = list.attr("duration") {
            let d: u64 = duration.trim().parse().map_err(|_| {
                ManifestError::at(
                    list.line,
                    format!("duration {duration:?} is not an integer"),
                )
            })?;
            return Ok(vec![d as f64 / scale; count]);
        }
    }
    Err(ManifestError::at(
        line,
        "<SegmentList> has neither duration nor SegmentTimeline",
    ))
}

/// Durations from `<S d= r=>` entries, which must cover exactly `count` segments.
fn timeline_durations(
    timeline: &Element,
    count: usize,
    scale: f64,
) -> Result<Vec<f64>, ManifestError> {
    let mut out = Vec::with_capacity(count);
    for s in timeline.children_named("S") {
        let d: u64 = s
            .attr("d")
            .and_then(|d| d.trim().parse().ok())
            .ok_or_else(|| ManifestError::at(s.line, "<S> needs an integer d"))?;
        let repeat: i64 = match s.attr("r") {
            Some(r) => r
                .trim()
                .parse()
                .map_err(|_| ManifestError::at(s.line, format!("r {r:?} is not an integer")))?,
            None => 0,
        };
        if repeat < 0 {
            return Err(ManifestError::at(
                s.line,
                "open-ended repeats (r < 0) are not supported",
            ));
        }
        // Expand at most one past the segments there are: a huge r costs nothing and an
        // overlong timeline is still detected.
        let room = (count + 1).saturating_sub(out.len()) as u64;
        let times = (repeat as u64).saturating_add(1).min(room);
        out.extend(std::iter::repeat_n(d as f64 / scale, times as usize));
    }
    if out.len() != count {
        return Err(ManifestError::at(
            timeline.line,
            format!(
                "the SegmentTimeline covers {} segments, the SegmentList has {count}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// `first-last`, inclusive, as in HTTP.
fn range(text: &str, line: usize) -> Result<ByteRange, ManifestError> {
    let bad = || ManifestError::at(line, format!("byte range {text:?} is not FIRST-LAST"));
    let (first, last) = text.trim().split_once('-').ok_or_else(bad)?;
    let first: u64 = first.parse().map_err(|_| bad())?;
    let last: u64 = last.parse().map_err(|_| bad())?;
    if last < first {
        return Err(bad());
    }
    Ok(ByteRange {
        offset: first,
        length: last - first + 1,
    })
}
