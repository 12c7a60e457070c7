//! The hop-by-hop fetcher against loopback servers: per-hop timing, connection reuse, the
//! redirect limit and the retry policy.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::server::{bind, Handler, Reply, Seen, TestServer};
use crate::cdn::ByteRange;
use crate::has_client::fetch::{Body, Fetcher, MAX_ATTEMPTS, MAX_REDIRECTS};

fn fetcher() -> Fetcher {
    Fetcher::new(Duration::from_secs(5), false, true).unwrap()
}

#[tokio::test]
async fn a_redirect_chain_is_timed_per_hop_on_kept_alive_connections() {
    let (la, a) = bind().await;
    let (lb, b) = bind().await;
    let (lc, c) = bind().await;
    // a: 302 after 30 ms to b; b: 307 after 60 ms to c as a network-path reference; c: the
    // body after 90 ms.
    let router_a = TestServer::serve(
        la,
        Arc::new(move |_: &Seen| {
            (
                Duration::from_millis(30),
                Reply::Redirect(302, format!("http://{b}/seg")),
            )
        }),
    );
    let router_b = TestServer::serve(
        lb,
        Arc::new(move |_: &Seen| {
            (
                Duration::from_millis(60),
                Reply::Redirect(307, format!("//{c}/final?x=1")),
            )
        }),
    );
    let content = TestServer::serve(
        lc,
        Arc::new(|_: &Seen| (Duration::from_millis(90), Reply::Bytes(10_000))),
    );
    let fetcher = fetcher();
    for round in 0..2 {
        let started = std::time::Instant::now();
        let fetched = fetcher
            .get(&format!("http://{a}/start"), None, Body::Count)
            .await
            .unwrap();
        let took = started.elapsed().as_secs_f64();
        assert_eq!(fetched.bytes, 10_000);
        assert!(fetched.body.is_empty(), "counted bodies are not kept");
        assert_eq!(fetched.final_url, format!("http://{c}/final?x=1"));
        assert_eq!(fetched.attempts, 1);
        let hosts: Vec<&str> = fetched.hops.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(
            hosts,
            [a.to_string(), b.to_string(), c.to_string()],
            "round {round}"
        );
        // Each hop takes at least its server's wait, and the hops are timed one after the
        // other, not from the start: together they fit within the whole fetch (timed from the
        // start, the last hop alone would hold all three waits, 0.18 s, and the sum 0.27 s).
        for (hop, delay) in fetched.hops.iter().zip([0.030, 0.060, 0.090]) {
            assert!(
                hop.seconds >= delay,
                "round {round}: hop {} took {} s, its server waits {delay} s",
                hop.host,
                hop.seconds
            );
        }
        let hops: f64 = fetched.hops.iter().map(|h| h.seconds).sum();
        assert!(
            hops <= took,
            "round {round}: hops {:?} sum to {hops} s, the fetch took {took} s",
            fetched.hops
        );
    }
    // Two rounds, one connection per host: the pool keeps them alive across redirects.
    for server in [&router_a, &router_b, &content] {
        assert_eq!(server.connections.load(Ordering::SeqCst), 1);
        assert_eq!(server.requests().len(), 2);
    }
    assert_eq!(content.requests_for("/final?x=1"), 2);
}

/// A server whose `/r/N` redirects (relatively) to `/r/N+1` up to `/r/last`, which has a body.
fn chain(last: usize) -> Handler {
    Arc::new(move |seen: &Seen| {
        let n: usize = seen
            .path
            .strip_prefix("/r/")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let reply = if n >= last {
            Reply::Bytes(100)
        } else {
            Reply::Redirect(302, format!("{}", n + 1))
        };
        (Duration::ZERO, reply)
    })
}

#[tokio::test]
async fn eight_redirects_are_followed_and_a_ninth_is_an_error() {
    let (listener, addr) = bind().await;
    let server = TestServer::serve(listener, chain(MAX_REDIRECTS));
    let fetched = fetcher()
        .get(&format!("http://{addr}/r/0"), None, Body::Count)
        .await
        .unwrap();
    assert_eq!(fetched.hops.len(), MAX_REDIRECTS + 1);
    assert_eq!(
        fetched.final_url,
        format!("http://{addr}/r/{MAX_REDIRECTS}")
    );
    drop(server);

    let (listener, addr) = bind().await;
    let server = TestServer::serve(listener, chain(usize::MAX));
    let url = format!("http://{addr}/r/0");
    let error = fetcher().get(&url, None, Body::Count).await.unwrap_err();
    assert_eq!(error.url, url);
    assert_eq!(error.attempts, 1, "a redirect loop is not retried");
    let text = error.to_string();
    assert!(text.contains("too many redirects"), "{text}");
    assert!(text.contains(&format!("/r/{MAX_REDIRECTS}")), "{text}");
    assert_eq!(server.requests().len(), MAX_REDIRECTS + 1);
}

