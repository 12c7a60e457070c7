//! `icn-router --config FILE`: an ICN telco CDN role (see `cdnlab::icn_roles`).

fn main() -> std::process::ExitCode {
    cdnlab::icn_roles::main("icn-router")
}
