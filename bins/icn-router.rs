//! `icn-router --config FILE`: an ICN router: content store, PIT and FIB over HTTP. See `cdnlab::icn_roles` (config keys in `icn_roles::router`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "icn-router",
        about: "An ICN router: content store, PIT and FIB over HTTP",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::icn_roles::router)
}
