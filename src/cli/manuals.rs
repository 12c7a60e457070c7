//! `cdnlab manuals --out DIR`: man pages of `cdnlab` and each of its verbs (`cdnlab.1`,
//! `cdnlab-run.1`, …), made from the same definitions as `--help`.

use super::{failure, usage_error, Cli, Failure};
use clap::CommandFactory;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ManualsArgs {
    /// The directory to write the pages into (made if missing; existing pages are replaced).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: ManualsArgs) -> Result<(), Failure> {
    if args.out.exists() && !args.out.is_dir() {
        return Err(usage_error(format!(
            "--out {}: exists and is not a directory",
            args.out.display()
        )));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| failure(format!("--out {}: {e}", args.out.display())))?;
    clap_mangen::generate_to(Cli::command(), &args.out).map_err(|e| {
        failure(format!(
            "writing man pages into {}: {e}",
            args.out.display()
        ))
    })?;
    crate::say!("man pages: {}", args.out.display());
    Ok(())
}
