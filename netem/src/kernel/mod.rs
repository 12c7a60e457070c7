//! The kernel backend: the `tc` commands that give a device's egress the impairments with
//! tc-netem itself, on kernels that have `sch_netem`. Pure functions returning argv vectors;
//! the caller runs them (inside the right namespace, e.g. `tc -n NS ...` or `ip netns exec`).
//!
//! What `tc qdisc replace ... netem` keeps from the qdisc it changes matters for run-time
//! changes (`netem_change()` in `net/sched/sch_netem.c`, `netem_parse_opt()` in iproute2's
//! `tc/q_netem.c`):
//! - delay, jitter, loss and limit are always rewritten (tc always sends `struct tc_netem_qopt`);
//! - the correlations are rewritten only when tc is given one (it then sends all of them, 0 for
//!   those not given), so we always write the delay correlation after a jitter and the loss
//!   correlation after a loss, `0%` included;
//! - the delay table and the rate are only ever replaced, never removed: tc has no `uniform`
//!   table to load, and our units refuse a rate of 0. Going back to uniform jitter or to no rate
//!   therefore deletes the qdisc and adds it again ([`netem_apply_argvs`]), which drops the
//!   packets it held.
//!
//! Precision: tc up to at least 6.1 reads delay and jitter in whole microseconds, the kernel
//! stores them in 64 ns ticks (`delay 1.5ms` becomes 1.499968 ms; seen with strace on tc 6.1),
//! and it refuses the `ns` unit; tc with iproute2's 2024 change "netem: use 64 bit value for
//! latency and jitter" passes nanoseconds. So we never write `ns`: a time that is not a whole
//! number of microseconds is written as fractional microseconds, which both read (the old one
//! truncating). The rate reaches the kernel in bytes per second
//! (bits / 8, truncated), as the userspace shaper models it.

use crate::params::Impairments;
use crate::units::{
    format_duration_ns, format_percent, format_rate_bps, parse_percent, parse_rate_bps,
};
use std::fmt;

pub use crate::kernel_probe::{netem_available, netem_available_from, NetemFacts};

/// `tc qdisc replace|add dev IFNAME root netem ...` giving `imp` exactly when the device has no
/// netem qdisc yet, or when [`netem_apply_argvs`] decides a change is enough. `replace` is
/// idempotent and works for both adding and changing; `add` fails if a root qdisc exists.
/// Checking that tc accepts `imp` is [`netem_apply_argvs`]'s job.
pub fn netem_qdisc_argv(ifname: &str, imp: &Impairments, replace: bool) -> Vec<String> {
    let verb = if replace { "replace" } else { "add" };
    let mut argv: Vec<String> = ["tc", "qdisc", verb, "dev", ifname, "root", "netem"]
        .map(String::from)
        .to_vec();
    if imp.delay_ns > 0 || imp.jitter_ns > 0 {
        argv.push("delay".into());
        argv.push(tc_time(imp.delay_ns));
        if imp.jitter_ns > 0 {
            argv.push(tc_time(imp.jitter_ns));
            argv.push(tc_percent(imp.delay_correlation));
            if let Some(distribution) = imp.table_distribution() {
                argv.push("distribution".into());
                argv.push(distribution.name().into());
            }
        }
    }
    if imp.loss > 0.0 {
        argv.extend([
            "loss".into(),
            "random".into(),
            tc_percent(imp.loss),
            tc_percent(imp.loss_correlation),
        ]);
    }
    if let Some(bps) = imp.rate_bps {
        argv.extend(["rate".into(), tc_rate(bps)]);
    }
    argv.extend(["limit".into(), imp.limit.to_string()]);
    argv
}

/// `tc qdisc del dev IFNAME root`: back to the device's default qdisc.
pub fn netem_delete_argv(ifname: &str) -> Vec<String> {
    ["tc", "qdisc", "del", "dev", ifname, "root"]
        .map(String::from)
        .to_vec()
}

/// Impairments tc would refuse, with tc's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcRefusal(pub String);

impl fmt::Display for TcRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TcRefusal {}

/// The commands that take a device from `current` (the impairments last applied through this
/// function, `None` when the device has no netem qdisc) to `next`, in order:
/// - nothing to emulate: delete the qdisc if there is one;
/// - a change netem can make in place: one `replace`;
/// - a change that would leave a delay table or a rate behind (see the module documentation):
///   delete, then `replace` (which adds).
pub fn netem_apply_argvs(
    ifname: &str,
    current: Option<&Impairments>,
    next: &Impairments,
) -> Result<Vec<Vec<String>>, TcRefusal> {
    let current = current.filter(|c| !c.is_none());
    if next.is_none() {
        return Ok(current
            .map(|_| netem_delete_argv(ifname))
            .into_iter()
            .collect());
    }
    next.check().map_err(TcRefusal)?;
    let leaves_state_behind = current.is_some_and(|current| {
        (current.table_distribution().is_some() && next.table_distribution().is_none())
            || (current.rate_bps.is_some() && next.rate_bps.is_none())
    });
    let mut argvs = Vec::new();
    if leaves_state_behind {
        argvs.push(netem_delete_argv(ifname));
    }
    argvs.push(netem_qdisc_argv(ifname, next, true));
    Ok(argvs)
}

/// A time every tc version reads back as `ns` (whole microseconds for older tc): the
/// units' own format for whole microseconds, else fractional microseconds.
fn tc_time(ns: u64) -> String {
    if ns.is_multiple_of(1000) {
        return format_duration_ns(ns);
    }
    let fraction = format!("{:03}", ns % 1000);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{}us", ns / 1000)
    } else {
        format!("{}.{fraction}us", ns / 1000)
    }
}

/// A rate tc reads back as `bps`: the units' format when exact, else plain bits.
fn tc_rate(bps: u64) -> String {
    let text = format_rate_bps(bps);
    if parse_rate_bps(&text) == Ok(bps) {
        text
    } else {
        format!("{bps}bit")
    }
}

/// A percentage tc turns into the same kernel value as `probability` (tc's `set_percent()`):
/// the units' format (6 decimals) when that holds, else the first with enough decimals.
fn tc_percent(probability: f64) -> String {
    let kernel = crate::shaper_random::probability_to_u32;
    let exact = |text: &String| parse_percent(text).map(kernel) == Ok(kernel(probability));
    let text = format_percent(probability);
    if exact(&text) {
        return text;
    }
    let percent = probability * 100.0;
    (7..=20)
        .map(|decimals| {
            let digits = format!("{percent:.decimals$}");
            format!("{}%", digits.trim_end_matches('0').trim_end_matches('.'))
        })
        .find(exact)
        .unwrap_or_else(|| format!("{percent}%"))
}

#[cfg(test)]
mod tests;
