//! `cloud --config FILE`: an F-FDN role (see `cdnlab::fog_roles`).

fn main() -> std::process::ExitCode {
    cdnlab::fog_roles::main("cloud")
}
