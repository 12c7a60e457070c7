//! The content servers: the upstream origin (uCS) and the downstream edge (dCS).
//!
//! Both serve chunks at their canonical paths (`crate::cdn::paths`), either synthetic — the exact
//! size `bitrate × duration / 8`, generated once and kept in a bounded cache (`segment_cache`;
//! chunks too large for it are generated while sent) — or real files from a media directory:
//!
//! ```text
//! MEDIA_DIR/VIDEO/Q/seg-NNNNN.ts     (or .m4s for fmp4 videos; NNNNN is the 0-based index,
//! MEDIA_DIR/VIDEO/Q/init.mp4          zero-padded to 5 digits)  init segment of fmp4 videos
//! ```
//!
//! i.e. the request path below the directory; files of up to 16 MiB are kept in the same cache
//! once read (a file changed since is read again: its length or modification time differs). Only paths `parse_path` accepts and the video
//! configuration knows are mapped to files (no `..`, no `%`, no unknown names), so a request
//! cannot name anything outside these files. Manifests are never read from disk: the uCS
//! generates them from its video configuration (give `codecs` for real media), with chunk URLs
//! pointing at itself. A dCS serves no manifests.
//!
//! Answers: unknown video, quality or segment → 404; malformed path → 400; methods other than
//! GET and HEAD → 405; a dCS asked for a chunk it does not hold → 404, unless it fetches from
//! the origin (then 502 if the origin fails); a dCS without an assignment yet → 503.

use std::path::PathBuf;
use std::sync::Arc;

use hyper::header::HeaderMap;
use hyper::{Method, Request, Response, StatusCode};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use super::exchange::Assignment;
use super::origin::{FetchError, OriginCache};
use super::segment_cache::SegmentCache;
use crate::cdn::hashing::hash64;
use crate::cdn::{
    parse_path, place, render, Assign, BaseUrl, ChunkLocations, Container, Item, Kind, Offload,
    PathError, Payload, Popularity, Request as CdnRequest, Routers, Video,
};
use crate::roles::http::body::Body;
use crate::roles::http::sealed::Sealed;
use crate::roles::http::semantics::{self as http, refuse_method, respond, target, Entity};

/// Synthetic init segments (fMP4 videos without real media) are this many bytes.
pub const SYNTHETIC_INIT_SIZE: u64 = 1024;

/// The payload index synthetic init segments use: beyond every segment index.
const INIT_INDEX: usize = usize::MAX;

/// Where chunk bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Synthetic,
    MediaDir(PathBuf),
}

impl Source {
    pub fn new(media_dir: Option<PathBuf>) -> Source {
        media_dir.map_or(Source::Synthetic, Source::MediaDir)
    }
}

pub struct ContentServer {
    source: Source,
    role: Role,
    /// Synthetic chunks already generated, sent again as slices without copying.
    segments: SegmentCache,
}

enum Role {
    /// Holds every chunk and serves manifests generated from `table` (all chunks on itself).
    Origin {
        table: ChunkLocations,
        routers: Routers,
    },
    /// Holds the chunks its assignment gives it; may pull the others from an origin.
    Edge {
        assignment: watch::Receiver<Option<Arc<Assignment>>>,
        origin: Option<OriginCache>,
    },
}

impl ContentServer {
    /// A uCS reached at `url`, serving `videos`.
    pub fn origin(
        videos: Vec<Video>,
        url: BaseUrl,
        source: Source,
    ) -> Result<ContentServer, String> {
        let mut table =
            ChunkLocations::new(vec![url.clone()], Vec::new()).map_err(|e| e.to_string())?;
        for video in videos {
            let placement = place(&Offload::None, video.segments(), &Popularity::ZipfRank, 0)
                .map_err(|e| e.to_string())?;
            table
                .add_video(video, &placement, &Assign::RoundRobin, &Assign::RoundRobin)
                .map_err(|e| e.to_string())?;
        }
        Ok(ContentServer {
            source,
            segments: SegmentCache::default(),
            role: Role::Origin {
                table,
                routers: Routers {
                    urr: url.clone(),
                    drr: url,
                },
            },
        })
    }

    /// A dCS: serves what the assignment published on `assignment` gives it, and with
    /// `origin = Some((url, timeout))` fetches other chunks from there once.
    pub fn edge(
        source: Source,
        assignment: watch::Receiver<Option<Arc<Assignment>>>,
        origin: Option<(BaseUrl, std::time::Duration)>,
    ) -> Result<ContentServer, String> {
        let origin = origin
            .map(|(url, timeout)| OriginCache::new(url, timeout))
            .transpose()?;
        Ok(ContentServer {
            source,
            segments: SegmentCache::default(),
            role: Role::Edge { assignment, origin },
        })
    }

