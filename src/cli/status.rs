//! `cdnlab status` and `cdnlab link show`: the lab as it is now.

use super::{load_lab, resolve_lab, Failure};
use crate::lab::{shaper, sys, LabState};
use serde_json::{json, Value};

fn process_json(state: &LabState, node: &str) -> Value {
    match state.processes.get(node) {
        Some(p) => json!({"pid": p.pid, "running": sys::process_alive(p.pid, p.start_time)}),
        None => Value::Null,
    }
}

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The lab to show (default: the only one up).
    lab: Option<String>,
    /// Print JSON (nodes, processes, links, the shaper) instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(args: StatusArgs) -> Result<(), Failure> {
    let state = load_lab(&resolve_lab(args.lab)?)?;
    let as_json = args.json;
    let shaper_json = state
        .shaper
        .as_ref()
        .map(|p| json!({"pid": p.pid, "running": sys::process_alive(p.pid, p.start_time)}));
    let nodes: Vec<Value> = state
        .topology
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            json!({
                "name": n.name,
                "netns": state.netns(i),
                "client": n.client,
                "process": process_json(&state, &n.name),
                "interfaces": n.interfaces.iter().map(|f| json!({
                    "ifname": f.ifname,
                    "address": format!("{}/{}", f.addr, f.prefix_len),
                    "segment": state.topology.segments[f.segment].name,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    if as_json {
        let doc = json!({
            "lab": state.lab,
            "ready": state.ready,
            "link_backend": state.backend.name(),
            "shaper": shaper_json,
            "vars": state.topology.vars,
            "nodes": nodes,
            "links": crate::lab::directions::json(&state),
        });
        crate::say!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(());
    }
    let shaper_text = match &shaper_json {
        Some(s) if s["running"] == true => format!(", shaper pid {}", s["pid"]),
        Some(s) => format!(
            ", SHAPER pid {} IS NOT RUNNING: impaired links carry no traffic",
            s["pid"]
        ),
        None => String::new(),
    };
    crate::say!(
        "lab {}{} — {} link backend{}",
        state.lab,
        if state.ready { "" } else { " (not ready)" },
        state.backend.name(),
        shaper_text
    );
    if let Err(dead) = shaper::check_alive(&state) {
        crate::say!("{dead}");
    }
    crate::say!("\n{:<16} {:<18} ADDRESSES", "NODE", "PROCESS");
    for node in &nodes {
        let process = match &node["process"] {
            Value::Null => "-".to_string(),
            p if p["running"] == true => format!("pid {} running", p["pid"]),
            p => format!("pid {} EXITED", p["pid"]),
        };
        let addresses: Vec<String> = node["interfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                format!(
                    "{} {}",
                    f["ifname"].as_str().unwrap_or(""),
                    f["address"].as_str().unwrap_or("")
                )
            })
            .collect();
        crate::say!(
            "{:<16} {:<18} {}",
            node["name"].as_str().unwrap_or(""),
            process,
            addresses.join(", ")
        );
    }
    crate::say!();
    print_links(&state, false)
}

pub fn print_links(state: &LabState, as_json: bool) -> Result<(), Failure> {
    let links = crate::lab::directions::json(state);
    if as_json {
        crate::say!(
            "{}",
            serde_json::to_string_pretty(&links).unwrap_or_default()
        );
        return Ok(());
    }
    crate::say!(
        "{:<28} {:<30} {:<44} SHAPER",
        "LINK",
        "DIRECTION",
        "IMPAIRMENTS"
    );
    for link in &links {
        let to: Vec<&str> = link["to"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let direction = format!(
            "{} -> {}",
            link["from"].as_str().unwrap_or(""),
            to.join(",")
        );
        let shaper = match (&link["shaper"], &link["counters"]) {
            (Value::Null, Value::Null) => "-".to_string(),
            (Value::Null, c) => format!(
                "{} pkts, {} dropped, {} queued",
                c["packets"], c["drops"], c["queued"]
            ),
            (s, _) => format!(
                "{} pkts, {} lost, {} overflow, {} queued",
                s["stats"]["packets"],
                s["stats"]["dropped_loss"],
                s["stats"]["dropped_queue_full"],
                s["queued"]
            ),
        };
        crate::say!(
            "{:<28} {:<30} {:<44} {}",
            link["segment"].as_str().unwrap_or(""),
            direction,
            link["impairments"].as_str().unwrap_or(""),
            shaper
        );
    }
    Ok(())
}
