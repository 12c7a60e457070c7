//! End-to-end tests on loopback: real QUIC, real certificates from `issue_lab_certs`.

use super::identity::Identity;
use super::server::{serve_with, Limits, BAD_REQUEST, BAD_RESPONSE, REFUSED};
use super::{
    issue_lab_certs, serve, tls, Callers, Client, PeerName, ServerHandle, ALPN, MAX_FRAME,
};
use crate::testing::TempDir;
use serde::{Deserialize, Serialize};
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Every test is bounded by this, so a regression fails instead of hanging CI.
const LIMIT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Request {
    WhereIs { video: String, chunk: u32 },
    Offload(Vec<u32>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Response {
    At { node: String, asked_by: String },
    Accepted(usize),
}

fn lab(name: &str) -> TempDir {
    let dir = TempDir::new(name);
    issue_lab_certs(&dir.0, name, &["urr", "drr", "dcs1", "client1"]).unwrap();
    dir
}

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Any caller `lab` issued a certificate for, for tests about something else.
fn anyone() -> Callers {
    Callers::only("test service", ["urr", "drr", "dcs1", "client1"])
}

/// A server for node `urr` that answers `WhereIs` with the asking peer's name and counts calls;
/// only `drr` and `dcs1` may call it.
async fn location_server(id: &Identity, calls: Arc<AtomicUsize>) -> ServerHandle {
    let callers = Callers::only("location service", ["drr", "dcs1"]);
    serve(
        loopback(),
        id,
        callers,
        move |peer: PeerName, request: Request| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                match request {
                    Request::WhereIs { video, chunk } => Response::At {
                        node: format!("dcs{}-{video}", chunk % 2),
                        asked_by: peer.to_string(),
                    },
                    Request::Offload(chunks) => Response::Accepted(chunks.len()),
                }
            }
        },
    )
    .await
    .unwrap()
}

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .expect("test exceeded its time limit")
}

/// Connects and makes one call; the refusal may come at either step (see `Client::connect`).
async fn connect_and_call(
    addr: SocketAddr,
    server_name: &str,
    config: quinn::ClientConfig,
) -> io::Result<Response> {
    let client = Client::connect_with(addr, server_name, config).await?;
    client
        .call(&Request::WhereIs {
            video: "v".into(),
            chunk: 1,
        })
        .await
}

#[tokio::test]
async fn typed_round_trip_and_the_handler_sees_the_callers_node_name() {
    bounded(async {
        let dir = lab("rt");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let client = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap();

        let answer: Response = client
            .call(&Request::WhereIs {
                video: "bbb".into(),
                chunk: 3,
            })
            .await
            .unwrap();
        assert_eq!(
            answer,
            Response::At {
                node: "dcs1-bbb".into(),
                asked_by: "drr".into()
            }
        );
        let answer: Response = client.call(&Request::Offload(vec![1, 2, 5])).await.unwrap();
        assert_eq!(answer, Response::Accepted(3));
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        // Another node's client is told apart.
        let dcs = Identity::load(&dir.0, "dcs1").unwrap();
        let other = Client::connect(server.local_addr(), "urr", &dcs)
            .await
            .unwrap();
        let answer: Response = other
            .call(&Request::WhereIs {
                video: "x".into(),
                chunk: 0,
            })
            .await
            .unwrap();
        assert_eq!(
            answer,
            Response::At {
                node: "dcs0-x".into(),
                asked_by: "dcs1".into()
            }
        );
        client.close().await;
        other.close().await;
        server.close().await;
    })
    .await;
}

