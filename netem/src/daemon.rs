//! The shaper daemon: the userspace link backend's event loop.
//!
//! For each link direction A→B the orchestrator sends what A puts on the link to an NFQUEUE
//! where it is forwarded: in a lab, the bridge port of A's veth in the lab's hub namespace
//! (`iptables-legacy -t raw -A PREROUTING -m physdev --physdev-in <port> -j NFQUEUE
//! --queue-num N`); in a container, its own ingress. Either way the skb has crossed into
//! another namespace, which orphaned it, so holding it does not count against the sender's TCP
//! Small Queues budget; held at the sender's POSTROUTING instead, one TCP flow with 20 ms of
//! delay fell to 2.3 Mbit/s. Held in the hub, it also reaches the receiver, which stamps it,
//! only when released.
//!
//! GSO packets are taken whole (`NFQA_CFG_F_GSO`) on queues without loss: one verdict for up
//! to 64 KB, with the rate and byte accounting of all its wire packets (`Packet::wire_packets`).
//! A lossy queue has the kernel segment first, so loss stays per wire packet.
//!
//! One single-threaded daemon serves every queue of a lab: epoll over one netlink socket per
//! namespace, the control socket and its connections, its wait ending at the next departure
//! (the timer: a CLOCK_MONOTONIC deadline in ns, `Epoll::wait`). Each packet is asked of its
//! queue's [`LinkShaper`] on arrival; drops get their verdict at once, every other packet waits
//! in a heap, and at each wake-up the verdicts of all packets due go out in the order of their
//! departures, in one `sendto` per socket.
//!
//! Timing, as measured on the 2-vCPU Firecracker VMs this is developed on: a timer wake-up
//! comes 10–100 µs late on average (the halted vCPU resumes slowly) and each wake-up costs
//! ~30–50 µs of CPU (a bare timed wake-up alone 17–23 µs: `scripts/wait-cost.c`). So the
//! timer is armed ahead of the departure by a learnt lead (`WakeupLead`), and a wake-up also
//! releases what is due within [`DaemonConfig::release_window_ns`] after it: verdicts land
//! within about ±50 µs of their departure time, with half as many wake-ups at 100 Mbit/s.
//! Before a long wait ends, a keeper thread wakes the daemon's CPU, so the timer does not fire
//! on a CPU halted for long (`daemon_keeper`).
//!
//! The wake-up that reads an arriving packet is as late, so a packet's arrival is not the time
//! it is read but the kernel's receive stamp (`NFQA_TIMESTAMP`, CLOCK_REALTIME), converted with
//! a sampled CLOCK_REALTIME − CLOCK_MONOTONIC offset and kept within [the queue's previous
//! arrival, the read] (`ArrivalClock`); the daemon keeps the kernel's receive timestamps on for
//! that (`enable_receive_timestamps`). A packet without a stamp is timed by its read.
//!
//! So an arrival need not wake the daemon when no packet can be due before the timer's next
//! wake-up: then its socket leaves the epoll set and is read at every wake-up instead
//! (`daemon_deferral`).

pub use crate::daemon_config::{
    DaemonConfig, QueueSpec, DEFAULT_FIFO_PRIORITY, DEFAULT_KEEP_AWAKE_BUDGET_PERCENT,
    DEFAULT_KEEP_AWAKE_NS, DEFAULT_RELEASE_WINDOW_NS,
};
pub use crate::daemon_control::{
    parse_request, request, DaemonStatus, KeeperStatus, QueueStatus, Request, Response,
};
use crate::daemon_deferral::{counts, least_delay_ns, Deferral, MAX_DEFERRED_BATCHES};
use crate::daemon_keeper::Keeper;
use crate::daemon_schedule::{ArrivalClock, ArrivalSource, Held, Schedule, WakeupLead};
pub use crate::daemon_schedule::{ArrivalStats, Lateness, LATENESS_BOUNDS_NS};
use crate::daemon_sys::{
    enable_receive_timestamps, monotonic_ns, realtime_offset_ns, runs_realtime, set_fifo_priority,
    set_timer_slack_ns, Epoll,
};
pub use crate::daemon_sys::{StopSignals, Stopper};
use crate::nfqueue::{NfQueueSocket, Packet, QueueConfig, Verdict as NfVerdict};
use crate::params::Impairments;
use crate::shaper::{LinkShaper, Verdict};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

