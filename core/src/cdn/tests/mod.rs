//! Tests of the CDN logic, with a shared lab: two uCS, two dCS, a 10-chunk video in three
//! qualities whose first 6 chunk indices are offloaded downstream.

mod content;
mod locations;
mod manifests;
mod parsers;
mod paths;
mod placement;
mod props;
mod routing;
mod url;

use super::{
    place, Assign, BaseUrl, ChunkLocations, Container, Offload, Popularity, Routers, Video,
    DEFAULT_VNODES,
};

fn url(text: &str) -> BaseUrl {
    BaseUrl::parse(text).expect("test URL")
}

/// The paper's ladder: 500 kbit/s, 1 and 2 Mbit/s, 2-second chunks.
fn video(name: &str, segments: usize, container: Container) -> Video {
    super::paper_video(name, segments, container).expect("test video")
}

fn routers() -> Routers {
    Routers {
        urr: url("http://urr:8080"),
        drr: url("http://drr:8080"),
    }
}

/// `bbb` (TS) and `fm` (fMP4), 10 chunks each, indices 0..6 downstream; consistent hashing
/// upstream, round robin downstream.
fn lab() -> ChunkLocations {
    lab_of(10, 6)
}

/// `lab()` with `segments` chunks per video, the first `offloaded` indices downstream.
fn lab_of(segments: usize, offloaded: usize) -> ChunkLocations {
    let mut table = ChunkLocations::new(
        vec![url("http://ucs1:8080"), url("http://ucs2:8080")],
        vec![url("http://dcs1:8080"), url("http://dcs2:8080")],
    )
    .expect("servers");
    for v in [
        video("bbb", segments, Container::Ts),
        video("fm", segments, Container::Fmp4),
    ] {
        let placement = place(
            &Offload::FirstK(offloaded),
            segments,
            &Popularity::ZipfRank,
            1,
        )
        .expect("placement");
        table
            .add_video(
                v,
                &placement,
                &Assign::ConsistentHash {
                    vnodes: DEFAULT_VNODES,
                },
                &Assign::RoundRobin,
            )
            .expect("add video");
    }
    table
}
