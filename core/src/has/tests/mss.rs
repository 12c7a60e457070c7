//! The Smooth Streaming heuristic on crafted downloads.

use super::*;
use crate::has::mss::Mss;
use crate::has::Abr;

/// Feeds `mss` a 2 s segment of its own choice, downloaded at `bps`, arriving at `end_s` with
/// `buffer_s` buffered, and returns its next choice.
fn step(
    mss: &mut Mss,
    ladder: &Ladder,
    index: usize,
    bps: f64,
    end_s: f64,
    buffer_s: f64,
) -> usize {
    let quality = mss.next_quality(&ctx(ladder, end_s, buffer_s, None));
    let bitrate = ladder.bitrate_bps(quality);
    mss.on_download(&download(index, quality, bitrate, bps, end_s, buffer_s));
    mss.next_quality(&ctx(ladder, end_s, buffer_s, Some(quality)))
}

/// Equal within the nanosecond rounding of the crafted download times.
fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= expected * 1e-6,
        "{actual} ≠ {expected}"
    );
}

fn five_levels() -> Ladder {
    Ladder::new(vec![500_000, 1_000_000, 2_000_000, 3_000_000, 4_000_000]).unwrap()
}

#[test]
fn thresholds_scale_with_the_buffer() {
    assert_eq!(Mss::new(20.0).thresholds_s(), (7.0, 12.0, 17.0));
    let (panic, lower, upper) = Mss::new(6.0).thresholds_s();
    assert!((panic - 2.1).abs() < 1e-9 && (lower - 3.6).abs() < 1e-9 && (upper - 5.1).abs() < 1e-9);
    assert_eq!(Mss::unscaled().thresholds_s(), (7.0, 12.0, 17.0));
}

#[test]
fn starts_at_the_lowest_quality() {
    let ladder = paper_ladder();
    assert_eq!(
        Mss::new(20.0).next_quality(&ctx(&ladder, 0.0, 0.0, None)),
        0
    );
}

#[test]
fn buffering_jumps_while_the_buffer_rises_fast_and_steps_while_it_is_slow() {
    let ladder = paper_ladder();
    // Buffer 0 → 2 s within 0.2 s: fast rising, so no step limit; the target is
    // min(5 / 1.25, 5 × 2 × 0.64 / 2) = 3.2 Mbit/s: the top.
    let mut fast = Mss::new(20.0);
    fast.next_quality(&ctx(&ladder, 0.0, 0.0, None));
    assert_eq!(step(&mut fast, &ladder, 0, 5e6, 0.2, 2.0), 2);
    // The same download arriving after 10 s: the buffer rose 0.2 s/s, slowly: one step.
    let mut slow = Mss::new(20.0);
    slow.next_quality(&ctx(&ladder, 0.0, 0.0, None));
    assert_eq!(step(&mut slow, &ladder, 0, 5e6, 10.0, 2.0), 1);
}

/// An MSS in Steady state at quality 1 of `five_levels`, having downloaded one 2 s segment at
/// 25 Mbit/s (cache-like speed limits Buffering to one step), with 15 s buffered at t = 2 s.
fn steady_at_one(ladder: &Ladder) -> Mss {
    let mut mss = Mss::new(20.0);
    mss.next_quality(&ctx(ladder, 0.0, 0.0, None));
    assert_eq!(step(&mut mss, ladder, 0, 25e6, 2.0, 15.0), 1);
    assert!(mss.is_steady(), "15 s ≥ 12 + (17 − 12) / 2");
    mss
}

#[test]
fn steps_up_one_level_at_a_time_at_most_once_per_5_s_of_media() {
    let ladder = five_levels();
    let mut mss = steady_at_one(&ladder);
    let mut chosen = vec![1];
    for i in 1..12 {
        chosen.push(step(&mut mss, &ladder, i, 25e6, 2.0 + 2.0 * i as f64, 18.0));
    }
    // Up-steps need 5 s of media since the last: every third 2 s segment.
    assert_eq!(chosen, [1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4]);
}

