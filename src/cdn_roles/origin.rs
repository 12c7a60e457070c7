//! A dCS's pull-through copy of chunks it was not assigned: the first request for a chunk
//! fetches it from the origin (concurrent requests for it wait for that one fetch), the bytes
//! stay in memory, and later requests are served from there. A failed fetch is not kept, so
//! the next request tries again. Memory is bounded by a byte budget: when a new copy does not
//! fit, the least recently used copies go (`crate::lru`), so a client walking a large
//! catalogue cannot grow a dCS without end. A body above `MAX_COPY` (or the budget) is refused
//! (the client gets 502). What the fetches under way hold together is bounded by a budget of
//! the same size: each reserves its body's length before reading it, and one that cannot have its
//! share within the fetch timeout fails (502) rather than wait without end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{OnceCell, Semaphore, SemaphorePermit};
use tokio::time::Instant;

use crate::cdn::hashing::hash64;
use crate::cdn::BaseUrl;
use crate::lru::ByteLru;

/// The default bound on a dCS's copies from the origin, as on the chunks it generates itself
/// (`segment_cache::DEFAULT_BUDGET`): a typical catalogue fits whole.
pub(crate) const DEFAULT_BUDGET: usize = super::segment_cache::DEFAULT_BUDGET;
/// The largest chunk taken from the origin: a 10 s segment at 50 Mbit/s fits.
pub(crate) const MAX_COPY: usize = 64 << 20;

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

type Cell = Arc<OnceCell<Arc<Copy>>>;

pub(crate) struct OriginCache {
    origin: BaseUrl,
    client: reqwest::Client,
    /// The largest body taken from the origin: `MAX_COPY`, or the budget if that is less.
    largest: u64,
    /// How long a fetch may take, from asking to the last byte.
    timeout: Duration,
    /// Bytes the fetches under way may still reserve: the budget, one permit per byte.
    in_flight: Semaphore,
    /// The fetches under way, keyed by canonical path: at most one per request being served.
    fetching: Mutex<HashMap<String, Cell>>,
    /// The copies kept, keyed by canonical path, within the byte budget.
    kept: Mutex<ByteLru<String, Arc<Copy>>>,
}

impl OriginCache {
    pub(crate) fn new(origin: BaseUrl, timeout: Duration) -> Result<OriginCache, String> {
        OriginCache::with_budget(origin, timeout, DEFAULT_BUDGET)
    }

    /// At most `budget` bytes of copies kept.
    pub(crate) fn with_budget(
        origin: BaseUrl,
        timeout: Duration,
        budget: usize,
    ) -> Result<OriginCache, String> {
        let client = crate::roles::fetch::client()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()
            .map_err(|e| format!("the HTTP client for fetch_from_origin: {e}"))?;
        Ok(OriginCache {
            origin,
            client,
            largest: budget.min(MAX_COPY) as u64,
            timeout,
            in_flight: Semaphore::new(budget.min(Semaphore::MAX_PERMITS)),
            fetching: Mutex::new(HashMap::new()),
            kept: Mutex::new(ByteLru::new(budget)),
        })
    }

    pub(crate) fn origin(&self) -> &BaseUrl {
        &self.origin
    }

    /// The chunk at canonical `path`, fetched once while it stays kept.
    pub(crate) async fn get(&self, path: &str) -> Result<Arc<Copy>, FetchError> {
        let cell = {
            let mut fetching = lock(&self.fetching);
            // Looked up under the `fetching` lock: a fetch that just finished has kept its
            // copy before it leaves `fetching`, so the copy is found one way or the other.
            if let Some(copy) = lock(&self.kept).get(path) {
                return Ok(copy.clone());
            }
            fetching.entry(path.to_string()).or_default().clone()
        };
        let leaving = Leaving {
            fetching: &self.fetching,
            path,
            cell,
        };
        let result = leaving
            .cell
            .get_or_try_init(|| self.fetch(path))
            .await
            .map(Arc::clone);
        match &result {
            Ok(copy) => {
                let size = copy.bytes.len();
                lock(&self.kept).insert(path.to_string(), copy.clone(), size);
            }
            // A failed fetch leaves the cell empty, and each request still waiting on it tries
            // again in turn: a request that comes after the failure starts a fetch of its own
            // at once rather than queue behind those.
            Err(_) => {
                let mut fetching = lock(&self.fetching);
                if (fetching.get(path)).is_some_and(|c| Arc::ptr_eq(c, &leaving.cell)) {
                    fetching.remove(path);
                }
            }
        }
        result
    }

    /// Bytes of copies kept now.
    #[cfg(test)]
    pub(crate) fn kept_bytes(&self) -> usize {
        lock(&self.kept).used()
    }

