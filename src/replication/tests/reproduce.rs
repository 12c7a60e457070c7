//! `reproduce --quick` writes every table and figure, with the columns promised.

use crate::replication::reproduce::reproduce;
use crate::replication::scheme::NAMES;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("cdnlab-replication-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn replication_reproduce_quick_writes_tables_and_figures() {
    let dir = scratch("out");
    let summary = reproduce(&dir, 1, true).unwrap();
    assert!(summary.contains("| zipf-0.8"), "{summary}");
    assert!(
        summary.contains("5.70e-3"),
        "the paper's number beside ours: {summary}"
    );
    let csv = std::fs::read_to_string(dir.join("inefficiency.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("model,replication,source,inefficiency"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // 3 models × 8 replications × 2 sources.
    assert_eq!(rows.len(), 48);
    for model in ["class", "zipf-0.8", "zipf-1.2"] {
        for name in NAMES {
            for source in ["simulation", "approximation"] {
                let row = rows.iter().find(|r| r[..3] == [model, name, source]);
                let value: f64 = row.unwrap_or_else(|| panic!("{model} {name} {source}"))[3]
                    .parse()
                    .unwrap();
                assert!(
                    (0.0..=1.0).contains(&value),
                    "{model} {name} {source}: {value}"
                );
            }
        }
    }
    for file in [
        "summary.md",
        "inefficiency.json",
        "runs.json",
        "z-class.csv",
        "popularity-change.csv",
        "contents-zipf-1.2-lrl-virtual.csv",
        "adaptation-zipf-0.8.csv",
        "fig1-class-z.svg",
        "fig1-class-loss.svg",
        "fig2-zipf-available.svg",
        "fig2-zipf-loss.svg",
        "fig3-optimized-loss.svg",
        "fig4-zipf-0.8-loss.svg",
        "fig4-zipf-0.8-replicas.svg",
        "fig5-zipf-0.8-top.svg",
        "fig5-zipf-0.8-bottom.svg",
        "popularity-change-loss.svg",
        "popularity-change-replicas.svg",
    ] {
        let text =
            std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!text.is_empty(), "{file} is empty");
        if file.ends_with(".svg") {
            assert!(text.starts_with("<svg"), "{file}");
        }
    }
    let contents = std::fs::read_to_string(dir.join("contents-class-proportional.csv")).unwrap();
    assert_eq!(contents.lines().count(), 1001);
    let _ = std::fs::remove_dir_all(&dir);
}