/// A valid certificate of this lab is not enough: a node the service does not name is refused
/// with a clear error before the handler runs, and the callers it names are still served.
#[tokio::test]
async fn a_lab_node_the_service_does_not_name_is_refused_before_the_handler() {
    bounded(async {
        let dir = lab("who");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let request = Request::Offload(vec![1]);
        let intruder = Identity::load(&dir.0, "client1").unwrap();
        let client = Client::connect(server.local_addr(), "urr", &intruder)
            .await
            .unwrap();
        let err = client.call::<_, Response>(&request).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{err}");
        let text = err.to_string();
        assert!(
            text.contains("node client1 may not call the location service (only drr, dcs1)"),
            "{text}"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");
        // The refused connection stays refused; a named caller is served.
        let again = client.call::<_, Response>(&request).await.unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::PermissionDenied, "{again}");
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let allowed = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap();
        let answer: Response = allowed.call(&request).await.unwrap();
        assert_eq!(answer, Response::Accepted(1));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    })
    .await;
}

/// Makes calls `0..n` on `client` all at once, and checks each was answered with ten times
/// its number.
async fn calls_at_once(client: Arc<Client>, n: u32) {
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..n {
        let client = client.clone();
        calls.spawn(async move { (i, client.call::<u32, u32>(&i).await) });
    }
    let mut answered = 0;
    while let Some(joined) = calls.join_next().await {
        let (i, answer) = joined.unwrap();
        assert_eq!(answer.unwrap(), i * 10);
        answered += 1;
    }
    assert_eq!(answered, n);
}

/// A raw QUIC connection to `server` as `id`, for tests that write frames by hand, with the
/// endpoint it needs kept alive beside it.
async fn raw_connection(
    server: &ServerHandle,
    id: &Identity,
) -> (quinn::Endpoint, quinn::Connection) {
    let endpoint = quinn::Endpoint::client(loopback()).unwrap();
    let connection = endpoint
        .connect_with(tls::client_config(id).unwrap(), server.local_addr(), "urr")
        .unwrap()
        .await
        .unwrap();
    (endpoint, connection)
}

