//! Ctrl-C, SIGTERM and SIGHUP (the terminal closed) during `up` or `run`: the handler only sets
//! a flag; the long-running loops check it and tear the lab down cleanly.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Routes SIGINT, SIGTERM and SIGHUP to the flag.
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        libc::signal(libc::SIGHUP, handler as libc::sighandler_t);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Fails with a message if an interrupt arrived.
pub fn check() -> super::sys::Result<()> {
    if interrupted() {
        super::sys::err("interrupted")
    } else {
        Ok(())
    }
}
