//! The per-segment CSV and the redirect totals.

use super::*;
use crate::has::{Hop, RedirectSummary, SegmentRecord, CSV_HEADER};

fn hop(host: &str, seconds: f64) -> Hop {
    Hop {
        host: host.into(),
        seconds,
    }
}

fn record(hops: Vec<Hop>) -> SegmentRecord {
    let d = DownloadObservation {
        index: 4,
        quality: 2,
        bytes: 500_000,
        start_ns: ns(10.5),
        end_ns: ns(12.5),
        segment_s: 2.0,
        buffer_s: 7.25,
    };
    SegmentRecord::new(&d, 2_000_000, ns(0.5), 1, hops)
}

#[test]
fn a_row_has_the_header_columns_and_hops_as_host_seconds() {
    let r = record(vec![hop("urr", 0.46), hop("drr", 0.04), hop("dcs", 1.5)]);
    assert_eq!(
        CSV_HEADER,
        "index,quality,bitrate_bps,bytes,request_time_s,download_time_s,throughput_mbps,buffer_s,stalls,hops"
    );
    assert_eq!(
        r.to_csv_row(),
        "4,2,2000000,500000,10.000000,2.000000,2.0000,7.250,1,urr:0.460000;drr:0.040000;dcs:1.500000"
    );
    assert_eq!(r.redirects(), 2);
    assert!((r.redirect_time_s() - 0.5).abs() < 1e-12);
}

#[test]
fn a_host_with_a_comma_quote_or_line_break_is_quoted() {
    let row = record(vec![hop("a,\"b\"", 1.0)]).to_csv_row();
    assert!(row.ends_with(",\"a,\"\"b\"\":1.000000\""), "{row}");
    let row = record(vec![hop("a\rb", 1.0)]).to_csv_row();
    assert!(row.ends_with(",\"a\rb:1.000000\""), "{row}");
}

#[test]
fn redirect_summary_averages_over_segments() {
    let records = [
        record(vec![hop("urr", 0.4), hop("drr", 0.1), hop("dcs", 1.0)]),
        record(vec![hop("dcs", 1.0)]),
        record(vec![]),
    ];
    let s = RedirectSummary::from_records(&records);
    assert!((s.redirects_per_chunk - 2.0 / 3.0).abs() < 1e-12);
    assert!((s.redirect_time_s - 0.5).abs() < 1e-12);
    assert_eq!(RedirectSummary::from_records(&[]).redirects_per_chunk, 0.0);
}