/// The refusal comes before the server reads anything: a node that may not call gets its
/// connection closed even while its request is still arriving, so it cannot make the server
/// buffer up to `MAX_FRAME` per stream.
#[tokio::test]
async fn a_refused_node_is_closed_out_before_its_request_is_read() {
    bounded(async {
        let dir = lab("early");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let intruder = Identity::load(&dir.0, "client1").unwrap();
        let (_endpoint, connection) = raw_connection(&server, &intruder).await;
        // A frame that announces the largest payload and sends a few bytes of it, unfinished:
        // a server that read before checking would wait here until the caller gave up.
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(&(MAX_FRAME as u32).to_be_bytes())
            .await
            .unwrap();
        let _ = send.write_all(&[0; 1000]).await;
        match recv.read_to_end(64).await {
            Err(quinn::ReadToEndError::Read(quinn::ReadError::ConnectionLost(
                quinn::ConnectionError::ApplicationClosed(close),
            ))) => {
                assert_eq!(close.error_code, REFUSED.into());
                let reason = String::from_utf8_lossy(&close.reason).into_owned();
                assert!(
                    reason.contains("node client1 may not call the location service"),
                    "{reason}"
                );
            }
            other => panic!("expected the connection closed as refused, got {other:?}"),
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(server.connections.count("client1"), 0, "never registered");
    })
    .await;
}

/// Short limits, for the tests of what an allowed caller can make a server hold.
fn tight(limits: impl FnOnce(&mut Limits)) -> Limits {
    let mut tight = Limits::DEFAULT;
    limits(&mut tight);
    tight
}

/// A request that stops arriving holds its stream only until the transfer limit: the caller
/// gets a reset, and the stream is free again (with one call per connection, the next call on
/// the same connection could not start otherwise).
#[tokio::test]
async fn a_request_that_stalls_is_reset_and_frees_its_stream() {
    bounded(async {
        let dir = lab("stall");
        let calls = Arc::new(AtomicUsize::new(0));
        let limits = tight(|l| {
            l.transfer = Duration::from_millis(300);
            l.calls_per_connection = 1;
        });
        let counted = calls.clone();
        let server = serve_with(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            move |_peer: PeerName, n: u32| {
                counted.fetch_add(1, Ordering::SeqCst);
                async move { n + 1 }
            },
            limits,
        )
        .await
        .unwrap();
        let (_endpoint, connection) =
            raw_connection(&server, &Identity::load(&dir.0, "drr").unwrap()).await;
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(&100u32.to_be_bytes()).await.unwrap();
        send.write_all(&[0; 10]).await.unwrap();
        match recv.read_to_end(64).await {
            Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
                assert_eq!(code, BAD_REQUEST.into())
            }
            other => panic!("expected a reset with BAD_REQUEST, got {other:?}"),
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        // The caller's side of the stream ends as a client's does when its call fails.
        drop(send);
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(&super::codec::encode(&41u32).unwrap())
            .await
            .unwrap();
        send.finish().unwrap();
        let answer: u32 = super::codec::read_frame(&mut recv).await.unwrap();
        assert_eq!(answer, 42);
    })
    .await;
}

/// A caller that never takes its response holds its stream only until the transfer limit.
#[tokio::test]
async fn a_response_the_caller_does_not_take_is_reset() {
    bounded(async {
        let dir = lab("untaken");
        let limits = tight(|l| l.transfer = Duration::from_millis(300));
        // Far more than QUIC's stream window, so the server's write blocks on the caller.
        let server = serve_with(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            |_peer: PeerName, n: u32| async move { vec![7u8; n as usize] },
            limits,
        )
        .await
        .unwrap();
        let (_endpoint, connection) =
            raw_connection(&server, &Identity::load(&dir.0, "drr").unwrap()).await;
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(&super::codec::encode(&(8u32 << 20)).unwrap())
            .await
            .unwrap();
        send.finish().unwrap();
        // Long past the limit, even on a loaded machine, before the caller reads at all.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut got = 0usize;
        let mut buf = vec![0; 64 << 10];
        let end = loop {
            match recv.read(&mut buf).await {
                Ok(Some(n)) => got += n,
                other => break other,
            }
        };
        match end {
            Err(quinn::ReadError::Reset(code)) => assert_eq!(code, BAD_RESPONSE.into()),
            other => panic!("expected a reset with BAD_RESPONSE after {got} bytes, got {other:?}"),
        }
        assert!(got < 8 << 20, "the whole response arrived: {got} bytes");
    })
    .await;
}

/// Requests share one byte budget, and each caller has a share of it: a request that
/// announces more than is left waits (its payload unread) until an earlier one is answered,
/// so a caller that announces much and sends little holds up its own later requests and its
/// share, not another caller's request that fits beside it; one announcing more than a share
/// is refused at once.
#[tokio::test]
async fn requests_wait_for_room_in_their_callers_share_and_the_servers_budget() {
    bounded(async {
        let dir = lab("budget");
        let limits = tight(|l| {
            l.request_bytes = 1000;
            l.request_bytes_per_node = 800;
        });
        let server = serve_with(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            |_peer: PeerName, bytes: Vec<u8>| async move { bytes.len() as u32 },
            limits,
        )
        .await
        .unwrap();
        let raw = |node| {
            let id = Identity::load(&dir.0, node).unwrap();
            let server = &server;
            async move { raw_connection(server, &id).await }
        };
        // A request of a Vec<u8> of `items` bytes (bincode writes its length first: 100 bytes
        // of payload for 99 items, 300 for 297), sent whole; the stream its answer comes on.
        let send = |connection: quinn::Connection, items: usize| async move {
            let (mut send, recv) = connection.open_bi().await.unwrap();
            send.write_all(&super::codec::encode(&vec![2u8; items]).unwrap())
                .await
                .unwrap();
            send.finish().unwrap();
            recv
        };
        // The answer on `recv`, awaited in a task.
        let answer = |mut recv: quinn::RecvStream| {
            tokio::spawn(async move { super::codec::read_frame::<u32, _>(&mut recv).await })
        };
        // drr's request takes 800 bytes, its whole share, and stops 10 bytes into its payload.
        let (_e1, drr) = raw("drr").await;
        let big = super::codec::encode(&vec![1u8; 797]).unwrap();
        assert_eq!(big.len(), 4 + 800);
        let (mut big_send, mut big_recv) = drr.open_bi().await.unwrap();
        big_send.write_all(&big[..14]).await.unwrap();
        while server.request_bytes.available_permits() != 200 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // drr's next request waits for its own share...
        let drr_small = answer(send(drr.clone(), 99).await);
        // ...while dcs1's, which fits beside it (100 of the 200 bytes left), is answered...
        let (_e2, dcs1) = raw("dcs1").await;
        let dcs1_small = answer(send(dcs1.clone(), 99).await);
        assert_eq!(dcs1_small.await.unwrap().unwrap(), 99);
        // ...and one of 300 bytes, which does not fit, waits too.
        let dcs1_large = answer(send(dcs1.clone(), 297).await);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!drr_small.is_finished(), "answered past its caller's share");
        assert!(
            !dcs1_large.is_finished(),
            "answered past the server's budget"
        );
        // Once drr's request is whole and answered, both go through.
        big_send.write_all(&big[14..]).await.unwrap();
        big_send.finish().unwrap();
        let answer = super::codec::read_frame::<u32, _>(&mut big_recv).await;
        assert_eq!(answer.unwrap(), 797);
        assert_eq!(drr_small.await.unwrap().unwrap(), 99);
        assert_eq!(dcs1_large.await.unwrap().unwrap(), 297);
        // A request larger than a caller's share could never fit: reset, not left waiting.
        let (mut send, mut recv) = drr.open_bi().await.unwrap();
        send.write_all(&801u32.to_be_bytes()).await.unwrap();
        match recv.read_to_end(64).await {
            Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
                assert_eq!(code, BAD_REQUEST.into())
            }
            other => panic!("expected a reset with BAD_REQUEST, got {other:?}"),
        }
    })
    .await;
}

