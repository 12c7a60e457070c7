//! `has-client --config FILE [--out DIR]`: a topology node's HTTP adaptive streaming client.
//! Plays the configured stream, writes `summary.json` and `segments.csv` to `--out DIR` or
//! `$CDNLAB_OUT_DIR`, prints the summary as one JSON line, and exits 1 if the session failed.
//! Config keys: `cdnlab::has_client::config`.

use cdnlab::roles::{self, Kind, Role};

fn main() -> std::process::ExitCode {
    let role = Role {
        name: "has-client",
        about: "HTTP adaptive streaming client: plays an HLS or DASH stream and reports its QoE",
        kind: Kind::Client,
    };
    roles::main(role, cdnlab::has_client::role)
}
