//! `cdnlab clean`: remove what crashed or killed labs left behind, without their topology files.

use super::{check_lab_arg, Failure};
use crate::lab;

#[derive(clap::Args)]
pub struct CleanArgs {
    /// The labs to clean (default: every lab's leftovers).
    labs: Vec<String>,
    /// Also remove labs whose owning `cdnlab` process is still running.
    #[arg(long)]
    force: bool,
}

pub fn run(args: CleanArgs) -> Result<(), Failure> {
    for lab in &args.labs {
        check_lab_arg(lab)?;
    }
    let cleaned = lab::clean(&args.labs, args.force)?;
    for (lab, owner) in &cleaned.kept_live {
        crate::say!(
            "kept: lab `{lab}` belongs to {owner}; stop that, or `cdnlab clean --force {lab}`"
        );
    }
    if !cleaned.removed.is_empty() {
        crate::say!("removed: {}", cleaned.removed.join(", "));
    } else if cleaned.failed.is_empty() {
        crate::say!("nothing to clean");
    }
    // What was removed and kept is said first: one lab that fails hides nothing of the others.
    match cleaned.failure() {
        Some(failure) => Err(failure.into()),
        None => Ok(()),
    }
}