/// Calls beyond a connection's share wait for a free stream instead of piling up in the server.
#[tokio::test]
async fn calls_beyond_a_connections_share_wait_their_turn() {
    const CALLS: u32 = 12;
    const SHARE: u32 = 4;
    bounded(async {
        let dir = lab("share");
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (now, peak) = (inside.clone(), most.clone());
        let server = serve_with(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            move |_peer: PeerName, n: u32| {
                let (now, peak) = (now.clone(), peak.clone());
                async move {
                    let here = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(here, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    now.fetch_sub(1, Ordering::SeqCst);
                    n * 10
                }
            },
            tight(|l| l.calls_per_connection = SHARE),
        )
        .await
        .unwrap();
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let client = Arc::new(
            Client::connect(server.local_addr(), "urr", &drr)
                .await
                .unwrap(),
        );
        calls_at_once(client, CALLS).await;
        let peak = most.load(Ordering::SeqCst);
        assert!(peak <= SHARE as usize, "{peak} calls inside at once");
    })
    .await;
}

/// A node over its share of connections loses its oldest, not its newest, and the server
/// forgets connections once they close.
#[tokio::test]
async fn a_node_over_its_connection_share_loses_its_oldest() {
    bounded(async {
        let dir = lab("conns");
        let server = serve_with(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            |_peer: PeerName, n: u32| async move { n + 1 },
            tight(|l| l.connections_per_node = 2),
        )
        .await
        .unwrap();
        let (drr, dcs1) = (
            Identity::load(&dir.0, "drr").unwrap(),
            Identity::load(&dir.0, "dcs1").unwrap(),
        );
        let other = Client::connect(server.local_addr(), "urr", &dcs1)
            .await
            .unwrap();
        assert_eq!(other.call::<u32, u32>(&0).await.unwrap(), 1);
        let mut clients = Vec::new();
        for n in 0..3u32 {
            let client = Client::connect(server.local_addr(), "urr", &drr)
                .await
                .unwrap();
            // The call makes sure the server has registered this connection before the next.
            assert_eq!(client.call::<u32, u32>(&n).await.unwrap(), n + 1);
            clients.push(client);
        }
        let err = clients[0].call::<u32, u32>(&9).await.unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(
            err.to_string()
                .contains("replaced by a newer connection from the same node"),
            "{err}"
        );
        assert_eq!(clients[1].call::<u32, u32>(&1).await.unwrap(), 2);
        assert_eq!(clients[2].call::<u32, u32>(&2).await.unwrap(), 3);
        assert_eq!(
            other.call::<u32, u32>(&5).await.unwrap(),
            6,
            "other nodes keep theirs"
        );
        assert_eq!(server.connections.count("drr"), 2);
        for client in clients {
            client.close().await;
        }
        while server.connections.count("drr") > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(server.connections.count("dcs1"), 1);
    })
    .await;
}

#[tokio::test]
async fn a_client_without_a_certificate_is_refused() {
    bounded(async {
        let dir = lab("nocert");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();

        // It trusts the lab CA, speaks the right ALPN, but presents no certificate.
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(drr.roots.clone())
        .with_no_client_auth();
        tls.alpn_protocols = vec![ALPN.to_vec()];
        let config = tls::client_config_from(tls).unwrap();

        let err = connect_and_call(server.local_addr(), "urr", config)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("urr"), "{err}");
        assert!(err.to_string().contains("handshake failed"), "{err}");
        assert!(err.to_string().contains("certificate"), "{err}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "the handler ran for a stranger"
        );
    })
    .await;
}

