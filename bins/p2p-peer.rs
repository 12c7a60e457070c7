//! `p2p-peer --config FILE [--out DIR]`: one peer of the hybrid P2P-cloud CDN: plays chunks, caches them with LRU, downloads from peers or the cloud, serves its cache. See `cdnlab::p2p_roles` (config keys in `p2p_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "p2p-peer",
        about: "One peer of the hybrid P2P-cloud CDN: plays chunks, caches them with LRU, downloads from peers or the cloud, serves its cache",
        kind: Kind::Client,
    };
    roles::main(role, cdnlab::p2p_roles::peer)
}
