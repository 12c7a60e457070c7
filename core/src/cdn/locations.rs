//! `ChunkLocations`: for every chunk of every video, the CDN and the content server clients are
//! sent to. The CDNs exchange it over the control plane (CDNI style), so it is self-contained
//! (it carries the videos and the servers' URLs), serializes with serde to JSON or bincode
//! (no untagged or flattened forms), and is validated again when deserialized: a peer's
//! message cannot produce a table whose indices point nowhere.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::assign::{assign, Assign, AssignError};
use super::content::{Item, LookupError, Video};
use super::paths::{segment_path, Request};
use super::placement::Placement;
use super::url::BaseUrl;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cdn {
    Upstream,
    Downstream,
}

/// Where one chunk is: a CDN and an index into that CDN's server list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Location {
    pub cdn: Cdn,
    pub server: u32,
}

/// One video and the location of each of its chunks. Serialized only inside
/// `ChunkLocations`, which checks the two agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoLocations {
    video: Video,
    /// Quality-major: chunk (q, i) at `q × segments + i`.
    chunks: Vec<Location>,
}

impl VideoLocations {
    pub fn video(&self) -> &Video {
        &self.video
    }

    /// The location of segment `index` of quality `quality` (indices into the video).
    pub fn get(&self, quality: usize, index: usize) -> Option<Location> {
        if quality >= self.video.qualities().len() || index >= self.video.segments() {
            return None;
        }
        self.chunks
            .get(quality * self.video.segments() + index)
            .copied()
    }

    /// `get` for indices taken from the video itself.
    pub(crate) fn location(&self, quality: usize, index: usize) -> Location {
        self.chunks[quality * self.video.segments() + index]
    }

    /// Where a media item is; an init segment is with its quality's first segment. `None`
    /// for manifests, which only the uRR serves.
    pub fn location_of(&self, item: Item) -> Option<Location> {
        match item {
            Item::Segment { quality, index } => self.get(quality, index),
            Item::Init { quality } => self.get(quality, 0),
            Item::Master | Item::Mpd | Item::MediaPlaylist { .. } => None,
        }
    }

    /// Chunks placed in `cdn`, as (quality, index).
    pub fn chunks_in(&self, cdn: Cdn) -> impl Iterator<Item = (usize, usize)> + '_ {
        let segments = self.video.segments();
        self.chunks
            .iter()
            .enumerate()
            .filter(move |(_, l)| l.cdn == cdn)
            .map(move |(k, _)| (k / segments, k % segments))
    }
}

/// Why a location table could not be built or was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocationError {
    NoUpstreamServers,
    DuplicateServer {
        url: String,
    },
    DuplicateVideo {
        video: String,
    },
    PlacementLength {
        video: String,
        placement: usize,
        segments: usize,
    },
    Assign {
        video: String,
        cdn: Cdn,
        error: AssignError,
    },
    ChunksLength {
        video: String,
        chunks: usize,
        expected: usize,
    },
    ServerOutOfRange {
        video: String,
        cdn: Cdn,
        server: u32,
        servers: usize,
    },
}

impl fmt::Display for LocationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocationError::NoUpstreamServers => {
                f.write_str("the upstream CDN needs at least one content server")
            }
            LocationError::DuplicateServer { url } => write!(f, "content server {url} is listed twice"),
            LocationError::DuplicateVideo { video } => write!(f, "video {video:?} is listed twice"),
            LocationError::PlacementLength { video, placement, segments } => write!(
                f,
                "video {video:?}: placement covers {placement} chunks, the video has {segments}"
            ),
            LocationError::Assign { video, cdn, error } => {
                write!(f, "video {video:?}, {cdn:?} CDN: {error}")
            }
            LocationError::ChunksLength { video, chunks, expected } => write!(
                f,
                "video {video:?}: {chunks} chunk locations, expected qualities × segments = {expected}"
            ),
            LocationError::ServerOutOfRange { video, cdn, server, servers } => write!(
                f,
                "video {video:?}: a chunk is on {cdn:?} server {server} of {servers}"
            ),
        }
    }
}

impl std::error::Error for LocationError {}

/// Every video's chunk locations, and the content servers of both CDNs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ChunkLocationsWire", into = "ChunkLocationsWire")]
pub struct ChunkLocations {
    upstream_servers: Vec<BaseUrl>,
    downstream_servers: Vec<BaseUrl>,
    videos: BTreeMap<String, VideoLocations>,
}

impl ChunkLocations {
    /// An empty table; `downstream_servers` may be empty if nothing will be offloaded.
    pub fn new(
        upstream_servers: Vec<BaseUrl>,
        downstream_servers: Vec<BaseUrl>,
    ) -> Result<ChunkLocations, LocationError> {
        if upstream_servers.is_empty() {
            return Err(LocationError::NoUpstreamServers);
        }
        let all: Vec<&BaseUrl> = upstream_servers.iter().chain(&downstream_servers).collect();
        for (i, url) in all.iter().enumerate() {
            if all[..i].contains(url) {
                return Err(LocationError::DuplicateServer {
                    url: url.to_string(),
                });
            }
        }
        Ok(ChunkLocations {
            upstream_servers,
            downstream_servers,
            videos: BTreeMap::new(),
        })
    }