#[tokio::test]
async fn a_client_with_a_certificate_from_another_lab_is_refused() {
    bounded(async {
        let home = lab("home");
        let foreign = lab("foreign");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&home.0, "urr").unwrap(), calls.clone()).await;

        // Trusts the home lab's server, but its own certificate (same node name) is foreign.
        let stranger = Identity::load(&foreign.0, "drr").unwrap();
        let home_drr = Identity::load(&home.0, "drr").unwrap();
        let mixed = Identity {
            roots: home_drr.roots.clone(),
            ..stranger
        };
        let config = tls::client_config(&mixed).unwrap();

        let err = connect_and_call(server.local_addr(), "urr", config)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("urr"), "{err}");
        assert!(err.to_string().contains("handshake failed"), "{err}");
        assert!(err.to_string().contains("certificate"), "{err}");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            0,
            "the handler ran for a stranger"
        );

        // The home lab's own drr still gets through the same server.
        let client = Client::connect(server.local_addr(), "urr", &home_drr)
            .await
            .unwrap();
        let answer: Response = client.call(&Request::Offload(vec![])).await.unwrap();
        assert_eq!(answer, Response::Accepted(0));
    })
    .await;
}

#[tokio::test]
async fn a_server_with_a_certificate_from_another_lab_is_refused_by_the_client() {
    bounded(async {
        let home = lab("shome");
        let foreign = lab("sforeign");
        // The server would accept home clients, but presents a foreign certificate.
        let home_urr = Identity::load(&home.0, "urr").unwrap();
        let impostor = Identity {
            roots: home_urr.roots.clone(),
            ..Identity::load(&foreign.0, "urr").unwrap()
        };
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&impostor, calls.clone()).await;

        let drr = Identity::load(&home.0, "drr").unwrap();
        let err = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
        assert!(err.to_string().contains("urr"), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    })
    .await;
}

