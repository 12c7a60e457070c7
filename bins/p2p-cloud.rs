//! `p2p-cloud --config FILE`: the hybrid P2P-cloud CDN's cloud, serving any chunk and counting its upload. See `cdnlab::p2p_roles` (config keys in `p2p_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "p2p-cloud",
        about: "The hybrid P2P-cloud CDN's cloud, serving any chunk and counting its upload",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::p2p_roles::cloud)
}
