//! `reproduce` writes what it computed, and nothing when it cannot.

use crate::pricing::parm::{Mapping, ParmInput};
use crate::pricing::reproduce::reproduce;
use std::path::PathBuf;

/// A fresh directory under the system's temporary one.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cdnlab-pricing-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn writes_tables_figures_and_lps() {
    let dir = scratch("out");
    let summary = reproduce(&dir, 1).unwrap();
    assert!(summary.contains("| TP4"), "{summary}");
    assert!(
        summary.contains("+31.70%"),
        "the paper's number beside ours: {summary}"
    );
    for file in [
        "summary.md",
        "model.json",
        "ldp-tp1.csv",
        "ldp-tp4.svg",
        "cases.csv",
        "cases.json",
        "cases-payment.svg",
        "tau-sweep.csv",
        "tau-cost.svg",
        "p-max-sweep.json",
        "p-max-payment.svg",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let cases = std::fs::read_to_string(dir.join("cases.csv")).unwrap();
    // A header and 4 patterns × 4 cases.
    assert_eq!(cases.lines().count(), 17);
    assert!(cases.lines().nth(1).unwrap().starts_with("1,BASE,"));
    // An LP file reads back as the solver's input and solution.
    let text = std::fs::read_to_string(dir.join("lp/tp2-parm-p3.json")).unwrap();
    let lp: serde_json::Value = serde_json::from_str(&text).unwrap();
    let input: ParmInput = serde_json::from_value(lp["input"].clone()).unwrap();
    let mapping: Mapping = serde_json::from_value(lp["mapping"].clone()).unwrap();
    assert_eq!(input.demand.len(), 3);
    assert_eq!(mapping.alpha.len(), 3);
    let svg = std::fs::read_to_string(dir.join("ldp-tp1.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("Figure 4"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_directory_is_an_error() {
    // A file where the directory should be: nothing can be created under it.
    let file = scratch("file");
    std::fs::write(&file, "").unwrap();
    let error = reproduce(&file.join("out"), 1).unwrap_err();
    assert!(error.contains("cannot create"), "{error}");
    let _ = std::fs::remove_file(&file);
}
