//! `drr --config FILE`: the downstream CDN's request router: assigns offloaded chunks to dCSes, 302s to them. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "drr",
        about:
            "The downstream CDN's request router: assigns offloaded chunks to dCSes, 302s to them",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::cdn_roles::run::drr)
}
