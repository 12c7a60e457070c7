//! The dispatcher's figures: the share of requests lost per sample (all contents, and the
//! 10% first and last in the initial popularity order), the mean replicas of those two groups,
//! and the data center's bytes (user misses and replica copies).

use super::record::Sample;
use crate::plot::{lines, Figure, Point};
use std::path::Path;

/// The first and last 10% of the contents (at least one each).
fn groups(n: usize) -> [(String, std::ops::Range<usize>); 2] {
    let k = (n / 10).max(1);
    [
        ("first 10% (most popular at the start)".to_string(), 0..k),
        (
            "last 10% (least popular at the start)".to_string(),
            n - k..n,
        ),
    ]
}

pub fn draw(out: &Path, samples: &[Sample]) -> Result<(), String> {
    let Some(first) = samples.first() else {
        return Ok(());
    };
    let n = first.replicas.len();
    let share = |lost: u64, asked: u64| {
        if asked == 0 {
            f64::NAN
        } else {
            lost as f64 / asked as f64
        }
    };
    let mut loss = vec![(
        "all contents".to_string(),
        samples
            .iter()
            .map(|s| Point::new(s.t_s, share(s.losses, s.requests)))
            .collect::<Vec<_>>(),
    )];
    let mut replicas = Vec::new();
    for (name, range) in groups(n) {
        let points = samples.iter().map(|s| {
            let lost: u32 = s.interval.losses[range.clone()].iter().sum();
            let asked: u32 = s.interval.requests[range.clone()].iter().sum();
            Point::new(s.t_s, share(lost.into(), asked.into()))
        });
        loss.push((name.clone(), points.collect()));
        let mean = samples.iter().map(|s| {
            let total: u32 = s.replicas[range.clone()].iter().sum();
            Point::new(s.t_s, f64::from(total) / range.len() as f64)
        });
        replicas.push((name, mean.collect()));
    }
    lines(
        &out.join("loss.svg"),
        &Figure {
            caption: "Requests lost to the data center (share per sample)",
            x_title: "time (s)",
            y_title: "share lost",
            series: &loss,
        },
    )?;
    lines(
        &out.join("replicas.svg"),
        &Figure {
            caption: "Mean replicas per content",
            x_title: "time (s)",
            y_title: "replicas",
            series: &replicas,
        },
    )?;
    let megabytes = |f: fn(&crate::farm_roles::messages::DataCenterUsage) -> u64| {
        samples
            .iter()
            .filter_map(|s| {
                s.datacenter
                    .as_ref()
                    .map(|d| Point::new(s.t_s, f(d) as f64 / 1e6))
            })
            .collect::<Vec<_>>()
    };
    let bytes = [
        ("user misses".to_string(), megabytes(|d| d.user_bytes)),
        ("replica copies".to_string(), megabytes(|d| d.copy_bytes)),
    ];
    lines(
        &out.join("datacenter.svg"),
        &Figure {
            caption: "Data center bytes since the start",
            x_title: "time (s)",
            y_title: "MB",
            series: &bytes,
        },
    )
}
