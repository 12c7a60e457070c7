//! The few Linux facilities the shaper daemon's event loop needs, as small safe wrappers:
//! epoll with a nanosecond deadline (`epoll_pwait2`, Linux 5.11), an
//! eventfd to stop the loop from another thread, a signalfd for SIGTERM/SIGINT, the clocks, a
//! socket that keeps the kernel stamping received packets, scheduling policies and a futex.

use std::io;
use std::mem::zeroed;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(rc: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a non-negative return of a creating call is a new fd that nothing else owns.
    check(rc).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

fn clock_ns(clock: libc::clockid_t) -> i64 {
    // SAFETY: clock_gettime fills the timespec we own; with a valid clock id it cannot fail.
    let mut ts: libc::timespec = unsafe { zeroed() };
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64
}

// `Epoll::wait` passes a `libc::timespec` where the kernel reads a `__kernel_timespec`.
const _: () = assert!(std::mem::size_of::<libc::timespec>() == 16);

/// The timespec of a time in nanoseconds.
fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock of every departure time and of the wait's deadline.
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC) as u64
}

/// The calling thread's CPU time in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) as u64
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC in nanoseconds, the offset that converts the kernel's packet
/// stamps. Each of three CLOCK_REALTIME readings is taken between two CLOCK_MONOTONIC ones and
/// compared with their midpoint; the most tightly bracketed reading wins, so a preemption between
/// two readings does not skew the offset.
pub(crate) fn realtime_offset_ns() -> i64 {
    let mut best = (i64::MAX, 0);
    for _ in 0..3 {
        let before = clock_ns(libc::CLOCK_MONOTONIC);
        let real = clock_ns(libc::CLOCK_REALTIME);
        let after = clock_ns(libc::CLOCK_MONOTONIC);
        let width = after - before;
        if width < best.0 {
            best = (width, real - (before + width / 2));
        }
    }
    best.1
}

/// Opens a UDP socket with SO_TIMESTAMP on, and so turns on the kernel's global receive
/// timestamps (`net_enable_timestamp()`: one static key for every namespace) for as long as it
/// stays open: then every received packet is stamped, and NFQUEUE passes the stamp on. Costs one
/// clock read per received packet, machine-wide. The kernel flips the key from a work queue, so
/// the first packets after this call may still come unstamped.
pub(crate) fn enable_receive_timestamps() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call.
    let fd =
        owned(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    let on: libc::c_int = 1;
    // SAFETY: setsockopt with a c_int we own and its size.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMP,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(fd)
}

/// Asks the kernel not to defer this thread's timed wake-ups (the default slack is 50 µs).
pub(crate) fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    check(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) }).map(|_| ())
}

/// Runs the calling thread under SCHED_FIFO at `priority` (1–99).
pub(crate) fn set_fifo_priority(priority: u8) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: pid 0 is the calling thread; the param is ours.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(|_| ())
}

/// Whether the calling thread runs under a real-time policy (SCHED_FIFO or SCHED_RR).
pub(crate) fn runs_realtime() -> bool {
    // SAFETY: pid 0 is the calling thread; no pointers.
    let policy = unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
}

/// Runs the calling thread under SCHED_IDLE: it gets a CPU only when nothing else wants it.
pub(crate) fn set_idle_priority() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; the param is ours.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) }).map(|_| ())
}

/// Sleeps while `word` holds `expected`, until woken by [`futex_wake`] or, with a deadline,
/// until that CLOCK_MONOTONIC time (ns). Returns at once if `word` has changed; a signal or a
/// spurious wake-up also returns, so callers look again. An error is one that will not go away
/// (e.g. futexes refused by a seccomp filter): a caller that loops must stop on it.
pub(crate) fn futex_wait_until(
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
) -> io::Result<()> {
    let timeout = deadline_ns.map(timespec_of);
    let timeout_ptr = timeout
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: FUTEX_WAIT_BITSET on a live u32 with an absolute CLOCK_MONOTONIC timeout we own
    // (or none); the kernel only reads both.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT_BITSET | libc::FUTEX_PRIVATE_FLAG,
            expected,
            timeout_ptr,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::ETIMEDOUT | libc::EINTR) => Ok(()),
        _ => Err(e),
    }
}

/// Wakes one thread sleeping in [`futex_wait_until`] on `word`.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live u32; the kernel does not write it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}

