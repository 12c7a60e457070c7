//! The content servers' handlers, called directly: sizes and bytes of synthetic segments,
//! manifests, media files, bad input, and a dCS serving only what it was assigned.

use std::sync::Arc;

use hyper::{Method, StatusCode};
use tokio::sync::watch;

use http_body_util::BodyExt;

use super::{read, request, video, Answer, TempDir};
use crate::cdn::{parse_path, place, BaseUrl, Offload, Payload, Popularity};
use crate::cdn_roles::content_server::{ContentServer, Source};
use crate::cdn_roles::exchange::{build_locations, Assignment, OffloadRequest, OffloadedVideo};
use crate::roles::http::Body;

fn url(text: &str) -> BaseUrl {
    BaseUrl::parse(text).expect("test URL")
}

fn origin(source: Source) -> ContentServer {
    ContentServer::origin(vec![video("v", 5)], url("http://ucs:8080"), source).expect("origin")
}

async fn get(server: &ContentServer, target: &str, headers: &[(&str, &str)]) -> Answer {
    read(server.handle(request(Method::GET, target, headers)).await).await
}

fn expected_bytes(quality: usize, index: usize, len: usize) -> Vec<u8> {
    let video = video("v", 5);
    let mut bytes = vec![0u8; len];
    Payload::new(&video, &video.qualities()[quality], index).fill(0, &mut bytes);
    bytes
}

#[tokio::test]
async fn synthetic_segments_have_the_exact_size_and_payload() {
    let server = origin(Source::Synthetic);
    for (q, id, size) in [
        (0, "500k", 125_000),
        (1, "1000k", 250_000),
        (2, "2000k", 500_000),
    ] {
        let a = get(&server, &format!("/v/{id}/seg-00003.ts"), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.content_length(), Some(size as u64));
        assert_eq!(a.body.len(), size);
        assert_eq!(&a.body[..], &expected_bytes(q, 3, size)[..]);
        assert_eq!(a.header("content-type"), Some("video/mp2t"));
        assert_eq!(
            a.header("etag"),
            Some(format!("\"v/{id}/3/{size}\"").as_str())
        );
    }
}

#[tokio::test]
async fn synthetic_range_matches_the_whole() {
    let server = origin(Source::Synthetic);
    let whole = expected_bytes(0, 1, 125_000);
    let a = get(
        &server,
        "/v/500k/seg-00001.ts",
        &[("range", "bytes=70000-70009")],
    )
    .await;
    assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&a.body[..], &whole[70_000..70_010]);
    assert_eq!(a.header("content-range"), Some("bytes 70000-70009/125000"));
    let etag = a.header("etag").expect("etag").to_string();
    let cached = get(&server, "/v/500k/seg-00001.ts", &[("if-none-match", &etag)]).await;
    assert_eq!(cached.status, StatusCode::NOT_MODIFIED);
    assert!(cached.body.is_empty());
}

/// Cached chunks (every synthetic chunk this small) are sent as slices of one generated copy;
/// chunks too large for the cache are generated while sent. Both give `Payload::fill`'s bytes.
#[tokio::test]
async fn cached_and_streamed_ranges_are_the_same_bytes() {
    let server = origin(Source::Synthetic);
    let v = video("v", 5);
    let payload = Payload::new(&v, &v.qualities()[2], 4);
    let streamed = Body::synthetic(payload, 123_457, 200_003)
        .collect()
        .await
        .expect("synthetic body")
        .to_bytes();
    assert_eq!(streamed.len(), 200_003);
    assert_eq!(
        &streamed[..],
        &expected_bytes(2, 4, 500_000)[123_457..323_460]
    );
    // First as a range of a chunk not yet cached, then again from the cache after a whole GET.
    for _ in 0..2 {
        let a = get(
            &server,
            "/v/2000k/seg-00004.ts",
            &[("range", "bytes=123457-323459")],
        )
        .await;
        assert_eq!(a.status, StatusCode::PARTIAL_CONTENT);
        assert_eq!(a.content_length(), Some(200_003));
        assert_eq!(a.body, streamed);
        let whole = get(&server, "/v/2000k/seg-00004.ts", &[]).await;
        assert_eq!(&whole.body[123_457..323_460], &streamed[..]);
    }
    let past = get(
        &server,
        "/v/2000k/seg-00004.ts",
        &[("range", "bytes=500000-")],
    )
    .await;
    assert_eq!(past.status, StatusCode::RANGE_NOT_SATISFIABLE);
}