    async fn fetch(&self, path: &str) -> Result<Arc<Copy>, FetchError> {
        let deadline = Instant::now() + self.timeout;
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
        // Its stated length, or the most it may be when it states none (one that states a
        // length sends no more). A longer one is refused before it waits for room.
        let length = crate::roles::fetch::stated_length_at_most(&response, self.largest)
            .map_err(|e| failed(&e))?
            .unwrap_or(self.largest);
        let _reserved = self
            .reserve(length, deadline)
            .await
            .map_err(|e| failed(&e))?;
        let bytes = crate::roles::fetch::body_at_most(response, self.largest)
            .await
            .map_err(|e| failed(&e))?;
        let etag = etag.unwrap_or_else(|| format!("\"o-{:016x}\"", hash64(&bytes)));
        Ok(Arc::new(Copy { bytes, etag }))
    }

    /// Reserves `length` bytes of the in-flight budget until the permit drops, waiting for
    /// room no later than `deadline`.
    async fn reserve(&self, length: u64, deadline: Instant) -> Result<SemaphorePermit<'_>, String> {
        let no_room = || {
            format!(
                "no room for {length} more bytes within {:?}: the fetches under way hold the \
                 budget of {} bytes",
                self.timeout,
                lock(&self.kept).capacity()
            )
        };
        let share = u32::try_from(length).map_err(|_| no_room())?;
        match tokio::time::timeout_at(deadline, self.in_flight.acquire_many(share)).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(no_room()),
        }
    }
}

/// Takes a fetch's cell out of `fetching` when the last request that waited on it ends,
/// however it ends (a client that hangs up drops its request mid-fetch), unless a later cell
/// has taken the path's place: a failed fetch is tried again by the next request, no path
/// stays behind, and one waiter that leaves while another still fetches does not let a third
/// start the same fetch again.
struct Leaving<'a> {
    fetching: &'a Mutex<HashMap<String, Cell>>,
    path: &'a str,
    cell: Cell,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        let mut fetching = lock(self.fetching);
        // This request lets go of the cell under the lock, where every request takes hold of
        // it, so the last one to leave sees only the map's hold.
        let mine = std::mem::take(&mut self.cell);
        let ours = fetching
            .get(self.path)
            .is_some_and(|c| Arc::ptr_eq(c, &mine));
        drop(mine);
        if ours
            && fetching
                .get(self.path)
                .is_some_and(|c| Arc::strong_count(c) == 1)
        {
            fetching.remove(self.path);
        }
    }
}

