//! Tests of `LinkShaper` on a virtual clock (plain nanoseconds).

use super::*;
use crate::distribution::NETEM_DIST_SCALE;
use crate::params::Distribution;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

fn impairments(change: impl FnOnce(&mut Impairments)) -> Impairments {
    let mut impairments = Impairments::default();
    change(&mut impairments);
    impairments
}

fn send_at(verdict: Verdict) -> u64 {
    match verdict {
        Verdict::SendAt(time) => time,
        Verdict::Drop(reason) => panic!("expected a departure time, got a drop ({reason:?})"),
    }
}

fn mean_stdev(samples: &[f64]) -> (f64, f64) {
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, variance.sqrt())
}

#[test]
fn fixed_delay_sends_after_the_delay() {
    let mut shaper = LinkShaper::new(impairments(|i| i.delay_ns = 50 * MS), 1);
    for now in [0, 1, 7 * MS, 3 * SEC] {
        assert_eq!(shaper.enqueue(now, 1500), Verdict::SendAt(now + 50 * MS));
    }
    assert_eq!(shaper.queued(3 * SEC), 1);
    assert_eq!(shaper.queued(3 * SEC + 50 * MS), 0);
    let stats = shaper.stats();
    assert_eq!((stats.packets, stats.bytes), (4, 4 * 1514));
}

#[test]
fn rate_spaces_back_to_back_packets_by_their_serialisation_time() {
    // 5 mbit/s = 625000 bytes/s; a 1486-byte IP packet is a 1500-byte frame: 2.4 ms.
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.rate_bps = Some(5_000_000);
            i.limit = 10_000;
        }),
        1,
    );
    let times: Vec<u64> = (0..10_000)
        .map(|_| send_at(shaper.enqueue(0, 1486)))
        .collect();
    assert_eq!(times[0], 2_400_000);
    assert!(times.windows(2).all(|w| w[1] - w[0] == 2_400_000));
    let rate = (shaper.stats().bytes * 8) as f64 * 1e9 / times[9_999] as f64;
    assert!((rate / 5e6 - 1.0).abs() < 1e-3, "achieved {rate} bit/s");
}

#[test]
fn rate_is_achieved_under_a_steady_overload() {
    // 7 mbit/s does not divide a frame evenly (1514 bytes: 1730285.7 ns, truncated as the kernel
    // does); packets arrive every millisecond, faster than the link drains them.
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.rate_bps = Some(7_000_000);
            i.limit = 10_000;
        }),
        1,
    );
    let mut last = 0;
    for k in 0..10_000u64 {
        let time = send_at(shaper.enqueue(k * MS, 1500));
        assert!(time > last, "packets stay in order");
        last = time;
    }
    // The link is busy from the first arrival (0) to the last departure.
    let rate = (shaper.stats().bytes * 8) as f64 * 1e9 / last as f64;
    println!("7 mbit/s link, 10000 packets: achieved {rate:.1} bit/s");
    assert!((rate / 7e6 - 1.0).abs() < 1e-3, "achieved {rate} bit/s");
}

#[test]
fn rate_queues_behind_the_delay_and_restarts_when_the_queue_has_drained() {
    // 1 mbit/s: a 1000-byte IP packet (1014-byte frame) takes 8.112 ms.
    let pt = 8_112_000;
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.delay_ns = 50 * MS;
            i.rate_bps = Some(1_000_000);
        }),
        1,
    );
    assert_eq!(shaper.enqueue(0, 1000), Verdict::SendAt(50 * MS + pt));
    assert_eq!(shaper.enqueue(0, 1000), Verdict::SendAt(50 * MS + 2 * pt));
    // Arriving 20 ms later, its own delayed time (70 ms) is later than the queue's tail.
    assert_eq!(shaper.enqueue(20 * MS, 1000), Verdict::SendAt(70 * MS + pt));
    // After the queue has drained the reference is now again, not the long-gone last packet.
    assert_eq!(shaper.queued(SEC), 0);
    assert_eq!(
        shaper.enqueue(SEC, 1000),
        Verdict::SendAt(SEC + 50 * MS + pt)
    );
}

