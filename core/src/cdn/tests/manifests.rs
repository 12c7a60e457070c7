//! Manifests generated for each policy point every chunk where the paper says, and parse back
//! to exactly those URLs.

use super::{lab, routers};
use crate::cdn::manifest_dash::parse_mpd;
use crate::cdn::manifest_hls::{parse_master, parse_media, presentation};
use crate::cdn::{route_urr, Cdn, ChunkLocations, Decision, Policy, Presentation};

/// The URL the paper's policy gives chunk (quality, index) of `video`, from the table alone.
fn expected_url(
    table: &ChunkLocations,
    policy: Policy,
    video: &str,
    quality: usize,
    index: usize,
    file: &str,
) -> String {
    let v = table.video(video).expect("video");
    let location = v.get(quality, index).expect("chunk");
    let host = match (policy, location.cdn) {
        (Policy::UpstreamRr, _) | (Policy::DirectRr, Cdn::Upstream) => {
            "http://urr:8080".to_string()
        }
        (Policy::DirectRr, Cdn::Downstream) => "http://drr:8080".to_string(),
        (Policy::DirectCs, _) => table.server(location).expect("listed").to_string(),
    };
    format!(
        "{host}/{video}/{}/{file}",
        v.video().qualities()[quality].id
    )
}

/// The body the uRR answers for `url` (which must be on the uRR).
pub(super) fn fetch(table: &ChunkLocations, url: &str) -> String {
    let path = url
        .strip_prefix("http://urr:8080")
        .unwrap_or_else(|| panic!("{url} is not on the uRR"));
    match route_urr(path, table, &routers()) {
        Decision::Manifest(m) => m.body,
        other => panic!("{url}: {other:?}"),
    }
}

/// What a HAS client does with HLS: master, then each media playlist.
pub(super) fn hls_presentation(table: &ChunkLocations, master_url: &str) -> Presentation {
    let variants = parse_master(&fetch(table, master_url), master_url).expect("master parses");
    let pairs = variants
        .into_iter()
        .map(|variant| {
            let media =
                parse_media(&fetch(table, &variant.url), &variant.url).expect("media parses");
            (variant, media)
        })
        .collect();
    presentation(pairs)
}

fn check(
    table: &ChunkLocations,
    policy: Policy,
    video: &str,
    presentation: &Presentation,
    ext: &str,
) {
    let v = table.video(video).expect("video").video();
    assert_eq!(presentation.renditions.len(), 3);
    for (q, rendition) in presentation.renditions.iter().enumerate() {
        assert_eq!(rendition.bitrate_bps, v.qualities()[q].bitrate_bps);
        assert_eq!(rendition.segments.len(), 10);
        for (index, segment) in rendition.segments.iter().enumerate() {
            let file = format!("seg-{index:05}.{ext}");
            assert_eq!(
                segment.url,
                expected_url(table, policy, video, q, index, &file),
                "{policy} q{q} #{index}"
            );
            assert_eq!(segment.duration_s, 2.0);
            assert_eq!(segment.byte_range, None);
        }
        match &rendition.init {
            Some(init) => {
                assert_eq!(ext, "m4s");
                assert_eq!(
                    init.url,
                    expected_url(table, policy, video, q, 0, "init.mp4")
                );
            }
            None => assert_eq!(ext, "ts"),
        }
    }
}

#[test]
fn hls_for_each_policy_parses_back_to_the_policy_urls() {
    let table = lab();
    for policy in Policy::ALL {
        for (video, ext) in [("bbb", "ts"), ("fm", "m4s")] {
            let master_url = format!("http://urr:8080/p/{policy}/{video}/master.m3u8");
            let p = hls_presentation(&table, &master_url);
            check(&table, policy, video, &p, ext);
        }
    }
}

#[test]
fn dash_for_each_policy_parses_back_to_the_policy_urls() {
    let table = lab();
    for policy in Policy::ALL {
        for (video, ext) in [("bbb", "ts"), ("fm", "m4s")] {
            let url = format!("http://urr:8080/p/{policy}/{video}/manifest.mpd");
            let p = parse_mpd(&fetch(&table, &url), &url).expect("MPD parses");
            check(&table, policy, video, &p, ext);
            let ids: Vec<Option<&str>> = p.renditions.iter().map(|r| r.id.as_deref()).collect();
            assert_eq!(ids, [Some("500k"), Some("1000k"), Some("2000k")]);
        }
    }
}