    /// Places `video`'s chunks: offloaded indices (all qualities) downstream, the rest
    /// upstream, each chunk on the server its CDN's strategy picks for the chunk's path. Chunks
    /// are presented to the strategies index-major ((0, q0), (0, q1), …, (1, q0), …), so round
    /// robin spreads consecutive chunks of one quality over the servers.
    pub fn add_video(
        &mut self,
        video: Video,
        placement: &Placement,
        upstream: &Assign,
        downstream: &Assign,
    ) -> Result<(), LocationError> {
        let name = video.name().to_string();
        if self.videos.contains_key(&name) {
            return Err(LocationError::DuplicateVideo { video: name });
        }
        let segments = video.segments();
        if placement.segments() != segments {
            return Err(LocationError::PlacementLength {
                video: name,
                placement: placement.segments(),
                segments,
            });
        }
        let qualities = video.qualities().len();
        let mut chunks = vec![
            Location {
                cdn: Cdn::Upstream,
                server: 0
            };
            qualities * segments
        ];
        for (cdn, servers, strategy) in [
            (Cdn::Upstream, &self.upstream_servers, upstream),
            (Cdn::Downstream, &self.downstream_servers, downstream),
        ] {
            let members: Vec<(usize, usize)> = (0..segments)
                .filter(|&i| placement.is_offloaded(i) == (cdn == Cdn::Downstream))
                .flat_map(|i| (0..qualities).map(move |q| (q, i)))
                .collect();
            let paths: Vec<String> = members
                .iter()
                .map(|&(q, i)| {
                    segment_path(video.name(), &video.qualities()[q].id, i, video.container())
                })
                .collect();
            let names: Vec<&str> = servers.iter().map(BaseUrl::as_str).collect();
            let chosen =
                assign(strategy, &names, &paths).map_err(|error| LocationError::Assign {
                    video: name.clone(),
                    cdn,
                    error,
                })?;
            for (&(q, i), server) in members.iter().zip(chosen) {
                // Server lists are far below u32::MAX entries (each is a URL in memory).
                chunks[q * segments + i] = Location {
                    cdn,
                    server: server as u32,
                };
            }
        }
        self.videos.insert(name, VideoLocations { video, chunks });
        Ok(())
    }

    pub fn upstream_servers(&self) -> &[BaseUrl] {
        &self.upstream_servers
    }

    pub fn downstream_servers(&self) -> &[BaseUrl] {
        &self.downstream_servers
    }

    pub fn videos(&self) -> impl Iterator<Item = &VideoLocations> {
        self.videos.values()
    }

    pub fn video(&self, name: &str) -> Option<&VideoLocations> {
        self.videos.get(name)
    }

    /// The URL of the server at `location`, or `None` if no such server is listed.
    pub fn server(&self, location: Location) -> Option<&BaseUrl> {
        let servers = match location.cdn {
            Cdn::Upstream => &self.upstream_servers,
            Cdn::Downstream => &self.downstream_servers,
        };
        servers.get(location.server as usize)
    }

    /// `server` for locations taken from this table, whose indices were checked when it was
    /// built or deserialized.
    pub(crate) fn server_of(&self, location: Location) -> &BaseUrl {
        match location.cdn {
            Cdn::Upstream => &self.upstream_servers[location.server as usize],
            Cdn::Downstream => &self.downstream_servers[location.server as usize],
        }
    }

    /// The video and item a parsed request names.
    pub fn resolve(&self, request: &Request<'_>) -> Result<(&VideoLocations, Item), LookupError> {
        let video = self
            .video(request.video)
            .ok_or_else(|| LookupError::UnknownVideo {
                video: request.video.to_string(),
            })?;
        Ok((video, video.video.item(&request.kind)?))
    }
}

/// The serialized form: videos as a list (their names are inside).
#[derive(Serialize, Deserialize)]
struct ChunkLocationsWire {
    upstream_servers: Vec<BaseUrl>,
    downstream_servers: Vec<BaseUrl>,
    videos: Vec<VideoLocationsWire>,
}

#[derive(Serialize, Deserialize)]
struct VideoLocationsWire {
    video: Video,
    chunks: Vec<Location>,
}

impl From<ChunkLocations> for ChunkLocationsWire {
    fn from(table: ChunkLocations) -> ChunkLocationsWire {
        ChunkLocationsWire {
            upstream_servers: table.upstream_servers,
            downstream_servers: table.downstream_servers,
            videos: table
                .videos
                .into_values()
                .map(|v| VideoLocationsWire {
                    video: v.video,
                    chunks: v.chunks,
                })
                .collect(),
        }
    }
}

impl TryFrom<ChunkLocationsWire> for ChunkLocations {
    type Error = LocationError;

    fn try_from(wire: ChunkLocationsWire) -> Result<ChunkLocations, LocationError> {
        let mut table = ChunkLocations::new(wire.upstream_servers, wire.downstream_servers)?;
        for entry in wire.videos {
            let name = entry.video.name().to_string();
            let expected = entry.video.qualities().len() * entry.video.segments();
            if entry.chunks.len() != expected {
                return Err(LocationError::ChunksLength {
                    video: name,
                    chunks: entry.chunks.len(),
                    expected,
                });
            }
            if let Some(bad) = entry.chunks.iter().find(|&&l| table.server(l).is_none()) {
                let servers = match bad.cdn {
                    Cdn::Upstream => table.upstream_servers.len(),
                    Cdn::Downstream => table.downstream_servers.len(),
                };
                return Err(LocationError::ServerOutOfRange {
                    video: name,
                    cdn: bad.cdn,
                    server: bad.server,
                    servers,
                });
            }
            let entry = VideoLocations {
                video: entry.video,
                chunks: entry.chunks,
            };
            if table.videos.insert(name.clone(), entry).is_some() {
                return Err(LocationError::DuplicateVideo { video: name });
            }
        }
        Ok(table)
    }
}
