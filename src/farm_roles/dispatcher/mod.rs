//! `farm-dispatcher`: the farm's coordinating entity (papers/004, Section V-A) on real processes.
//! At the start it lays the initial replication (`scheme`: proportional or optimized, or
//! proportional for an adaptive scheme) on the servers and has each fetch its contents from the
//! data center. Then every user request `GET /c/C` is answered with a redirect: to an idle server
//! storing C (now busy until it reports the transfer's end), or, when none is, to the data center —
//! a loss. Each redirect carries a ticket of the dispatcher's key (`super::tickets`), without which
//! neither serves it. Losses (and virtual losses) run the adaptive scheme, whose replacements go to
//! the servers over the control plane: after a real loss the new replica is a copy from the data
//! center, after a virtual loss one from the server that is serving the request. Every decision is
//! the core's `Coordinator`, in time counted in mean service times.
//!
//! Samples the farm every `sample_every` and writes to `$CDNLAB_OUT_DIR`, every few seconds and
//! at the end, `farm.json` (settings; totals, per content too: requests, losses, mean replicas;
//! every sample: requests, losses, copies, the first and last 10% of the contents, busy
//! servers, the data center's bytes), `samples.csv`, and the plots `loss.svg`, `replicas.svg`,
//! `datacenter.svg`.

mod datacenter;
mod plots;
mod record;

use super::config::DispatcherConfig;
use super::messages::{
    DispatcherRequest, DispatcherResponse, ServerRequest, ServerResponse, Source,
};
use super::tickets::ticketed_path;
use crate::control::{Callers, Identity};
use crate::replication::coordinator::{Coordinator, Copy, Decision, Trigger};
use crate::replication::farm::Observer;
use crate::replication::placement::{place, EMPTY};
use crate::replication::{initial, scheme_of};
use crate::roles::control::load_identity;
use crate::roles::env::NodeEnv;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, Body, ServeOptions};
use crate::roles::peers::{call_all, Peer};
use crate::roles::tokens::TokenKey;
use datacenter::DataCenterLine;
use hyper::{Request, Response, StatusCode};
use rand::rngs::StdRng;
use rand::SeedableRng;
use record::{Interval, Recorder};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long filling the farm may take before the dispatcher gives up.
const FILL_DEADLINE: Duration = Duration::from_secs(120);

/// The real farm keeps no time-weighted statistics: its samples are counts.
struct NoStatistics;

impl Observer for NoStatistics {
    fn available_changes(&mut self, _: u32, _: u32) {}
    fn replicas_change(&mut self, _: u32, _: u32) {}
}

/// A transfer the dispatcher sent a server: the number of the ticket its redirect carries
/// (which the server's `Done` must give back) and when.
#[derive(Clone, Copy)]
struct Assignment {
    ticket: u64,
    since: Instant,
}

struct State {
    coordinator: Coordinator,
    rng: StdRng,
    /// When each busy server was sent its request (None: idle).
    /// Each server's transfer in progress, as the dispatcher assigned it.
    assigned: Vec<Option<Assignment>>,
    next_ticket: u64,
    interval: Interval,
}

struct Dispatcher {
    config: DispatcherConfig,
    identity: Arc<Identity>,
    origin: Instant,
    state: Mutex<State>,
    /// Server name → index.
    index: HashMap<String, u32>,
    /// Each server's replacements waiting their turn, in the order the coordinator made them.
    replacements: Vec<mpsc::Sender<(Copy, Source)>>,
    /// Makes the tickets of the redirects (the servers and the data center check them with
    /// its bytes, sent in `Fill` and `Key`).
    tickets: TokenKey,
}

/// Replacements one server may have waiting at once: each call may take seconds when the
/// server is slow or gone, while losses, which anyone's requests cause, keep coming.
const MAX_WAITING_REPLACEMENTS: usize = 64;

impl Dispatcher {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Now, in mean service times since the dispatcher started.
    fn now_units(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() / self.config.model.service.as_secs_f64()
    }