#[test]
fn the_policies_differ_where_the_paper_says() {
    let table = lab();
    let media = |policy: &str| {
        fetch(
            &table,
            &format!("http://urr:8080/p/{policy}/bbb/500k/playlist.m3u8"),
        )
    };
    let (up, rr, cs) = (media("upstream-rr"), media("direct-rr"), media("direct-cs"));
    // UpstreamRR never rewrites: all 10 chunks at the uRR.
    assert_eq!(up.matches("http://urr:8080/bbb/500k/seg-").count(), 10);
    // DirectRR: the 6 downstream chunks at the dRR, the 4 upstream ones at the uRR.
    assert_eq!(rr.matches("http://drr:8080/bbb/500k/seg-").count(), 6);
    assert_eq!(rr.matches("http://urr:8080/bbb/500k/seg-").count(), 4);
    // DirectCS: no router at all.
    assert_eq!(cs.matches("http://dcs").count(), 6);
    assert_eq!(cs.matches("http://ucs").count(), 4);
    assert!(!cs.contains("rr:8080/bbb/500k/seg-"));
}

#[test]
fn unprefixed_manifests_are_the_original_upstream_rr_ones() {
    let table = lab();
    let master = fetch(&table, "http://urr:8080/bbb/master.m3u8");
    assert!(
        master.contains("\nhttp://urr:8080/bbb/500k/playlist.m3u8\n"),
        "{master}"
    );
    let prefixed = fetch(&table, "http://urr:8080/p/upstream-rr/bbb/master.m3u8");
    assert!(
        prefixed.contains("\nhttp://urr:8080/p/upstream-rr/bbb/500k/playlist.m3u8\n"),
        "{prefixed}"
    );
    let media = fetch(&table, "http://urr:8080/bbb/2000k/playlist.m3u8");
    assert_eq!(
        media,
        fetch(
            &table,
            "http://urr:8080/p/upstream-rr/bbb/2000k/playlist.m3u8"
        )
    );
}

#[test]
fn generated_text_has_the_required_tags() {
    let table = lab();
    let master = fetch(&table, "http://urr:8080/p/direct-rr/bbb/master.m3u8");
    assert!(
        master.starts_with("#EXTM3U\n#EXT-X-VERSION:3\n"),
        "{master}"
    );
    for bandwidth in ["500000", "1000000", "2000000"] {
        assert!(
            master.contains(&format!("#EXT-X-STREAM-INF:BANDWIDTH={bandwidth}\n")),
            "{master}"
        );
    }
    let media = fetch(&table, "http://urr:8080/p/direct-rr/bbb/500k/playlist.m3u8");
    for tag in [
        "#EXT-X-TARGETDURATION:2\n",
        "#EXT-X-MEDIA-SEQUENCE:0\n",
        "#EXT-X-PLAYLIST-TYPE:VOD\n",
    ] {
        assert!(media.contains(tag), "{tag} missing:\n{media}");
    }
    assert_eq!(media.matches("#EXTINF:2.000,\n").count(), 10);
    assert!(media.ends_with("#EXT-X-ENDLIST\n"));
    let fmp4 = fetch(&table, "http://urr:8080/p/direct-rr/fm/500k/playlist.m3u8");
    assert!(
        fmp4.contains("#EXT-X-VERSION:7\n")
            && fmp4.contains("#EXT-X-MAP:URI=\"http://drr:8080/fm/500k/init.mp4\"\n"),
        "{fmp4}"
    );
    let mpd = fetch(&table, "http://urr:8080/p/direct-cs/fm/manifest.mpd");
    for text in [
        "type=\"static\"",
        "mediaPresentationDuration=\"PT20.000S\"",
        "<SegmentList timescale=\"1000\" duration=\"2000\">",
        "<Representation id=\"2000k\" bandwidth=\"2000000\">",
        "mimeType=\"video/mp4\"",
    ] {
        assert!(mpd.contains(text), "{text} missing:\n{mpd}");
    }
    assert_eq!(mpd.matches("<SegmentURL media=\"http://").count(), 30);
}
