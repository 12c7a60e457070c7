//! `dcs --config FILE`: a downstream CDN content server: the chunks the dRR assigns it. See `cdnlab::cdn_roles` (config keys in `cdn_roles::config`).

fn main() -> std::process::ExitCode {
    cdnlab::cdn_roles::run::main("dcs")
}
