//! The URL scheme: every resource's path parses back to itself; traversal, encoding and
//! malformed indices are refused with the right error; nothing panics.

use crate::cdn::paths::{master_path, segment_path, MAX_TARGET_LEN};
use crate::cdn::{parse_path, Container, Kind, PathError, Policy, Request};

#[test]
fn each_kind_of_path_parses() {
    let cases = [
        ("/bbb/master.m3u8", None, "bbb", Kind::Master),
        ("/bbb/manifest.mpd", None, "bbb", Kind::Mpd),
        (
            "/bbb/500k/playlist.m3u8",
            None,
            "bbb",
            Kind::MediaPlaylist { quality: "500k" },
        ),
        (
            "/p/direct-cs/bbb/master.m3u8",
            Some(Policy::DirectCs),
            "bbb",
            Kind::Master,
        ),
        (
            "/p/direct-rr/bbb/manifest.mpd",
            Some(Policy::DirectRr),
            "bbb",
            Kind::Mpd,
        ),
        (
            "/p/upstream-rr/b.b-b_1/q_1/playlist.m3u8",
            Some(Policy::UpstreamRr),
            "b.b-b_1",
            Kind::MediaPlaylist { quality: "q_1" },
        ),
        (
            "/bbb/2000k/init.mp4",
            None,
            "bbb",
            Kind::Init { quality: "2000k" },
        ),
        (
            "/bbb/500k/seg-00042.ts",
            None,
            "bbb",
            Kind::Segment {
                quality: "500k",
                index: 42,
                container: Container::Ts,
            },
        ),
        (
            "/bbb/500k/seg-00000.m4s",
            None,
            "bbb",
            Kind::Segment {
                quality: "500k",
                index: 0,
                container: Container::Fmp4,
            },
        ),
        (
            "/bbb/500k/seg-123456.ts",
            None,
            "bbb",
            Kind::Segment {
                quality: "500k",
                index: 123_456,
                container: Container::Ts,
            },
        ),
        (
            "/bbb/500k/seg-00007.ts?cachebust=1&x=/../",
            None,
            "bbb",
            Kind::Segment {
                quality: "500k",
                index: 7,
                container: Container::Ts,
            },
        ),
    ];
    for (target, policy, video, kind) in cases {
        let expected = Request {
            policy,
            video,
            kind,
        };
        assert_eq!(parse_path(target), Ok(expected), "{target}");
        let canonical = target.split('?').next().unwrap_or(target);
        assert_eq!(expected.path(), canonical, "path() of {target}");
    }
}

