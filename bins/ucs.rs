//! `ucs --config FILE`: the upstream CDN's content server (origin): segments and manifests. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

fn main() -> std::process::ExitCode {
    cdnlab::cdn_roles::run::main("ucs")
}