#[tokio::test]
async fn head_answers_without_body() {
    let server = origin(Source::Synthetic);
    let response = server
        .handle(request(Method::HEAD, "/v/2000k/seg-00004.ts", &[]))
        .await;
    let a = read(crate::roles::http::semantics::strip_for_head(
        &Method::HEAD,
        response,
    ))
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_length(), Some(500_000));
    assert!(a.body.is_empty());
}

#[tokio::test]
async fn origin_serves_manifests_pointing_at_itself() {
    let server = origin(Source::Synthetic);
    for target in [
        "/v/master.m3u8",
        "/p/direct-cs/v/master.m3u8",
        "/v/1000k/playlist.m3u8",
        "/v/manifest.mpd",
    ] {
        let a = get(&server, target, &[]).await;
        assert_eq!(a.status, StatusCode::OK, "{target}");
        assert_eq!(a.content_length(), Some(a.body.len() as u64));
        assert!(a.header("etag").is_some());
    }
    let playlist = get(&server, "/v/1000k/playlist.m3u8", &[]).await;
    let text = std::str::from_utf8(&playlist.body).expect("utf-8");
    assert_eq!(
        playlist.header("content-type"),
        Some("application/vnd.apple.mpegurl")
    );
    assert!(
        text.contains("http://ucs:8080/v/1000k/seg-00004.ts"),
        "{text}"
    );
    assert_eq!(text.matches("seg-").count(), 5);
}

#[tokio::test]
async fn bad_requests() {
    let server = origin(Source::Synthetic);
    let cases = [
        ("/w/500k/seg-00000.ts", StatusCode::NOT_FOUND), // unknown video
        ("/v/300k/seg-00000.ts", StatusCode::NOT_FOUND), // unknown quality
        ("/v/500k/seg-00005.ts", StatusCode::NOT_FOUND), // past the end
        ("/v/500k/seg-00000.m4s", StatusCode::NOT_FOUND), // wrong container
        ("/v/500k/init.mp4", StatusCode::NOT_FOUND),     // TS has no init segment
        ("/v/index.html", StatusCode::NOT_FOUND),        // a file we never serve
        ("/v/500k/seg-0.ts", StatusCode::BAD_REQUEST),
        ("/v//seg-00000.ts", StatusCode::BAD_REQUEST),
        ("/p/best/v/master.m3u8", StatusCode::BAD_REQUEST),
        ("/v/500k/seg-00000.ts/extra/x", StatusCode::BAD_REQUEST),
    ];
    for (target, status) in cases {
        assert_eq!(get(&server, target, &[]).await.status, status, "{target}");
    }
    for method in [Method::POST, Method::PUT, Method::DELETE, Method::OPTIONS] {
        let a = read(
            server
                .handle(request(method.clone(), "/v/500k/seg-00000.ts", &[]))
                .await,
        )
        .await;
        assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(a.header("allow"), Some("GET, HEAD"));
    }
}

/// A media directory with one real segment, and a secret beside it.
fn media() -> TempDir {
    let dir = TempDir::new("media");
    std::fs::create_dir_all(dir.0.join("media/v/500k")).unwrap();
    std::fs::write(dir.0.join("media/v/500k/seg-00002.ts"), b"0123456789abcdef").unwrap();
    std::fs::write(dir.0.join("secret"), b"do not serve").unwrap();
    dir
}

