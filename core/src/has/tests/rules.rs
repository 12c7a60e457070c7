//! The factory, the ladder, and the throughput, BBA and BOLA rules on crafted inputs.

use super::*;
use crate::has::bba::Bba;
use crate::has::bola::Bola;
use crate::has::throughput::Throughput;
use crate::has::{make_abr, Abr, ABR_NAMES};

#[test]
fn make_abr_knows_every_name_and_lists_them_on_a_typo() {
    for &name in ABR_NAMES {
        assert_eq!(make_abr(name, 20.0).unwrap().name(), name);
    }
    let error = make_abr("bolla", 20.0).err().unwrap();
    assert!(error.contains("`bolla`"), "{error}");
    assert!(
        error.contains("mss, mss-unscaled, throughput, bba, bola"),
        "{error}"
    );
    assert!(make_abr("mss", 0.0).is_err());
    assert!(make_abr("mss", f64::NAN).is_err());
}

#[test]
fn ladder_must_be_nonempty_positive_and_ascending() {
    assert!(Ladder::new(vec![]).is_err());
    assert!(Ladder::new(vec![0, 1_000]).is_err());
    let error = Ladder::new(vec![500, 1_000, 1_000]).unwrap_err();
    assert!(
        error.contains("quality 1 is 1000 bit/s, quality 2 is 1000"),
        "{error}"
    );
    let ladder = paper_ladder();
    assert_eq!(ladder.highest_at_most(999_999.0), 0);
    assert_eq!(ladder.highest_at_most(1_000_000.0), 1);
    assert_eq!(ladder.highest_at_most(100.0), 0, "nothing fits: lowest");
    assert_eq!(ladder.highest_at_most(1e12), 2);
}

#[test]
fn throughput_starts_lowest_then_takes_the_highest_under_nine_tenths() {
    let ladder = paper_ladder();
    let mut abr = Throughput::new();
    assert_eq!(abr.next_quality(&ctx(&ladder, 0.0, 0.0, None)), 0);
    // One sample: the bias-corrected averages equal it exactly.
    abr.on_download(&download(0, 0, 500_000, 2.3e6, 1.0, 2.0));
    assert!((abr.estimate_bps().unwrap() - 2.3e6).abs() < 1.0);
    // 0.9 × 2.3 = 2.07 ≥ 2: the top.
    assert_eq!(abr.next_quality(&ctx(&ladder, 1.0, 2.0, Some(0))), 2);

    let mut abr = Throughput::new();
    abr.on_download(&download(0, 0, 500_000, 2.2e6, 1.0, 2.0));
    // 0.9 × 2.2 = 1.98 < 2: one below.
    assert_eq!(abr.next_quality(&ctx(&ladder, 1.0, 2.0, Some(0))), 1);
}

#[test]
fn throughput_follows_a_drop_with_the_fast_average() {
    let mut abr = Throughput::new();
    let mut end = 0.0;
    // Five 2 s downloads at 5 Mbit/s, then one of 4 s at 1 Mbit/s.
    for i in 0..5 {
        end += 2.0;
        abr.on_download(&download(i, 2, 5_000_000, 5e6, end, 10.0));
    }
    end += 4.0;
    abr.on_download(&download(5, 1, 2_000_000, 1e6, end, 8.0));
    // Fast (3 s) average 2.4885 Mbit/s, slow (8 s) 3.3328: the estimate is the smaller.
    let estimate = abr.estimate_bps().unwrap();
    assert!((estimate - 2.4885e6).abs() < 1e3, "{estimate}");
}

#[test]
fn bba_maps_reservoir_cushion_and_top_with_hysteresis() {
    let ladder = paper_ladder();
    let mut bba = Bba::new(20.0);
    // P − d = 18 s usable: reservoir max(1.8, one segment) = 2 s, cushion ends at 16.2 s.
    assert_eq!(bba.bounds_s(2.0), (2.0, 16.2));
    let mut at =
        |buffer: f64, last: usize| bba.next_quality(&ctx(&ladder, 0.0, buffer, Some(last)));
    assert_eq!(at(1.0, 2), 0, "in the reservoir");
    assert_eq!(at(2.0, 2), 0, "at the reservoir");
    assert_eq!(at(16.2, 0), 2, "at the cushion's end");
    // f(9.1) = 0.5 + 1.5 × 7.1 / 14.2 = 1.25 Mbit/s.
    assert_eq!(at(9.1, 0), 1, "f over Rate+ = 1: the highest under f");
    assert_eq!(at(9.1, 1), 1, "between the neighbours: hold");
    assert_eq!(at(9.1, 2), 2, "over Rate− = 1: hold the top");
    // f(5.2) = 0.5 + 1.5 × 3.2 / 14.2 = 0.838 Mbit/s ≤ Rate− = 1: the lowest over f.
    assert_eq!(at(5.2, 2), 1);
    // P = 6 s: 4 s usable, reservoir 2 s, top from 3.6 s.
    let mut small = Bba::new(6.0);
    assert_eq!(small.bounds_s(2.0), (2.0, 3.6));
    assert_eq!(small.next_quality(&ctx(&ladder, 0.0, 3.7, Some(0))), 2);
    assert_eq!(small.next_quality(&ctx(&ladder, 0.0, 1.9, Some(2))), 0);
}

#[test]
fn bola_picks_higher_quality_as_the_buffer_grows() {
    let ladder = paper_ladder();
    let mut bola = Bola::new(20.0);
    let mut qualities = Vec::new();
    for tenth in 0..=180 {
        let buffer = tenth as f64 / 10.0;
        qualities.push(bola.next_quality(&ctx(&ladder, 0.0, buffer, None)));
    }
    assert!(qualities.windows(2).all(|w| w[0] <= w[1]), "{qualities:?}");
    // V = 18 / (2 ln 2 + 5) = 2.8186: 0 → 1 at V (5 − ln 2) = 12.14 s, 1 → 2 at 5 V = 14.09 s.
    assert_eq!(qualities[120], 0);
    assert_eq!(qualities[122], 1);
    assert_eq!(qualities[140], 1);
    assert_eq!(qualities[141], 2);
    assert_eq!(qualities[180], 2);
    // P = 6 s: V = 4 / 6.386, top from 5 V = 3.13 s.
    let mut small = Bola::new(6.0);
    assert_eq!(small.next_quality(&ctx(&ladder, 0.0, 3.0, None)), 1);
    assert_eq!(small.next_quality(&ctx(&ladder, 0.0, 3.2, None)), 2);
    // A buffer smaller than a segment leaves no room for BOLA's objective: lowest.
    assert_eq!(
        Bola::new(1.0).next_quality(&ctx(&ladder, 0.0, 0.5, None)),
        0
    );
}
