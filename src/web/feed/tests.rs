use super::*;
use crate::lab::counters::Counters;
use crate::topology::{self, LoadOptions};

fn small() -> Topology {
    topology::parse(
        crate::picture::tests::SMALL,
        "small.toml",
        &LoadOptions::default(),
    )
    .unwrap()
}

/// Every direction of `topology` as `cdnlab status --json` lists it (the fields `hello` reads).
fn directions(topology: &Topology) -> Vec<Value> {
    let mut all = Vec::new();
    for segment in &topology.segments {
        for (m, &sender) in segment.members.iter().enumerate() {
            let from = &topology.nodes[sender].name;
            all.push(json!({
                "id": format!("{}:{from}", segment.name), "segment": segment.name, "from": from,
                "to": [], "impairments": "", "settings": {"rate_bps": if m == 0 && from == "client" { json!(5_000_000) } else { Value::Null }},
            }));
        }
    }
    all
}

#[test]
fn hello_draws_every_node_and_puts_each_direction_on_its_edge_the_right_way_round() {
    let topology = small();
    let picture = Picture::of(&topology);
    let hello = hello("live", &topology, &directions(&topology), true);
    let nodes: Vec<&str> = hello["picture"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["client", "router", "server", "other", "lan"]);
    assert_eq!(hello["clients"], json!(["client"]));
    let shown = hello["directions"].as_array().unwrap();
    assert_eq!(shown.len(), 6);
    for d in shown {
        let edge = &picture.edges[d["edge"].as_u64().unwrap() as usize];
        let (a, b) = (
            &picture.vertices[edge.a].name,
            &picture.vertices[edge.b].name,
        );
        let sender = if d["forward"] == true { a } else { b };
        assert_eq!(sender, d["from"].as_str().unwrap(), "{d}");
        assert!(
            picture.vertices[edge.a].name == *d["from"].as_str().unwrap()
                || picture.vertices[edge.b].name == *d["from"].as_str().unwrap()
        );
    }
    assert_eq!(shown[0]["rate_bps"], 5_000_000);
    // A LAN member's direction is its own edge to the LAN's vertex.
    let other = shown.iter().find(|d| d["from"] == "other").unwrap();
    let edge = &picture.edges[other["edge"].as_u64().unwrap() as usize];
    assert_eq!(picture.vertices[edge.b].name, "lan");
}

#[test]
fn throughput_is_the_bytes_of_the_last_half_second_over_its_time() {
    let counters = |bytes| Counters {
        id: "l:a".into(),
        bytes,
        packets: 1,
        drops: 2,
        queued: 3,
    };
    let mut throughput = Throughput::default();
    let mut at = |t: f64, bytes| {
        throughput.message(&Sample {
            time_unix_s: t,
            links: vec![counters(bytes)],
        })
    };
    let first = at(100.0, 1_000);
    assert_eq!(first["links"][0]["bps"], 0.0);
    // 62 500 bytes in 0.5 s: 1 Mbit/s.
    let second = at(100.5, 63_500);
    assert_eq!(second["links"][0]["bps"], 1_000_000.0);
    assert_eq!(second["links"][0]["drops"], 2);
    assert_eq!(second["links"][0]["queued"], 3);
    assert_eq!(second["time_unix_s"], 100.5);
    // Samples every 0.1 s: the rate is over the last 0.5 s, not the last 0.1 s (a burst of
    // 125 000 bytes in the last tenth shows as 2 Mbit/s, not 10).
    at(100.6, 63_500);
    at(100.7, 63_500);
    at(100.8, 63_500);
    at(100.9, 63_500);
    assert_eq!(at(101.0, 188_500)["links"][0]["bps"], 2_000_000.0);
    // Counters that went back (a restarted shaper) show nothing rather than a huge rate.
    assert_eq!(at(101.1, 10)["links"][0]["bps"], 0.0);
}

#[test]
fn an_event_line_becomes_a_message_with_its_words_and_anything_else_is_skipped() {
    let line = r#"{"event":"link_set","direction":"acc-client:client","impairments":"delay 200ms rate 5Mbit","rate_bps":5000000,"time_unix_s":1700000000.25}"#;
    let message = event(line).unwrap();
    assert_eq!(message["kind"], "event");
    assert_eq!(message["time_unix_s"], 1_700_000_000.25);
    assert_eq!(
        message["text"],
        "link set acc-client:client delay 200ms rate 5Mbit"
    );
    assert_eq!(message["rate_bps"], 5_000_000);
    let stop = event(r#"{"event":"node_signal","node":"urr","delivered":false,"time_unix_s":1}"#);
    assert_eq!(stop.unwrap()["text"], "node signal delivered false urr");
    for bad in [
        "",
        "[]",
        "{}",
        r#"{"event":"x"}"#,
        r#"{"time_unix_s":1}"#,
        "not json",
    ] {
        assert_eq!(event(bad), None, "{bad}");
    }
}

#[test]
fn a_segment_row_is_stamped_with_its_arrival_and_a_row_that_does_not_parse_is_skipped() {
    let columns = SegmentColumns::of(cdnlab_core::has::CSV_HEADER).unwrap();
    let row = "4,2,2000000,500000,10.000000,2.000000,2.0000,7.250,1,\"urr:0.46,x\"";
    let message = columns.message("c1", 1000.0, row).unwrap();
    assert_eq!(message["client"], "c1");
    assert_eq!(message["time_unix_s"], 1012.0);
    assert_eq!(message["quality"], 2.0);
    assert_eq!(message["bitrate_bps"], 2_000_000.0);
    assert_eq!(message["buffer_s"], 7.25);
    assert_eq!(message["stalls"], 1.0);
    for bad in [
        "",
        "4,2",
        "a,b,c,d,e,f,g,h,i,j",
        "4,2,2000000,500000,NaN,2,2,7,1,",
    ] {
        assert_eq!(columns.message("c1", 0.0, bad), None, "{bad}");
    }
    assert!(SegmentColumns::of("sent_s,app,object,latency_s").is_none());
}

#[test]
fn a_finished_client_is_done_or_failed_as_its_summary_says() {
    let done = client_done("c1", &json!({"startup_delay_s": 0.5, "failed": false}));
    assert_eq!(done["state"], "done");
    assert_eq!(done["summary"]["startup_delay_s"], 0.5);
    assert_eq!(
        client_done("c1", &json!({"failed": true}))["state"],
        "failed"
    );
}

#[test]
fn a_deadlines_row_says_when_a_segment_came_and_whether_it_missed() {
    let message = deadline("viewers", "1700000000.125,12,3,true").unwrap();
    assert_eq!(message["kind"], "deadline");
    assert_eq!(message["time_unix_s"], 1_700_000_000.125);
    assert_eq!(
        (message["request"].clone(), message["index"].clone()),
        (json!(12), json!(3))
    );
    assert_eq!(message["missed"], true);
    assert_eq!(deadline("v", "1.5,0,0,false").unwrap()["missed"], false);
    for bad in [
        "",
        "1,2,3",
        "1,2,3,maybe",
        "x,2,3,true",
        "1,2,3,true,4",
        "inf,2,3,true",
    ] {
        assert_eq!(deadline("v", bad), None, "{bad}");
    }
}