    /// The answer to one request (the request body is never read).
    pub async fn handle<B>(&self, request: Request<B>) -> Response<Body> {
        let method = request.method();
        if let Some(response) = refuse_method(method) {
            return response;
        }
        let headers = request.headers();
        let parsed = match parse_path(target(request.uri())) {
            Ok(parsed) => parsed,
            Err(e) => return path_error(&e),
        };
        match &self.role {
            Role::Origin { table, routers } => {
                let (video, item) = match table.resolve(&parsed) {
                    Ok(found) => found,
                    Err(e) => return http::error(StatusCode::NOT_FOUND, e),
                };
                if parsed.kind.is_manifest() {
                    return match render(&parsed, table, routers) {
                        Ok(Some(manifest)) => serve_manifest(method, headers, manifest),
                        Ok(None) => http::error(StatusCode::NOT_FOUND, "not a manifest"),
                        Err(e) => http::error(StatusCode::NOT_FOUND, e),
                    };
                }
                self.serve_media(method, headers, video.video(), item, &parsed)
                    .await
            }
            Role::Edge { assignment, origin } => {
                if parsed.kind.is_manifest() {
                    return http::error(
                        StatusCode::NOT_FOUND,
                        "a downstream content server serves no manifests; ask the upstream request router",
                    );
                }
                let assignment = assignment.borrow().clone();
                if let Some(assignment) = &assignment {
                    match assignment.locations.resolve(&parsed) {
                        Ok((video, item))
                            if video.location_of(item) == Some(assignment.location()) =>
                        {
                            return self
                                .serve_media(method, headers, video.video(), item, &parsed)
                                .await;
                        }
                        Ok(_) => {}
                        Err(e) => return http::error(StatusCode::NOT_FOUND, e),
                    }
                }
                match (origin, assignment) {
                    (Some(origin), _) => serve_from_origin(method, headers, origin, &parsed).await,
                    (None, None) => http::unavailable(
                        "no chunk assignment from the downstream request router yet",
                    ),
                    (None, Some(_)) => http::error(
                        StatusCode::NOT_FOUND,
                        "this content server does not hold that chunk",
                    ),
                }
            }
        }
    }

    /// A chunk this server holds, from its source.
    async fn serve_media(
        &self,
        method: &Method,
        headers: &HeaderMap,
        video: &Video,
        item: Item,
        request: &CdnRequest<'_>,
    ) -> Response<Body> {
        let (quality, index) = match item {
            Item::Segment { quality, index } => (quality, Some(index)),
            Item::Init { quality } => (quality, None),
            Item::Master | Item::Mpd | Item::MediaPlaylist { .. } => {
                return http::error(StatusCode::NOT_FOUND, "not a media item")
            }
        };
        let content_type = media_type(video.container(), index.is_some());
        match &self.source {
            Source::Synthetic => {
                let Some(q) = video.qualities().get(quality) else {
                    return http::error(StatusCode::NOT_FOUND, "no such quality");
                };
                let (payload, len, label) = match index {
                    Some(index) => (
                        Payload::new(video, q, index),
                        video.segment_size(quality).unwrap_or(0),
                        index.to_string(),
                    ),
                    None => (
                        Payload::new(video, q, INIT_INDEX),
                        SYNTHETIC_INIT_SIZE,
                        "init".to_string(),
                    ),
                };
                let entity = Entity {
                    len,
                    etag: format!("\"{}/{}/{label}/{len}\"", video.name(), q.id),
                    content_type,
                };
                let cached = self.segments.get_or_make(&entity.etag, len, |n| {
                    let mut bytes = vec![0u8; n];
                    payload.fill(0, &mut bytes);
                    bytes
                });
                match cached {
                    Some(kept) => respond(method, headers, &entity, |offset, length| {
                        Body::sealed(kept.slice(offset as usize, length as usize))
                    }),
                    None => respond(method, headers, &entity, |offset, length| {
                        Body::synthetic(payload, offset, length)
                    }),
                }
            }
            Source::MediaDir(dir) => {
                let path = request.path();
                let file_path = dir.join(path.trim_start_matches('/'));
                if let Some(response) = serve_file_cached(
                    method,
                    headers,
                    &self.segments,
                    &file_path,
                    &path,
                    content_type,
                )
                .await
                {
                    return response;
                }
                serve_file(method, headers, file_path, &path, content_type).await
            }
        }
    }
}

/// 400 for a malformed path, 404 for a well-formed one naming a file we never serve.
pub fn path_error(e: &PathError) -> Response<Body> {
    let status = match e {
        PathError::UnknownFile { .. } => StatusCode::NOT_FOUND,
        _ => StatusCode::BAD_REQUEST,
    };
    http::error(status, e)
}

fn media_type(container: Container, segment: bool) -> &'static str {
    match (container, segment) {
        (Container::Ts, true) => "video/mp2t",
        (Container::Fmp4, true) => "video/iso.segment",
        (_, false) => "video/mp4",
    }
}

