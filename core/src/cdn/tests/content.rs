//! Videos: validation, exact sizes, lookups, and the synthetic payload generator.

use super::video;
use crate::cdn::content::POLICY_PREFIX;
use crate::cdn::{
    fill, parse_path, segment_size, Catalog, Container, Item, LookupError, Payload, Quality, Video,
    VideoSpec,
};

fn spec() -> VideoSpec {
    VideoSpec {
        name: "v".into(),
        segment_duration_s: 2.0,
        qualities: vec![Quality {
            id: "q".into(),
            bitrate_bps: 1_000_000,
            codecs: None,
        }],
        segments: 3,
        container: Container::Ts,
    }
}

#[test]
fn segment_sizes_are_bitrate_times_duration_over_8() {
    let v = video("v", 5, Container::Ts);
    assert_eq!(v.segment_size(0), Some(125_000));
    assert_eq!(v.segment_size(1), Some(250_000));
    assert_eq!(v.segment_size(2), Some(500_000));
    assert_eq!(v.segment_size(3), None);
    assert_eq!(v.duration_ms(), 10_000);
    // 1 ms at 12 bit/s is 1.5 bytes: rounded down.
    assert_eq!(segment_size(12_000, 1), 1);
    assert_eq!(segment_size(100_000_000_000, 600_000), 7_500_000_000_000);
    let odd = Video::new(VideoSpec {
        segment_duration_s: 1.001,
        ..spec()
    })
    .expect("1.001 s is whole ms");
    assert_eq!(odd.segment_duration_ms(), 1001);
    assert_eq!(odd.segment_size(0), Some(125_125));
}

#[test]
fn invalid_videos_are_rejected_with_the_reason() {
    let rejected = |s: VideoSpec, needle: &str| match Video::new(s) {
        Err(e) => assert!(e.to_string().contains(needle), "{e} lacks {needle:?}"),
        Ok(v) => panic!("accepted {v:?}"),
    };
    rejected(
        VideoSpec {
            name: "../x".into(),
            ..spec()
        },
        "name",
    );
    rejected(
        VideoSpec {
            name: POLICY_PREFIX.into(),
            ..spec()
        },
        "reserved",
    );
    rejected(
        VideoSpec {
            segment_duration_s: 0.0,
            ..spec()
        },
        "segment_duration_s",
    );
    rejected(
        VideoSpec {
            segment_duration_s: f64::NAN,
            ..spec()
        },
        "segment_duration_s",
    );
    rejected(
        VideoSpec {
            segment_duration_s: 2.0005,
            ..spec()
        },
        "whole number of milliseconds",
    );
    rejected(
        VideoSpec {
            segments: 0,
            ..spec()
        },
        "segments",
    );
    rejected(
        VideoSpec {
            segments: 1_000_001,
            ..spec()
        },
        "segments",
    );
    rejected(
        VideoSpec {
            qualities: vec![],
            ..spec()
        },
        "qualities",
    );
    let q = |id: &str, bitrate_bps, codecs: Option<&str>| Quality {
        id: id.into(),
        bitrate_bps,
        codecs: codecs.map(Into::into),
    };
    rejected(
        VideoSpec {
            qualities: vec![q("a", 1, None), q("a", 2, None)],
            ..spec()
        },
        "twice",
    );
    rejected(
        VideoSpec {
            qualities: vec![q("a", 0, None)],
            ..spec()
        },
        "bitrate_bps",
    );
    rejected(
        VideoSpec {
            qualities: vec![q("a/b", 1, None)],
            ..spec()
        },
        "quality id",
    );
    rejected(
        VideoSpec {
            qualities: vec![q("a", 1, Some("avc1\"><x"))],
            ..spec()
        },
        "codecs",
    );
}

#[test]
fn video_serde_round_trips_and_validates() {
    let v = video("bbb", 7, Container::Fmp4);
    let json = serde_json::to_string(&v).expect("serialize");
    assert!(json.contains("\"segment_duration_s\":2.0"), "{json}");
    assert!(json.contains("\"container\":\"fmp4\""), "{json}");
    assert_eq!(
        serde_json::from_str::<Video>(&json).expect("deserialize"),
        v
    );
    let bad = json.replace("\"bbb\"", "\"../bbb\"");
    assert!(serde_json::from_str::<Video>(&bad).is_err());
}

