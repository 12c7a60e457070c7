//! `cdnlab graph TOPOLOGY`: a picture of the topology (nodes, links, LANs, each direction's
//! impairments) as SVG, Graphviz dot or a Mermaid flowchart, on stdout or into a file.

use super::topology_args::TopologyFile;
use super::{failure, usage_error, Failure};
use crate::picture::{Format, Picture};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct GraphArgs {
    #[command(flatten)]
    file: TopologyFile,
    /// What to write: SVG, Graphviz's dot (`| dot -Tpng`), or Mermaid (Markdown viewers draw it).
    #[arg(long, value_enum, default_value_t = Format::Svg)]
    format: Format,
    /// Write the picture to this file instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: GraphArgs) -> Result<(), Failure> {
    let topology = args.file.load()?;
    let text = Picture::of(&topology)
        .render(args.format)
        .map_err(failure)?;
    match &args.out {
        Some(out) if out.is_dir() => Err(usage_error(format!(
            "--out {}: is a directory; name the file to write",
            out.display()
        ))),
        Some(out) => {
            std::fs::write(out, text).map_err(|e| failure(format!("--out {}: {e}", out.display())))
        }
        None => {
            crate::say_text!("{text}");
            Ok(())
        }
    }
}
