//! The request routers' HTTP side: `crate::cdn::route_urr` / `route_drr` decisions as answers.
//! 302 with `Location` for a chunk; 200 with a generated manifest (uRR only, every policy via
//! the `/p/POLICY/` prefix); 404 for names nothing holds; 400 for malformed paths; 405 for
//! methods other than GET and HEAD; 503 from a dRR that has no locations yet.

use std::sync::Arc;

use hyper::header::HeaderMap;
use hyper::{Method, Request, Response, StatusCode};
use tokio::sync::watch;

use super::content_server::{path_error, serve_manifest};
use crate::cdn::{route_drr, route_urr, BaseUrl, ChunkLocations, Decision, Routers};
use crate::roles::http::body::Body;
use crate::roles::http::semantics::{self as http, refuse_method, target};

/// The uRR, once the locations are known (it does not listen before).
pub struct UpstreamRouter {
    locations: ChunkLocations,
    routers: Routers,
}

impl UpstreamRouter {
    /// `urr` is this router's own origin; `drr` the downstream router's.
    pub fn new(locations: ChunkLocations, urr: BaseUrl, drr: BaseUrl) -> UpstreamRouter {
        UpstreamRouter {
            locations,
            routers: Routers { urr, drr },
        }
    }

    pub fn handle<B>(&self, request: &Request<B>) -> Response<Body> {
        if let Some(response) = refuse_method(request.method()) {
            return response;
        }
        let decision = route_urr(target(request.uri()), &self.locations, &self.routers);
        answer(request.method(), request.headers(), decision)
    }
}

/// The dRR: answers 503 until the uRR's offer has given it locations (published on `locations`).
pub struct DownstreamRouter {
    locations: watch::Receiver<Option<Arc<ChunkLocations>>>,
}

impl DownstreamRouter {
    pub fn new(locations: watch::Receiver<Option<Arc<ChunkLocations>>>) -> DownstreamRouter {
        DownstreamRouter { locations }
    }

    pub fn handle<B>(&self, request: &Request<B>) -> Response<Body> {
        if let Some(response) = refuse_method(request.method()) {
            return response;
        }
        let Some(locations) = self.locations.borrow().clone() else {
            return http::unavailable("no chunk locations from the upstream CDN yet");
        };
        let decision = route_drr(target(request.uri()), &locations);
        answer(request.method(), request.headers(), decision)
    }
}

fn answer(method: &Method, headers: &HeaderMap, decision: Decision) -> Response<Body> {
    match decision {
        Decision::Redirect(location) => http::redirect(location),
        Decision::Manifest(manifest) => serve_manifest(method, headers, manifest),
        Decision::NotFound(why) => http::error(StatusCode::NOT_FOUND, why),
        Decision::BadRequest(e) => path_error(&e),
    }
}
