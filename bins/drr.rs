//! `drr --config FILE`: the downstream CDN's request router: assigns offloaded chunks to dCSes, 302s to them. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

fn main() -> std::process::ExitCode {
    cdnlab::cdn_roles::run::main("drr")
}
