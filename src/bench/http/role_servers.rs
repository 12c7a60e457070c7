//! Our servers under test: the `ucs` and `urr` role binaries with generated configs.

use std::path::Path;

use super::objects::videos_toml;
use super::pinning::Pinning;
use super::server::Server;
use super::work_dir::write;
use crate::lab::{Error, Result};

pub(super) fn ucs_config(port: u16, media_dir: Option<&Path>) -> String {
    let mut text = format!(
        "port = {port}\nurl = \"http://127.0.0.1:{port}\"\nvideos = {}\n",
        videos_toml()
    );
    if let Some(dir) = media_dir {
        text += &format!("media_dir = \"{}\"\n", dir.display());
    }
    text
}

pub(super) fn urr_config(port: u16, upstream: &str) -> String {
    format!(
        "port = {port}\nurl = \"http://127.0.0.1:{port}\"\nvideos = {}\nupstream = [\"{upstream}\"]\noffload = \"none\"\n",
        videos_toml()
    )
}

/// A role binary from beside cdnlab with its config file, one tokio worker.
pub(in crate::bench) fn start_role(
    bin_dir: &Path,
    work: &Path,
    pinning: &Pinning,
    role: &'static str,
    port: u16,
    config: &str,
) -> Result<Server> {
    let program = bin_dir.join(role);
    if !program.is_file() {
        return Err(Error(format!(
            "{} is missing: build the workspace so the role binaries sit beside cdnlab",
            program.display()
        )));
    }
    let config_path = work.join(format!("{role}-{port}.toml"));
    write(&config_path, config)?;
    Server::start(
        role,
        pinning,
        &program,
        &["--config".as_ref(), config_path.as_os_str()],
        work,
        port,
    )
}

#[cfg(test)]
mod tests {
    use super::super::objects::{segment_path, OBJECTS};
    use super::*;

    #[test]
    fn segment_sizes_follow_bitrate_times_duration() {
        let table = ucs_config(80, None)
            .parse()
            .expect("the generated config is TOML");
        let config = crate::cdn_roles::config::UcsConfig::parse(&table, "ucs")
            .expect("the generated config is valid");
        let video = &config.videos[0];
        for (i, (id, _, bytes)) in OBJECTS.iter().enumerate() {
            assert_eq!(video.qualities()[i].id, *id);
            assert_eq!(video.segment_size(i), Some(*bytes), "{id}");
        }
        assert_eq!(segment_path("100k"), "/video/100k/seg-00000.ts");
        let labels: Vec<String> = OBJECTS
            .iter()
            .map(|o| super::super::objects::size_label(o.2))
            .collect();
        assert_eq!(labels, ["100 KB", "500 KB", "2 MB"]);
    }
}
