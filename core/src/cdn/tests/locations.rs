//! The chunk-location table: construction errors, and the serde form the CDNs exchange, which
//! is validated again when received.

use super::{lab, url, video};
use crate::cdn::{
    place, Assign, Cdn, ChunkLocations, Container, LocationError, Offload, Popularity,
};

#[test]
fn table_places_offloaded_indices_downstream_in_every_quality() {
    let table = lab();
    let v = table.video("bbb").expect("bbb");
    for q in 0..3 {
        for i in 0..10 {
            let cdn = v.get(q, i).expect("chunk").cdn;
            assert_eq!(cdn == Cdn::Downstream, i < 6, "q{q} #{i}");
        }
    }
    assert_eq!(v.get(3, 0), None);
    assert_eq!(v.get(0, 10), None);
    assert_eq!(v.chunks_in(Cdn::Downstream).count(), 18);
    assert_eq!(v.chunks_in(Cdn::Upstream).count(), 12);
    // Round robin downstream, index-major: (0,q0)→dcs1, (0,q1)→dcs2, (0,q2)→dcs1, (1,q0)→dcs2…
    let servers: Vec<u32> = (0..3).map(|q| v.get(q, 0).expect("chunk").server).collect();
    assert_eq!(servers, [0, 1, 0]);
    assert_eq!(v.get(0, 1).expect("chunk").server, 1);
}

#[test]
fn json_round_trip_is_identical() {
    let table = lab();
    let json = serde_json::to_string(&table).expect("serialize");
    let back: ChunkLocations = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, table);
    assert!(json.contains("\"cdn\":\"downstream\""), "{json}");
}

#[test]
fn received_tables_are_validated() {
    let json = serde_json::to_string(&lab()).expect("serialize");
    let mut value: serde_json::Value = serde_json::from_str(&json).expect("json");
    // A chunk on a dCS that is not listed.
    value["videos"][0]["chunks"][0]["server"] = serde_json::json!(7);
    let err =
        serde_json::from_value::<ChunkLocations>(value.clone()).expect_err("bad server index");
    assert!(err.to_string().contains("server 7 of 2"), "{err}");
    // A chunk list that does not match qualities × segments.
    value["videos"][0]["chunks"][0]["server"] = serde_json::json!(0);
    value["videos"][0]["chunks"]
        .as_array_mut()
        .expect("array")
        .pop();
    let err =
        serde_json::from_value::<ChunkLocations>(value.clone()).expect_err("short chunk list");
    assert!(err.to_string().contains("29 chunk locations"), "{err}");
    // An invalid video inside.
    let bad_name = json.replace("\"name\":\"bbb\"", "\"name\":\"../bbb\"");
    assert!(serde_json::from_str::<ChunkLocations>(&bad_name).is_err());
    let bad_url = json.replace("http://dcs2:8080", "http://dcs2:8080/../x");
    assert!(serde_json::from_str::<ChunkLocations>(&bad_url).is_err());
}

#[test]
fn construction_errors() {
    assert_eq!(
        ChunkLocations::new(vec![], vec![url("http://d:1")]).err(),
        Some(LocationError::NoUpstreamServers)
    );
    assert!(matches!(
        ChunkLocations::new(vec![url("http://a:1")], vec![url("http://a:1")]),
        Err(LocationError::DuplicateServer { .. })
    ));
    let mut upstream_only = ChunkLocations::new(vec![url("http://u:1")], vec![]).expect("table");
    let all = place(&Offload::All, 4, &Popularity::ZipfRank, 0).expect("placement");
    let v = video("v", 4, Container::Ts);
    let err = upstream_only
        .add_video(v.clone(), &all, &Assign::RoundRobin, &Assign::RoundRobin)
        .expect_err("no dCS");
    assert!(
        matches!(
            err,
            LocationError::Assign {
                cdn: Cdn::Downstream,
                ..
            }
        ),
        "{err}"
    );
    let none = place(&Offload::None, 4, &Popularity::ZipfRank, 0).expect("placement");
    upstream_only
        .add_video(v.clone(), &none, &Assign::RoundRobin, &Assign::RoundRobin)
        .expect("nothing offloaded");
    assert!(matches!(
        upstream_only.add_video(v.clone(), &none, &Assign::RoundRobin, &Assign::RoundRobin),
        Err(LocationError::DuplicateVideo { .. })
    ));
    let short = place(&Offload::None, 3, &Popularity::ZipfRank, 0).expect("placement");
    let w = video("w", 4, Container::Ts);
    assert!(matches!(
        upstream_only.add_video(w, &short, &Assign::RoundRobin, &Assign::RoundRobin),
        Err(LocationError::PlacementLength {
            placement: 3,
            segments: 4,
            ..
        })
    ));
}