    fn handle(self: &Arc<Self>, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        // Every request is a transfer the coordinator assigns (a server busy for its lease, a
        // loss that may start a replica), so only a GET, which takes one, is a request.
        if request.method() != hyper::Method::GET {
            let mut refusal = error(
                StatusCode::METHOD_NOT_ALLOWED,
                format_args!("method {} is not allowed; use GET", request.method()),
            );
            (refusal.headers_mut()).insert(
                hyper::header::ALLOW,
                hyper::header::HeaderValue::from_static("GET"),
            );
            return refusal;
        }
        let n = self.config.system.n();
        let Some(content) = super::content_of(request.uri().path(), "c", n) else {
            return error(StatusCode::NOT_FOUND, "no such content");
        };
        let t = self.now_units();
        let (step, ticket) = {
            let mut state = self.lock();
            let State {
                coordinator, rng, ..
            } = &mut *state;
            let step = coordinator.request(content, t, &mut NoStatistics, rng);
            // Every redirect carries a ticket; a server's is the transfer it is now busy with.
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            if let Decision::Serve { server } = step.decision {
                state.assigned[server as usize] = Some(Assignment {
                    ticket,
                    since: Instant::now(),
                });
            }
            state.interval.request(content, &step);
            // Queued under the lock that decided it, so one slot's replacements are queued,
            // and sent, in the order the coordinator made them.
            if let Some(copy) = step.copy {
                self.queue_replacement(copy, step.decision, &mut state.interval);
            }
            (step, ticket)
        };
        let node = match step.decision {
            Decision::Serve { server } => &self.config.servers[server as usize],
            Decision::Lost => &self.config.datacenter,
        };
        let path = ticketed_path(&self.tickets, node, "c", content, ticket);
        let location = format!("http://{node}:{}{path}", self.config.server_port);
        let mut response = http::redirect(location);
        let decision = match step.decision {
            Decision::Serve { .. } => "served",
            Decision::Lost => "lost",
        };
        (response.headers_mut()).insert(
            super::DECISION,
            hyper::header::HeaderValue::from_static(decision),
        );
        response
    }

    /// Queues `copy` for its server; one past the queue's room is counted as failed. From the
    /// peer that serves the request on a virtual loss, else from the data center.
    fn queue_replacement(&self, copy: Copy, decision: Decision, interval: &mut Interval) {
        let from = match (copy.trigger, decision) {
            (Trigger::Virtual, Decision::Serve { server }) => {
                Source::Peer(self.config.servers[server as usize].clone())
            }
            _ => Source::DataCenter,
        };
        if self.replacements[copy.server as usize]
            .try_send((copy, from))
            .is_err()
        {
            tracing::warn!(
                "farm-dispatcher: {} has {MAX_WAITING_REPLACEMENTS} replacements waiting; replica {copy:?} not sent",
                self.config.servers[copy.server as usize]
            );
            interval.counts.replace_failed += 1;
        }
    }

    /// Tells the server of `copy`, over `peer`, to make it.
    async fn replace(&self, peer: &mut Peer, copy: Copy, from: Source) {
        let d = self.config.system.d() as u32;
        let request = ServerRequest::Replace {
            slot: copy.slot % d,
            evict: copy.evicted,
            content: copy.content,
            from,
        };
        let server = copy.server as usize;
        let answer: Option<ServerResponse> = peer
            .call(
                self.config.control_port,
                &self.identity,
                &request,
                Duration::from_secs(5),
            )
            .await;
        if answer != Some(ServerResponse::Replacing) {
            tracing::warn!(
                "farm-dispatcher: {} did not take replica {:?}: {answer:?}",
                self.config.servers[server],
                copy
            );
            self.lock().interval.counts.replace_failed += 1;
        }
    }

    /// A server reports the end of the transfer with `ticket`. Only the transfer it is
    /// assigned now counts: a report for an older one (whose lease ran out) is late.
    fn done(&self, server: &str, ticket: u64) -> DispatcherResponse {
        let Some(&i) = self.index.get(server) else {
            return DispatcherResponse::NotBusy;
        };
        let mut state = self.lock();
        if state.assigned[i as usize].map(|a| a.ticket) != Some(ticket)
            || state.coordinator.finish(i, &mut NoStatistics).is_none()
        {
            state.interval.counts.late_reports += 1;
            return DispatcherResponse::NotBusy;
        }
        state.assigned[i as usize] = None;
        DispatcherResponse::Noted
    }

