//! Tests of the tc command generation.

use super::*;
use crate::params::Distribution;
use crate::shaper_random::probability_to_u32;
use crate::units::parse_duration_ns;

const MS: u64 = 1_000_000;

fn impairments(change: impl FnOnce(&mut Impairments)) -> Impairments {
    let mut impairments = Impairments::default();
    change(&mut impairments);
    impairments
}

fn argv(imp: &Impairments) -> Vec<String> {
    netem_qdisc_argv("eth0", imp, true)
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

#[test]
fn delay_only() {
    let imp = impairments(|i| i.delay_ns = 50 * MS);
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem delay 50ms limit 1000")
    );
    assert_eq!(
        netem_qdisc_argv("veth-a", &imp, false),
        words("tc qdisc add dev veth-a root netem delay 50ms limit 1000")
    );
}

#[test]
fn jitter_with_each_distribution() {
    for (distribution, tail) in [
        (None, ""),
        (Some(Distribution::Uniform), ""),
        (Some(Distribution::Normal), " distribution normal"),
        (Some(Distribution::Pareto), " distribution pareto"),
        (
            Some(Distribution::Paretonormal),
            " distribution paretonormal",
        ),
    ] {
        let imp = impairments(|i| {
            i.delay_ns = 50 * MS;
            i.jitter_ns = 5 * MS;
            i.delay_correlation = 0.25;
            i.distribution = distribution;
        });
        let want =
            format!("tc qdisc replace dev eth0 root netem delay 50ms 5ms 25%{tail} limit 1000");
        assert_eq!(argv(&imp), words(&want), "{distribution:?}");
    }
    // Without a correlation, 0% is written so that a change clears an earlier one.
    let imp = impairments(|i| {
        i.delay_ns = 1_500_000;
        i.jitter_ns = 250_000;
    });
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem delay 1.5ms 250us 0% limit 1000")
    );
    // A distribution without jitter means nothing, and tc would refuse it.
    let imp = impairments(|i| {
        i.delay_ns = 50 * MS;
        i.distribution = Some(Distribution::Normal);
    });
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem delay 50ms limit 1000")
    );
}

#[test]
fn loss_with_and_without_correlation() {
    let imp = impairments(|i| {
        i.loss = 0.01;
        i.loss_correlation = 0.25;
    });
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem loss random 1% 25% limit 1000")
    );
    let imp = impairments(|i| i.loss = 0.0005);
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem loss random 0.05% 0% limit 1000")
    );
}

#[test]
fn rate_and_limit() {
    let imp = impairments(|i| i.rate_bps = Some(5_000_000));
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem rate 5mbit limit 1000")
    );
    let imp = impairments(|i| {
        i.rate_bps = Some(1_500_000_001);
        i.limit = 100;
    });
    assert_eq!(
        argv(&imp),
        words("tc qdisc replace dev eth0 root netem rate 1.500000001gbit limit 100")
    );
}

#[test]
fn everything() {
    let imp = impairments(|i| {
        i.delay_ns = 50 * MS;
        i.jitter_ns = 5 * MS;
        i.delay_correlation = 0.25;
        i.distribution = Some(Distribution::Normal);
        i.loss = 0.01;
        i.loss_correlation = 0.25;
        i.rate_bps = Some(5_000_000);
        i.limit = 1000;
    });
    assert_eq!(
        argv(&imp),
        words(
            "tc qdisc replace dev eth0 root netem delay 50ms 5ms 25% distribution normal \
             loss random 1% 25% rate 5mbit limit 1000"
        )
    );
}

#[test]
fn none_only_deletes() {
    let none = Impairments::default();
    let some = impairments(|i| i.delay_ns = 10 * MS);
    assert_eq!(
        netem_delete_argv("eth0"),
        words("tc qdisc del dev eth0 root")
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&some), &none),
        Ok(vec![netem_delete_argv("eth0")])
    );
    assert_eq!(netem_apply_argvs("eth0", None, &none), Ok(vec![]));
    assert_eq!(netem_apply_argvs("eth0", Some(&none), &none), Ok(vec![]));
    assert_eq!(
        netem_apply_argvs("eth0", None, &some),
        Ok(vec![argv(&some)])
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&none), &some),
        Ok(vec![argv(&some)])
    );
}

#[test]
fn changes_that_netem_cannot_undo_recreate_the_qdisc() {
    let normal = impairments(|i| {
        i.delay_ns = 50 * MS;
        i.jitter_ns = 5 * MS;
        i.distribution = Some(Distribution::Normal);
    });
    let pareto = Impairments {
        distribution: Some(Distribution::Pareto),
        ..normal.clone()
    };
    let uniform = Impairments {
        distribution: None,
        ..normal.clone()
    };
    let steady = Impairments {
        jitter_ns: 0,
        ..normal.clone()
    };
    let limited = Impairments {
        rate_bps: Some(1_000_000),
        ..normal.clone()
    };
    let replace = |next: &Impairments| Ok(vec![argv(next)]);
    let recreate = |next: &Impairments| Ok(vec![netem_delete_argv("eth0"), argv(next)]);

    assert_eq!(
        netem_apply_argvs("eth0", Some(&normal), &pareto),
        replace(&pareto)
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&uniform), &normal),
        replace(&normal)
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&normal), &uniform),
        recreate(&uniform)
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&normal), &steady),
        recreate(&steady)
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&normal), &limited),
        replace(&limited)
    );
    assert_eq!(
        netem_apply_argvs("eth0", Some(&limited), &normal),
        recreate(&normal)
    );
}

