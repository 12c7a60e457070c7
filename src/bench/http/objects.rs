//! What is requested: one 2 s segment per quality of one video, as files (nginx, and `ucs` with
//! a media directory) and as a role's `videos` config (synthetic payloads).

use std::path::{Path, PathBuf};

use super::work_dir::{set_mode, WorkDir};
use crate::lab::{Error, Result};

/// The benchmark's video.
const VIDEO: &str = "video";
/// `(quality id, bitrate, segment bytes)`; segments are sized `bitrate × 2 s / 8`.
pub(super) const OBJECTS: [(&str, &str, u64); 3] = [
    ("100k", "400kbit", 100_000),
    ("500k", "2mbit", 500_000),
    ("2m", "8mbit", 2_000_000),
];

/// An object's size as the table names it: `100 KB`, `2 MB` (decimal units, as the sizes are).
pub(super) fn size_label(bytes: u64) -> String {
    if bytes >= 1_000_000 && bytes.is_multiple_of(1_000_000) {
        format!("{} MB", bytes / 1_000_000)
    } else {
        format!("{} KB", bytes / 1000)
    }
}

/// The URL path of a quality's segment, the same on every server.
pub(super) fn segment_path(quality: &str) -> String {
    crate::cdn::paths::segment_path(VIDEO, quality, 0, crate::cdn::Container::Ts)
}

/// Writes every object under `WORK/media`; returns that directory.
pub(super) fn write_media(work: &WorkDir) -> Result<PathBuf> {
    let media = work.path.join("media");
    for (quality, _, bytes) in OBJECTS {
        write_object(&media.join(VIDEO).join(quality), bytes)?;
    }
    Ok(media)
}

/// `DIR/seg-00000.ts` of `bytes` bytes (a repeating pattern: neither server compresses).
fn write_object(dir: &Path, bytes: u64) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error(format!("creating {}: {e}", dir.display())))?;
    for ancestor in dir.ancestors().take(3) {
        set_mode(ancestor, 0o755)?;
    }
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    let path = dir.join("seg-00000.ts");
    std::fs::write(&path, data).map_err(|e| Error(format!("writing {}: {e}", path.display())))?;
    set_mode(&path, 0o644)
}

/// The benchmark video as a role's `videos` value.
pub(super) fn videos_toml() -> String {
    let qualities: Vec<String> = OBJECTS
        .iter()
        .map(|(id, bitrate, _)| format!("{{ id = \"{id}\", bitrate = \"{bitrate}\" }}"))
        .collect();
    format!(
        "[{{ name = \"{VIDEO}\", segments = 1, segment_duration = \"2s\", qualities = [{}] }}]",
        qualities.join(", ")
    )
}
