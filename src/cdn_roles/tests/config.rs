//! Role config parsing: defaults, the accepted shapes, and errors that name the key.

use std::time::Duration;

use toml::Table;

use crate::cdn::{Assign, Offload, DEFAULT_VNODES};
use crate::cdn_roles::config::{DcsConfig, DrrConfig, UcsConfig, UrrConfig};

fn table(text: &str) -> Table {
    text.parse().expect("test TOML")
}

#[test]
fn ucs_defaults_are_the_papers_video() {
    let config = UcsConfig::parse(&table(""), "ucs1").unwrap();
    assert_eq!(config.port, 80);
    assert_eq!(config.url.as_str(), "http://ucs1");
    assert_eq!(config.media_dir, None);
    assert!(!config.access_log);
    let [video] = &config.videos[..] else {
        panic!("one default video")
    };
    assert_eq!((video.name(), video.segments()), ("video", 100));
    assert_eq!(video.segment_duration_ms(), 2000);
    let ladder: Vec<(&str, u64)> = video
        .qualities()
        .iter()
        .map(|q| (q.id.as_str(), q.bitrate_bps))
        .collect();
    assert_eq!(
        ladder,
        [
            ("500k", 500_000),
            ("1000k", 1_000_000),
            ("2000k", 2_000_000)
        ]
    );
    let other_port = UcsConfig::parse(&table("port = 8080"), "ucs1").unwrap();
    assert_eq!(other_port.url.as_str(), "http://ucs1:8080");
}

#[test]
fn videos_in_both_shapes_and_numbers_as_strings() {
    let config = UcsConfig::parse(
        &table(
            r#"
            videos = [
              { name = "a", segments = "7", segment_duration = "4s", qualities = ["300kbit", "1.5mbit"] },
              { name = "b", container = "fmp4",
                qualities = [{ id = "low", bitrate = "250kbit", codecs = "avc1.64001f" }] },
            ]
            access_log = "true"
            "#,
        ),
        "ucs",
    )
    .unwrap();
    let a = &config.videos[0];
    assert_eq!((a.segments(), a.segment_duration_ms()), (7, 4000));
    assert_eq!(a.qualities()[1].id, "1500k");
    assert_eq!(a.qualities()[1].bitrate_bps, 1_500_000);
    let b = &config.videos[1];
    assert_eq!(b.segments(), 100);
    assert_eq!(b.qualities()[0].id, "low");
    assert_eq!(b.qualities()[0].codecs.as_deref(), Some("avc1.64001f"));
    assert!(config.access_log);
}

#[test]
fn urr_settings() {
    let config = UrrConfig::parse(
        &table(
            r#"
            upstream = ["http://ucs1", "http://ucs2"]
            assign = "least-loaded"
            offload = "first:3"
            drr = { url = "http://drr", control = "10.0.0.2:5000", node = "drr" }
            exchange_timeout = "5s"
            "#,
        ),
        "urr",
    )
    .unwrap();
    assert_eq!(config.upstream.len(), 2);
    assert_eq!(config.assign, Assign::LeastLoaded { loads: vec![0, 0] });
    assert_eq!(config.offload, Offload::FirstK(3));
    let drr = config.drr.unwrap();
    assert_eq!(
        (drr.control.as_str(), drr.node.as_str()),
        ("10.0.0.2:5000", "drr")
    );
    assert_eq!(config.exchange_timeout, Duration::from_secs(5));

    let short = UrrConfig::parse(
        &table("upstream = 'http://ucs'\ndrr = 'http://drr:8080'"),
        "u",
    )
    .unwrap();
    let drr = short.drr.unwrap();
    assert_eq!(
        (drr.control.as_str(), drr.node.as_str()),
        ("drr:4433", "drr")
    );
    assert_eq!(short.offload, Offload::All);
    assert_eq!(
        short.assign,
        Assign::ConsistentHash {
            vnodes: DEFAULT_VNODES
        }
    );
}

#[test]
fn drr_and_dcs_settings() {
    let drr = DrrConfig::parse(&table(
        "dcs = ['http://dcs1', { url = 'http://dcs2', control = 'dcs2:9000' }]\nassign = 'consistent-hash:50'\nurr_node = 'up'",
    ))
    .unwrap();
    assert_eq!(drr.dcs[0].control, "dcs1:4433");
    assert_eq!(
        (drr.dcs[1].control.as_str(), drr.dcs[1].node.as_str()),
        ("dcs2:9000", "dcs2")
    );
    assert_eq!(drr.assign, Assign::ConsistentHash { vnodes: 50 });
    assert_eq!(
        (drr.port, drr.control_port, drr.urr_node.as_str()),
        (80, 4433, "up")
    );
    let dcs = DcsConfig::parse(&table(
        "fetch_from_origin = 'http://ucs1:8080'\norigin_timeout = '2s'",
    ))
    .unwrap();
    assert_eq!(dcs.fetch_from_origin.unwrap().as_str(), "http://ucs1:8080");
    assert_eq!(dcs.origin_timeout, Duration::from_secs(2));
    assert_eq!(dcs.drr_node, "drr");
    assert_eq!(
        DcsConfig::parse(&table("")).unwrap().fetch_from_origin,
        None
    );
}