#[tokio::test]
async fn client_errors_are_final_and_server_errors_are_retried() {
    let (listener, addr) = bind().await;
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let server = TestServer::serve(
        listener,
        Arc::new(move |seen: &Seen| {
            let reply = match seen.path.as_str() {
                "/missing" => Reply::Text(404, "no such segment".into()),
                "/broken" => Reply::Text(503, "overloaded".into()),
                // Fails once, then works.
                _ if counter.fetch_add(1, Ordering::SeqCst) == 0 => Reply::Text(500, "".into()),
                _ => Reply::Bytes(7),
            };
            (Duration::ZERO, reply)
        }),
    );
    let fetcher = fetcher();
    let missing = format!("http://{addr}/missing");
    let error = fetcher.get(&missing, None, Body::Count).await.unwrap_err();
    assert_eq!(error.attempts, 1);
    assert!(
        error.to_string().contains("answered 404 Not Found"),
        "{error}"
    );
    assert_eq!(server.requests_for("/missing"), 1);

    let started = std::time::Instant::now();
    let broken = format!("http://{addr}/broken");
    let error = fetcher.get(&broken, None, Body::Count).await.unwrap_err();
    assert_eq!(error.attempts, MAX_ATTEMPTS);
    assert!(
        error.to_string().contains("503") && error.to_string().contains("after 3 attempts"),
        "{error}"
    );
    assert_eq!(server.requests_for("/broken"), 3);
    // Backoff: 250 ms, then 500 ms.
    assert!(started.elapsed() >= Duration::from_millis(750));

    let flaky = fetcher
        .get(&format!("http://{addr}/flaky"), None, Body::Count)
        .await
        .unwrap();
    assert_eq!((flaky.attempts, flaky.bytes), (2, 7));
    assert_eq!(hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_unreachable_server_fails_after_the_retries_naming_the_cause() {
    // A port nobody listens on: bind one, then close it.
    let (listener, addr) = bind().await;
    drop(listener);
    let url = format!("http://{addr}/seg");
    let error = fetcher().get(&url, None, Body::Count).await.unwrap_err();
    assert_eq!(error.attempts, MAX_ATTEMPTS);
    let text = error.to_string();
    assert!(text.starts_with(&format!("GET {url}: ")), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
}

#[tokio::test]
async fn byte_ranges_are_requested_and_bodies_kept_when_asked() {
    let (listener, addr) = bind().await;
    let server = TestServer::serve(
        listener,
        Arc::new(|seen: &Seen| {
            let reply = match seen.range.as_deref() {
                Some("bytes=100-199") => Reply::Part {
                    content_range: Some("bytes 100-199/1000".into()),
                    len: 100,
                },
                _ => Reply::Text(200, "whole".into()),
            };
            (Duration::ZERO, reply)
        }),
    );
    let fetcher = fetcher();
    let range = ByteRange {
        offset: 100,
        length: 100,
    };
    let url = format!("http://{addr}/file");
    let part = fetcher.get(&url, Some(range), Body::Keep).await.unwrap();
    assert_eq!(part.bytes, 100);
    assert_eq!(part.body, vec![b'r'; 100]);
    let whole = fetcher.get(&url, None, Body::Keep).await.unwrap();
    assert_eq!(whole.body, b"whole");
    let empty = ByteRange {
        offset: 0,
        length: 0,
    };
    let error = fetcher
        .get(&url, Some(empty), Body::Keep)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("empty"), "{error}");
    assert_eq!(server.requests().len(), 2, "an empty range is never sent");
}

/// A ranged GET counts only when it is answered with the part asked for: a server that ignores
/// the range (200 and the whole file), a 206 of another part or of no stated part, and a part
/// of the wrong length are refused at once, naming what came back. So is an empty segment.
/// The range unit may be written in any case.
#[tokio::test]
async fn only_the_part_asked_for_counts_as_a_segment() {
    let (listener, addr) = bind().await;
    let server = TestServer::serve(
        listener,
        Arc::new(|seen: &Seen| {
            let part = |content_range: Option<&str>, len| Reply::Part {
                content_range: content_range.map(str::to_string),
                len,
            };
            let reply = match seen.path.as_str() {
                "/ignores-ranges" => Reply::Bytes(1000),
                "/unstated" => part(None, 100),
                "/another-part" => part(Some("bytes 0-99/1000"), 100),
                "/too-short" => part(Some("bytes 100-199/1000"), 50),
                "/empty" => Reply::Bytes(0),
                "/unit-case" => part(Some("Bytes 100-199/1000"), 100),
                _ => part(Some("bytes 100-199/*"), 100),
            };
            (Duration::ZERO, reply)
        }),
    );
    let range = Some(ByteRange {
        offset: 100,
        length: 100,
    });
    let fetcher = fetcher();
    let refused = |path: &'static str, range| {
        let fetcher = fetcher.clone();
        async move {
            let error = fetcher
                .get(&format!("http://{addr}{path}"), range, Body::Count)
                .await
                .expect_err(path);
            assert_eq!(error.attempts, 1, "{path}: {error}");
            error.to_string()
        }
    };
    let text = refused("/ignores-ranges", range).await;
    assert!(
        text.contains("answered 200 OK to a request for bytes=100-199"),
        "{text}"
    );
    let text = refused("/unstated", range).await;
    assert!(text.contains("without a Content-Range"), "{text}");
    let text = refused("/another-part", range).await;
    assert!(text.contains("\"bytes 0-99/1000\", another part"), "{text}");
    let text = refused("/too-short", range).await;
    assert!(text.contains("the body is 50 bytes"), "{text}");
    let text = refused("/empty", None).await;
    assert!(text.contains("the segment is empty"), "{text}");
    // A 200 whose whole file is the range asked for is that part; one of a longer file is not.
    let whole = Some(ByteRange {
        offset: 0,
        length: 1000,
    });
    let shorter = Some(ByteRange {
        offset: 0,
        length: 999,
    });
    let text = refused("/ignores-ranges", shorter).await;
    assert!(text.contains("answered 200 OK"), "{text}");
    for (path, range, length) in [
        ("/right", range, 100),
        ("/unit-case", range, 100),
        ("/ignores-ranges", whole, 1000),
    ] {
        let fetched = fetcher
            .get(&format!("http://{addr}{path}"), range, Body::Count)
            .await
            .expect(path);
        assert_eq!(fetched.bytes, length, "{path}");
    }
    assert_eq!(
        server.requests().len(),
        9,
        "nothing refused was asked again"
    );
}

#[tokio::test]
async fn a_redirect_without_location_is_an_error_naming_the_hop() {
    let (la, a) = bind().await;
    let (lb, b) = bind().await;
    let _a = TestServer::serve(
        la,
        Arc::new(move |_: &Seen| {
            (
                Duration::ZERO,
                Reply::Redirect(301, format!("http://{b}/x")),
            )
        }),
    );
    let _b = TestServer::serve(
        lb,
        Arc::new(|_: &Seen| (Duration::ZERO, Reply::Text(302, "nowhere".into()))),
    );
    let error = fetcher()
        .get(&format!("http://{a}/x"), None, Body::Count)
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&format!("http://{b}/x: 302 Found without a Location")),
        "{text}"
    );
    assert_eq!(error.attempts, 1);
}