/// A poisoned lock only means another request panicked between two consistent states (every
/// update above completes before its guard drops), so its data is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::until;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const CHUNK: usize = 1000;

    /// An origin on loopback answering every path with `CHUNK` bytes, counting its requests;
    /// a path with `hold` in it is never answered, one with `stall` gets its head but no body,
    /// and one with `fail` gets 500 after 300 ms when it is the origin's first request and
    /// is never answered after that.
    async fn origin() -> (BaseUrl, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = BaseUrl::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let first = counted.fetch_add(1, Ordering::SeqCst) == 0;
                tokio::spawn(async move {
                    let mut request = [0; 1024];
                    let n = stream.read(&mut request).await.unwrap_or(0);
                    let request = String::from_utf8_lossy(&request[..n]);
                    if request.contains("hold") || (request.contains("fail") && !first) {
                        return std::future::pending::<()>().await;
                    }
                    if request.contains("fail") {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        let fail = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                        let _ = stream.write_all(fail.as_bytes()).await;
                        return;
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {CHUNK}\r\nconnection: close\r\n\r\n"
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    if request.contains("stall") {
                        return std::future::pending::<()>().await;
                    }
                    let _ = stream.write_all(&[7; CHUNK]).await;
                });
            }
        });
        (url, requests)
    }

    /// Walking a catalogue larger than the budget keeps at most the budget; a copy still kept
    /// is served without asking the origin, one that was evicted is fetched again.
    #[tokio::test]
    async fn copies_stay_within_the_budget_and_the_oldest_go() {
        let (url, requests) = origin().await;
        let cache = OriginCache::with_budget(url, Duration::from_secs(10), 3 * CHUNK).unwrap();
        for n in 0..10 {
            let copy = cache.get(&format!("/v/{n}.m4s")).await.unwrap();
            assert_eq!(copy.bytes.len(), CHUNK);
            assert!(cache.kept_bytes() <= 3 * CHUNK, "{}", cache.kept_bytes());
        }
        assert_eq!(requests.load(Ordering::SeqCst), 10);
        cache.get("/v/9.m4s").await.unwrap();
        assert_eq!(
            requests.load(Ordering::SeqCst),
            10,
            "a kept copy was fetched again"
        );
        cache.get("/v/0.m4s").await.unwrap();
        assert_eq!(
            requests.load(Ordering::SeqCst),
            11,
            "an evicted copy was not fetched"
        );
        assert!(lock(&cache.fetching).is_empty(), "a finished fetch stayed");
    }

    /// A request that goes away mid-fetch (its client hung up) leaves nothing behind.
    #[tokio::test]
    async fn an_abandoned_fetch_leaves_no_cell() {
        let (url, _) = origin().await;
        let cache = OriginCache::new(url, Duration::from_secs(10)).unwrap();
        for n in 0..3 {
            let path = format!("/v/hold-{n}.m4s");
            let fetch = cache.get(&path);
            assert!(tokio::time::timeout(Duration::from_millis(100), fetch)
                .await
                .is_err());
        }
        assert!(
            lock(&cache.fetching).is_empty(),
            "an abandoned fetch stayed"
        );
    }

    /// A waiter that leaves while another still fetches the same chunk leaves the fetch in
    /// place: a third request waits on it rather than asking the origin again.
    #[tokio::test]
    async fn a_waiter_leaving_does_not_start_the_fetch_again() {
        let (url, requests) = origin().await;
        let cache = Arc::new(OriginCache::new(url, Duration::from_secs(10)).unwrap());
        let path = "/v/hold-0.m4s";
        let first = tokio::spawn({
            let cache = cache.clone();
            async move { cache.get(path).await.map(drop) }
        });
        until("a fetch started", || requests.load(Ordering::SeqCst) > 0).await;
        let second = cache.get(path);
        assert!(tokio::time::timeout(Duration::from_millis(100), second)
            .await
            .is_err());
        let third = cache.get(path);
        assert!(tokio::time::timeout(Duration::from_millis(100), third)
            .await
            .is_err());
        assert_eq!(
            requests.load(Ordering::SeqCst),
            1,
            "the fetch started again"
        );
        first.abort();
        let _ = first.await;
        assert!(
            lock(&cache.fetching).is_empty(),
            "the last waiter left a cell"
        );
    }

    /// A failed fetch goes at once: while a request that waited on it tries again (here, for
    /// ever), a later request starts its own fetch rather than queue behind that one.
    #[tokio::test]
    async fn a_request_after_a_failed_fetch_does_not_wait_for_its_retries() {
        let (url, requests) = origin().await;
        let cache = Arc::new(OriginCache::new(url, Duration::from_secs(30)).unwrap());
        let path = "/v/fail-0.m4s";
        let get = || {
            let cache = cache.clone();
            tokio::spawn(async move { cache.get(path).await.map(drop) })
        };
        let (first, second) = (get(), get());
        assert!(matches!(
            first.await.unwrap(),
            Err(FetchError::Failed(message)) if message.contains("500")
        ));
        until(
            "the failed fetch left and the second request's began",
            || lock(&cache.fetching).is_empty() && requests.load(Ordering::SeqCst) >= 2,
        )
        .await;
        let third = get();
        until("the third request started its own fetch", || {
            requests.load(Ordering::SeqCst) >= 3
        })
        .await;
        for waiting in [second, third] {
            assert!(!waiting.is_finished());
            waiting.abort();
            let _ = waiting.await;
        }
        assert!(lock(&cache.fetching).is_empty(), "a waiter left a cell");
    }

    /// Fetches under way hold no more than the budget together: with room for one chunk, a
    /// second fetch does not take its body while the first holds that room, and takes it once
    /// the first is gone. A fetch that finds no room by its deadline fails, naming why.
    #[tokio::test]
    async fn fetches_under_way_share_the_budget() {
        let (url, requests) = origin().await;
        let cache =
            Arc::new(OriginCache::with_budget(url, Duration::from_secs(10), CHUNK).unwrap());
        let stalled = tokio::spawn({
            let cache = cache.clone();
            async move { cache.get("/v/stall-0.m4s").await.map(drop) }
        });
        until("the first fetch took the room", || {
            cache.in_flight.available_permits() == 0
        })
        .await;
        let waiting = cache.get("/v/1.m4s");
        assert!(
            tokio::time::timeout(Duration::from_millis(300), waiting)
                .await
                .is_err(),
            "a fetch beyond the budget went ahead"
        );
        assert_eq!(
            requests.load(Ordering::SeqCst),
            2,
            "the second fetch was not asked"
        );
        stalled.abort();
        let _ = stalled.await;
        let copy = cache.get("/v/1.m4s").await.unwrap();
        assert_eq!(copy.bytes.len(), CHUNK);
        let _held = cache.in_flight.acquire_many(CHUNK as u32).await.unwrap();
        let refused = cache
            .reserve(1, Instant::now() + Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(
            refused.contains("no room for 1 more bytes within 10s"),
            "{refused}"
        );
        assert!(
            refused.contains(&format!("budget of {CHUNK} bytes")),
            "{refused}"
        );
    }

    /// A body above the budget is refused: nothing that large could be kept.
    #[tokio::test]
    async fn a_body_above_the_budget_is_refused() {
        let (url, _) = origin().await;
        let cache = OriginCache::with_budget(url, Duration::from_secs(10), CHUNK - 1).unwrap();
        match cache.get("/v/0.m4s").await {
            Err(FetchError::Failed(message)) => assert!(message.contains("limit"), "{message}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(cache.kept_bytes(), 0);
        assert!(lock(&cache.fetching).is_empty());
    }
}
