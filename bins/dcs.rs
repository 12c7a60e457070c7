//! `dcs --config FILE`: a downstream CDN content server: the chunks the dRR assigns it. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "dcs",
        about: "A downstream CDN content server: the chunks the dRR assigns it",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::cdn_roles::run::dcs)
}
