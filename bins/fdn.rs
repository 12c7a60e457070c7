//! `fdn --config FILE`: a fog delivery network node: caches, estimates QoE, serves its viewers' segments. See `cdnlab::fog_roles` (config keys in `fog_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "fdn",
        about: "A fog delivery network node: caches, estimates QoE, serves its viewers' segments",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::fog_roles::fdn)
}
