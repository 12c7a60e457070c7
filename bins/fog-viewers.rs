//! `fog-viewers --config FILE [--out DIR]`: the viewers of an F-FDN region: sessions with deadlines; writes summary.json. See `cdnlab::fog_roles` (config keys in `fog_roles::config`).

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "fog-viewers",
        about: "The viewers of an F-FDN region: sessions with deadlines; writes summary.json",
        kind: Kind::Client,
    };
    roles::main(role, cdnlab::fog_roles::viewers)
}