#[test]
fn errors_name_the_key() {
    let ucs = |text| UcsConfig::parse(&table(text), "ucs").unwrap_err();
    let urr = |text: &str| UrrConfig::parse(&table(text), "urr").unwrap_err();
    assert!(ucs("prot = 80").contains("unknown config key `prot` for role ucs"));
    assert!(ucs("port = 70000").contains("`port`"));
    assert!(ucs("videos = [{ segmnets = 3 }]").contains("unknown config key `videos[0].segmnets`"));
    assert!(ucs("videos = [{ segments = 0 }]").contains("videos[0]"));
    assert!(ucs("videos = [{ qualities = ['fast'] }]").contains("`videos[0].qualities[0]`"));
    assert!(ucs("videos = [{ segment_duration = '2' }]").contains("`videos[0].segment_duration`"));
    assert!(ucs("url = 'ftp://x'").contains("`url`"));
    assert!(urr("").contains("`upstream` is missing"));
    assert!(urr("upstream = 'http://ucs'").contains("`drr` is missing"));
    assert!(
        urr("upstream = 'http://ucs'\ndrr = 'http://drr'\noffload = 'half'").contains("`offload`")
    );
    assert!(
        urr("upstream = 'http://ucs'\ndrr = 'http://drr'\nassign = 'random'").contains("`assign`")
    );
    for control in [
        "drr",
        "drr:99999",
        "drr:x",
        "drr:0",
        ":4433",
        "[]:4433",
        "fd00::1",
        "[drr]:4433",
        "fd00::1:4433",
        "[fd00::1:4433",
    ] {
        let refused = urr(&format!(
            "upstream = 'http://ucs'\ndrr = {{ url = 'http://drr', control = '{control}' }}"
        ));
        assert!(
            refused.contains("`drr.control`") && refused.contains("HOST:PORT"),
            "{control}: {refused}"
        );
    }
    for control in ["drr:4433", "10.0.0.2:1", "[fd00::1]:4433"] {
        let config = format!(
            "upstream = 'http://ucs'\ndrr = {{ url = 'http://drr', control = '{control}' }}"
        );
        let parsed = UrrConfig::parse(&table(&config), "urr").expect(control);
        assert_eq!(parsed.drr.map(|drr| drr.control).as_deref(), Some(control));
    }
    assert!(DrrConfig::parse(&table(""))
        .unwrap_err()
        .contains("`dcs` is missing"));
    assert!(DrrConfig::parse(&table("dcs = [3]"))
        .unwrap_err()
        .contains("`dcs[0]`"));
    assert!(DcsConfig::parse(&table("origin_timeout = 5"))
        .unwrap_err()
        .contains("`origin_timeout`"));
}

#[test]
fn urr_without_drr_keeps_everything_upstream() {
    let config =
        UrrConfig::parse(&table("upstream = 'http://ucs'\noffload = 'none'"), "urr").unwrap();
    assert_eq!(config.drr, None);
}

/// A catalogue too large to hold and send whole, or a time limit that would fail every
/// exchange at once, is refused with its key named.
#[test]
fn oversized_catalogues_and_zero_limits_are_refused() {
    let ucs = |text: &str| UcsConfig::parse(&table(text), "ucs1").map(|_| ());
    assert!(ucs("videos = [{ name = 'a', segments = 100000 }]").is_ok());
    let refused =
        ucs("videos = [{ name = 'a', segments = 1000000 }, { name = 'b', segments = 1000000 }]")
            .unwrap_err();
    assert!(
        refused.contains("videos") && refused.contains("chunks"),
        "{refused}"
    );
    let refused = DcsConfig::parse(&table("origin_timeout = '0s'")).unwrap_err();
    assert!(refused.contains("origin_timeout"), "{refused}");
    let refused =
        DrrConfig::parse(&table("dcs = ['http://dcs1']\nexchange_timeout = '0s'")).unwrap_err();
    assert!(refused.contains("exchange_timeout"), "{refused}");
}