/// A master playlist listing more variants than any stream has is refused before one media
/// playlist is fetched; one at the bound has every media playlist fetched, a few at a time.
#[tokio::test]
async fn a_master_playlist_of_too_many_variants_is_refused_unfetched() {
    use crate::has_client::load::{load, MAX_VARIANTS};
    let master = |variants: usize| {
        let mut text = String::from("#EXTM3U\n");
        for v in 0..variants {
            text += &format!(
                "#EXT-X-STREAM-INF:BANDWIDTH={}\nq{v}/index.m3u8\n",
                (v + 1) * 100_000
            );
        }
        text
    };
    let media = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nseg-0.ts\n#EXT-X-ENDLIST\n";
    let (listener, addr) = bind().await;
    let media_fetched = Arc::new(AtomicUsize::new(0));
    let counted = media_fetched.clone();
    let (too_many, at_most) = (master(MAX_VARIANTS + 1), master(MAX_VARIANTS));
    let _server = TestServer::serve(
        listener,
        Arc::new(move |seen: &Seen| {
            let text = match seen.path.as_str() {
                "/too-many.m3u8" => too_many.clone(),
                "/at-most.m3u8" => at_most.clone(),
                _ => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    media.to_string()
                }
            };
            (Duration::ZERO, Reply::Text(200, text))
        }),
    );
    let Err(refused) = load(&fetcher(), &format!("http://{addr}/too-many.m3u8")).await else {
        panic!("a master playlist of too many variants was loaded");
    };
    assert!(
        refused.contains(&format!("lists {} variants", MAX_VARIANTS + 1)),
        "{refused}"
    );
    assert_eq!(media_fetched.load(Ordering::SeqCst), 0);
    let loaded = load(&fetcher(), &format!("http://{addr}/at-most.m3u8"))
        .await
        .expect("the bound itself is played");
    assert_eq!(media_fetched.load(Ordering::SeqCst), MAX_VARIANTS);
    assert!(loaded.bytes > 0);
}