#[test]
fn limit_drops_the_tail_until_packets_depart() {
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.delay_ns = 100 * MS;
            i.limit = 10;
        }),
        1,
    );
    for k in 0..10 {
        assert_eq!(shaper.enqueue(k, 100), Verdict::SendAt(k + 100 * MS));
    }
    assert_eq!(shaper.queued(10), 10);
    assert_eq!(
        shaper.enqueue(10, 100),
        Verdict::Drop(DropReason::QueueFull)
    );
    assert_eq!(
        shaper.enqueue(100 * MS - 1, 100),
        Verdict::Drop(DropReason::QueueFull)
    );
    // The first packet leaves at 100 ms: one place is free again, and only one.
    assert_eq!(shaper.queued(100 * MS), 9);
    assert_eq!(shaper.enqueue(100 * MS, 100), Verdict::SendAt(200 * MS));
    assert_eq!(
        shaper.enqueue(100 * MS, 100),
        Verdict::Drop(DropReason::QueueFull)
    );
    assert_eq!(shaper.enqueue(SEC, 100), Verdict::SendAt(SEC + 100 * MS));
    let stats = shaper.stats();
    assert_eq!(
        (stats.packets, stats.dropped_queue_full, stats.dropped_loss),
        (12, 3, 0)
    );
}

/// What a loss pattern over `n` packets looks like.
struct LossPattern {
    rate: f64,
    /// P(loss | the previous packet was lost).
    rate_after_loss: f64,
    mean_burst: f64,
}

fn loss_pattern(loss: f64, correlation: f64, n: u64, seed: u64) -> LossPattern {
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.loss = loss;
            i.loss_correlation = correlation;
        }),
        seed,
    );
    let lost: Vec<bool> = (0..n)
        .map(|k| match shaper.enqueue(k * MS, 100) {
            Verdict::Drop(DropReason::Loss) => true,
            Verdict::Drop(DropReason::QueueFull) => panic!("no queue builds up here"),
            Verdict::SendAt(_) => false,
        })
        .collect();
    let stats = shaper.stats();
    assert_eq!(stats.dropped_loss + stats.packets, n);
    let losses = lost.iter().filter(|&&l| l).count();
    let after_loss = lost.windows(2).filter(|w| w[0]).count();
    let loss_after_loss = lost.windows(2).filter(|w| w[0] && w[1]).count();
    let bursts = lost.windows(2).filter(|w| w[0] && !w[1]).count();
    LossPattern {
        rate: losses as f64 / n as f64,
        rate_after_loss: loss_after_loss as f64 / after_loss as f64,
        mean_burst: losses as f64 / bursts as f64,
    }
}

#[test]
fn loss_rate_matches_the_probability() {
    for seed in [1, 2, 3] {
        let pattern = loss_pattern(0.10, 0.0, 100_000, seed);
        println!(
            "loss 10%, seed {seed}: measured {:.3}%, mean burst {:.3}",
            pattern.rate * 100.0,
            pattern.mean_burst
        );
        assert!(
            (pattern.rate - 0.10).abs() < 0.005,
            "measured {}",
            pattern.rate
        );
    }
    assert_eq!(loss_pattern(0.0, 0.0, 10_000, 1).rate, 0.0);
    assert_eq!(loss_pattern(1.0, 0.0, 10_000, 1).rate, 1.0);
}

/// netem's correlated loss (`loss random P C`) averages each uniform number with the previous
/// one, so a loss makes the next loss likelier (longer bursts than independent losses at the
/// same rate) but it also pulls the numbers towards the middle, which lowers the loss rate below
/// P: the "bad behaviour" for which tc-netem(8) deprecates the option. We model it as it is.
#[test]
fn loss_correlation_lengthens_bursts() {
    let independent = loss_pattern(0.10, 0.0, 400_000, 7);
    assert!((independent.rate_after_loss - independent.rate).abs() < 0.005);
    assert!((independent.mean_burst - 1.0 / (1.0 - independent.rate)).abs() < 0.01);
    for correlation in [0.25, 0.5] {
        let pattern = loss_pattern(0.10, correlation, 400_000, 7);
        println!(
            "loss 10% correlation {correlation}: rate {:.3}%, P(loss | loss) {:.3}, mean burst {:.3} \
             (independent losses at that rate: {:.3}; uncorrelated 10%: rate {:.3}%, burst {:.3})",
            pattern.rate * 100.0,
            pattern.rate_after_loss,
            pattern.mean_burst,
            1.0 / (1.0 - pattern.rate),
            independent.rate * 100.0,
            independent.mean_burst
        );
        assert!(
            pattern.rate_after_loss > 2.0 * pattern.rate,
            "correlation {correlation}"
        );
        assert!(
            pattern.mean_burst > 1.02 / (1.0 - pattern.rate),
            "correlation {correlation}"
        );
        assert!(
            pattern.rate < independent.rate,
            "netem's averaging lowers the rate"
        );
    }
}

