//! `farm-load --config FILE [--out DIR]`: the replicating farm's users. See `cdnlab::farm_roles` (config keys in `farm_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "farm-load",
        about: "The replicating farm's users, Poisson requests with a Zipf popularity that a signal changes",
        kind: Kind::Client,
    };
    roles::main(role, cdnlab::farm_roles::load)
}
