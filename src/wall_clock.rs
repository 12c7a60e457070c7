//! The wall clock as results and messages carry it: seconds since the Unix epoch. Processes of
//! one lab share the host's clock, so their stamps compare directly; across hosts they compare
//! as well as the hosts' clocks agree.

/// Now, seconds since the Unix epoch (0 if the clock is set before it).
pub fn unix_now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
