//! `farm-dispatcher --config FILE`: the replicating farm's dispatcher, which redirects each request to an idle server or the data center and adapts the replication. See `cdnlab::farm_roles` (config keys in `farm_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "farm-dispatcher",
        about: "The replicating farm's dispatcher: redirects to an idle server or the data center, and adapts the replication",
        kind: Kind::Server,
    };
    roles::main(role, cdnlab::farm_roles::dispatcher)
}
