//! The directory of a Swarm stack: how containers learn each other's addresses when the
//! orchestrator, not the topology, picks them (`docker stack deploy` ignores `ipv4_address`).
//!
//! Every container joins one more network, the stack's directory network, which carries no
//! emulated traffic. On it each container answers, on the control plane (QUIC, both ends
//! authenticated by the lab's certificates), with its *card*: its address on each of its
//! networks and whether its program is ready. A container asks a node's card by the node's
//! alias on the directory network (`directory-NODE`, resolved by Docker's DNS, which knows it
//! only there), so the answer never travels an emulated link. From cards it learns its routes'
//! gateways, its LAN peers' addresses, the names its `/etc/hosts` needs, and when the nodes it
//! waits for are ready (Swarm has no `depends_on`).

use crate::control::{self, Callers, Identity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The UDP port every container's card is served on, on its directory address.
pub const PORT: u16 = 4480;

/// How long a container waits for another's card (its task may be scheduled late).
pub const CARD_WAIT: Duration = Duration::from_secs(180);

/// How long one attempt to fetch a card may take before it is tried again.
const ATTEMPT: Duration = Duration::from_secs(3);

/// The name under which `node` answers on the directory network.
pub fn alias(node: &str) -> String {
    format!("directory-{node}")
}

/// What a container says of itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    /// Its address on each of its networks, by network name.
    pub nets: BTreeMap<String, Ipv4Addr>,
    /// Whether its program is ready (a router: its routes and links are set up).
    pub ready: bool,
}

/// The only request: "your card, please".
#[derive(Debug, Serialize, Deserialize)]
struct CardRequest;

/// This container's side: its card served until dropped, and the means to ask others'.
pub struct Directory {
    runtime: tokio::runtime::Runtime,
    identity: Arc<Identity>,
    ready: Arc<AtomicBool>,
    _server: control::ServerHandle,
}

impl Directory {
    /// Serves `nets` as this node's card on `addr` (its directory address) to every node of
    /// the lab (whoever holds a certificate of its CA).
    pub fn start(
        addr: Ipv4Addr,
        identity: Identity,
        nets: BTreeMap<String, Ipv4Addr>,
    ) -> io::Result<Directory> {
        // One worker serves the card while this thread is busy elsewhere.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("directory")
            .enable_all()
            .build()?;
        let identity = Arc::new(identity);
        let ready = Arc::new(AtomicBool::new(false));
        let card_ready = ready.clone();
        let callers = Callers::whole_lab("directory");
        let server = runtime.block_on(control::serve(
            SocketAddr::from((addr, PORT)),
            &identity,
            callers,
            move |_peer, CardRequest| {
                let card = Card {
                    nets: nets.clone(),
                    ready: card_ready.load(Ordering::Relaxed),
                };
                async move { card }
            },
        ))?;
        Ok(Directory {
            runtime,
            identity,
            ready,
            _server: server,
        })
    }

    /// From now on the card says the program is ready.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Relaxed);
    }

    /// `node`'s card and the round trip it took on the directory network, asking again until
    /// `deadline` while its container is not up yet.
    pub fn card(&self, node: &str, deadline: Instant) -> io::Result<(Card, Duration)> {
        loop {
            let attempt = self.runtime.block_on(async {
                let name = alias(node);
                let addr = tokio::net::lookup_host((name.as_str(), PORT))
                    .await?
                    .find(SocketAddr::is_ipv4)
                    .ok_or_else(|| {
                        io::Error::new(io::ErrorKind::NotFound, format!("{name}: no address"))
                    })?;
                fetch(&self.identity, node, addr).await
            });
            match attempt {
                Ok(found) => return Ok(found),
                Err(e) if Instant::now() >= deadline => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("no card from node `{node}` on the directory network: {e}"),
                    ))
                }
                Err(e) => tracing::debug!("directory: {node}: {e}; asking again"),
            }
            crate::lab::interrupt::check().map_err(|e| io::Error::other(e.0))?;
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Waits until every one of `nodes` says it is ready.
    pub fn wait_ready(&self, nodes: &[String], deadline: Instant) -> io::Result<()> {
        for node in nodes {
            loop {
                let (card, _) = self.card(node, deadline)?;
                if card.ready {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("node `{node}` was not ready in time"),
                    ));
                }
                crate::lab::interrupt::check().map_err(|e| io::Error::other(e.0))?;
                std::thread::sleep(Duration::from_millis(250));
            }
        }
        Ok(())
    }
}

/// How many more calls time the round trip once the card is in.
const RTT_SAMPLES: usize = 3;

/// One attempt at `node`'s card from `addr`, and the round trip on the way: the shortest of a
/// few calls on the open connection (the handshake's own sample includes its cryptography).
async fn fetch(identity: &Identity, node: &str, addr: SocketAddr) -> io::Result<(Card, Duration)> {
    let client = control::Client::connect(addr, node, identity)
        .await?
        .with_timeout(ATTEMPT);
    let card: Card = client.call(&CardRequest).await?;
    let mut rtt = Duration::MAX;
    for _ in 0..RTT_SAMPLES {
        let start = Instant::now();
        let _: Card = client.call(&CardRequest).await?;
        rtt = rtt.min(start.elapsed());
    }
    client.close().await;
    Ok((card, rtt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    fn identity(dir: &TempDir, node: &str) -> Identity {
        Identity::load(&dir.0.join(node), node).unwrap()
    }

    /// A card says a node's addresses and, once set, that it is ready; the lab's nodes get it,
    /// a node of another lab does not, and a node asked under another's name is not believed.
    #[test]
    fn cards_are_served_to_the_lab_and_say_when_ready() {
        let dir = TempDir::new("directory");
        control::issue_lab_certs_per_node(&dir.0, "t", &["a", "b"]).unwrap();
        let other = TempDir::new("directory-other");
        control::issue_lab_certs_per_node(&other.0, "u", &["b"]).unwrap();
        let nets = BTreeMap::from([("link".to_string(), Ipv4Addr::new(198, 18, 0, 3))]);
        let a = Directory::start(
            Ipv4Addr::new(127, 0, 0, 1),
            identity(&dir, "a"),
            nets.clone(),
        )
        .unwrap();
        let asker = Directory::start(
            Ipv4Addr::new(127, 0, 0, 2),
            identity(&dir, "b"),
            BTreeMap::new(),
        )
        .unwrap();
        let at_a = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), PORT));
        let ask = |d: &Directory, node: &str| d.runtime.block_on(fetch(&d.identity, node, at_a));
        let (card, rtt) = ask(&asker, "a").unwrap();
        assert_eq!(
            card,
            Card {
                nets: nets.clone(),
                ready: false
            }
        );
        assert!(rtt < Duration::from_secs(1), "{rtt:?}");
        a.set_ready();
        assert!(ask(&asker, "a").unwrap().0.ready);
        // The server's certificate must name the node asked for.
        let error = ask(&asker, "b").unwrap_err().to_string();
        assert!(error.contains("`b`"), "{error}");
        // A node of another lab is refused at the handshake.
        let stranger = Directory::start(
            Ipv4Addr::new(127, 0, 0, 3),
            identity(&other, "b"),
            BTreeMap::new(),
        )
        .unwrap();
        assert!(ask(&stranger, "a").is_err());
    }
}