/// Delays of `n` packets spaced a second apart (so none queues), minus the base delay.
fn jitter_samples(distribution: Option<Distribution>, n: u64) -> Vec<f64> {
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.delay_ns = 100 * MS;
            i.jitter_ns = 10 * MS;
            i.distribution = distribution;
        }),
        11,
    );
    (0..n)
        .map(|k| send_at(shaper.enqueue(k * SEC, 100)) as f64 - (k * SEC + 100 * MS) as f64)
        .collect()
}

#[test]
fn jitter_follows_the_distribution() {
    let sigma = (10 * MS) as f64;
    let n = 200_000;
    for distribution in [None, Some(Distribution::Uniform)] {
        let (mean, stdev) = mean_stdev(&jitter_samples(distribution, n));
        println!(
            "uniform ({distribution:?}): mean {:.4} ms, stdev {:.4} ms (sigma/sqrt3 = {:.4} ms)",
            mean / 1e6,
            stdev / 1e6,
            sigma / 3f64.sqrt() / 1e6
        );
        assert!(mean.abs() < 0.01 * sigma, "mean {mean}");
        assert!(
            (stdev / (sigma / 3f64.sqrt()) - 1.0).abs() < 0.03,
            "stdev {stdev}"
        );
    }
    for distribution in [
        Distribution::Normal,
        Distribution::Pareto,
        Distribution::Paretonormal,
    ] {
        let table = distribution::table(distribution).expect("a table");
        let scaled: Vec<f64> = table
            .iter()
            .map(|&t| f64::from(t) / NETEM_DIST_SCALE as f64)
            .collect();
        let (table_mean, table_stdev) = mean_stdev(&scaled);
        let samples = jitter_samples(Some(distribution), n);
        let (mean, stdev) = mean_stdev(&samples);
        println!(
            "{}: mean {:.4} ms (table implies {:.4}), stdev {:.4} ms (table implies {:.4})",
            distribution.name(),
            mean / 1e6,
            table_mean * sigma / 1e6,
            stdev / 1e6,
            table_stdev * sigma / 1e6
        );
        assert!(
            (mean - table_mean * sigma).abs() < 0.01 * sigma,
            "{distribution:?} mean {mean}"
        );
        assert!(
            (stdev / (table_stdev * sigma) - 1.0).abs() < 0.03,
            "{distribution:?} stdev {stdev}"
        );
        if distribution == Distribution::Normal {
            assert!(
                (stdev / sigma - 1.0).abs() < 0.03,
                "normal stdev {stdev} vs jitter {sigma}"
            );
        }
        let max = samples.iter().cloned().fold(f64::MIN, f64::max);
        assert!(
            max <= 4.0 * sigma + 1.0,
            "tables end at 32767/8192 = 4 sigma: {max}"
        );
    }
}

#[test]
fn jitter_reorders_without_a_rate_but_not_with_one() {
    let jittery = |rate_bps| {
        impairments(|i| {
            i.delay_ns = 100 * MS;
            i.jitter_ns = 50 * MS;
            i.rate_bps = rate_bps;
            i.limit = 100_000;
        })
    };
    let overtakes = |mut shaper: LinkShaper| {
        let times: Vec<u64> = (0..1000)
            .map(|k| send_at(shaper.enqueue(k * MS, 100)))
            .collect();
        times.windows(2).filter(|w| w[1] < w[0]).count()
    };
    assert!(overtakes(LinkShaper::new(jittery(None), 3)) > 100);
    assert_eq!(overtakes(LinkShaper::new(jittery(Some(100_000_000)), 3)), 0);
}

#[test]
fn jitter_is_capped_as_the_kernel_caps_it() {
    // 5 s of jitter is more than tabledist's s32 sigma; netem_change caps it at INT_MAX ns.
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.delay_ns = 10 * SEC;
            i.jitter_ns = 5 * SEC;
        }),
        5,
    );
    let cap = i32::MAX as u64;
    let delays: Vec<u64> = (0..10_000)
        .map(|k| send_at(shaper.enqueue(k * 100 * SEC, 1)) - k * 100 * SEC)
        .collect();
    assert!(delays
        .iter()
        .all(|&d| d >= 10 * SEC - cap && d < 10 * SEC + cap));
    assert!(delays.iter().any(|&d| d < 10 * SEC - cap + SEC / 10));
}