#[tokio::test]
async fn a_server_certificate_for_another_node_is_refused() {
    bounded(async {
        let dir = lab("name");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();
        // Right lab, wrong node: the client wanted dcs1 and got urr.
        let err = Client::connect(server.local_addr(), "dcs1", &drr)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused, "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_peer_speaking_another_protocol_is_refused() {
    bounded(async {
        let dir = lab("alpn");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();
        // A lab certificate, but HTTP/3 instead of the control protocol.
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(drr.roots.clone())
        .with_client_auth_cert(drr.chain.clone(), drr.key.clone_key())
        .unwrap();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let config = tls::client_config_from(tls).unwrap();
        let err = connect_and_call(server.local_addr(), "urr", config)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("handshake failed"), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    })
    .await;
}

#[tokio::test]
async fn an_oversized_frame_is_refused_and_the_connection_still_serves() {
    bounded(async {
        let dir = lab("big");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();

        // A raw stream announcing one byte over the limit, then nothing more: were the length
        // trusted, the server would wait for 16 MiB that never come.
        let (_endpoint, connection) = raw_connection(&server, &drr).await;
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(&(MAX_FRAME as u32 + 1).to_be_bytes())
            .await
            .unwrap();
        match recv.read_to_end(64).await {
            Err(quinn::ReadToEndError::Read(quinn::ReadError::Reset(code))) => {
                assert_eq!(code, BAD_REQUEST.into())
            }
            other => panic!("expected a reset with BAD_REQUEST, got {other:?}"),
        }
        assert_eq!(calls.load(Ordering::SeqCst), 0);

        // The same connection still answers a well-formed call.
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        let frame = super::codec::encode(&Request::Offload(vec![9])).unwrap();
        send.write_all(&frame).await.unwrap();
        send.finish().unwrap();
        let answer: Response = super::codec::read_frame(&mut recv).await.unwrap();
        assert_eq!(answer, Response::Accepted(1));

        // And a client never sends an oversized request in the first place.
        let client = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap();
        let err = client
            .call::<_, Response>(&Request::Offload(vec![u32::MAX; MAX_FRAME / 4]))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    })
    .await;
}

#[tokio::test]
async fn a_request_of_the_wrong_type_gets_a_refusal_not_a_timeout() {
    bounded(async {
        let dir = lab("type");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls.clone()).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let client = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap();
        // Variant index 7 of a u8 does not exist in `Request`.
        let err = client.call::<_, Response>(&(7u8, 1u8)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        assert!(err.to_string().contains("refused the request"), "{err}");
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    })
    .await;
}

#[tokio::test]
async fn concurrent_calls_on_one_connection_are_served_together() {
    const CALLS: usize = 16;
    bounded(async {
        let dir = lab("conc");
        // Each handler waits until all CALLS requests are inside the server at once: with
        // calls served one after another this would never happen and the calls would time out.
        let barrier = Arc::new(tokio::sync::Barrier::new(CALLS));
        let server = serve(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            {
                move |_peer: PeerName, n: u32| {
                    let barrier = barrier.clone();
                    async move {
                        barrier.wait().await;
                        n * 10
                    }
                }
            },
        )
        .await
        .unwrap();
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let client = Arc::new(
            Client::connect(server.local_addr(), "urr", &drr)
                .await
                .unwrap()
                .with_timeout(Duration::from_secs(5)),
        );
        calls_at_once(client, CALLS as u32).await;
    })
    .await;
}

#[tokio::test]
async fn a_call_without_an_answer_times_out() {
    bounded(async {
        let dir = lab("slow");
        let server = serve(
            loopback(),
            &Identity::load(&dir.0, "urr").unwrap(),
            anyone(),
            |_peer: PeerName, _n: u32| std::future::pending::<u32>(),
        )
        .await
        .unwrap();
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let client = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap()
            .with_timeout(Duration::from_millis(300));
        let err = client.call::<u32, u32>(&1).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("urr"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn calls_fail_promptly_once_the_server_is_gone() {
    bounded(async {
        let dir = lab("gone");
        let calls = Arc::new(AtomicUsize::new(0));
        let server = location_server(&Identity::load(&dir.0, "urr").unwrap(), calls).await;
        let drr = Identity::load(&dir.0, "drr").unwrap();
        let client = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap();
        let answer: Response = client.call(&Request::Offload(vec![4])).await.unwrap();
        assert_eq!(answer, Response::Accepted(1));
        server.close().await;
        let err = client
            .call::<_, Response>(&Request::Offload(vec![]))
            .await
            .unwrap_err();
        assert_ne!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        assert!(err.to_string().contains("server closing"), "{err}");
    })
    .await;
}

#[test]
fn issued_files_are_pem_with_a_private_key_only_root_can_read() {
    let dir = lab("files");
    for file in [
        "ca.pem", "urr.pem", "urr.key", "drr.pem", "drr.key", "dcs1.pem", "dcs1.key",
    ] {
        let text = std::fs::read_to_string(dir.0.join(file)).unwrap();
        assert!(text.starts_with("-----BEGIN "), "{file}: {text}");
    }
    let mode = std::fs::metadata(dir.0.join("urr.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let mode = std::fs::metadata(&dir.0).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the directory of every key");
    assert!(
        !dir.0.join("ca.key").exists(),
        "the CA key must not be kept"
    );
    assert_eq!(Identity::load(&dir.0, "dcs1").unwrap().node(), "dcs1");
}

/// Each node's directory holds the CA, its own certificate and its own key, nothing of
/// another node's; and the identities of two directories trust each other (one CA).
#[tokio::test]
async fn per_node_directories_hold_only_their_own_key_and_share_the_ca() {
    bounded(async {
        let dir = TempDir::new("pernode");
        super::issue_lab_certs_per_node(&dir.0, "pernode", &["urr", "drr"]).unwrap();
        for node in ["urr", "drr"] {
            let own = dir.0.join(node);
            let mut files: Vec<String> = std::fs::read_dir(&own)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            let mut expected = vec![
                "ca.pem".to_string(),
                format!("{node}.key"),
                format!("{node}.pem"),
            ];
            expected.sort();
            assert_eq!(files, expected);
            let mode = std::fs::metadata(&own).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{node}");
        }
        let urr = Identity::load(&dir.0.join("urr"), "urr").unwrap();
        let drr = Identity::load(&dir.0.join("drr"), "drr").unwrap();
        let callers = Callers::only("test service", ["drr"]);
        let server = serve(
            loopback(),
            &urr,
            callers,
            |_peer: PeerName, n: u32| async move { n + 1 },
        )
        .await
        .unwrap();
        let client = Client::connect(server.local_addr(), "urr", &drr)
            .await
            .unwrap();
        assert_eq!(client.call::<u32, u32>(&1).await.unwrap(), 2);
    })
    .await;
}

#[test]
fn bad_node_names_are_refused_before_any_file_is_written() {
    let dir = TempDir::new("badname");
    for bad in ["../etc", "a/b", "", "Upper", "dash-", "9lives"] {
        let err = issue_lab_certs(&dir.0, "x", &["ok", bad]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}: {err}");
    }
    assert!(!dir.0.exists());
}

#[test]
fn loading_reports_missing_and_mismatched_files() {
    let dir = lab("load");
    let err = Identity::load(&dir.0, "nobody").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains("nobody.pem"), "{err}");

    // urr's certificate under drr's name.
    copy(&dir.0, "urr.pem", "drr.pem");
    let err = Identity::load(&dir.0, "drr").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("names node `urr`"), "{err}");

    std::fs::write(dir.0.join("ca.pem"), "not a certificate\n").unwrap();
    let err = Identity::load(&dir.0, "urr").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("ca.pem"), "{err}");
}

fn copy(dir: &Path, from: &str, to: &str) {
    std::fs::copy(dir.join(from), dir.join(to)).unwrap();
}