pub(crate) struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new epoll set; fails on a kernel without `epoll_pwait2` (before Linux 5.11), so the
    /// daemon does not start rather than stop at its first wait.
    pub(crate) fn new() -> io::Result<Epoll> {
        // SAFETY: plain epoll_create1 call.
        let epoll = Epoll {
            fd: owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?,
        };
        // Nothing is watched yet: a wait that ends at once.
        epoll.wait(
            &mut [libc::epoll_event { events: 0, u64: 0 }],
            Some(0),
            true,
        )?;
        Ok(epoll)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut event = libc::epoll_event { events, u64: token };
        // SAFETY: epoll_ctl with an event we own.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut event) }).map(|_| ())
    }

    /// Watches `fd` for input (level-triggered), reporting it with `token`.
    pub(crate) fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, token)
    }

    /// Watches `fd` for input when `readable` is set, and for room to write when `writable`
    /// is (neither: it stays registered, reporting only errors and hang-ups).
    pub(crate) fn modify(
        &self,
        fd: RawFd,
        token: u64,
        readable: bool,
        writable: bool,
    ) -> io::Result<()> {
        let mut events = 0;
        if readable {
            events |= libc::EPOLLIN as u32;
        }
        if writable {
            events |= libc::EPOLLOUT as u32;
        }
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }

    /// Waits for events until `deadline_ns` (CLOCK_MONOTONIC; `None`: no deadline; a past
    /// one: no wait) with nanosecond precision; returns the number of events filled in, 0 at
    /// the deadline or when interrupted by a signal. `realtime`: the calling thread runs at a
    /// real-time priority.
    ///
    /// `epoll_pwait2` arms its timer only while the caller sleeps, where a timerfd re-armed at
    /// every wake-up costs a `timerfd_settime` more (BENCHMARKS.md, "cpu"). Called as a raw
    /// system call, so the C library need not know it.
    pub(crate) fn wait(
        &self,
        events: &mut [libc::epoll_event],
        deadline_ns: Option<u64>,
        realtime: bool,
    ) -> io::Result<usize> {
        let timeout = deadline_ns.map(|at| {
            let mut wait = at.saturating_sub(monotonic_ns());
            if !realtime {
                // Outside real-time scheduling the kernel lets a timed wait end up to 0.1% of
                // its length late (its slack, at nice 0; more for a niced thread), and on an
                // idle CPU it does end that late: ask for so much less that the slack ends at
                // the deadline.
                wait -= wait / 1001;
            }
            timespec_of(wait)
        });
        let timeout_ptr = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: epoll_pwait2 fills at most `events.len()` entries of a buffer we own and
        // reads the timespec we own (on 64-bit Linux, `libc::timespec` is the kernel's
        // `__kernel_timespec`); no signal mask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.fd.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_ptr,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINTR) => Ok(0),
                Some(libc::ENOSYS | libc::EPERM) => Err(io::Error::new(
                    e.kind(),
                    format!(
                        "epoll_pwait2: {e}: the shaper needs Linux 5.11 or newer and, in a \
                         container, a seccomp profile that allows epoll_pwait2 (Docker's \
                         default does in 20.10 releases from 2021 on)"
                    ),
                )),
                _ => Err(e),
            };
        }
        Ok(n as usize)
    }
}

/// Stops a running daemon from any thread (tests and embedders; the binary uses signals).
#[derive(Clone)]
pub struct Stopper {
    fd: Arc<OwnedFd>,
}

impl Stopper {
    pub(crate) fn new() -> io::Result<Stopper> {
        // SAFETY: plain eventfd call.
        let fd = owned(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        Ok(Stopper { fd: Arc::new(fd) })
    }

    /// Asks the daemon to stop; it unbinds its queues and removes its control socket.
    pub fn stop(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write to an eventfd we own. It can only fail when the counter would
        // overflow, which means a stop is already pending.
        unsafe { libc::write(self.fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }
}

impl AsRawFd for Stopper {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// SIGTERM and SIGINT, blocked and read from a signalfd so the event loop sees them as input.
pub struct StopSignals {
    fd: OwnedFd,
}

impl StopSignals {
    /// Blocks SIGTERM and SIGINT in the calling thread (and the threads it starts later) and
    /// opens a signalfd for them. Call it first thing in `main`, before other threads exist, so
    /// that no thread receives them with the default action.
    pub fn block() -> io::Result<StopSignals> {
        // SAFETY: sigset manipulation on a set we own, then a mask change of this thread.
        unsafe {
            let mut set: libc::sigset_t = zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGINT);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            let fd = owned(libc::signalfd(
                -1,
                &set,
                libc::SFD_NONBLOCK | libc::SFD_CLOEXEC,
            ))?;
            Ok(StopSignals { fd })
        }
    }
}

impl AsRawFd for StopSignals {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
