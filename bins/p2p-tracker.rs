//! `p2p-tracker --config FILE`: the hybrid P2P-cloud CDN's tracker, dispatching every chunk download to a peer or the cloud by the configured policy. See `cdnlab::p2p_roles` (config keys in `p2p_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "p2p-tracker",
        about: "The hybrid P2P-cloud CDN's tracker, dispatching every chunk download to a peer or the cloud by the configured policy",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::p2p_roles::tracker)
}
