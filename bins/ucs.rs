//! `ucs --config FILE`: the upstream CDN's content server (origin): segments and manifests. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "ucs",
        about: "The upstream CDN's content server (origin): segments and manifests",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::cdn_roles::run::ucs)
}