#[test]
fn catalog_lookups_name_what_is_missing() {
    let catalog = Catalog::new(vec![
        video("bbb", 10, Container::Ts),
        video("fm", 10, Container::Fmp4),
    ])
    .expect("catalog");
    let resolve = |target: &str| {
        let request = parse_path(target).expect("well-formed");
        catalog
            .resolve(&request)
            .map(|(v, item)| (v.name().to_string(), item))
    };
    assert_eq!(
        resolve("/bbb/1000k/seg-00009.ts"),
        Ok((
            "bbb".into(),
            Item::Segment {
                quality: 1,
                index: 9
            }
        ))
    );
    assert_eq!(
        resolve("/p/direct-rr/fm/2000k/playlist.m3u8"),
        Ok(("fm".into(), Item::MediaPlaylist { quality: 2 }))
    );
    assert_eq!(
        resolve("/fm/500k/init.mp4"),
        Ok(("fm".into(), Item::Init { quality: 0 }))
    );
    assert_eq!(
        resolve("/nope/master.m3u8"),
        Err(LookupError::UnknownVideo {
            video: "nope".into()
        })
    );
    assert!(matches!(
        resolve("/bbb/3000k/seg-00000.ts"),
        Err(LookupError::UnknownQuality { .. })
    ));
    assert_eq!(
        resolve("/bbb/500k/seg-00010.ts"),
        Err(LookupError::SegmentOutOfRange {
            video: "bbb".into(),
            index: 10,
            segments: 10
        })
    );
    assert!(matches!(
        resolve("/bbb/500k/init.mp4"),
        Err(LookupError::NoInitSegment { .. })
    ));
    assert!(matches!(
        resolve("/bbb/500k/seg-00000.m4s"),
        Err(LookupError::WrongExtension { expected: "ts", .. })
    ));
    assert!(Catalog::new(vec![
        video("a", 1, Container::Ts),
        video("a", 2, Container::Ts)
    ])
    .is_err());
}

#[test]
fn fill_is_deterministic_and_range_consistent() {
    let v = video("bbb", 10, Container::Ts);
    let q = &v.qualities()[0];
    let size = v.segment_size(0).expect("quality 0") as usize;
    let mut whole = vec![0u8; size];
    fill(&v, q, 3, 0, &mut whole);
    let mut again = vec![0u8; size];
    Payload::new(&v, q, 3).fill(0, &mut again);
    assert_eq!(whole, again, "same chunk, same bytes");
    // Any range equals the same slice of the whole, including unaligned starts and ends and
    // ranges shorter than one 8-byte word.
    let payload = Payload::new(&v, q, 3);
    for (offset, len) in [
        (0, 1),
        (1, 7),
        (3, 2),
        (7, 9),
        (8, 8),
        (13, 1000),
        (124_990, 10),
        (5, 0),
        (65_535, 4097),
    ] {
        let mut part = vec![0xAA; len];
        payload.fill(offset as u64, &mut part);
        assert_eq!(part, whole[offset..offset + len], "range {offset}+{len}");
    }
    // Filling in pieces of odd sizes reproduces the whole.
    let mut pieces = vec![0u8; size];
    let mut at = 0;
    for step in [1usize, 3, 8, 5, 4093].iter().cycle() {
        if at >= size {
            break;
        }
        let end = (at + step).min(size);
        payload.fill(at as u64, &mut pieces[at..end]);
        at = end;
    }
    assert_eq!(pieces, whole);
    // Different chunks differ, and the bytes look random (no long runs of a constant).
    let mut other = vec![0u8; size];
    fill(&v, q, 4, 0, &mut other);
    assert_ne!(other, whole);
    fill(&v, &v.qualities()[1], 3, 0, &mut other);
    assert_ne!(other, whole);
    let zeros = whole.iter().filter(|&&b| b == 0).count();
    assert!((300..700).contains(&zeros), "{zeros} zero bytes in 125000");
}
