//! `cdnlab capture A B`: the packets of a link as its receivers get them, after the emulation,
//! written as a pcap file that tcpdump and Wireshark open.

use super::link::{link_between, node_index, LinkEnds};
use super::{failure, load_lab, parse_duration, usage_error, Failure, LabFlag};
use crate::capture::{self, Ended, Limits, PacketSocket, Tap};
use crate::lab::{interrupt, links, sys};
use std::io::{IsTerminal, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct CaptureArgs {
    #[command(flatten)]
    lab: LabFlag,
    #[command(flatten)]
    ends: LinkEnds,
    /// Capture only the packets this end sends (default: both directions, into one file).
    #[arg(long)]
    from: Option<String>,
    /// The pcap file to write (`-` for standard output, e.g. `| tcpdump -r -`); an existing
    /// file is replaced.
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    write: PathBuf,
    /// Stop after this many packets.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Stop after this long (`10s`, `120s`); without it or --count, at Ctrl-C or when the lab
    /// goes down.
    #[arg(long)]
    duration: Option<String>,
}

/// Where the capture goes: standard output, or a regular file or FIFO (created if missing).
/// Anything else (a directory, a device, a socket, a symlink, which is not followed) is
/// refused, as cdnlab runs as root; `open_output` checks again what it opened.
fn check_output(path: &Path) -> Result<Option<&Path>, Failure> {
    if path == Path::new("-") {
        if std::io::stdout().is_terminal() {
            return Err(usage_error(
                "-w -: a pcap file is binary; pipe it (`| tcpdump -r -`) or name a file",
            ));
        }
        return Ok(None);
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() || meta.file_type().is_fifo() => Ok(Some(path)),
        Ok(_) => Err(usage_error(format!(
            "-w {}: not a regular file or FIFO (a link is not followed); name the pcap file to write, or `-w -` for standard output",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(path)),
        Err(e) => Err(failure(format!("-w {}: {e}", path.display()))),
    }
}

/// Opens `check_output`'s file for writing, through no symlink, and empties it only once it is
/// known to be a regular file: what lies there may have changed since the check.
fn open_output(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        file.set_len(0)?;
    } else if !kind.is_fifo() {
        let why = "not a regular file or FIFO";
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
    }
    Ok(file)
}

pub fn run(args: CaptureArgs) -> Result<(), Failure> {
    let limits = Limits {
        count: args.count,
        duration: args
            .duration
            .as_deref()
            .map(|d| parse_duration("--duration", d))
            .transpose()?,
    };
    if limits.count == Some(0) {
        return Err(usage_error("--count: 0 packets would capture nothing"));
    }
    let output = check_output(&args.write)?;
    let state = load_lab(&args.lab.resolve()?)?;
    let LinkEnds {
        a: a_name,
        b: b_name,
    } = &args.ends;
    let segment = link_between(&state, a_name, b_name)?;
    let (a, b) = (node_index(&state, a_name)?, node_index(&state, b_name)?);
    let senders = match &args.from {
        None => vec![(a, b), (b, a)],
        Some(from) if from == a_name => vec![(a, b)],
        Some(from) if from == b_name => vec![(b, a)],
        Some(from) => {
            return Err(usage_error(format!(
                "--from {from}: not an end of the link between {} and {}",
                a_name, b_name
            )))
        }
    };
    // Every socket before the file: a capture that cannot start leaves nothing behind.
    let mut taps = Vec::new();
    let mut namespaces = Vec::new();
    for (sender, receiver) in senders {
        let netns = state.netns(receiver);
        let ifname = links::interface_on(&state.topology, receiver, segment);
        let where_ = format!("{ifname} in {netns}");
        let socket = sys::in_netns(&netns, move || {
            PacketSocket::open(&ifname)
                .map_err(|e| sys::Error(format!("cannot capture on {where_}: {e}")))
        })?;
        let name = |i: usize| state.topology.nodes[i].name.clone();
        taps.push(Tap {
            label: format!("{}→{}", name(sender), name(receiver)),
            socket,
        });
        namespaces.push(PathBuf::from(format!("/run/netns/{netns}")));
    }
    let out: Box<dyn Write> = match output {
        None => Box::new(std::io::stdout().lock()),
        Some(path) => {
            Box::new(open_output(path).map_err(|e| failure(format!("-w {}: {e}", path.display())))?)
        }
    };
    interrupt::install();
    let labels: Vec<&str> = taps.iter().map(|t| t.label.as_str()).collect();
    eprintln!(
        "capturing {} as received, into {}",
        labels.join(" and "),
        args.write.display()
    );
    let summary = capture::capture(&taps, std::io::BufWriter::new(out), limits, || {
        !interrupt::interrupted() && namespaces.iter().all(|ns| ns.exists())
    })
    .map_err(|e| failure(format!("capture into {}: {e}", args.write.display())))?;
    let per_tap: Vec<String> = labels
        .iter()
        .zip(&summary.frames)
        .map(|(label, n)| format!("{n} {label}"))
        .collect();
    let why = match summary.ended {
        Ended::Count => "the count was reached",
        Ended::Duration => "the duration was over",
        Ended::Stopped if interrupt::interrupted() => "interrupted",
        Ended::Stopped => "the lab went down",
    };
    eprintln!(
        "{} packets captured ({}); {} dropped by the capture sockets; stopped: {why}",
        summary.frames.iter().sum::<u64>(),
        per_tap.join(", "),
        summary.socket_drops
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-w` through a symlink is refused by the check and by the open, which could meet a
    /// link swapped in after the check; the file it points at keeps its contents. A regular
    /// file is emptied and written.
    #[test]
    fn the_output_is_written_through_no_symlink() {
        let dir = crate::testing::TempDir::new("capture-output");
        std::fs::create_dir_all(&dir.0).unwrap();
        let precious = dir.0.join("precious");
        std::fs::write(&precious, "precious").unwrap();
        let link = dir.0.join("out.pcap");
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let checked = check_output(&link)
            .err()
            .map(|f| f.message)
            .unwrap_or_default();
        assert!(checked.contains("a link is not followed"), "{checked}");
        assert!(open_output(&link).is_err(), "opened through the link");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
        let old = dir.0.join("old.pcap");
        std::fs::write(&old, "old capture, longer than the new").unwrap();
        assert!(matches!(check_output(&old), Ok(Some(_))));
        open_output(&old).unwrap().write_all(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "new");
    }
}
