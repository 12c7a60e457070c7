//! `icn-border --config FILE`: an ICN border router: maps misses to CDN sites in the controller's proportions. See `cdnlab::icn_roles` (config keys in `icn_roles::border`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "icn-border",
        about: "An ICN border router: maps misses to CDN sites in the controller's proportions",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::icn_roles::border)
}
