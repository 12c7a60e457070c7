//! The config table and the presentation checks, without I/O.

use std::time::Duration;

use crate::cdn::{Presentation, Rendition, SegmentRef};
use crate::has_client::{parse_config, policy_of_url, ClientConfig, Stream};

fn parse(text: &str) -> Result<ClientConfig, String> {
    parse_config(&text.parse().unwrap())
}

#[test]
fn defaults() {
    let config = ClientConfig::new("http://urr/p/direct-rr/video/master.m3u8").unwrap();
    assert_eq!(
        config,
        ClientConfig {
            url: "http://urr/p/direct-rr/video/master.m3u8".into(),
            abr: "mss".into(),
            buffer_s: 20.0,
            startup_segments: 1,
            segments: None,
            timeout: Duration::from_secs(10),
            policy: Some("direct-rr".into()),
            http2: false,
            keep_alive: true,
            max_duration: None,
        }
    );
}

#[test]
fn keep_alive_off_needs_http1() {
    let url = "url = 'http://u/v/master.m3u8'\n";
    assert!(
        !parse(&format!("{url}keep_alive = false"))
            .unwrap()
            .keep_alive
    );
    let refused = parse(&format!("{url}keep_alive = false\nhttp2 = true")).unwrap_err();
    assert!(refused.contains("needs HTTP/1.1"), "{refused}");
}

#[test]
fn every_key_and_substituted_strings() {
    let config = parse(
        "url = 'http://urr:8080/p/direct-cs/video/manifest.mpd'\nabr = 'bola'\nbuffer = '6s'\n\
         startup_segments = '2'\nsegments = 100\ntimeout = '2500ms'\npolicy = 'DirectCS'\n\
         http2 = true\nmax_duration = '60s'",
    )
    .unwrap();
    assert_eq!(config.abr, "bola");
    assert_eq!(config.buffer_s, 6.0);
    assert_eq!(config.startup_segments, 2);
    assert_eq!(config.segments, Some(100));
    assert_eq!(config.timeout, Duration::from_millis(2500));
    assert_eq!(config.policy.as_deref(), Some("DirectCS"));
    assert!(config.http2);
    assert_eq!(config.max_duration, Some(Duration::from_secs(60)));
    let numbers =
        parse("url = 'http://u/v/master.m3u8'\nbuffer = 6.5\nhttp2 = 'false'\nmax_duration = '0'")
            .unwrap();
    assert_eq!(numbers.buffer_s, 6.5);
    assert!(!numbers.http2);
    assert_eq!(numbers.max_duration, None, "0 means no limit");
}

#[test]
fn errors_name_the_key() {
    let error = |text: &str| parse(text).unwrap_err();
    let url = "url = 'http://urr/p/upstream-rr/v/master.m3u8'\n";
    assert!(error(&format!("{url}bufer = '6s'")).contains("unknown config key `bufer`"));
    assert!(error("abr = 'mss'").contains("`url` is missing"));
    assert!(error("url = 'urr/v/master.m3u8'").contains("config key `url`"));
    assert!(error("url = 'https://urr/v/master.m3u8'").contains("https is not supported"));
    assert!(error("url = 'ftp://urr/v/master.m3u8'").contains("scheme `ftp`"));
    assert!(error(&format!("{url}abr = 'fast'")).contains("unknown rate adaptation `fast`"));
    assert!(error(&format!("{url}buffer = '6'")).contains("config key `buffer`: `6` has no unit"));
    assert!(error(&format!("{url}buffer = '0s'")).contains("`buffer`"));
    assert!(error(&format!("{url}buffer = -1")).contains("`buffer`"));
    assert!(error(&format!("{url}startup_segments = 0")).contains("`startup_segments`"));
    assert!(error(&format!("{url}segments = 0")).contains("`segments`"));
    assert!(error(&format!("{url}segments = -3")).contains("negative"));
    assert!(error(&format!("{url}segments = 'many'")).contains("expected an integer"));
    assert!(error(&format!("{url}timeout = '0s'")).contains("`timeout`"));
    assert!(error(&format!("{url}http2 = 'yes'")).contains("`http2`: expected true or false"));
    assert!(error(&format!("{url}policy = 3")).contains("`policy`: expected a string"));
    assert!(error(&format!("{url}max_duration = 1e19")).contains("`max_duration`: must be at most"));
}

#[test]
fn the_policy_label_comes_from_the_url() {
    let policy = |url: &str| policy_of_url(url);
    assert_eq!(
        policy("http://urr/p/upstream-rr/video/master.m3u8").as_deref(),
        Some("upstream-rr")
    );
    assert_eq!(
        policy("http://urr/p/direct-cs/video/manifest.mpd?x=1").as_deref(),
        Some("direct-cs")
    );
    // A cdnlab manifest without a prefix is the unrewritten one: UpstreamRR.
    assert_eq!(
        policy("http://urr/video/master.m3u8").as_deref(),
        Some("upstream-rr")
    );
    // An unknown prefix is still the experimenter's label; other URLs have none.
    assert_eq!(
        policy("http://urr/p/my-policy/video/master.m3u8").as_deref(),
        Some("my-policy")
    );
    assert_eq!(policy("http://example/stream/index.m3u8"), None);
}

fn rendition(bitrate_bps: u64, segments: usize) -> Rendition {
    Rendition {
        id: None,
        bitrate_bps,
        codecs: None,
        init: None,
        segments: (0..segments)
            .map(|i| SegmentRef {
                url: format!("http://cs/{bitrate_bps}/{i}"),
                byte_range: None,
                duration_s: 2.0,
            })
            .collect(),
    }
}

#[test]
fn a_stream_needs_a_valid_ladder_and_segments_in_every_quality() {
    let presentation = |renditions| Presentation { renditions };
    let stream = Stream::new(
        presentation(vec![rendition(500_000, 10), rendition(1_000_000, 8)]),
        None,
    )
    .unwrap();
    assert_eq!(stream.segments, 8, "cut to the shortest quality");
    assert_eq!(stream.ladder.bitrates_bps(), [500_000, 1_000_000]);
    assert_eq!(stream.nominal_duration_s(7), 2.0);
    let capped = Stream::new(presentation(vec![rendition(500_000, 10)]), Some(3)).unwrap();
    assert_eq!(capped.segments, 3);
    let long_cap = Stream::new(presentation(vec![rendition(500_000, 10)]), Some(30)).unwrap();
    assert_eq!(long_cap.segments, 10);

    let error = |renditions| Stream::new(presentation(renditions), None).unwrap_err();
    assert!(error(vec![]).contains("no qualities"));
    assert!(error(vec![rendition(500_000, 4), rendition(500_000, 4)]).contains("ascending"));
    assert!(error(vec![rendition(0, 4)]).contains("0 bit/s"));
    assert!(error(vec![rendition(500_000, 4), rendition(1_000_000, 0)]).contains("no segments"));
    for bad in [0.0, -1.0, f64::NAN, 1e12] {
        let mut odd = rendition(1_000_000, 4);
        odd.segments[2].duration_s = bad;
        let text = error(vec![rendition(500_000, 4), odd]);
        assert!(
            text.contains("segment 2 of the 1000000 bit/s quality lasts"),
            "{text}"
        );
    }
    // Only the segments played are checked.
    let mut tail = rendition(500_000, 4);
    tail.segments[3].duration_s = 0.0;
    assert_eq!(
        Stream::new(presentation(vec![tail]), Some(3))
            .unwrap()
            .segments,
        3
    );
}
