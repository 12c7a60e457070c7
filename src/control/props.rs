//! The control plane's frames: no payload panics the decoder of any message type, a refusal
//! says it is an undecodable or mistyped control message, every message of every family reads
//! back as written, and a frame's header announces its payload.

use super::codec::{decode, encode, payload_len, MAX_FRAME};
use crate::cdn::Assign;
use crate::cdn_roles::config::UrrConfig;
use crate::cdn_roles::exchange::{
    build_locations, offload_request, Assignment, DcsRequest, DcsResponse, DrrRequest, DrrResponse,
};
use crate::fog_roles::messages::{
    CloudRequest, CloudResponse, FdnEntry, FdnRequest, FdnResponse, Metadata,
};
use crate::icn_roles::messages::{
    AppRule, BorderReport, BorderRequest, BorderResponse, Demand, FibRules, SiteRequest,
    SiteResponse, SiteUsage,
};
use crate::props::damaged_bytes;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Decoding `payload` as a `T` panics never; it fails as the codec says, or gives a message
/// that encodes and decodes to itself.
fn decodes_cleanly<T: Serialize + DeserializeOwned>(payload: &[u8]) -> Result<(), TestCaseError> {
    match decode::<T>(payload) {
        Ok(message) => round_trips(&message),
        Err(e) => {
            let text = e.to_string();
            prop_assert!(
                text.starts_with("undecodable control message: ")
                    || (text.starts_with("control message of ") && text.contains("trailing bytes")),
                "{text}"
            );
            Ok(())
        }
    }
}

/// The frame of `message` announces its payload, which decodes to a message of the same frame.
fn round_trips<T: Serialize + DeserializeOwned>(message: &T) -> Result<(), TestCaseError> {
    let frame = encode(message).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let header: [u8; 4] = frame[..4]
        .try_into()
        .map_err(|_| TestCaseError::fail("short frame"))?;
    prop_assert_eq!(payload_len(header).ok(), Some(frame.len() - 4));
    let back: T = decode(&frame[4..]).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(encode(&back).ok(), Some(frame));
    Ok(())
}

/// Every message type of every family, tried on the same payload.
fn every_type_decodes_cleanly(payload: &[u8]) -> Result<(), TestCaseError> {
    decodes_cleanly::<BorderRequest>(payload)?;
    decodes_cleanly::<BorderResponse>(payload)?;
    decodes_cleanly::<SiteRequest>(payload)?;
    decodes_cleanly::<SiteResponse>(payload)?;
    decodes_cleanly::<CloudRequest>(payload)?;
    decodes_cleanly::<CloudResponse>(payload)?;
    decodes_cleanly::<FdnRequest>(payload)?;
    decodes_cleanly::<FdnResponse>(payload)?;
    decodes_cleanly::<DrrRequest>(payload)?;
    decodes_cleanly::<DrrResponse>(payload)?;
    decodes_cleanly::<DcsRequest>(payload)?;
    decodes_cleanly::<DcsResponse>(payload)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", any::<String>()]
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![any::<f64>(), 0.0..1e6f64]
}

fn icn_messages() -> impl Strategy<Value = (BorderRequest, BorderResponse, SiteResponse)> {
    let rule = (text(), prop::collection::vec((text(), number()), 0..4))
        .prop_map(|(app, sites)| AppRule { app, sites });
    let rules = (
        any::<u64>(),
        any::<u64>(),
        prop::collection::vec(rule, 0..4),
    )
        .prop_map(|(epoch, version, rules)| FibRules {
            epoch,
            version,
            rules,
        });
    let report = (
        text(),
        any::<Option<u64>>(),
        any::<u64>(),
        prop::collection::vec((text(), number()), 0..4),
    )
        .prop_map(
            |(region, rules_epoch, rules_version, latency_ms)| BorderReport {
                region,
                rules_epoch,
                rules_version,
                latency_ms,
            },
        );
    let demand = (text(), text(), any::<u64>()).prop_map(|(app, region, bytes)| Demand {
        app,
        region,
        bytes,
    });
    let usage = (
        text(),
        number(),
        number(),
        prop::collection::vec(demand, 0..4),
    )
        .prop_map(|(site, interval_s, capacity_bps, demand)| SiteUsage {
            site,
            interval_s,
            capacity_bps,
            demand,
        });
    (
        prop_oneof![
            rules.prop_map(BorderRequest::Install),
            Just(BorderRequest::Report)
        ],
        prop_oneof![
            any::<u64>().prop_map(|version| BorderResponse::Installed { version }),
            report.prop_map(BorderResponse::Report),
            text().prop_map(BorderResponse::Refused),
        ],
        usage.prop_map(SiteResponse::Usage),
    )
}

