//! `controller --config FILE`: the ICN telco CDN's controller: SM, LDP and PARM on their periods. See `cdnlab::icn_roles` (config keys in `icn_roles::controller`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "controller",
        about: "The ICN telco CDN's controller: SM, LDP and PARM on their periods",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::icn_roles::controller)
}
