//! `cloud --config FILE`: the F-FDN central cloud: the video catalogue, the metadata manager, the fog monitor. See `cdnlab::fog_roles` (config keys in `fog_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "cloud",
        about:
            "The F-FDN central cloud: the video catalogue, the metadata manager, the fog monitor",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::fog_roles::cloud)
}