#[test]
fn tc_refuses_a_distribution_without_delay() {
    let imp = impairments(|i| {
        i.jitter_ns = 5 * MS;
        i.distribution = Some(Distribution::Pareto);
    });
    let refusal = netem_apply_argvs("eth0", None, &imp).unwrap_err();
    assert!(refusal.0.contains("distribution pareto"), "{refusal}");
    // Uniform jitter around no delay is fine.
    let imp = Impairments {
        distribution: None,
        ..imp
    };
    assert_eq!(
        netem_apply_argvs("eth0", None, &imp),
        Ok(vec![words(
            "tc qdisc replace dev eth0 root netem delay 0ms 5ms 0% limit 1000"
        )])
    );
}

#[test]
fn times_are_written_in_units_every_tc_reads() {
    for (ns, text) in [
        (0, "0ms"),
        (1_000, "1us"),
        (250_000, "250us"),
        (1_500_000, "1.5ms"),
        (1_234_567, "1234.567us"),
        (2_500_000_000, "2.5s"),
        (500, "0.5us"),
        (1_500, "1.5us"),
        (1_001, "1.001us"),
        (1_000_000_001, "1000000.001us"),
        (1_000_001_000, "1.000001s"),
        (1_000_001_500, "1000001.5us"),
    ] {
        assert_eq!(tc_time(ns), text, "{ns} ns");
    }
}

#[test]
fn percentages_keep_the_kernel_value() {
    assert_eq!(tc_percent(0.0005), "0.05%");
    assert_eq!(tc_percent(0.07), "7%");
    assert_eq!(tc_percent(1e-9), "0.0000001%");
}

#[test]
fn every_emitted_value_round_trips_through_the_units() {
    let times = [
        0,
        1,
        999,
        1_000,
        1_001,
        250_000,
        1_500_000,
        1_234_567,
        999_999_999,
        1_000_000_001,
        4_321_987_654_321,
    ];
    for ns in times {
        assert_eq!(parse_duration_ns(&tc_time(ns)), Ok(ns), "{}", tc_time(ns));
        assert!(
            !tc_time(ns).ends_with("ns"),
            "tc 6.1 refuses ns: {}",
            tc_time(ns)
        );
    }
    for bps in [
        8,
        9,
        1_000,
        64_000,
        5_000_000,
        7_777_777,
        1_500_000_001,
        40_000_000_000,
        123_456_789_012_345,
    ] {
        assert_eq!(parse_rate_bps(&tc_rate(bps)), Ok(bps), "{}", tc_rate(bps));
    }
    for p in [
        0.0,
        1e-9,
        0.0005,
        0.01,
        0.07,
        0.1,
        0.123_456_789,
        0.25,
        1.0 / 3.0,
        0.999_999,
        1.0,
    ] {
        let text = tc_percent(p);
        let parsed = parse_percent(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            probability_to_u32(parsed),
            probability_to_u32(p),
            "{p} as {text}"
        );
    }
    // And whole commands: every value in them parses back.
    let imp = impairments(|i| {
        i.delay_ns = 1_000_000_001;
        i.jitter_ns = 1_500;
        i.delay_correlation = 1.0 / 3.0;
        i.distribution = Some(Distribution::Paretonormal);
        i.loss = 0.123_456_789;
        i.loss_correlation = 0.5;
        i.rate_bps = Some(7_777_777);
        i.limit = 77;
    });
    let argv = argv(&imp);
    println!("{}", argv.join(" "));
    assert_eq!(parse_duration_ns(&argv[8]), Ok(1_000_000_001));
    assert_eq!(parse_duration_ns(&argv[9]), Ok(1_500));
    assert_eq!(
        probability_to_u32(parse_percent(&argv[10]).unwrap()),
        probability_to_u32(1.0 / 3.0)
    );
    assert_eq!(&argv[11..13], ["distribution", "paretonormal"]);
    assert_eq!(&argv[13..15], ["loss", "random"]);
    assert_eq!(
        probability_to_u32(parse_percent(&argv[15]).unwrap()),
        probability_to_u32(0.123_456_789)
    );
    assert_eq!(parse_percent(&argv[16]), Ok(0.5));
    assert_eq!(argv[17], "rate");
    assert_eq!(parse_rate_bps(&argv[18]), Ok(7_777_777));
    assert_eq!(&argv[19..], ["limit", "77"]);
}
