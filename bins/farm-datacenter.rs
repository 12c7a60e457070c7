//! `farm-datacenter --config FILE`: the replicating farm's data center. See `cdnlab::farm_roles` (config keys in `farm_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "farm-datacenter",
        about: "The replicating farm's data center, holding every content behind the WAN and counting what the farm costs it",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::farm_roles::datacenter)
}