#[test]
fn formatting_helpers_pad_indices_and_parse_back() {
    assert_eq!(
        segment_path("v", "q", 42, Container::Ts),
        "/v/q/seg-00042.ts"
    );
    assert_eq!(
        segment_path("v", "q", 999_999, Container::Fmp4),
        "/v/q/seg-999999.m4s"
    );
    assert_eq!(
        master_path(Some(Policy::DirectRr), "v"),
        "/p/direct-rr/v/master.m3u8"
    );
    for index in [0, 9, 10, 99_999, 100_000, 999_999, usize::MAX] {
        let path = segment_path("v", "q", index, Container::Ts);
        assert_eq!(path, format!("/v/q/seg-{index:05}.ts"));
        if index > 999_999 {
            continue;
        }
        match parse_path(&path) {
            Ok(
                request @ Request {
                    kind: Kind::Segment { index: parsed, .. },
                    ..
                },
            ) => {
                assert_eq!(parsed, index);
                let mut written = String::from("http://x");
                request.write_path(&mut written);
                assert_eq!(written, format!("http://x{path}"));
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    let mut written = String::new();
    parse_path("/p/direct-rr/v/master.m3u8")
        .unwrap()
        .write_path(&mut written);
    assert_eq!(written, "/p/direct-rr/v/master.m3u8");
}

#[test]
fn traversal_and_encoding_are_refused() {
    let forbidden = |target: &str| {
        matches!(
            parse_path(target),
            Err(PathError::ForbiddenCharacter { .. })
        )
    };
    let bad_segment =
        |target: &str| matches!(parse_path(target), Err(PathError::BadSegment { .. }));
    for target in [
        "/../etc/passwd",
        "/bbb/../bbb/master.m3u8",
        "/bbb/500k/../../x",
        "/./bbb/master.m3u8",
        "/bbb//master.m3u8",
        "/bbb/500k/",
        "/",
    ] {
        assert!(bad_segment(target), "{target}: {:?}", parse_path(target));
    }
    for target in [
        "/%2e%2e/etc/passwd",
        "/bbb/%2E%2E/master.m3u8",
        "/bbb%2fmaster.m3u8",
        "/bbb/500k/seg-00001.ts%00",
        "/bbb\\..\\master.m3u8",
        "/bbb/master.m3u8#frag",
        "/bbb /master.m3u8",
        "/bbb/ma\u{e9}ster.m3u8",
        "/bbb/\tmaster.m3u8",
    ] {
        assert!(forbidden(target), "{target}: {:?}", parse_path(target));
    }
    // Names may contain dots but not start with one (`...`, hidden files).
    assert!(matches!(
        parse_path("/.../master.m3u8"),
        Err(PathError::BadName { .. })
    ));
    assert!(matches!(
        parse_path("/bbb/.q/playlist.m3u8"),
        Err(PathError::BadName { .. })
    ));
}

#[test]
fn bad_and_absurd_indices_are_refused() {
    for file in [
        "seg-42.ts",
        "seg-000042.ts",
        "seg-0004a.ts",
        "seg--0042.ts",
        "seg-+0042.ts",
        "seg-.ts",
        "seg- 0042.ts",
    ] {
        let target = format!("/bbb/500k/{file}");
        assert!(
            matches!(
                parse_path(&target),
                Err(PathError::BadIndex { .. }) | Err(PathError::ForbiddenCharacter { .. })
            ),
            "{target}: {:?}",
            parse_path(&target)
        );
    }
    for file in [
        "seg-1000000.ts",
        "seg-99999999999999999999999999.ts",
        "seg-18446744073709551616.ts",
    ] {
        let target = format!("/bbb/500k/{file}");
        assert!(
            matches!(parse_path(&target), Err(PathError::IndexTooLarge { .. })),
            "{target}: {:?}",
            parse_path(&target)
        );
    }
}

#[test]
fn other_malformed_targets_get_typed_errors() {
    assert_eq!(parse_path(""), Err(PathError::NotAbsolute));
    assert_eq!(parse_path("bbb/master.m3u8"), Err(PathError::NotAbsolute));
    assert_eq!(
        parse_path("http://urr/bbb/master.m3u8"),
        Err(PathError::NotAbsolute)
    );
    assert_eq!(parse_path("*"), Err(PathError::NotAbsolute));
    let long = format!("/{}", "a".repeat(MAX_TARGET_LEN));
    assert_eq!(
        parse_path(&long),
        Err(PathError::TooLong {
            len: MAX_TARGET_LEN + 1
        })
    );
    assert!(matches!(
        parse_path("/bbb/index.html"),
        Err(PathError::UnknownFile { .. })
    ));
    assert!(matches!(
        parse_path("/bbb/500k/seg-00001.mp4"),
        Err(PathError::UnknownFile { .. })
    ));
    assert!(matches!(
        parse_path("/bbb/500k/segment-00001.ts"),
        Err(PathError::UnknownFile { .. })
    ));
    assert!(matches!(
        parse_path("/bbb/500k/master.m3u8"),
        Err(PathError::UnknownFile { .. })
    ));
    assert_eq!(parse_path("/bbb"), Err(PathError::WrongShape));
    assert_eq!(parse_path("/a/b/c/d/e/f/g"), Err(PathError::WrongShape));
    assert_eq!(parse_path("/p/direct-cs/bbb"), Err(PathError::WrongShape));
    assert!(matches!(
        parse_path("/p/fastest/bbb/master.m3u8"),
        Err(PathError::UnknownPolicy { .. })
    ));
    assert_eq!(parse_path("/p"), Err(PathError::MisplacedPolicy));
    // Media have one canonical path: no policy prefix.
    assert_eq!(
        parse_path("/p/direct-cs/bbb/500k/seg-00001.ts"),
        Err(PathError::MisplacedPolicy)
    );
    assert_eq!(
        parse_path("/p/direct-cs/bbb/500k/init.mp4"),
        Err(PathError::MisplacedPolicy)
    );
}

#[test]
fn arbitrary_bytes_never_panic() {
    // A deterministic fuzz over short targets built from the characters that matter.
    let alphabet: Vec<char> = "/.-_%?#09azAZ\\ \u{0}é".chars().collect();
    let mut state = 0x1234_5678_9abc_def0_u64;
    for _ in 0..20_000 {
        let mut target = String::new();
        let len = (state % 24) as usize;
        for _ in 0..len {
            state = crate::cdn::hashing::mix64(state);
            target.push(alphabet[(state % alphabet.len() as u64) as usize]);
        }
        state = crate::cdn::hashing::mix64(state);
        if let Ok(request) = parse_path(&target) {
            // Whatever parses is canonical after dropping the query.
            assert_eq!(parse_path(&request.path()), Ok(request), "{target:?}");
        }
    }
}
