//! Whole roles on 127.0.0.1: a uCS over HTTP/1.1 and h2c; the uRR + dRR + dCS exchange over
//! the real control plane with certificates from `issue_lab_certs`, and 302 chains followed hop
//! by hop; refusals of unauthenticated callers; a dCS pulling from the origin.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{video, TempDir};
use crate::cdn::{Assign, BaseUrl, Cdn, Offload, Payload};
use crate::cdn_roles::config::{DcsConfig, DrrConfig, Peer, UcsConfig, UrrConfig};
use crate::cdn_roles::exchange::{build_locations, offload_request, DrrRequest, DrrResponse};
use crate::cdn_roles::run::{start_dcs, start_drr, start_ucs, start_urr};
use crate::control::{issue_lab_certs, Client, Identity};
use crate::roles::http::Running;

/// Every test is bounded by this, so a regression fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(60);

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("test exceeded its time limit")
}

fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A loopback address of this test process's own, `127.A.B.C` from its pid and a counter. A
/// port picked on 127.0.0.1 and bound later can be taken in between by an outgoing connection
/// of a test running beside this one (seen: "Address already in use" in a full suite), since
/// those take their local ports from the same range; on an address no other process uses,
/// nothing can.
fn own_loopback() -> std::net::IpAddr {
    static NEXT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(1);
    let pid = std::process::id();
    let c = NEXT
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        .max(1);
    let [a, b] = [(1 + pid % 250) as u8, ((pid / 250) % 256) as u8];
    std::net::IpAddr::from([127, a, b, c])
}

/// A free TCP port, for a server whose URL must be known before it listens.
fn free_tcp_port() -> SocketAddr {
    std::net::TcpListener::bind((own_loopback(), 0))
        .and_then(|l| l.local_addr())
        .unwrap()
}

/// A free UDP port, for a control service a peer must know before it listens.
fn free_udp_port() -> SocketAddr {
    std::net::UdpSocket::bind((own_loopback(), 0))
        .and_then(|s| s.local_addr())
        .unwrap()
}

fn url_of(addr: SocketAddr) -> BaseUrl {
    BaseUrl::parse(&format!("http://{addr}")).unwrap()
}

fn client() -> reqwest::Client {
    crate::roles::fetch::client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn ucs_config(url: BaseUrl, segments: usize) -> UcsConfig {
    UcsConfig {
        port: 0,
        url,
        videos: vec![video("v", segments)],
        media_dir: None,
        access_log: false,
    }
}

async fn start_origin(segments: usize) -> (Running, BaseUrl) {
    let addr = free_tcp_port();
    let running = start_ucs(&ucs_config(url_of(addr), segments), addr)
        .await
        .unwrap();
    (running, url_of(addr))
}

fn segment(quality: usize, index: usize, len: usize) -> Vec<u8> {
    let v = video("v", 6);
    let mut bytes = vec![0u8; len];
    Payload::new(&v, &v.qualities()[quality], index).fill(0, &mut bytes);
    bytes
}

#[tokio::test]
async fn ucs_serves_segments_over_http1_and_h2c() {
    bounded(async {
        let (ucs, origin) = start_origin(6).await;
        let url = origin.join("/v/1000k/seg-00002.ts");
        let whole = client().get(&url).send().await.unwrap();
        assert_eq!(whole.status(), 200);
        assert_eq!(whole.version(), reqwest::Version::HTTP_11);
        assert_eq!(whole.content_length(), Some(250_000));
        assert_eq!(
            &whole.bytes().await.unwrap()[..],
            &segment(1, 2, 250_000)[..]
        );

        let part = client()
            .get(&url)
            .header("range", "bytes=1000-1999")
            .send()
            .await
            .unwrap();
        assert_eq!(part.status(), 206);
        assert_eq!(part.headers()["content-range"], "bytes 1000-1999/250000");
        assert_eq!(
            &part.bytes().await.unwrap()[..],
            &segment(1, 2, 250_000)[1000..2000]
        );

        let head = client().head(&url).send().await.unwrap();
        assert_eq!(head.status(), 200);
        assert_eq!(head.headers()["content-length"], "250000");
        assert!(head.bytes().await.unwrap().is_empty());

        let h2 = crate::roles::fetch::client()
            .http2_prior_knowledge()
            .build()
            .unwrap();
        let answer = h2
            .get(origin.join("/v/2000k/seg-00005.ts"))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.version(), reqwest::Version::HTTP_2);
        assert_eq!(answer.bytes().await.unwrap().len(), 500_000);
        let missing = client()
            .get(origin.join("/v/2000k/seg-00006.ts"))
            .send()
            .await
            .unwrap();
        assert_eq!(missing.status(), 404);
        let refused = client().post(&url).send().await.unwrap();
        assert_eq!(refused.status(), 405);
        ucs.stop().await.unwrap();
    })
    .await;
}