#[test]
fn set_changes_later_packets_only() {
    let mut shaper = LinkShaper::new(impairments(|i| i.delay_ns = 10 * MS), 1);
    assert_eq!(shaper.enqueue(0, 100), Verdict::SendAt(10 * MS));
    let slower = impairments(|i| i.delay_ns = 50 * MS);
    shaper.set(slower.clone());
    assert_eq!(shaper.impairments(), &slower);
    assert_eq!(shaper.enqueue(MS, 100), Verdict::SendAt(51 * MS));
    // The first packet still leaves at 10 ms.
    assert_eq!(shaper.queued(10 * MS - 1), 2);
    assert_eq!(shaper.queued(10 * MS), 1);
    // A rate added at run time queues new packets behind those already scheduled.
    shaper.set(impairments(|i| i.rate_bps = Some(8_000_000)));
    assert_eq!(
        shaper.enqueue(2 * MS, 986),
        Verdict::SendAt(51 * MS + 1_000_000)
    );
}

#[test]
fn same_seed_gives_the_same_verdicts() {
    let imp = impairments(|i| {
        i.delay_ns = 20 * MS;
        i.jitter_ns = 5 * MS;
        i.delay_correlation = 0.25;
        i.distribution = Some(Distribution::Paretonormal);
        i.loss = 0.2;
        i.loss_correlation = 0.25;
        i.limit = 50;
    });
    let run = |seed| {
        let mut shaper = LinkShaper::new(imp.clone(), seed);
        (0..5000)
            .map(|k| shaper.enqueue(k * 100_000, 1200))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}

#[test]
fn a_gso_packet_is_one_entry_that_counts_and_takes_the_time_of_its_segments() {
    // 5 mbit/s: ten 1486-byte segments (1500-byte frames) take 10 × 2.4 ms, in one entry.
    let mut shaper = LinkShaper::new(
        impairments(|i| {
            i.delay_ns = 10 * MS;
            i.rate_bps = Some(5_000_000);
            i.limit = 10;
        }),
        1,
    );
    assert_eq!(
        send_at(shaper.enqueue_segments(0, 14_860, 10)),
        10 * MS + 24_000_000
    );
    // The limit counts wire packets: ten wait, so the next one is dropped, however small.
    assert_eq!(shaper.enqueue(0, 40), Verdict::Drop(DropReason::QueueFull));
    assert_eq!(shaper.queued(0), 10);
    // Once the GSO packet has left, the next packet starts the queue again.
    let departed = 10 * MS + 24_000_000;
    assert_eq!(
        send_at(shaper.enqueue(departed, 1486)),
        departed + 10 * MS + 2_400_000
    );
    let stats = shaper.stats();
    assert_eq!((stats.packets, stats.units), (11, 2));
    assert_eq!(stats.bytes, 11 * 1500);
}

#[test]
fn no_packet_leaves_sooner_after_its_arrival_than_the_least_delay() {
    let uniform = impairments(|i| {
        i.delay_ns = 10 * MS;
        i.jitter_ns = 2 * MS;
    });
    assert_eq!(LinkShaper::new(uniform.clone(), 1).least_delay_ns(), 8 * MS);
    let fixed = impairments(|i| i.delay_ns = 10 * MS);
    assert_eq!(LinkShaper::new(fixed.clone(), 1).least_delay_ns(), 10 * MS);
    let mut changed = LinkShaper::new(uniform, 1);
    changed.set(fixed);
    assert_eq!(changed.least_delay_ns(), 10 * MS, "follows a change");
    let beyond_zero = impairments(|i| {
        i.delay_ns = MS;
        i.jitter_ns = 3 * MS;
    });
    assert_eq!(LinkShaper::new(beyond_zero, 1).least_delay_ns(), 0);
    for distribution in [
        Distribution::Normal,
        Distribution::Pareto,
        Distribution::Paretonormal,
    ] {
        let mut shaper = LinkShaper::new(
            impairments(|i| {
                i.delay_ns = 20 * MS;
                i.jitter_ns = 4 * MS;
                i.distribution = Some(distribution);
            }),
            7,
        );
        let least = shaper.least_delay_ns();
        assert!(least < 20 * MS, "{distribution:?}: {least}");
        let earliest = (0..200_000u64)
            .map(|n| {
                let arrival = n * 10 * MS;
                send_at(shaper.enqueue(arrival, 100)) - arrival
            })
            .min()
            .unwrap();
        assert!(earliest >= least, "{distribution:?}: {earliest} < {least}");
        // The bound is the table's own lowest entry, not a loose one: 200 000 draws from a
        // table of 8 192 (or so) entries reach within a small part of the jitter of it.
        assert!(
            earliest - least <= 4 * MS / 20,
            "{distribution:?}: earliest {earliest}, least {least}"
        );
    }
}
