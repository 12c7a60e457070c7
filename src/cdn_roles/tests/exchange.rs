//! The exchange's sans-IO steps: the uRR's offer, the dRR's table, the uRR's check of it, the
//! messages' bincode round trip, and the control services' refusals.

use std::sync::Arc;

use tokio::sync::watch;

use super::video;
use crate::cdn::{Assign, BaseUrl, Cdn, ChunkLocations, Location, Offload};
use crate::cdn_roles::config::UrrConfig;
use crate::cdn_roles::exchange::{
    build_locations, check_locations, offload_request, Assignment, DcsRequest, DcsResponse,
    DrrRequest, DrrResponse, OffloadRequest,
};
use crate::cdn_roles::exchange_io::DcsControl;

fn url(text: &str) -> BaseUrl {
    BaseUrl::parse(text).unwrap()
}

fn urr_config(offload: Offload) -> UrrConfig {
    let table: toml::Table = "upstream = ['http://ucs1', 'http://ucs2']\ndrr = 'http://drr'"
        .parse()
        .unwrap();
    let mut config = UrrConfig::parse(&table, "urr").unwrap();
    config.videos = vec![video("v", 10), video("w", 4)];
    config.offload = offload;
    config
}

fn dcs() -> Vec<BaseUrl> {
    vec![url("http://dcs1"), url("http://dcs2"), url("http://dcs3")]
}

#[test]
fn offer_places_and_the_drr_table_keeps_it() {
    let request = offload_request(&urr_config(Offload::FirstK(3))).unwrap();
    assert_eq!(request.videos.len(), 2);
    assert_eq!(
        request.videos[0].placement.offloaded().collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let table = build_locations(&request, &dcs(), &Assign::ConsistentHash { vnodes: 100 }).unwrap();
    check_locations(&request, &table).unwrap();
    let v = table.video("v").unwrap();
    for q in 0..3 {
        for i in 0..10 {
            let cdn = v.get(q, i).unwrap().cdn;
            assert_eq!(cdn == Cdn::Downstream, i < 3, "chunk ({q}, {i})");
        }
    }
    // Three dCSes, nine downstream chunks of `v`: consistent hashing uses more than one.
    let servers: std::collections::BTreeSet<u32> = v
        .chunks_in(Cdn::Downstream)
        .map(|(q, i)| v.get(q, i).unwrap().server)
        .collect();
    assert!(servers.len() > 1, "{servers:?}");
}

#[test]
fn fraction_offload_is_deterministic_and_differs_per_video() {
    let config = urr_config(Offload::Fraction(0.5));
    let a = offload_request(&config).unwrap();
    let b = offload_request(&config).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.videos[0].placement.count(), 5);
    assert_eq!(a.videos[1].placement.count(), 2);
}

/// A table that routes some chunk elsewhere than offered.
fn tampered(request: &OffloadRequest, edit: impl FnOnce(&mut serde_json::Value)) -> ChunkLocations {
    let table = build_locations(request, &dcs(), &Assign::RoundRobin).unwrap();
    let mut json = serde_json::to_value(&table).unwrap();
    edit(&mut json);
    serde_json::from_value(json).unwrap()
}

#[test]
fn check_rejects_tables_that_differ_from_the_offer() {
    let request = offload_request(&urr_config(Offload::FirstK(3))).unwrap();
    // An offloaded chunk moved upstream.
    let moved = tampered(&request, |json| {
        json["videos"][0]["chunks"][0] = serde_json::json!({ "cdn": "upstream", "server": 0 });
    });
    assert!(check_locations(&request, &moved)
        .unwrap_err()
        .contains("chunk 0"));
    // An upstream chunk sent to the other uCS than the uRR's own assignment says.
    let table = build_locations(&request, &dcs(), &Assign::RoundRobin).unwrap();
    let at = table.video("v").unwrap().get(0, 5).unwrap();
    let flipped = tampered(&request, |json| {
        json["videos"][0]["chunks"][5] =
            serde_json::json!({ "cdn": "upstream", "server": 1 - at.server });
    });
    assert!(check_locations(&request, &flipped).is_err());
    // Other upstream servers.
    let mut other = request.clone();
    other.upstream_servers = vec![url("http://elsewhere")];
    let foreign = build_locations(&other, &dcs(), &Assign::RoundRobin).unwrap();
    assert!(check_locations(&request, &foreign)
        .unwrap_err()
        .contains("upstream servers"));
    // A missing video.
    let mut fewer = request.clone();
    fewer.videos.pop();
    let short = build_locations(&fewer, &dcs(), &Assign::RoundRobin).unwrap();
    assert!(check_locations(&request, &short).is_err());
}

#[test]
fn messages_survive_bincode() {
    let config = bincode::config::standard();
    let request = DrrRequest::Offload(offload_request(&urr_config(Offload::All)).unwrap());
    let bytes = bincode::serde::encode_to_vec(&request, config).unwrap();
    let (back, _): (DrrRequest, usize) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(back, request);
    let DrrRequest::Offload(offer) = &request;
    let table = build_locations(offer, &dcs(), &Assign::RoundRobin).unwrap();
    let response = DrrResponse::Locations(table.clone());
    let bytes = bincode::serde::encode_to_vec(&response, config).unwrap();
    let (back, _): (DrrResponse, usize) =
        bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(back, response);
    let hold = DcsRequest::Hold(Assignment {
        locations: table,
        server: 2,
    });
    let bytes = bincode::serde::encode_to_vec(&hold, config).unwrap();
    let (back, _): (DcsRequest, usize) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(back, hold);
}

#[test]
fn assignment_counts_its_chunks() {
    let request = offload_request(&urr_config(Offload::All)).unwrap();
    let table = build_locations(&request, &dcs(), &Assign::RoundRobin).unwrap();
    let total: u64 = (0..3)
        .map(|server| {
            Assignment {
                locations: table.clone(),
                server,
            }
            .chunks()
        })
        .sum();
    // Every chunk of both videos, all qualities, is on exactly one dCS.
    assert_eq!(total, 3 * (10 + 4));
    let first = Assignment {
        locations: table,
        server: 0,
    };
    assert_eq!(
        first.location(),
        Location {
            cdn: Cdn::Downstream,
            server: 0
        }
    );
}

#[test]
fn dcs_control_refuses_bad_indices() {
    let request = offload_request(&urr_config(Offload::All)).unwrap();
    let table = build_locations(&request, &dcs(), &Assign::RoundRobin).unwrap();
    let (publish, receive) = watch::channel::<Option<Arc<Assignment>>>(None);
    let control = DcsControl::new("drr".into(), publish);
    let hold = |server| {
        DcsRequest::Hold(Assignment {
            locations: table.clone(),
            server,
        })
    };
    assert!(matches!(control.handle(hold(3)), DcsResponse::Failed(_)));
    assert!(receive.borrow().is_none());
    assert_eq!(control.handle(hold(1)), DcsResponse::Holding { chunks: 14 });
    assert_eq!(receive.borrow().as_ref().map(|a| a.server), Some(1));
}