const TOKEN_STOP: u64 = 1;
const TOKEN_SIGNALS: u64 = 2;
const TOKEN_LISTENER: u64 = 3;
const TOKEN_SOCKET: u64 = 1 << 32;
const TOKEN_CONNECTION: u64 = 2 << 32;
const TOKEN_INDEX_MASK: u64 = (1 << 32) - 1;

/// The MTU of the interfaces the queued packets cross (cdnlab's veths and compose networks
/// keep the default), which sets how many wire packets a GSO packet stands for.
const WIRE_MTU: u32 = 1500;

/// Whether a queue with `impairments` takes GSO packets whole. Delay, jitter and rate treat a
/// GSO packet as one, as the kernel's netem does; loss is per wire packet (what a loss rate
/// means to the reader of a topology), so a lossy queue has the kernel segment first.
fn takes_gso(impairments: &Impairments) -> bool {
    impairments.loss == 0.0
}

/// The least delay of the queues bound to `socket` that count for it.
fn socket_least_delay_ns(socket: &SocketState, queues: &[QueueState]) -> u64 {
    least_delay_ns(socket.queues.iter().map(|&(_, q)| {
        let queue = &queues[q as usize];
        (&queue.shaper, queue.no_rule_when_unimpaired)
    }))
}

/// A control request line longer than this is refused (and its connection closed).
const MAX_REQUEST_BYTES: usize = 1 << 20;

struct QueueState {
    id: String,
    queue_num: u16,
    /// Index into `Daemon::sockets`.
    socket: usize,
    shaper: LinkShaper,
    /// The arrival time given to this queue's latest packet (CLOCK_MONOTONIC ns): no later
    /// packet of the queue is timed before it.
    last_arrival_ns: u64,
    /// See [`QueueSpec::no_rule_when_unimpaired`].
    no_rule_when_unimpaired: bool,
}

struct SocketState {
    socket: NfQueueSocket,
    netns: Option<PathBuf>,
    /// (queue number, index into `Daemon::queues`) of the queues bound to this socket.
    queues: Vec<(u16, u32)>,
    /// Whether its arrivals can wait for the timer.
    deferral: Deferral,
    /// In the epoll set for input; otherwise read at every wake-up.
    watched: bool,
}

/// A control client: bytes read but not yet a full line, and response bytes not yet written.
struct Connection {
    stream: UnixStream,
    input: Vec<u8>,
    output: Vec<u8>,
    /// The peer has finished sending (or broke the protocol): close once `output` is written.
    closing: bool,
    watching_writable: bool,
}

/// A running shaper daemon: see the module documentation.
pub struct Daemon {
    queues: Vec<QueueState>,
    sockets: Vec<SocketState>,
    schedule: Schedule,
    status: DaemonStatus,
    epoll: Epoll,
    /// When the loop's wait ends for the next departure (the timer), if any is held.
    armed: Option<u64>,
    lead: WakeupLead,
    release_window_ns: u64,
    fifo_priority: u8,
    keep_awake_ns: u64,
    keep_awake_budget_percent: u8,
    /// Started by [`Daemon::run`] unless `keep_awake_ns` or its budget is 0.
    keeper: Option<Keeper>,
    stopper: Stopper,
    signals: Option<StopSignals>,
    listener: UnixListener,
    control_path: PathBuf,
    connections: Vec<Option<Connection>>,
    /// Reused receive buffer, so a steady flow allocates nothing.
    arrivals: Vec<Packet>,
    arrival_clock: ArrivalClock,
    /// Held open for the kernel's receive timestamps (see `enable_receive_timestamps`); None
    /// when they could not be enabled.
    _receive_timestamps: Option<OwnedFd>,
}

