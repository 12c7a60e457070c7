//! `urr --config FILE`: the upstream CDN's request router: placement, the chunk-location exchange, manifests per policy, 302s. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

fn main() -> std::process::ExitCode {
    cdnlab::cdn_roles::run::main("urr")
}
