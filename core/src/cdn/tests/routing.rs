//! The routers' decisions for every case: upstream and downstream chunks at the uRR and the
//! dRR, manifests, unknown resources and malformed paths.

use super::{lab, routers};
use crate::cdn::manifest::{DASH_CONTENT_TYPE, HLS_CONTENT_TYPE};
use crate::cdn::{route_drr, route_urr, Cdn, Decision, LookupError, NotFound, PathError};

#[test]
fn urr_sends_upstream_chunks_to_their_ucs() {
    let table = lab();
    let video = table.video("bbb").expect("bbb");
    // Indices 6..10 stay upstream; the decision names the uCS the table assigned.
    for (q, id) in ["500k", "1000k", "2000k"].iter().enumerate() {
        for index in 6..10 {
            let path = format!("/bbb/{id}/seg-{index:05}.ts");
            let location = video.get(q, index).expect("in range");
            assert_eq!(location.cdn, Cdn::Upstream);
            let host = table.server(location).expect("listed").as_str();
            assert!(host.starts_with("http://ucs"), "{host}");
            assert_eq!(
                route_urr(&path, &table, &routers()),
                Decision::Redirect(format!("{host}{path}"))
            );
        }
    }
    // Consistent hashing over 12 upstream chunks uses both uCS.
    let used: std::collections::HashSet<u32> = video
        .chunks_in(Cdn::Upstream)
        .map(|(q, i)| video.get(q, i).map_or(9, |l| l.server))
        .collect();
    assert_eq!(used.len(), 2, "{used:?}");
}

#[test]
fn urr_sends_downstream_chunks_to_the_drr_and_drr_to_the_dcs() {
    let table = lab();
    let video = table.video("bbb").expect("bbb");
    let mut dcs_used = std::collections::HashSet::new();
    for index in 0..6 {
        let path = format!("/bbb/1000k/seg-{index:05}.ts");
        // Iterative CDNI redirection: same path, at the dRR.
        assert_eq!(
            route_urr(&path, &table, &routers()),
            Decision::Redirect(format!("http://drr:8080{path}"))
        );
        let location = video.get(1, index).expect("in range");
        assert_eq!(location.cdn, Cdn::Downstream);
        let host = table.server(location).expect("listed").as_str();
        dcs_used.insert(host.to_string());
        // A query string is dropped from the redirect: chunks have one canonical URL.
        assert_eq!(
            route_drr(&format!("{path}?t=1"), &table),
            Decision::Redirect(format!("{host}{path}"))
        );
    }
    assert_eq!(dcs_used.len(), 2, "round robin uses both dCS: {dcs_used:?}");
}

#[test]
fn init_segments_follow_the_first_chunk() {
    let table = lab();
    // Chunk 0 is downstream, so is every quality's init segment.
    assert_eq!(
        route_urr("/fm/500k/init.mp4", &table, &routers()),
        Decision::Redirect("http://drr:8080/fm/500k/init.mp4".into())
    );
    let first = table
        .video("fm")
        .and_then(|v| v.get(0, 0))
        .expect("chunk 0");
    let host = table.server(first).expect("listed");
    assert_eq!(
        route_drr("/fm/500k/init.mp4", &table),
        Decision::Redirect(format!("{host}/fm/500k/init.mp4"))
    );
}

#[test]
fn drr_refuses_upstream_chunks_and_manifests() {
    let table = lab();
    assert_eq!(
        route_drr("/bbb/500k/seg-00007.ts", &table),
        Decision::NotFound(NotFound::NotInThisCdn)
    );
    assert_eq!(
        route_drr("/bbb/master.m3u8", &table),
        Decision::NotFound(NotFound::NotRoutedHere)
    );
    assert_eq!(
        route_drr("/p/direct-rr/bbb/manifest.mpd", &table),
        Decision::NotFound(NotFound::NotRoutedHere)
    );
}

#[test]
fn urr_serves_manifests_with_their_content_types() {
    let table = lab();
    for (path, content_type) in [
        ("/bbb/master.m3u8", HLS_CONTENT_TYPE),
        ("/p/direct-cs/bbb/2000k/playlist.m3u8", HLS_CONTENT_TYPE),
        ("/p/upstream-rr/fm/manifest.mpd", DASH_CONTENT_TYPE),
    ] {
        match route_urr(path, &table, &routers()) {
            Decision::Manifest(m) => {
                assert_eq!(m.content_type, content_type, "{path}");
                assert!(m.body.starts_with(if content_type == HLS_CONTENT_TYPE {
                    "#EXTM3U\n"
                } else {
                    "<?xml"
                }));
            }
            other => panic!("{path}: {other:?}"),
        }
    }
}

#[test]
fn unknown_and_malformed_requests() {
    let table = lab();
    let r = routers();
    let unknown = [
        (
            "/nope/500k/seg-00000.ts",
            LookupError::UnknownVideo {
                video: "nope".into(),
            },
        ),
        (
            "/nope/master.m3u8",
            LookupError::UnknownVideo {
                video: "nope".into(),
            },
        ),
        (
            "/bbb/9000k/seg-00000.ts",
            LookupError::UnknownQuality {
                video: "bbb".into(),
                quality: "9000k".into(),
            },
        ),
        (
            "/bbb/500k/seg-00010.ts",
            LookupError::SegmentOutOfRange {
                video: "bbb".into(),
                index: 10,
                segments: 10,
            },
        ),
    ];
    for (path, error) in unknown {
        assert_eq!(
            route_urr(path, &table, &r),
            Decision::NotFound(NotFound::Lookup(error.clone())),
            "{path}"
        );
        assert_eq!(
            route_drr(path, &table),
            Decision::NotFound(NotFound::Lookup(error)),
            "{path}"
        );
    }
    assert!(matches!(
        route_urr("/bbb/500k/seg-00000.m4s", &table, &r),
        Decision::NotFound(NotFound::Lookup(LookupError::WrongExtension { .. }))
    ));
    assert!(matches!(
        route_urr("/bbb/../etc/passwd", &table, &r),
        Decision::BadRequest(PathError::BadSegment { .. })
    ));
    assert!(matches!(
        route_drr("/%2e%2e/x", &table),
        Decision::BadRequest(PathError::ForbiddenCharacter { .. })
    ));
    assert!(matches!(
        route_urr("/bbb/500k/seg-1.ts", &table, &r),
        Decision::BadRequest(PathError::BadIndex { .. })
    ));
}
