//! The `cdnlab` orchestrator.

fn main() {
    std::process::exit(cdnlab::cli::main());
}
