//! `urr --config FILE`: the upstream CDN's request router: placement, the chunk-location exchange, manifests per policy, 302s. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "urr",
        about: "The upstream CDN's request router: placement, the chunk-location exchange, manifests per policy, 302s",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::cdn_roles::run::urr)
}