/// A generated manifest, with an ETag from its bytes (it changes when the table does).
pub fn serve_manifest(
    method: &Method,
    headers: &HeaderMap,
    manifest: crate::cdn::Manifest,
) -> Response<Body> {
    let bytes = bytes::Bytes::from(manifest.body);
    let entity = Entity {
        len: bytes.len() as u64,
        etag: format!("\"m-{:016x}\"", hash64(&bytes)),
        content_type: manifest.content_type,
    };
    respond(method, headers, &entity, |offset, length| {
        Body::bytes(bytes.slice(offset as usize..(offset + length) as usize))
    })
}

/// The ETag of a file: its length and modification time.
fn file_etag(metadata: &std::fs::Metadata) -> String {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("\"f-{:x}-{modified:x}\"", metadata.len())
}

/// A media file from `cache`, read whole into it on a miss; `None` when the file is missing,
/// unreadable, too large to keep or changing, for `serve_file` to stream it (or answer why not).
async fn serve_file_cached(
    method: &Method,
    headers: &HeaderMap,
    cache: &SegmentCache,
    file_path: &std::path::Path,
    path: &str,
    content_type: &'static str,
) -> Option<Response<Body>> {
    // A stat of a hot file takes microseconds, so it is done right here: a hop to the blocking
    // pool per request (what tokio::fs does) cost more than serving the bytes.
    let metadata = std::fs::metadata(file_path).ok().filter(|m| m.is_file())?;
    let entity = Entity {
        len: metadata.len(),
        etag: file_etag(&metadata),
        content_type,
    };
    let key = format!("{path} {}", entity.etag);
    let bytes = match cache.get(&key) {
        Some(bytes) => bytes,
        None => {
            cache.admits(metadata.len())?;
            let (file, opened) = open_media(file_path).await.ok()?;
            // Read no more than the stat said, plus one byte to tell a file that grew: a
            // different length means the file changed since the stat, and bytes are never kept
            // under an ETag that does not name them.
            let mut read = Vec::new();
            let most = metadata.len().saturating_add(1);
            file.take(most).read_to_end(&mut read).await.ok()?;
            if !opened.is_file() || read.len() as u64 != metadata.len() {
                return None;
            }
            cache.insert(&key, Sealed::new(read))
        }
    };
    Some(respond(method, headers, &entity, |offset, length| {
        Body::sealed(bytes.slice(offset as usize, length as usize))
    }))
}

/// Opens a media file, and reads its metadata from the same handle (what is served is what
/// was checked). Without blocking on what is no file: a FIFO would hold the open until a
/// writer came, and a blocking-pool thread with it.
async fn open_media(
    path: &std::path::Path,
) -> std::io::Result<(tokio::fs::File, std::fs::Metadata)> {
    let file = tokio::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .await?;
    let metadata = file.metadata().await?;
    Ok((file, metadata))
}

/// A media file streamed from disk.
async fn serve_file(
    method: &Method,
    headers: &HeaderMap,
    file_path: PathBuf,
    path: &str,
    content_type: &'static str,
) -> Response<Body> {
    let (file, metadata) = match open_media(&file_path).await {
        Ok(found) if found.1.is_file() => found,
        Ok(_) => {
            return http::error(
                StatusCode::NOT_FOUND,
                format_args!("no media file for {path}"),
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return http::error(
                StatusCode::NOT_FOUND,
                format_args!("no media file for {path}"),
            )
        }
        Err(e) => {
            tracing::warn!("reading {}: {e}", file_path.display());
            return http::error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format_args!("the media file for {path} cannot be read"),
            );
        }
    };
    let entity = Entity {
        len: metadata.len(),
        etag: file_etag(&metadata),
        content_type,
    };
    respond(method, headers, &entity, |offset, length| {
        Body::file(file, offset, length)
    })
}

async fn serve_from_origin(
    method: &Method,
    headers: &HeaderMap,
    origin: &OriginCache,
    request: &CdnRequest<'_>,
) -> Response<Body> {
    let path = request.path();
    match origin.get(&path).await {
        Ok(copy) => {
            // Only media reaches here: a segment with its container, or an init segment.
            let (container, segment) = match request.kind {
                Kind::Segment { container, .. } => (container, true),
                _ => (Container::Fmp4, false),
            };
            let entity = Entity {
                len: copy.bytes.len() as u64,
                etag: copy.etag.clone(),
                content_type: media_type(container, segment),
            };
            respond(method, headers, &entity, |offset, length| {
                Body::bytes(
                    copy.bytes
                        .slice(offset as usize..(offset + length) as usize),
                )
            })
        }
        Err(FetchError::NotFound(message)) => http::error(StatusCode::NOT_FOUND, message),
        Err(FetchError::Failed(message)) => {
            tracing::info!("dcs: from origin {}: {message}", origin.origin());
            http::error(StatusCode::BAD_GATEWAY, message)
        }
    }
}
