//! `icn-load --config FILE [--out DIR]`: a region's users of the ICN telco CDN, Poisson per application; writes summary.json. See `cdnlab::icn_roles` (config keys in `icn_roles::load`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "icn-load",
        about:
            "A region's users of the ICN telco CDN, Poisson per application; writes summary.json",
        kind: Kind::Client,
    };
    roles::main(role, cdnlab::icn_roles::load)
}