    /// Servers busy longer than the lease are counted idle again (their client never came).
    fn expire_leases(&self) {
        let lease = self.config.lease;
        let mut state = self.lock();
        for i in 0..state.assigned.len() {
            if state.assigned[i].is_some_and(|a| a.since.elapsed() > lease) {
                state.assigned[i] = None;
                state.coordinator.finish(i as u32, &mut NoStatistics);
                state.interval.counts.expired_leases += 1;
            }
        }
    }
}

/// Gives the data center the key of the tickets it takes, then lays the initial replication
/// on the servers and has each fetch its contents.
async fn fill(
    config: &DispatcherConfig,
    identity: &Arc<Identity>,
    datacenter: &mut DataCenterLine,
    slots: &[u32],
    tickets: &TokenKey,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        // No ticket was made yet: the first is 0.
        if datacenter.give_key(0, Duration::from_secs(5)).await {
            break;
        }
        if started.elapsed() > FILL_DEADLINE {
            return Err(format!(
                "filling the farm: the data center {} did not take the key in \
                 {FILL_DEADLINE:?} (is it up, and is this node its `dispatcher`?)",
                config.datacenter
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let d = config.system.d();
    let mut left: Vec<usize> = (0..config.servers.len()).collect();
    while !left.is_empty() {
        let mut peers: Vec<Peer> = left
            .iter()
            .map(|&i| Peer::new(&config.servers[i]))
            .collect();
        let requests: Vec<ServerRequest> = left
            .iter()
            .map(|&i| ServerRequest::Fill {
                slots: slots[i * d..(i + 1) * d]
                    .iter()
                    .map(|&c| (c != EMPTY).then_some(c))
                    .collect(),
                ticket_key: tickets.bytes(),
            })
            .collect();
        let answers: Vec<Option<ServerResponse>> = call_all(
            &mut peers,
            config.control_port,
            identity,
            requests,
            Duration::from_secs(30),
        )
        .await;
        let mut refused = None;
        left = left
            .into_iter()
            .zip(answers)
            .filter_map(|(i, answer)| match answer {
                Some(ServerResponse::Filled) => None,
                Some(ServerResponse::Refused(why)) => {
                    refused = Some(format!("{}: {why}", config.servers[i]));
                    Some(i)
                }
                _ => Some(i),
            })
            .collect();
        if let Some(why) = refused {
            return Err(format!("filling the farm: {why}"));
        }
        if !left.is_empty() {
            if started.elapsed() > FILL_DEADLINE {
                let names: Vec<&str> = left.iter().map(|&i| config.servers[i].as_str()).collect();
                return Err(format!(
                    "filling the farm: {} did not answer in {FILL_DEADLINE:?}",
                    names.join(", ")
                ));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

impl Dispatcher {
    /// The dispatcher of a farm filled with `slots`, its replacements' senders (one per
    /// server) started.
    fn start(
        config: &DispatcherConfig,
        identity: &Arc<Identity>,
        tickets: TokenKey,
        slots: Vec<u32>,
        mut rng: StdRng,
    ) -> Arc<Dispatcher> {
        let (n, d) = (config.system.n(), config.system.d());
        let scheme = scheme_of(config.replication);
        let coordinator = Coordinator::new(n, d, slots, scheme, config.lfl_tau, &mut rng);
        let (replacements, queues): (Vec<_>, Vec<_>) = (config.servers.iter())
            .map(|_| mpsc::channel(MAX_WAITING_REPLACEMENTS))
            .unzip();
        let dispatcher = Arc::new(Dispatcher {
            index: (config.servers.iter().enumerate())
                .map(|(i, name)| (name.clone(), i as u32))
                .collect(),
            tickets,
            replacements,
            state: Mutex::new(State {
                coordinator,
                rng,
                assigned: vec![None; config.servers.len()],
                next_ticket: 0,
                interval: Interval::new(n),
            }),
            origin: Instant::now(),
            identity: identity.clone(),
            config: config.clone(),
        });
        for (name, queue) in config.servers.iter().zip(queues) {
            let line = Peer::new(name);
            tokio::spawn(send_replacements(Arc::downgrade(&dispatcher), line, queue));
        }
        dispatcher
    }
}

/// Sends one server its replacements over `line`, one at a time in the order they were
/// queued: spawned one by one, two replacements of a slot could reach the server the other way
/// round, and leave it holding what the coordinator had already replaced.
async fn send_replacements(
    dispatcher: Weak<Dispatcher>,
    mut line: Peer,
    mut queue: mpsc::Receiver<(Copy, Source)>,
) {
    while let Some((copy, from)) = queue.recv().await {
        let Some(dispatcher) = dispatcher.upgrade() else {
            return;
        };
        dispatcher.replace(&mut line, copy, from).await;
    }
}

pub async fn run(
    config: DispatcherConfig,
    env: NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let identity = load_identity(&env)?;
    let out = env.out_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut rng = StdRng::seed_from_u64(config.seed);
    let replication = initial(&config.system, config.replication).map_err(|e| e.to_string())?;
    let slots = place(&config.system, &replication, &mut rng).map_err(|e| e.to_string())?;
    let tickets = TokenKey::generate()?;
    let mut datacenter = DataCenterLine::new(&config, &identity, &tickets);
    tokio::pin!(shutdown);
    tokio::select! {
        filled = fill(&config, &identity, &mut datacenter, &slots, &tickets) => filled?,
        () = &mut shutdown => return Ok(()),
    }
    let dispatcher = Dispatcher::start(&config, &identity, tickets, slots, rng);
    let (n, d) = (config.system.n(), config.system.d());
    let for_control = dispatcher.clone();
    let control = crate::control::serve(
        any_address(config.control_port),
        &identity,
        Callers::only("farm dispatcher", config.servers.clone()),
        move |peer, request: DispatcherRequest| {
            let DispatcherRequest::Done { ticket } = request;
            let answer = for_control.done(peer.as_str(), ticket);
            async move { answer }
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    tracing::info!(
        "farm-dispatcher: {} servers × {d} slots, {n} contents, {}; farm filled",
        config.servers.len(),
        config.replication
    );
    let for_http = dispatcher.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let dispatcher = for_http.clone();
        async move { dispatcher.handle(&request) }
    };
    let options = ServeOptions {
        role: "farm-dispatcher",
        access_log: false,
    };
    let running = spawn_http(any_address(config.port), handler, options, Some(control)).await?;
    let mut recorder = Recorder::new(out, &config, &replication);
    let next_ticket = || dispatcher.lock().next_ticket;
    let mut sample = tokio::time::interval(config.sample_every);
    let mut lease = tokio::time::interval(Duration::from_secs(1));
    sample.tick().await;
    let stopped = running.run_until(async {
        loop {
            tokio::select! {
                _ = sample.tick() => {
                    let usage = datacenter.measure(next_ticket).await;
                    recorder.sample(&dispatcher, usage);
                    if let Err(e) = recorder.save(Some(Instant::now())) {
                        tracing::warn!("farm-dispatcher: {e}");
                    }
                }
                _ = lease.tick() => dispatcher.expire_leases(),
                () = &mut shutdown => break,
            }
        }
    });
    let result = stopped.await;
    let usage = datacenter.measure(next_ticket).await;
    recorder.sample(&dispatcher, usage);
    recorder.save(None)?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::farm_roles::messages::{DataCenterRequest, DataCenterResponse, DataCenterUsage};
    use crate::testing::TempDir;

    /// Certificates for the dispatcher and for `localhost`, which plays the other node.
    fn certs(lab: &str) -> (TempDir, impl Fn(&str) -> Arc<Identity>) {
        let certs = TempDir::new(lab);
        let nodes = ["dispatcher", "localhost"];
        crate::control::issue_lab_certs(&certs.0, lab, &nodes).unwrap();
        let dir = certs.0.clone();
        (certs, move |name: &str| {
            Arc::new(Identity::load(&dir, name).unwrap())
        })
    }

    /// Where the other node listens: the address `localhost` resolves to first, as the
    /// dispatcher's `Peer` connects to it.
    async fn localhost() -> std::net::SocketAddr {
        let mut addresses = tokio::net::lookup_host("localhost:0").await.unwrap();
        addresses.next().expect("localhost resolves")
    }

    /// A farm of one server, `localhost`, which is the data center too, with `contents`
    /// contents in as many slots and its control plane on `port`.
    fn config(contents: u32, port: u16) -> DispatcherConfig {
        let table: toml::Table = format!(
            "servers = [\"localhost\"]\ndatacenter = \"localhost\"\ncontents = \"{contents}\"\n\
             slots = \"{contents}\"\ncontrol_port = {port}"
        )
        .parse()
        .unwrap();
        crate::farm_roles::config::dispatcher(&table).unwrap()
    }

    /// One server's replacements reach it one at a time, in the order the coordinator made
    /// them, though the server answers the first ones slowest: sent side by side, two
    /// replacements of a slot could arrive the other way round and leave the server holding
    /// what the coordinator had already replaced.
    #[tokio::test]
    async fn one_servers_replacements_arrive_in_the_order_they_were_queued() {
        let (_certs, identity) = certs("farm-order");
        let arrived = Arc::new(Mutex::new(Vec::new()));
        let seen = arrived.clone();
        const COPIES: u32 = 12;
        let server = crate::control::serve(
            localhost().await,
            &identity("localhost"),
            Callers::only("farm server", ["dispatcher"]),
            move |_peer, request: ServerRequest| {
                let seen = seen.clone();
                async move {
                    let ServerRequest::Replace { content, .. } = request else {
                        return ServerResponse::Refused("not a replacement".into());
                    };
                    let slower = u64::from(COPIES - content);
                    tokio::time::sleep(Duration::from_millis(10 * slower)).await;
                    seen.lock().unwrap().push(content);
                    ServerResponse::Replacing
                }
            },
        )
        .await
        .unwrap();
        let config = config(COPIES, server.local_addr().port());
        let mut rng = StdRng::seed_from_u64(1);
        let replication = initial(&config.system, config.replication).unwrap();
        let slots = place(&config.system, &replication, &mut rng).unwrap();
        let key = TokenKey::generate().unwrap();
        let dispatcher = Dispatcher::start(&config, &identity("dispatcher"), key, slots, rng);
        let mut interval = Interval::new(config.system.n());
        for content in 0..COPIES {
            let copy = Copy {
                server: 0,
                slot: content,
                evicted: content,
                content,
                trigger: Trigger::Loss,
            };
            dispatcher.queue_replacement(copy, Decision::Lost, &mut interval);
        }
        crate::testing::until("every replacement arrives", || {
            arrived.lock().unwrap().len() == COPIES as usize
        })
        .await;
        let order = arrived.lock().unwrap().clone();
        assert_eq!(order, (0..COPIES).collect::<Vec<_>>());
        assert_eq!(dispatcher.lock().interval.counts.replace_failed, 0);
        assert_eq!(interval.counts.replace_failed, 0);
        server.close().await;
    }

    /// A data center that says it has no key (started again by the timeline) is given the
    /// dispatcher's at the next sample, and only then.
    #[tokio::test]
    async fn a_data_center_without_a_key_is_given_it_again() {
        let (_certs, identity) = certs("farm-rekey");
        let keys = Arc::new(Mutex::new(Vec::new()));
        let given = keys.clone();
        let datacenter = crate::control::serve(
            localhost().await,
            &identity("localhost"),
            Callers::only("farm data center", ["dispatcher"]),
            move |_peer, request: DataCenterRequest| {
                let mut given = given.lock().unwrap();
                let answer = match request {
                    DataCenterRequest::Key { ticket_key, floor } => {
                        given.push((ticket_key, floor));
                        DataCenterResponse::Keyed
                    }
                    DataCenterRequest::Measure => DataCenterResponse::Usage {
                        usage: DataCenterUsage::default(),
                        keyed: !given.is_empty(),
                    },
                };
                async move { answer }
            },
        )
        .await
        .unwrap();
        let config = config(2, datacenter.local_addr().port());
        let (key, dispatcher) = (TokenKey::generate().unwrap(), identity("dispatcher"));
        let mut line = DataCenterLine::new(&config, &dispatcher, &key);
        for _ in 0..2 {
            let usage = line.measure(|| 7).await;
            assert_eq!(usage, Some(DataCenterUsage::default()));
        }
        assert_eq!(*keys.lock().unwrap(), [(key.bytes(), 7)]);
        datacenter.close().await;
    }
}
