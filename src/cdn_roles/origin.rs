//! A dCS's pull-through copy of chunks it was not assigned: the first request for a chunk
//! fetches it from the origin (concurrent requests for it wait for that one fetch), the bytes
//! stay in memory, and later requests are served from there. A failed fetch is not kept, so
//! the next request tries again. Memory is bounded by the origin's catalog: only chunks the
//! origin answered 200 for are kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::OnceCell;

use crate::cdn::hashing::hash64;
use crate::cdn::BaseUrl;

/// A chunk fetched from the origin.
#[derive(Debug)]
pub(crate) struct Copy {
    pub bytes: Bytes,
    /// The origin's strong ETag (so both servers validate the same copy alike), or one made
    /// from the bytes when the origin sent none.
    pub etag: String,
}

/// Why a chunk could not be had from the origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FetchError {
    /// The origin answered 404: the chunk does not exist.
    NotFound(String),
    /// Anything else: unreachable, timed out, another status. The client gets 502.
    Failed(String),
}

pub(crate) struct OriginCache {
    origin: BaseUrl,
    client: reqwest::Client,
    /// Keyed by canonical path. The map's lock is held only to find or insert a cell.
    copies: Mutex<HashMap<String, Arc<OnceCell<Arc<Copy>>>>>,
}

impl OriginCache {
    pub(crate) fn new(origin: BaseUrl, timeout: Duration) -> Result<OriginCache, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map_err(|e| format!("the HTTP client for fetch_from_origin: {e}"))?;
        Ok(OriginCache {
            origin,
            client,
            copies: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn origin(&self) -> &BaseUrl {
        &self.origin
    }

    /// The chunk at canonical `path`, fetched once.
    pub(crate) async fn get(&self, path: &str) -> Result<Arc<Copy>, FetchError> {
        let cell = {
            // A poisoned lock only means another request panicked mid-insert; the map is
            // still a valid map.
            let mut copies = self.copies.lock().unwrap_or_else(|e| e.into_inner());
            copies.entry(path.to_string()).or_default().clone()
        };
        let result = cell
            .get_or_try_init(|| self.fetch(path))
            .await
            .map(Arc::clone);
        if result.is_err() {
            // Keep no empty cell per failed path, so unknown paths cannot grow the map.
            let mut copies = self.copies.lock().unwrap_or_else(|e| e.into_inner());
            if copies.get(path).is_some_and(|cell| !cell.initialized()) {
                copies.remove(path);
            }
        }
        result
    }

    async fn fetch(&self, path: &str) -> Result<Arc<Copy>, FetchError> {
        let url = self.origin.join(path);
        let failed = |e: &dyn std::fmt::Display| FetchError::Failed(format!("fetching {url}: {e}"));
        let response = self.client.get(&url).send().await.map_err(|e| failed(&e))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(FetchError::NotFound(format!("the origin has no {path}")));
        }
        if status != reqwest::StatusCode::OK {
            return Err(failed(&format_args!("the origin answered {status}")));
        }
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .filter(|tag| tag.len() >= 2 && tag.starts_with('"') && tag.ends_with('"'))
            .map(str::to_string);
        let bytes = response.bytes().await.map_err(|e| failed(&e))?;
        let etag = etag.unwrap_or_else(|| format!("\"o-{:016x}\"", hash64(&bytes)));
        Ok(Arc::new(Copy { bytes, etag }))
    }
}