#[tokio::test]
async fn media_files_are_served_with_ranges() {
    let dir = media();
    let server = origin(Source::MediaDir(dir.0.join("media")));
    let a = get(&server, "/v/500k/seg-00002.ts", &[]).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], b"0123456789abcdef");
    assert_eq!(a.content_length(), Some(16));
    let part = get(&server, "/v/500k/seg-00002.ts", &[("range", "bytes=10-")]).await;
    assert_eq!(part.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&part.body[..], b"abcdef");
    assert_eq!(part.header("content-range"), Some("bytes 10-15/16"));
    let etag = a.header("etag").expect("etag").to_string();
    let cached = get(&server, "/v/500k/seg-00002.ts", &[("if-none-match", &etag)]).await;
    assert_eq!(cached.status, StatusCode::NOT_MODIFIED);
    // Known to the video, but no file: 404.
    assert_eq!(
        get(&server, "/v/500k/seg-00001.ts", &[]).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_changed_media_file_is_served_anew() {
    let dir = media();
    let server = origin(Source::MediaDir(dir.0.join("media")));
    let file = dir.0.join("media/v/500k/seg-00002.ts");
    let before = get(&server, "/v/500k/seg-00002.ts", &[]).await;
    assert_eq!(&before.body[..], b"0123456789abcdef");
    std::fs::write(&file, b"changed").unwrap();
    let after = get(&server, "/v/500k/seg-00002.ts", &[("range", "bytes=2-")]).await;
    assert_eq!(after.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&after.body[..], b"anged");
    assert_eq!(after.header("content-range"), Some("bytes 2-6/7"));
    assert_ne!(after.header("etag"), before.header("etag"));
    std::fs::remove_file(&file).unwrap();
    let gone = get(&server, "/v/500k/seg-00002.ts", &[]).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

/// A FIFO where a segment would be is no media file: answered at once, not waited on until a
/// writer comes (which held a blocking-pool thread for good).
#[tokio::test]
async fn a_fifo_in_the_media_directory_is_not_found_at_once() {
    let dir = media();
    let fifo = dir.0.join("media/v/500k/seg-00003.ts");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let server = origin(Source::MediaDir(dir.0.join("media")));
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        get(&server, "/v/500k/seg-00003.ts", &[]),
    )
    .await
    .expect("answered without waiting for a writer");
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn no_path_escapes_the_media_directory() {
    let dir = media();
    let server = origin(Source::MediaDir(dir.0.join("media")));
    for target in [
        "/../secret",
        "/v/../../secret",
        "/v/500k/../../../secret",
        "/%2e%2e/secret",
        "/v/500k/..%2f..%2fsecret",
        "/v/500k/seg-00002.ts/../../../secret",
        "/./secret",
        "//secret",
        "/v\\..\\..\\secret",
        "/secret",
    ] {
        // hyper refuses (400) a target the URI parser rejects before any handler sees it.
        if target.parse::<hyper::Uri>().is_err() {
            continue;
        }
        let a = get(&server, target, &[]).await;
        assert!(
            a.status == StatusCode::BAD_REQUEST || a.status == StatusCode::NOT_FOUND,
            "{target}: {}",
            a.status
        );
        assert!(
            !a.body.windows(12).any(|w| w == b"do not serve"),
            "{target}"
        );
    }
}

/// A dCS holding server index `server` of two, all five chunks offloaded round-robin.
fn assignment(server: u32) -> Arc<Assignment> {
    let v = video("v", 5);
    let request = OffloadRequest {
        upstream_servers: vec![url("http://ucs")],
        upstream_assign: crate::cdn::Assign::RoundRobin,
        videos: vec![OffloadedVideo {
            placement: place(&Offload::All, 5, &Popularity::ZipfRank, 0).unwrap(),
            video: v,
        }],
    };
    let locations = build_locations(
        &request,
        &[url("http://dcs1"), url("http://dcs2")],
        &crate::cdn::Assign::RoundRobin,
    )
    .unwrap();
    Arc::new(Assignment { locations, server })
}

#[tokio::test]
async fn edge_serves_only_its_chunks() {
    let (publish, receive) = watch::channel(None);
    let server = ContentServer::edge(Source::Synthetic, receive, None).unwrap();
    let before = get(&server, "/v/500k/seg-00000.ts", &[]).await;
    assert_eq!(before.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(before.header("retry-after"), Some("1"));

    let mine = assignment(0);
    publish.send_replace(Some(mine.clone()));
    let table = &mine.locations;
    let mut held = 0;
    let mut other = 0;
    for index in 0..5 {
        let target = format!("/v/1000k/seg-{index:05}.ts");
        let parsed = parse_path(&target).unwrap();
        let (v, item) = table.resolve(&parsed).unwrap();
        let a = get(&server, &target, &[]).await;
        if v.location_of(item) == Some(mine.location()) {
            held += 1;
            assert_eq!(a.status, StatusCode::OK, "{target}");
            assert_eq!(a.body.len(), 250_000);
        } else {
            other += 1;
            assert_eq!(a.status, StatusCode::NOT_FOUND, "{target}");
        }
    }
    assert!(
        held > 0 && other > 0,
        "round robin over 2 servers: {held} held, {other} not"
    );
    assert_eq!(
        get(&server, "/v/master.m3u8", &[]).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&server, "/w/500k/seg-00000.ts", &[]).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&server, "/v/500k/seg-0.ts", &[]).await.status,
        StatusCode::BAD_REQUEST
    );
}
