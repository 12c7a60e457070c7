//! `farm-server --config FILE`: a server of the replicating farm. See `cdnlab::farm_roles` (config keys in `farm_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "farm-server",
        about: "A server of the replicating farm, holding d replicas and serving one paced transfer at a time",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::farm_roles::server)
}
