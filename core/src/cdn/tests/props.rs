//! Manifests: what the uRR writes for any video length, offload and policy reads back (HLS and
//! DASH name the same chunks), and no damaged playlist or MPD panics its reader, whose errors
//! name a line of the text.

use super::lab_of;
use super::manifests::{fetch, hls_presentation};
use crate::cdn::manifest_dash::parse_mpd;
use crate::cdn::manifest_hls::{parse_master, parse_media, parse_playlist};
use crate::cdn::{xml, ChunkLocations, ManifestError, Policy, Presentation};
use crate::testing::damaged_one_of;
use proptest::prelude::*;

const URR: &str = "http://urr:8080";

fn lab() -> impl Strategy<Value = (usize, ChunkLocations, Policy)> {
    (1..40usize)
        .prop_flat_map(|segments| {
            (
                Just(segments),
                0..=segments,
                prop::sample::select(Policy::ALL.to_vec()),
            )
        })
        .prop_map(|(segments, offloaded, policy)| (segments, lab_of(segments, offloaded), policy))
}

/// The chunk URLs of each rendition (init first), and its bitrate.
fn chunks(p: &Presentation) -> Vec<(u64, Vec<String>)> {
    p.renditions
        .iter()
        .map(|r| {
            let init = r.init.iter().map(|i| i.url.clone());
            (
                r.bitrate_bps,
                init.chain(r.segments.iter().map(|s| s.url.clone()))
                    .collect(),
            )
        })
        .collect()
}

/// The manifests of a small lab, as the uRR writes them: the damage's starting points.
fn manifests() -> Vec<String> {
    let table = lab_of(5, 2);
    [
        "bbb/master.m3u8",
        "bbb/500k/playlist.m3u8",
        "fm/1000k/playlist.m3u8",
        "fm/manifest.mpd",
    ]
    .into_iter()
    .map(|path| fetch(&table, &format!("{URR}/p/direct-rr/{path}")))
    .collect()
}

fn line_inside(error: &ManifestError, text: &str) -> Result<(), TestCaseError> {
    prop_assert!(!error.message.is_empty());
    if let Some(line) = error.line {
        prop_assert!((1..=text.split('\n').count()).contains(&line), "{error}");
    }
    Ok(())
}

proptest! {
    #[test]
    fn prop_manifest_written_reads_back((segments, table, policy) in lab()) {
        for video in ["bbb", "fm"] {
            let hls = hls_presentation(&table, &format!("{URR}/p/{policy}/{video}/master.m3u8"));
            let mpd_url = format!("{URR}/p/{policy}/{video}/manifest.mpd");
            let dash = parse_mpd(&fetch(&table, &mpd_url), &mpd_url).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let qualities = table.video(video).map(|v| v.video().qualities().len()).unwrap_or(0);
            prop_assert_eq!(hls.renditions.len(), qualities);
            for r in hls.renditions.iter().chain(&dash.renditions) {
                prop_assert_eq!(r.segments.len(), segments);
                prop_assert!(r.segments.iter().all(|s| s.duration_s == 2.0));
            }
            prop_assert_eq!(chunks(&hls), chunks(&dash), "HLS and DASH name the same chunks");
        }
    }

    #[test]
    fn prop_manifest_damaged_text(text in prop_oneof![1 => any::<String>(), 6 => damaged_one_of(manifests())]) {
        let url = format!("{URR}/p/direct-rr/bbb/x");
        for result in [
            parse_master(&text, &url).map(|_| ()),
            parse_media(&text, &url).map(|_| ()),
            parse_playlist(&text, &url).map(|_| ()),
            parse_mpd(&text, &url).map(|_| ()),
        ] {
            if let Err(error) = result {
                line_inside(&error, &text)?;
            }
        }
        if let Err(error) = xml::parse(&text) {
            prop_assert!((1..=text.split('\n').count()).contains(&error.line), "{error}");
        }
    }
}
