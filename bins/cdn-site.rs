//! `cdn-site --config FILE`: a CDN site of the ICN telco CDN: a content server with its SM module. See `cdnlab::icn_roles` (config keys in `icn_roles::site`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "cdn-site",
        about: "A CDN site of the ICN telco CDN: a content server with its SM module",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::icn_roles::site)
}