impl Daemon {
    /// Binds every queue, then creates the control socket. The queues hold packets from here on
    /// until [`Daemon::run`] gives their verdicts.
    pub fn start(config: DaemonConfig) -> io::Result<Daemon> {
        config
            .check()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // First, so the kernel has switched the stamps on by the time traffic flows.
        let receive_timestamps = enable_receive_timestamps()
            .map_err(|e| {
                tracing::warn!(
                    "cdnlab-shaper: cannot enable the kernel's receive timestamps ({e}); \
                     packets are timed when read, up to a wake-up late"
                )
            })
            .ok();
        let mut sockets: Vec<SocketState> = Vec::new();
        let mut queues = Vec::with_capacity(config.queues.len());
        for spec in config.queues {
            let socket_index = match sockets.iter().position(|s| s.netns == spec.netns) {
                Some(i) => i,
                None => {
                    let socket = NfQueueSocket::open(spec.netns.as_deref()).map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!("queue `{}`: netlink socket: {e}", spec.id),
                        )
                    })?;
                    sockets.push(SocketState {
                        socket,
                        netns: spec.netns.clone(),
                        queues: vec![],
                        deferral: Deferral::default(),
                        watched: true,
                    });
                    sockets.len() - 1
                }
            };
            let state = &mut sockets[socket_index];
            let queue_config = QueueConfig {
                gso: takes_gso(&spec.impairments),
                ..QueueConfig::default()
            };
            state
                .socket
                .bind_queue(spec.queue_num, &queue_config)
                .map_err(|e| io::Error::new(e.kind(), format!("queue `{}`: {e}", spec.id)))?;
            state.queues.push((spec.queue_num, queues.len() as u32));
            queues.push(QueueState {
                id: spec.id,
                queue_num: spec.queue_num,
                socket: socket_index,
                shaper: LinkShaper::new(spec.impairments, spec.seed),
                last_arrival_ns: 0,
                no_rule_when_unimpaired: spec.no_rule_when_unimpaired,
            });
        }

        for socket in &mut sockets {
            socket.deferral.least_delay_ns = socket_least_delay_ns(socket, &queues);
        }
        let epoll = Epoll::new()?;
        let stopper = Stopper::new()?;
        epoll.add(stopper.as_raw_fd(), TOKEN_STOP)?;
        for (i, s) in sockets.iter().enumerate() {
            epoll.add(s.socket.as_raw_fd(), TOKEN_SOCKET | i as u64)?;
        }
        let listener = bind_control_socket(&config.control_socket)?;
        epoll.add(listener.as_raw_fd(), TOKEN_LISTENER)?;
        Ok(Daemon {
            queues,
            sockets,
            schedule: Schedule::default(),
            status: DaemonStatus::default(),
            epoll,
            armed: None,
            lead: WakeupLead::default(),
            release_window_ns: config.release_window_ns,
            fifo_priority: config.fifo_priority,
            keep_awake_ns: config.keep_awake_ns,
            keep_awake_budget_percent: config.keep_awake_budget_percent,
            keeper: None,
            stopper,
            signals: None,
            listener,
            control_path: config.control_socket,
            connections: Vec::new(),
            arrivals: Vec::with_capacity(256),
            arrival_clock: ArrivalClock::default(),
            _receive_timestamps: receive_timestamps,
        })
    }

    /// A handle that stops [`Daemon::run`] from another thread.
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Stops [`Daemon::run`] on SIGTERM or SIGINT.
    pub fn stop_on_signals(&mut self, signals: StopSignals) -> io::Result<()> {
        self.epoll.add(signals.as_raw_fd(), TOKEN_SIGNALS)?;
        self.signals = Some(signals);
        Ok(())
    }

    /// One line saying what is served, for the log.
    pub fn describe(&self) -> String {
        let queues: Vec<String> = self
            .queues
            .iter()
            .map(|q| {
                let netns = self.sockets[q.socket]
                    .netns
                    .as_ref()
                    .map_or("own namespace".to_string(), |p| p.display().to_string());
                format!(
                    "{} (queue {} in {}: {})",
                    q.id,
                    q.queue_num,
                    netns,
                    q.shaper.impairments()
                )
            })
            .collect();
        format!(
            "cdnlab-shaper: {} queue(s) bound: {}; control socket {}",
            self.queues.len(),
            queues.join(", "),
            self.control_path.display()
        )
    }

    /// Serves until stopped, then unbinds the queues (the kernel drops what they still hold)
    /// and removes the control socket.
    pub fn run(mut self) -> io::Result<()> {
        if let Err(e) = set_timer_slack_ns(1) {
            tracing::warn!("cdnlab-shaper: cannot set the timer slack to 1 ns: {e}");
        }
        if self.keep_awake_ns > 0 && self.keep_awake_budget_percent > 0 {
            match Keeper::start(self.keep_awake_ns, self.keep_awake_budget_percent) {
                Ok(keeper) => self.keeper = Some(keeper),
                Err(e) => tracing::warn!(
                    "cdnlab-shaper: cannot start the thread that keeps the CPU awake before \
                     departures ({e}); timers on an idle CPU will be served late"
                ),
            }
        }
        if self.fifo_priority > 0 {
            if let Err(e) = set_fifo_priority(self.fifo_priority) {
                tracing::warn!(
                    "cdnlab-shaper: cannot run at SCHED_FIFO priority {} ({e}); delays will \
                     stretch when the lab's processes keep the CPUs busy",
                    self.fifo_priority
                );
            }
        }
        // As the kernel sees it: a daemon started under `chrt` is real-time too.
        let realtime = runs_realtime();
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
        'serve: loop {
            let n = self.epoll.wait(&mut events, self.armed, realtime)?;
            for event in &events[..n] {
                let token = event.u64;
                let index = (token & TOKEN_INDEX_MASK) as usize;
                match token & !TOKEN_INDEX_MASK {
                    TOKEN_SOCKET => {
                        self.receive(index)?;
                    }
                    TOKEN_CONNECTION => self.serve_connection(index),
                    _ => match token {
                        TOKEN_STOP | TOKEN_SIGNALS => break 'serve,
                        TOKEN_LISTENER => self.accept_connections(),
                        _ => {}
                    },
                }
            }
            let now = monotonic_ns();
            self.note_timer(now);
            self.release_due(now);
            // What waited cannot be due before the timer plus the margin: read after the due
            // verdicts are out. One a late wake-up finds due by the window's end leaves now,
            // in a second batch; the rest wait for the earliest departure of all.
            self.read_unwatched()?;
            let now = monotonic_ns();
            self.release_due(now);
            self.arm_timer(now)?;
        }
        for queue in &self.queues {
            if let Err(e) = self.sockets[queue.socket]
                .socket
                .unbind_queue(queue.queue_num)
            {
                tracing::warn!("cdnlab-shaper: queue `{}`: {e}", queue.id);
            }
        }
        Ok(())
    }

    /// Reads every packet waiting on the sockets out of the epoll set (up to
    /// [`MAX_DEFERRED_BATCHES`] batches each; one with more left is watched again).
    fn read_unwatched(&mut self) -> io::Result<()> {
        for i in 0..self.sockets.len() {
            if !self.sockets[i].watched {
                self.drain(i)?;
            }
        }
        Ok(())
    }

    /// Reads socket `index` until nothing is left, or [`MAX_DEFERRED_BATCHES`] batches.
    fn drain(&mut self, index: usize) -> io::Result<()> {
        for _ in 0..MAX_DEFERRED_BATCHES {
            if !self.receive(index)? {
                break;
            }
        }
        Ok(())
    }

    /// Reads one batch of packets from socket `index` and decides each one's fate; true if
    /// more may be waiting. A message that cannot be parsed is logged and counted (its packet,
    /// if named, is dropped) and the rest of the batch goes on; a failing socket ends the
    /// daemon.
    fn receive(&mut self, index: usize) -> io::Result<bool> {
        let mut arrivals = std::mem::take(&mut self.arrivals);
        arrivals.clear();
        let looked_at = monotonic_ns();
        let received = self.sockets[index].socket.recv_batch(|p| arrivals.push(p));
        let now = monotonic_ns();
        if self.arrival_clock.needs_offset(now) {
            self.arrival_clock.set_offset(realtime_offset_ns(), now);
        }
        let more = match received {
            Ok(summary) => {
                if summary.overrun {
                    self.status.overruns += 1;
                    if self.status.overruns.is_power_of_two() {
                        tracing::warn!(
                            "cdnlab-shaper: ENOBUFS on {}: packets were lost before reaching the \
                             shaper ({} times so far)",
                            self.netns_name(index),
                            self.status.overruns
                        );
                    }
                }
                if let Some(error) = &summary.last_malformed {
                    self.status.malformed += u64::from(summary.malformed);
                    self.status.malformed_dropped += u64::from(summary.malformed_dropped);
                    tracing::warn!(
                        "cdnlab-shaper: skipped {} malformed message(s) on {} and dropped {} \
                         packet(s) they named; the last: {error}",
                        summary.malformed,
                        self.netns_name(index),
                        summary.malformed_dropped
                    );
                }
                if summary.request_errors > 0 {
                    self.status.verdict_errors += u64::from(summary.request_errors);
                    tracing::warn!(
                        "cdnlab-shaper: the kernel refused {} verdict(s) on {}: {}",
                        summary.request_errors,
                        self.netns_name(index),
                        io::Error::from_raw_os_error(summary.last_request_errno)
                    );
                }
                summary.more
            }
            Err(e) => {
                let netns = self.netns_name(index);
                return Err(io::Error::new(
                    e.kind(),
                    format!("receiving on {netns}: {e}"),
                ));
            }
        };
        self.sockets[index].deferral.read(looked_at, more);
        for packet in &arrivals {
            self.decide(index, *packet, now);
        }
        self.arrivals = arrivals;
        Ok(more)
    }

    /// Gives `packet`, read at `now`, its departure time (or its verdict at once).
    fn decide(&mut self, socket: usize, packet: Packet, now: u64) {
        let queue = self.sockets[socket]
            .queues
            .iter()
            .find(|(num, _)| *num == packet.queue_num)
            .map(|&(_, q)| q);
        let verdict = match queue {
            Some(q) => match self.enqueue(q as usize, &packet, now) {
                (Verdict::Drop(_), _) => NfVerdict::Drop,
                (Verdict::SendAt(at), arrival) => {
                    let state = &mut self.sockets[socket];
                    if at <= now && !state.watched {
                        // Left unread past its time (a wake-up later than the margin, or a
                        // packet that reached the socket long after its stamp).
                        self.status.deferred_late += 1;
                        state.deferral.hold_off(now);
                    }
                    // Held even when due already (read late, or jittered below zero: netem
                    // sends it at once), so this wake-up's release gives the verdicts of a
                    // queue's packets in the order of their departures. Due no sooner than it
                    // came, so a jitter below zero does not count as lateness.
                    self.schedule.push(
                        at.max(arrival),
                        Held {
                            queue: q,
                            packet_id: packet.id,
                        },
                    );
                    return;
                }
            },
            // Only bound queues deliver to this socket; a stranger is refused, not forwarded
            // unimpaired.
            None => NfVerdict::Drop,
        };
        self.push_verdict(socket, packet.queue_num, packet.id, verdict);
    }

    /// Asks queue `q`'s shaper for `packet`'s fate, as of the packet's arrival; with the
    /// arrival time.
    fn enqueue(&mut self, q: usize, packet: &Packet, now: u64) -> (Verdict, u64) {
        let queue = &mut self.queues[q];
        let arrival = self
            .arrival_clock
            .arrival(packet.timestamp_ns, queue.last_arrival_ns, now);
        self.status.arrivals.record(arrival, now);
        self.sockets[queue.socket].deferral.arrival(
            arrival.1 == ArrivalSource::Kernel,
            counts(&queue.shaper, queue.no_rule_when_unimpaired),
            now,
        );
        queue.last_arrival_ns = arrival.0;
        let (segments, ip_bytes) = packet.wire_packets(WIRE_MTU);
        let verdict = queue.shaper.enqueue_segments(arrival.0, ip_bytes, segments);
        (verdict, arrival.0)
    }

    fn push_verdict(&mut self, socket: usize, queue_num: u16, id: u32, verdict: NfVerdict) {
        if let Err(e) = self.sockets[socket]
            .socket
            .push_verdict(queue_num, id, verdict)
        {
            tracing::warn!(
                "cdnlab-shaper: sending verdicts on {}: {e}",
                self.netns_name(socket)
            );
        }
    }

    /// Notes a wake-up at `now`: if the timer's time had come, its lateness is recorded and
    /// learnt from.
    fn note_timer(&mut self, now: u64) {
        if let Some(armed) = self.armed.filter(|&armed| armed <= now) {
            self.status
                .wakeup_lateness
                .record(now as i64 - armed as i64);
            self.lead.record(now - armed);
        }
    }

    /// Gives every packet due by `now` plus the release window its verdict, in the order of
    /// their departures, and sends each socket's verdicts in one batch.
    fn release_due(&mut self, now: u64) {
        while let Some((at, held)) = self
            .schedule
            .pop_due(now.saturating_add(self.release_window_ns))
        {
            let queue = &self.queues[held.queue as usize];
            let (socket, queue_num) = (queue.socket, queue.queue_num);
            self.push_verdict(socket, queue_num, held.packet_id, NfVerdict::Accept);
            self.status.verdict_lateness.record(now as i64 - at as i64);
        }
        self.flush_verdicts();
    }

    /// Sends each socket's pending verdicts in one batch.
    fn flush_verdicts(&mut self) {
        for i in 0..self.sockets.len() {
            if self.sockets[i].socket.has_pending() {
                if let Err(e) = self.sockets[i].socket.flush() {
                    tracing::warn!(
                        "cdnlab-shaper: sending verdicts on {}: {e}",
                        self.netns_name(i)
                    );
                }
            }
        }
    }

    /// Sets the loop's timer for the next departure (as of `now`), and which sockets are
    /// watched.
    fn arm_timer(&mut self, now: u64) -> io::Result<()> {
        let target = self
            .schedule
            .next_deadline()
            .map(|next| self.lead.arm_time(next, now));
        // A timer whose time came is always set again: what was due by it has been released,
        // so the next departure lies later.
        if target != self.armed {
            self.armed = target;
            if let Some(keeper) = &mut self.keeper {
                keeper.follow(target, now);
            }
        }
        self.watch_sockets(now)
    }

    /// Takes each socket out of the epoll set while its arrivals can wait for the timer, and
    /// puts it back when they cannot.
    fn watch_sockets(&mut self, now: u64) -> io::Result<()> {
        for (i, state) in self.sockets.iter_mut().enumerate() {
            let can_wait = state.deferral.can_wait(self.armed, now);
            if can_wait == state.watched {
                self.epoll.modify(
                    state.socket.as_raw_fd(),
                    TOKEN_SOCKET | i as u64,
                    !can_wait,
                    false,
                )?;
                state.watched = !can_wait;
            }
        }
        Ok(())
    }

    fn netns_name(&self, socket: usize) -> String {
        self.sockets[socket]
            .netns
            .as_ref()
            .map_or("the daemon's namespace".to_string(), |p| {
                p.display().to_string()
            })
    }

    fn accept_connections(&mut self) {
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::warn!("cdnlab-shaper: accepting a control connection: {e}");
                    return;
                }
            };
            if let Err(e) = stream.set_nonblocking(true) {
                tracing::warn!("cdnlab-shaper: control connection: {e}");
                continue;
            }
            let slot = match self.connections.iter().position(Option::is_none) {
                Some(slot) => slot,
                None => {
                    self.connections.push(None);
                    self.connections.len() - 1
                }
            };
            if let Err(e) = self
                .epoll
                .add(stream.as_raw_fd(), TOKEN_CONNECTION | slot as u64)
            {
                tracing::warn!("cdnlab-shaper: control connection: {e}");
                continue;
            }
            self.connections[slot] = Some(Connection {
                stream,
                input: Vec::new(),
                output: Vec::new(),
                closing: false,
                watching_writable: false,
            });
        }
    }

    /// Reads what a control client sent, answers each complete line, writes what it can.
    fn serve_connection(&mut self, slot: usize) {
        let Some(mut conn) = self.connections.get_mut(slot).and_then(Option::take) else {
            return;
        };
        let mut buf = [0u8; 4096];
        while !conn.closing {
            match conn.stream.read(&mut buf) {
                Ok(0) => conn.closing = true,
                Ok(n) => conn.input.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    conn.closing = true;
                    conn.output.clear();
                }
            }
        }
        // A last request may end at end of file instead of a newline.
        if conn.closing && !conn.input.is_empty() && conn.input.last() != Some(&b'\n') {
            conn.input.push(b'\n');
        }
        while let Some(end) = conn.input.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = conn.input.drain(..=end).collect();
            let response = match std::str::from_utf8(&line) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => match parse_request(text) {
                    Ok(request) => self.handle(request),
                    Err(e) => Response::error(e),
                },
                Err(_) => Response::error("bad request: not UTF-8"),
            };
            conn.output.extend_from_slice(response.to_line().as_bytes());
        }
        if conn.input.len() > MAX_REQUEST_BYTES {
            let error = format!("bad request: a line longer than {MAX_REQUEST_BYTES} bytes");
            conn.output
                .extend_from_slice(Response::error(error).to_line().as_bytes());
            conn.input.clear();
            conn.closing = true;
        }
        while !conn.output.is_empty() {
            match conn.stream.write(&conn.output) {
                Ok(n) => {
                    conn.output.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    conn.output.clear();
                    conn.closing = true;
                }
            }
        }
        if conn.closing && conn.output.is_empty() {
            // Dropping the stream closes it, which also removes it from the epoll set.
            return;
        }
        let want_writable = !conn.output.is_empty();
        if want_writable != conn.watching_writable {
            let token = TOKEN_CONNECTION | slot as u64;
            if self
                .epoll
                .modify(conn.stream.as_raw_fd(), token, true, want_writable)
                .is_err()
            {
                return;
            }
            conn.watching_writable = want_writable;
        }
        self.connections[slot] = Some(conn);
    }

    /// Answers one control request.
    fn handle(&mut self, request: Request) -> Response {
        match request {
            Request::Ping => Response::ok(),
            Request::Set { id, impairments } => {
                if let Err(e) = impairments.check() {
                    return Response::error(format!("queue `{id}`: impairments: {e}"));
                }
                match self.queues.iter().position(|q| q.id == id) {
                    Some(q) => {
                        // Packets that came before the change, still unread, keep the old
                        // impairments.
                        let socket = self.queues[q].socket;
                        if let Err(e) = self.drain(socket) {
                            return Response::error(format!("queue `{id}`: {e}"));
                        }
                        let gso = takes_gso(&impairments);
                        if gso != takes_gso(self.queues[q].shaper.impairments()) {
                            if let Err(e) = self.set_gso(q, gso) {
                                return Response::error(format!("queue `{id}`: {e}"));
                            }
                        }
                        let unimpaired = impairments.is_none();
                        self.queues[q].shaper.set(impairments);
                        let least = socket_least_delay_ns(&self.sockets[socket], &self.queues);
                        let deferral = &mut self.sockets[socket].deferral;
                        deferral.least_delay_ns = least;
                        if unimpaired {
                            deferral.hold_off(monotonic_ns());
                        }
                        Response::ok()
                    }
                    None => Response::error(format!(
                        "unknown queue id `{id}` (this daemon serves: {})",
                        self.queue_ids()
                    )),
                }
            }
            Request::Show => {
                let now = monotonic_ns();
                let queues = self
                    .queues
                    .iter()
                    .map(|q| QueueStatus {
                        id: q.id.clone(),
                        queue_num: q.queue_num,
                        impairments: q.shaper.impairments().clone(),
                        stats: q.shaper.stats(),
                        queued: q.shaper.queued(now),
                    })
                    .collect();
                let mut status = self.status.clone();
                status.held = self.schedule.len();
                status.wakeup_lead_ns = self.lead.lead_ns();
                status.keeper = self.keeper.as_ref().map(Keeper::report);
                Response {
                    queues: Some(queues),
                    daemon: Some(status),
                    ..Response::ok()
                }
            }
        }
    }

    /// Switches queue `q` between GSO packets whole and wire packets, then gives a fate to the
    /// packets read while the kernel acknowledged (no readiness event will announce them).
    fn set_gso(&mut self, q: usize, gso: bool) -> io::Result<()> {
        let (socket, queue_num) = (self.queues[q].socket, self.queues[q].queue_num);
        self.sockets[socket].socket.set_gso(queue_num, gso)?;
        if self.sockets[socket].socket.has_backlog() {
            self.receive(socket)?;
        }
        Ok(())
    }

    fn queue_ids(&self) -> String {
        let ids: Vec<&str> = self.queues.iter().map(|q| q.id.as_str()).collect();
        if ids.is_empty() {
            "no queues".to_string()
        } else {
            ids.join(", ")
        }
    }
}