/// Reads one HTTP/1.1 response with a Content-Length body from `stream`.
async fn read_response(stream: &mut tokio::net::TcpStream) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    (head, body)
}

/// The status of a GET of `target` sent byte for byte on a fresh connection.
async fn raw_get(addr: SocketAddr, target: &str) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let (head, _) = read_response(&mut stream).await;
    head[9..12].parse().unwrap()
}

#[tokio::test]
async fn keep_alive_serves_several_requests_on_one_connection() {
    bounded(async {
        let (ucs, origin) = start_origin(6).await;
        let addr = origin.as_str().trim_start_matches("http://").to_string();
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        for index in 0..3 {
            let request = format!(
                "GET /v/500k/seg-{index:05}.ts HTTP/1.1\r\nHost: ucs\r\nRange: bytes=0-99\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let (head, body) = read_response(&mut stream).await;
            assert!(head.starts_with("HTTP/1.1 206"), "{head}");
            assert_eq!(body, segment(0, index, 100));
        }
        ucs.stop().await.unwrap();
    })
    .await;
}

/// The lab: a uCS, two dCSes, a dRR and a uRR on loopback, started in an order that makes the
/// uRR retry until the dRR is up.
struct Lab {
    _certs: TempDir,
    ucs: Running,
    dcs: Vec<Running>,
    drr: Running,
    urr: Running,
    urr_config: UrrConfig,
    dcs_urls: Vec<BaseUrl>,
    drr_url: BaseUrl,
    ucs_url: BaseUrl,
    certs: std::path::PathBuf,
}

const NODES: &[&str] = &["urr", "drr", "dcs1", "dcs2", "ucs"];

fn identity(dir: &std::path::Path, node: &str) -> Arc<Identity> {
    Arc::new(Identity::load(dir, node).unwrap())
}

fn dcs_config() -> DcsConfig {
    DcsConfig {
        port: 0,
        control_port: 0,
        drr_node: "drr".into(),
        media_dir: None,
        fetch_from_origin: None,
        origin_timeout: Duration::from_secs(5),
        access_log: false,
    }
}

async fn lab() -> Lab {
    let certs = TempDir::new("trio");
    issue_lab_certs(&certs.0, "trio", NODES).unwrap();
    let (ucs, ucs_url) = start_origin(6).await;
    let mut dcs = Vec::new();
    let mut peers = Vec::new();
    for node in ["dcs1", "dcs2"] {
        let running = start_dcs(
            &dcs_config(),
            identity(&certs.0, node),
            any_port(),
            any_port(),
        )
        .await
        .unwrap();
        peers.push(Peer {
            url: url_of(running.http),
            control: running.control.unwrap().to_string(),
            node: node.into(),
        });
        dcs.push(running);
    }
    let (drr_http, drr_control) = (free_tcp_port(), free_udp_port());
    let urr_addr = free_tcp_port();
    let urr_config = UrrConfig {
        port: 0,
        url: url_of(urr_addr),
        videos: vec![video("v", 6)],
        upstream: vec![ucs_url.clone()],
        assign: Assign::RoundRobin,
        offload: Offload::FirstK(4),
        offload_seed: 0,
        drr: Some(Peer {
            url: url_of(drr_http),
            control: drr_control.to_string(),
            node: "drr".into(),
        }),
        exchange_timeout: Duration::from_secs(20),
        access_log: false,
    };
    let starting_urr = {
        let config = urr_config.clone();
        let id = identity(&certs.0, "urr");
        tokio::spawn(async move { start_urr(&config, Some(id), urr_addr).await })
    };
    // The uRR is already offering; the dRR comes up later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let drr_config = DrrConfig {
        port: 0,
        control_port: 0,
        dcs: peers.clone(),
        assign: Assign::ConsistentHash { vnodes: 100 },
        urr_node: "urr".into(),
        exchange_timeout: Duration::from_secs(10),
        access_log: false,
    };
    let drr = start_drr(
        &drr_config,
        identity(&certs.0, "drr"),
        drr_http,
        drr_control,
    )
    .await
    .unwrap();
    let urr = starting_urr.await.unwrap().unwrap();
    Lab {
        certs: certs.0.clone(),
        _certs: certs,
        ucs,
        dcs,
        drr,
        urr,
        dcs_urls: peers.iter().map(|p| p.url.clone()).collect(),
        drr_url: url_of(drr_http),
        ucs_url,
        urr_config,
    }
}

