//! The dispatcher's figures: the share of requests lost per sample (all contents, and the
//! 10% first and last in the initial popularity order), the mean replicas of those two groups,
//! and the data center's bytes (user misses and replica copies).

use super::record::Sample;
use crate::plot::{lines, Figure, Point};
use std::path::Path;

/// The names of `record::groups`, in its order.
const GROUPS: [&str; 2] = [
    "first 10% (most popular at the start)",
    "last 10% (least popular at the start)",
];

pub fn draw(out: &Path, samples: &[Sample]) -> Result<(), String> {
    if samples.is_empty() {
        return Ok(());
    }
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
    for (g, name) in GROUPS.iter().enumerate() {
        let points = samples.iter().map(|s| {
            let group = &s.groups[g];
            Point::new(s.t_s, share(group.losses, group.requests))
        });
        loss.push((name.to_string(), points.collect()));
        let mean = samples
            .iter()
            .map(|s| Point::new(s.t_s, s.groups[g].mean_replicas));
        replicas.push((name.to_string(), mean.collect()));
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
