//! Request-router decisions, as the HTTP servers answer them: `Redirect` → 302 with that
//! Location, `Manifest` → 200 with the body, `NotFound` → 404, `BadRequest` → 400.
//!
//! uRR: manifests are served here, rewritten per the path's policy; an upstream chunk goes to
//! the uCS holding it, a downstream chunk to the dRR with the same path (iterative CDNI request
//! routing, RFC 7336 §3.4.2: the client is sent on to the downstream CDN's router, which
//! redirects again). dRR: a downstream chunk goes to the dCS holding it; anything else is not
//! its CDN's to route.

use std::fmt;

use super::content::{Item, LookupError};
use super::locations::{Cdn, ChunkLocations, VideoLocations};
use super::manifest::{render, Manifest};
use super::paths::{parse_path, PathError, Request};
use super::url::BaseUrl;

/// The two request routers' origins, which manifests and redirects point at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routers {
    pub urr: BaseUrl,
    pub drr: BaseUrl,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// 302 to this absolute URL.
    Redirect(String),
    /// 200 with a manifest the router generated.
    Manifest(Manifest),
    NotFound(NotFound),
    BadRequest(PathError),
}

/// Why a router answers 404.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFound {
    /// The path names no video, quality or segment.
    Lookup(LookupError),
    /// The dRR was asked for a chunk the upstream CDN keeps.
    NotInThisCdn,
    /// The dRR was asked for a manifest (only the uRR serves them).
    NotRoutedHere,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotFound::Lookup(e) => e.fmt(f),
            NotFound::NotInThisCdn => f.write_str("this chunk is not held by the downstream CDN"),
            NotFound::NotRoutedHere => {
                f.write_str("the downstream request router serves no manifests")
            }
        }
    }
}

/// Both routers' first step: the request `target` names, with its video's locations and the
/// item it asks for — or the 400/404 to answer instead.
fn locate<'t, 'l>(
    target: &'t str,
    locations: &'l ChunkLocations,
) -> Result<(Request<'t>, &'l VideoLocations, Item), Decision> {
    let request = parse_path(target).map_err(Decision::BadRequest)?;
    let (video, item) = locations
        .resolve(&request)
        .map_err(|e| Decision::NotFound(NotFound::Lookup(e)))?;
    Ok((request, video, item))
}

/// The uRR's answer to a request for `target` (path and optional query).
pub fn route_urr(target: &str, locations: &ChunkLocations, routers: &Routers) -> Decision {
    let (request, video, item) = match locate(target, locations) {
        Ok(found) => found,
        Err(decision) => return decision,
    };
    let Some(location) = video.location_of(item) else {
        return match render(&request, locations, routers) {
            Ok(Some(manifest)) => Decision::Manifest(manifest),
            // Only manifests have no chunk location, and they always render.
            Ok(None) => Decision::NotFound(NotFound::NotRoutedHere),
            Err(e) => Decision::NotFound(NotFound::Lookup(e)),
        };
    };
    match location.cdn {
        Cdn::Upstream => Decision::Redirect(url_of(locations.server_of(location), &request)),
        Cdn::Downstream => Decision::Redirect(url_of(&routers.drr, &request)),
    }
}

/// `base` joined with `request`'s canonical path, written once into one buffer.
fn url_of(base: &BaseUrl, request: &Request) -> String {
    base.join_with(64, |url| request.write_path(url))
}

/// The dRR's answer to a request for `target` (path and optional query).
pub fn route_drr(target: &str, locations: &ChunkLocations) -> Decision {
    let (request, video, item) = match locate(target, locations) {
        Ok(found) => found,
        Err(decision) => return decision,
    };
    match video.location_of(item) {
        None => Decision::NotFound(NotFound::NotRoutedHere),
        Some(location) if location.cdn == Cdn::Upstream => {
            Decision::NotFound(NotFound::NotInThisCdn)
        }
        Some(location) => Decision::Redirect(url_of(locations.server_of(location), &request)),
    }
}