impl Lab {
    async fn stop(self) {
        for running in [self.urr, self.drr, self.ucs].into_iter().chain(self.dcs) {
            running.stop().await.unwrap();
        }
    }

    /// Where the table puts chunk `index` of quality `quality`: the dCS's URL if downstream.
    fn dcs_for(&self, quality: usize, index: usize) -> Option<BaseUrl> {
        let request = offload_request(&self.urr_config).unwrap();
        let table = build_locations(
            &request,
            &self.dcs_urls,
            &Assign::ConsistentHash { vnodes: 100 },
        )
        .unwrap();
        let at = table.video("v").unwrap().get(quality, index).unwrap();
        (at.cdn == Cdn::Downstream).then(|| self.dcs_urls[at.server as usize].clone())
    }
}

/// One GET; for a 302 the Location, else the status and body length.
async fn hop(url: &str) -> (u16, Option<String>, usize) {
    let response = client().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_string());
    let len = response.bytes().await.unwrap().len();
    (status, location, len)
}

#[tokio::test]
async fn redirect_chains_end_at_the_right_server() {
    bounded(async {
        let lab = lab().await;
        let urr = lab.urr_config.url.clone();
        let sizes = [125_000, 250_000, 500_000];
        let ids = ["500k", "1000k", "2000k"];
        for (q, id) in ids.iter().enumerate() {
            for index in 0..6 {
                let path = format!("/v/{id}/seg-{index:05}.ts");
                // UpstreamRR: uRR → dRR → dCS for offloaded chunks (the first 4), uRR → uCS after.
                let (status, location, _) = hop(&urr.join(&path)).await;
                assert_eq!(status, 302, "{path}");
                let location = location.unwrap();
                let final_url = match lab.dcs_for(q, index) {
                    Some(dcs) => {
                        assert_eq!(location, lab.drr_url.join(&path));
                        let (status, next, _) = hop(&location).await;
                        assert_eq!(status, 302);
                        let next = next.unwrap();
                        assert_eq!(next, dcs.join(&path), "{path}");
                        next
                    }
                    None => {
                        assert!(index >= 4, "{path}");
                        assert_eq!(location, lab.ucs_url.join(&path));
                        location
                    }
                };
                let (status, _, len) = hop(&final_url).await;
                assert_eq!((status, len), (200, sizes[q]), "{final_url}");
            }
        }
        // The dRR routes only its own CDN's chunks, and no manifests.
        assert_eq!(hop(&lab.drr_url.join("/v/500k/seg-00005.ts")).await.0, 404);
        assert_eq!(hop(&lab.drr_url.join("/v/master.m3u8")).await.0, 404);
        // A dCS serves only its chunks: the other dCS has chunk 0 of some quality.
        let holder = lab.dcs_for(0, 0).unwrap();
        let other = lab.dcs_urls.iter().find(|u| **u != holder).unwrap();
        assert_eq!(hop(&other.join("/v/500k/seg-00000.ts")).await.0, 404);
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn manifests_per_policy_point_where_the_policy_says() {
    bounded(async {
        let lab = lab().await;
        let urr = lab.urr_config.url.clone();
        let playlist = |policy: &str| urr.join(&format!("/p/{policy}/v/500k/playlist.m3u8"));
        let text = |url: String| async move {
            let response = client().get(url).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.text().await.unwrap()
        };
        let upstream = text(playlist("upstream-rr")).await;
        assert!(
            upstream.contains(&urr.join("/v/500k/seg-00000.ts")),
            "{upstream}"
        );
        let direct_rr = text(playlist("direct-rr")).await;
        assert!(
            direct_rr.contains(&lab.drr_url.join("/v/500k/seg-00000.ts")),
            "{direct_rr}"
        );
        assert!(
            direct_rr.contains(&urr.join("/v/500k/seg-00005.ts")),
            "{direct_rr}"
        );
        let direct_cs = text(playlist("direct-cs")).await;
        let dcs = lab.dcs_for(0, 0).unwrap();
        let chunk = dcs.join("/v/500k/seg-00000.ts");
        assert!(direct_cs.contains(&chunk), "{direct_cs}");
        assert!(
            direct_cs.contains(&lab.ucs_url.join("/v/500k/seg-00005.ts")),
            "{direct_cs}"
        );
        // DirectCS: the listed URL answers without a redirect.
        assert_eq!(hop(&chunk).await, (200, None, 125_000));
        // DirectRR: one redirect, straight to the dCS.
        let (status, location, _) = hop(&lab.drr_url.join("/v/500k/seg-00000.ts")).await;
        assert_eq!((status, location), (302, Some(chunk)));
        // Every policy through one lab; the master lists the three qualities.
        let master = text(urr.join("/p/direct-cs/v/master.m3u8")).await;
        assert_eq!(master.matches("playlist.m3u8").count(), 3, "{master}");
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn routers_answer_bad_requests() {
    bounded(async {
        let lab = lab().await;
        let urr = lab.urr_config.url.clone();
        assert_eq!(hop(&urr.join("/v/500k/seg-00006.ts")).await.0, 404);
        assert_eq!(hop(&urr.join("/nope/500k/seg-00000.ts")).await.0, 404);
        assert_eq!(hop(&urr.join("/v/500k/seg-1.ts")).await.0, 400);
        // Sent as written: an HTTP client library would normalize these away first.
        for target in [
            "/v/500k/%2e%2e/x",
            "/../../etc/passwd",
            "/v/500k/../../../etc/passwd",
        ] {
            assert_eq!(raw_get(lab.urr.http, target).await, 400, "{target}");
            assert_eq!(raw_get(lab.ucs.http, target).await, 400, "{target}");
        }
        assert_eq!(hop(&lab.drr_url.join("/v/9000k/seg-00000.ts")).await.0, 404);
        let posted = client()
            .post(urr.join("/v/master.m3u8"))
            .send()
            .await
            .unwrap();
        assert_eq!(posted.status(), 405);
        let deleted = client()
            .delete(lab.drr_url.join("/v/500k/seg-00000.ts"))
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status(), 405);
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn control_services_refuse_other_nodes() {
    bounded(async {
        let lab = lab().await;
        let ucs_id = identity(&lab.certs, "ucs");
        // The uCS has a lab certificate, but is not the uRR: the dRR refuses its offer.
        let client = Client::connect(lab.drr.control.unwrap(), "drr", &ucs_id)
            .await
            .unwrap();
        let offer = DrrRequest::Offload(offload_request(&lab.urr_config).unwrap());
        let refused = client.call::<_, DrrResponse>(&offer).await.unwrap_err();
        assert_eq!(
            refused.kind(),
            std::io::ErrorKind::PermissionDenied,
            "{refused}"
        );
        assert!(
            refused.to_string().contains("node ucs may not call"),
            "{refused}"
        );
        client.close().await;
        // A certificate from another lab's CA does not get through the handshake at all.
        let stranger = TempDir::new("stranger");
        issue_lab_certs(&stranger.0, "other", &["urr"]).unwrap();
        let foreign = identity(&stranger.0, "urr");
        let refused = match Client::connect(lab.drr.control.unwrap(), "drr", &foreign).await {
            Err(_) => true,
            Ok(client) => client.call::<_, DrrResponse>(&offer).await.is_err(),
        };
        assert!(refused);
        lab.stop().await;
    })
    .await;
}

#[tokio::test]
async fn urr_gives_up_when_no_drr_answers() {
    bounded(async {
        let certs = TempDir::new("alone");
        issue_lab_certs(&certs.0, "alone", NODES).unwrap();
        let config = UrrConfig {
            port: 0,
            url: BaseUrl::parse("http://urr").unwrap(),
            videos: vec![video("v", 3)],
            upstream: vec![BaseUrl::parse("http://ucs").unwrap()],
            assign: Assign::RoundRobin,
            offload: Offload::All,
            offload_seed: 0,
            drr: Some(Peer {
                url: BaseUrl::parse("http://drr").unwrap(),
                control: free_udp_port().to_string(),
                node: "drr".into(),
            }),
            exchange_timeout: Duration::from_millis(800),
            access_log: false,
        };
        let http = free_tcp_port();
        let error = start_urr(&config, Some(identity(&certs.0, "urr")), http)
            .await
            .err()
            .expect("no dRR, no start");
        assert!(error.contains("chunk-location exchange"), "{error}");
        // It never listened.
        assert!(tokio::net::TcpStream::connect(http).await.is_err());
    })
    .await;
}

#[tokio::test]
async fn dcs_fetches_from_the_origin_once_and_keeps_it() {
    bounded(async {
        let certs = TempDir::new("pull");
        issue_lab_certs(&certs.0, "pull", NODES).unwrap();
        let (ucs, origin) = start_origin(6).await;
        let mut config = dcs_config();
        config.fetch_from_origin = Some(origin.clone());
        let dcs = start_dcs(&config, identity(&certs.0, "dcs1"), any_port(), any_port())
            .await
            .unwrap();
        let url = url_of(dcs.http).join("/v/2000k/seg-00003.ts");
        let first = client().get(&url).send().await.unwrap();
        assert_eq!(first.status(), 200);
        let etag = first.headers()["etag"].to_str().unwrap().to_string();
        assert_eq!(etag, "\"v/2000k/3/500000\"");
        assert_eq!(
            &first.bytes().await.unwrap()[..],
            &segment(2, 3, 500_000)[..]
        );
        assert_eq!(
            hop(&url_of(dcs.http).join("/v/2000k/seg-00009.ts")).await.0,
            404
        );
        // With the origin gone, the kept copy still answers, with ranges and validators.
        ucs.stop().await.unwrap();
        let part = client()
            .get(&url)
            .header("range", "bytes=-10")
            .send()
            .await
            .unwrap();
        assert_eq!(part.status(), 206);
        assert_eq!(
            &part.bytes().await.unwrap()[..],
            &segment(2, 3, 500_000)[499_990..]
        );
        let cached = client()
            .get(&url)
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(cached.status(), 304);
        // A chunk never fetched cannot be had now: 502.
        assert_eq!(
            hop(&url_of(dcs.http).join("/v/500k/seg-00000.ts")).await.0,
            502
        );
        dcs.stop().await.unwrap();
    })
    .await;
}