#[test]
fn no_step_up_unless_the_target_is_under_the_bandwidth_mean() {
    let ladder = Ladder::new(vec![500_000, 1_000_000, 2_000_000, 3_000_000]).unwrap();
    for (bps, expected) in [(2.5e6, 2), (3.5e6, 3)] {
        let mut mss = Mss::new(20.0);
        mss.next_quality(&ctx(&ladder, 0.0, 0.0, None));
        // Fast-rising buffer: min(bps / 1.25, …) picks 2 Mbit/s for both rates; Steady from 15 s.
        assert_eq!(step(&mut mss, &ladder, 0, bps, 2.0, 15.0), 2);
        let mut last = 2;
        for i in 1..10 {
            last = step(&mut mss, &ladder, i, bps, 2.0 + 2.0 * i as f64, 18.0);
        }
        assert_eq!(last, expected, "at {bps} bit/s");
    }
}

#[test]
fn panic_drops_to_the_lowest_quality_and_buffers_again() {
    let ladder = five_levels();
    let mut mss = steady_at_one(&ladder);
    for i in 1..9 {
        step(&mut mss, &ladder, i, 25e6, 2.0 + 2.0 * i as f64, 18.0);
    }
    assert_eq!(
        step(&mut mss, &ladder, 9, 25e6, 20.0, 6.5),
        0,
        "6.5 s < panic 7 s"
    );
    assert!(!mss.is_steady());
}

#[test]
fn a_slowly_falling_buffer_under_lower_costs_one_step() {
    let ladder = five_levels();
    let mut mss = steady_at_one(&ladder);
    let mut t = 2.0;
    let mut last = 1;
    for (i, buffer) in [18.0, 18.0, 18.0, 18.0, 18.0].into_iter().enumerate() {
        t += 2.0;
        last = step(&mut mss, &ladder, i + 1, 25e6, t, buffer);
    }
    assert_eq!(last, 3);
    // Falling about 0.25 s per s: slow; hold between the thresholds, one step down under 12 s.
    let mut chosen = Vec::new();
    for (i, buffer) in [17.0, 16.0, 15.0, 14.0, 13.0, 12.5, 11.8]
        .into_iter()
        .enumerate()
    {
        t += 4.0;
        chosen.push(step(&mut mss, &ladder, i + 6, 1.5e6, t, buffer));
    }
    assert_eq!(chosen, [3, 3, 3, 3, 3, 3, 2]);
    assert!(mss.is_steady());
}

#[test]
fn a_fast_falling_buffer_under_lower_drops_to_the_lowest() {
    let ladder = five_levels();
    let mut mss = steady_at_one(&ladder);
    let mut t = 2.0;
    for i in 1..6 {
        t += 2.0;
        step(&mut mss, &ladder, i, 25e6, t, 18.0);
    }
    assert_eq!(mss.next_quality(&ctx(&ladder, t, 18.0, None)), 3);
    // About −1.5 s per s: fast; hold down to the lower threshold, then lowest and Buffering.
    let mut chosen = Vec::new();
    for (i, buffer) in [16.5, 15.0, 13.5, 12.2, 11.0].into_iter().enumerate() {
        t += 1.0;
        chosen.push(step(&mut mss, &ladder, i + 6, 25e6, t, buffer));
    }
    assert_eq!(chosen, [3, 3, 3, 3, 0]);
    assert!(!mss.is_steady());
}

#[test]
fn probe_chunks_set_the_cache_filter_and_jumps_restart_the_mean() {
    let ladder = paper_ladder();
    let mut mss = Mss::new(20.0);
    mss.next_quality(&ctx(&ladder, 0.0, 0.0, None));
    let feed = |mss: &mut Mss, i: usize, bps: f64| {
        mss.on_download(&download(i, 0, 500_000, bps, 1.0 + i as f64, 2.0));
    };
    feed(&mut mss, 0, 1e6);
    feed(&mut mss, 1, 3e6);
    assert_close(mss.bandwidth_estimate_bps(), 2e6);
    // Cache hits: at or over max(5 × 3, 2) = 15 Mbit/s, ignored.
    feed(&mut mss, 2, 16e6);
    assert_close(mss.bandwidth_estimate_bps(), 2e6);
    // 12 Mbit/s is over 5 × the mean: the window restarts from it.
    feed(&mut mss, 3, 12e6);
    assert_close(mss.bandwidth_estimate_bps(), 12e6);
    // 9 Mbit/s is under 0.8 × the mean: restarts too; 8 is within: averaged.
    feed(&mut mss, 4, 9e6);
    assert_close(mss.bandwidth_estimate_bps(), 9e6);
    feed(&mut mss, 5, 8e6);
    assert_close(mss.bandwidth_estimate_bps(), 8.5e6);
}