impl Drop for Daemon {
    /// The control socket file goes with the daemon, however it ends.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.control_path);
    }
}

/// Binds the control socket at `path`, replacing a stale file left by a daemon that died but
/// refusing to take over from one that still answers.
fn bind_control_socket(path: &Path) -> io::Result<UnixListener> {
    let with_path =
        |e: io::Error| io::Error::new(e.kind(), format!("control socket {}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(with_path)?;
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(with_path(io::Error::new(
                io::ErrorKind::AddrInUse,
                "another shaper daemon is serving it",
            )));
        }
        // Only a socket is ever stale: any other file at the path was not left by a daemon.
        use std::os::unix::fs::FileTypeExt;
        let kind = std::fs::symlink_metadata(path)
            .map_err(with_path)?
            .file_type();
        if !kind.is_socket() {
            return Err(with_path(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a file that is not a socket is in the way; left alone",
            )));
        }
        std::fs::remove_file(path).map_err(with_path)?;
    }
    let listener = UnixListener::bind(path).map_err(with_path)?;
    listener.set_nonblocking(true).map_err(with_path)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The control loop without queues needs no privileges: serve, answer, stop, clean up.
    #[test]
    fn serves_the_control_socket_and_stops() {
        let dir = std::env::temp_dir().join(format!("netem-daemon-test-{}", std::process::id()));
        let socket = dir.join("sub/shaper.sock");
        let config = DaemonConfig {
            control_socket: socket.clone(),
            queues: vec![],
            release_window_ns: DEFAULT_RELEASE_WINDOW_NS,
            fifo_priority: 0,
            keep_awake_ns: DEFAULT_KEEP_AWAKE_NS,
            keep_awake_budget_percent: DEFAULT_KEEP_AWAKE_BUDGET_PERCENT,
        };
        let daemon = Daemon::start(config.clone()).unwrap();
        assert!(socket.exists(), "the socket exists once start returns");
        let again = Daemon::start(config)
            .err()
            .expect("a second daemon on the same socket");
        assert_eq!(again.kind(), io::ErrorKind::AddrInUse, "{again}");
        let stopper = daemon.stopper();
        let running = std::thread::spawn(move || daemon.run());

        assert_eq!(request(&socket, &Request::Ping).unwrap(), Response::ok());
        let show = request(&socket, &Request::Show).unwrap();
        assert_eq!(show.queues, Some(vec![]));
        assert_eq!(show.daemon.unwrap().held, 0);
        let set = Request::Set {
            id: "x".into(),
            impairments: Impairments::default(),
        };
        let refused = request(&socket, &set).unwrap();
        assert_eq!(
            refused.error.as_deref(),
            Some("unknown queue id `x` (this daemon serves: no queues)")
        );

        stopper.stop();
        running.join().unwrap().unwrap();
        assert!(
            !socket.exists(),
            "the socket is removed when the daemon stops"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A file in the socket's place that is not a socket is never removed.
    #[test]
    fn leaves_a_file_that_is_not_a_socket_alone() {
        let dir = std::env::temp_dir().join(format!("netem-daemon-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("precious");
        std::fs::write(&path, "keep me").unwrap();
        let refused = bind_control_socket(&path).expect_err("refused");
        assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists, "{refused}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep me");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