fn fog_messages() -> impl Strategy<Value = (CloudRequest, CloudResponse)> {
    let segments = || prop::collection::vec(any::<(u32, u32)>(), 0..6);
    let entry = (
        any::<u32>(),
        text(),
        any::<bool>(),
        number(),
        number(),
        segments(),
    )
        .prop_map(|(index, name, up, rtt_mean_s, rtt_sd_s, cached)| FdnEntry {
            index,
            name,
            up,
            rtt_mean_s,
            rtt_sd_s,
            cached,
        });
    (
        prop_oneof![
            (any::<u32>(), segments())
                .prop_map(|(index, cached)| CloudRequest::Register { index, cached }),
            Just(CloudRequest::Metadata),
        ],
        prop_oneof![
            Just(CloudResponse::Registered),
            prop::collection::vec(entry, 0..4)
                .prop_map(|fdns| CloudResponse::Metadata(Metadata { fdns })),
            text().prop_map(CloudResponse::Refused),
        ],
    )
}

/// The CDN exchange's messages as the uRR and dRR build them (their types keep invariants a
/// generator would have to know), each encoded.
fn cdn_frames() -> Vec<Vec<u8>> {
    let table: toml::Table = "upstream = ['http://ucs1', 'http://ucs2']\ndrr = 'http://drr'"
        .parse()
        .expect("fixture");
    let config = UrrConfig::parse(&table, "urr").expect("fixture");
    let offer = offload_request(&config).expect("fixture");
    let dcs =
        ["http://dcs1", "http://dcs2"].map(|u| crate::cdn::BaseUrl::parse(u).expect("fixture"));
    let locations = build_locations(&offer, &dcs, &Assign::RoundRobin).expect("fixture");
    let frames = [
        encode(&DrrRequest::Offload(offer)),
        encode(&DrrResponse::Locations(locations.clone())),
        encode(&DcsRequest::Hold(Assignment {
            locations,
            server: 1,
        })),
        encode(&DcsResponse::Holding { chunks: 7 }),
    ];
    frames
        .into_iter()
        .map(|f| f.expect("fixture")[4..].to_vec())
        .collect()
}

/// The payload of a valid message of any family.
fn valid_payloads() -> impl Strategy<Value = Vec<u8>> {
    fn payload(message: &impl Serialize) -> Vec<u8> {
        encode(message)
            .map(|frame| frame[4..].to_vec())
            .unwrap_or_default()
    }
    prop_oneof![
        prop::sample::select(cdn_frames()),
        icn_messages().prop_map(|(install, _, _)| payload(&install)),
        icn_messages().prop_map(|(_, response, _)| payload(&response)),
        icn_messages().prop_map(|(_, _, usage)| payload(&usage)),
        fog_messages().prop_map(|(request, _)| payload(&request)),
        fog_messages().prop_map(|(_, response)| payload(&response)),
    ]
}

proptest! {
    #[test]
    fn prop_codec_any_payload(payload in prop::collection::vec(any::<u8>(), 0..300)) {
        every_type_decodes_cleanly(&payload)?;
    }

    #[test]
    fn prop_codec_icn_messages((install, response, usage) in icn_messages()) {
        round_trips(&install)?;
        round_trips(&response)?;
        round_trips(&usage)?;
        round_trips(&SiteRequest::Measure)?;
    }

    #[test]
    fn prop_codec_fog_messages((request, response) in fog_messages()) {
        round_trips(&request)?;
        round_trips(&response)?;
        round_trips(&FdnRequest::Heartbeat)?;
        round_trips(&FdnResponse::Alive)?;
    }

    #[test]
    fn prop_codec_damaged_payloads(payload in valid_payloads().prop_flat_map(damaged_bytes)) {
        every_type_decodes_cleanly(&payload)?;
    }

    #[test]
    fn prop_codec_frame_headers(header in any::<[u8; 4]>()) {
        let announced = u32::from_be_bytes(header) as usize;
        match payload_len(header) {
            Ok(len) => prop_assert!(len == announced && len <= MAX_FRAME),
            Err(e) => prop_assert!(announced > MAX_FRAME && e.to_string().contains(&announced.to_string()), "{e}"),
        }
    }
}
