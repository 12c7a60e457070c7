//! `cdnlab down`: stop a lab's processes and remove everything it created.

use super::{resolve_lab, Failure};
use crate::lab;

#[derive(clap::Args)]
pub struct DownArgs {
    /// The lab to remove (default: the only one up).
    lab: Option<String>,
}

pub fn run(args: DownArgs) -> Result<(), Failure> {
    let lab = resolve_lab(args.lab)?;
    lab::down(&lab)?;
    crate::say!("lab `{lab}` is down");
    Ok(())
}
