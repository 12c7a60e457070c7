//! Topology files and `--set`: no text panics the reader, every problem is at a real
//! `FILE:LINE:COL` (or names the file or the option), and values given through `--set` reach
//! the model unchanged.

use super::damaged_one_of;
use crate::topology::{parse, parse_set, LoadOptions, TopologyError};
use netem::units::{format_duration_ns, format_percent, format_rate_bps};
use proptest::prelude::*;

/// The shipped examples and a small file that uses every shared impairment key and a timeline.
fn examples() -> Vec<String> {
    let mut texts: Vec<String> = [
        include_str!("../../topologies/chain.toml"),
        include_str!("../../topologies/default.toml"),
        include_str!("../../topologies/cdn-smoke.toml"),
        include_str!("../../topologies/f-fdn.toml"),
        include_str!("../../topologies/icn-telco-cdn.toml"),
    ]
    .map(String::from)
    .to_vec();
    texts.push(SMALL.to_string());
    texts
}

const SMALL: &str = r#"name = "t"
[vars]
d = "10ms"
[nodes.a]
command = ["sh", "-c", "echo ${d}"]
ready = { tcp = 80 }
[nodes.b]
[nodes.c]
[[links]]
endpoints = ["a", "b"]
delay = "${d}"
jitter = "1ms"
delay_correlation = "25%"
distribution = "normal"
loss = "1%"
loss_correlation = "5%"
rate = "5mbit"
limit = 100
from.b = { delay = "20ms" }
[[lans]]
name = "office"
members = ["a", "b", "c"]
[[timeline]]
at = "1s"
link = ["a", "b"]
delay = "50ms"
"#;

/// Each problem is placed inside `text`, or names the file or a command-line option.
fn placed(error: &TopologyError, text: &str) -> Result<(), TestCaseError> {
    let lines: Vec<&str> = text.split('\n').collect();
    prop_assert!(!error.problems.is_empty());
    for problem in &error.problems {
        prop_assert!(!problem.message.is_empty());
        match problem.line_col {
            Some((line, col)) => {
                prop_assert_eq!(&problem.source, "t.toml");
                prop_assert!((1..=lines.len()).contains(&line), "{problem}");
                let width = lines[line - 1].chars().count();
                prop_assert!((1..=width + 1).contains(&col), "{problem}");
            }
            None => prop_assert!(
                problem.source == "t.toml" || problem.source.starts_with("--"),
                "{problem}"
            ),
        }
    }
    Ok(())
}

/// The damage starts from valid files, so that it reaches the checks past the TOML syntax.
#[test]
fn prop_topology_examples_are_valid() {
    for text in examples() {
        if let Err(e) = parse(&text, "t.toml", &LoadOptions::default()) {
            panic!("{e}\n{text}");
        }
    }
}

proptest! {
    #[test]
    fn prop_topology_any_text_is_placed(text in prop_oneof![1 => any::<String>(), 4 => damaged_one_of(examples())]) {
        if let Err(error) = parse(&text, "t.toml", &LoadOptions::default()) {
            placed(&error, &text)?;
        }
    }

    #[test]
    fn prop_topology_set_overrides_reach_the_model(
        delay in 0..100_000_000_000u64,
        rate in 1..100_000_000_000u64,
        loss in 0.0..=1.0f64,
        limit in 1..=netem::MAX_LIMIT,
    ) {
        let text = "name = \"t\"\n[vars]\nd = \"1ms\"\nr = \"1mbit\"\nl = \"0%\"\nq = \"5\"\n\
            [nodes.a]\n[nodes.b]\n[[links]]\nendpoints = [\"a\", \"b\"]\n\
            delay = \"${d}\"\nrate = \"${r}\"\nloss = \"${l}\"\nlimit = \"${q}\"\n";
        let args = [
            format!("d={}", format_duration_ns(delay)),
            format!("r={}", format_rate_bps(rate)),
            format!("l={}", format_percent(loss)),
            format!("q={limit}"),
        ];
        let set = args.iter().map(|a| parse_set(a)).collect::<Result<Vec<_>, _>>().map_err(TestCaseError::fail)?;
        let t = parse(text, "t.toml", &LoadOptions { name: None, set: &set })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let egress = &t.segments[0].egress[0];
        prop_assert_eq!(egress.delay_ns, delay);
        prop_assert_eq!(egress.rate_bps, Some(rate));
        prop_assert!((egress.loss - loss).abs() <= 5.1e-12, "{} vs {loss}", egress.loss);
        prop_assert_eq!(egress.limit, limit);
    }

    #[test]
    fn prop_topology_set_arguments(arg in prop_oneof![any::<String>(), "[a-zA-Z_0-9]{0,6}=?.{0,10}"]) {
        match parse_set(&arg) {
            Ok((name, value)) => {
                prop_assert_eq!(format!("{name}={value}"), arg);
                prop_assert!(!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()));
            }
            Err(e) => {
                let (name, _) = arg.split_once('=').unwrap_or((&arg, ""));
                prop_assert!(e.contains(&format!("`{name}`")), "{e}");
            }
        }
    }
}
