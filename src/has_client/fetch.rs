//! Hop-by-hop HTTP GETs: redirects are followed here rather than by reqwest, so every hop (each
//! request router's 302, then the server that sends the body) is timed and named, which is how
//! the routing policies differ. Connections are pooled per host and kept alive, as a player's
//! are, so a hop costs one round trip once its connection is open.
//!
//! Retry policy: an attempt that fails for a transient reason — no connection, a reset, a body
//! that breaks off, a timeout, a 5xx answer — is retried from the original URL after 250 ms,
//! then after 500 ms more: at most [`MAX_ATTEMPTS`] attempts, so a dead server is declared dead
//! within about a second plus the timeouts. Answers that would not change on a retry are final
//! at once: a 4xx, a redirect without a usable Location, more than [`MAX_REDIRECTS`] redirects,
//! a manifest body over [`MAX_KEPT_BODY`], and a body that is not what was asked for — a ranged
//! GET answered other than 206 with that range and its length (or 200 with a whole file that is
//! exactly that range), or an empty segment. Counting
//! such a body as the segment would credit the throughput estimate, and so the ABR, with bytes
//! the playlist never asked for.

use std::fmt;
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_RANGE, LOCATION, RANGE};
use reqwest::{redirect, StatusCode, Url};

use crate::cdn::{resolve, ByteRange};
use crate::has::Hop;
use crate::roles::http::describe;

/// Redirects followed in a row before giving up: ffmpeg's and most browsers' limit.
pub const MAX_REDIRECTS: usize = 8;

/// Attempts per GET (the first and two retries).
pub const MAX_ATTEMPTS: u32 = 3;

/// The wait before retry n is n × this.
pub const RETRY_BACKOFF: Duration = Duration::from_millis(250);

/// The largest body kept in memory (manifests); a longer one is an error, not a memory hog.
pub const MAX_KEPT_BODY: usize = 16 << 20;

/// The most of a redirect's body read so its connection can be reused; a longer body is left
/// unread and its connection dropped.
const MAX_REDIRECT_BODY: u64 = 1 << 20;

/// What to do with the final response's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// Keep it (manifests), up to [`MAX_KEPT_BODY`] bytes.
    Keep,
    /// Count its bytes and drop them (segments, which are never empty).
    Count,
}

/// A successful GET.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The URL that answered with the body (after redirects).
    pub final_url: String,
    /// Every hop of the successful attempt: redirects first, the body's server last.
    pub hops: Vec<Hop>,
    /// Body bytes received.
    pub bytes: u64,
    /// The body, with [`Body::Keep`]; empty otherwise.
    pub body: Vec<u8>,
    /// Attempts made (1 without retries).
    pub attempts: u32,
}

/// A GET that failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchError {
    /// The URL first asked for.
    pub url: String,
    /// What went wrong, naming the hop's URL when it was not `url`.
    pub cause: String,
    pub attempts: u32,
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GET {}: {}", self.url, self.cause)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

impl std::error::Error for FetchError {}

/// One attempt's failure, and whether another attempt might succeed.
struct Failure {
    cause: String,
    transient: bool,
}

impl Failure {
    fn transient(cause: String) -> Failure {
        Failure {
            cause,
            transient: true,
        }
    }

    fn permanent(cause: String) -> Failure {
        Failure {
            cause,
            transient: false,
        }
    }
}

/// An HTTP client that follows redirects itself; cheap to clone (clones share the pool).
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    timeout: Duration,
}

impl Fetcher {
    /// `timeout` bounds each hop of each attempt (connect, headers and body). `http2`: HTTP/2
    /// with prior knowledge (cleartext h2c, one multiplexed connection per host); otherwise
    /// HTTP/1.1 only, with a pool of keep-alive connections per host — or, without
    /// `keep_alive`, a new connection for every request (as a client of HTTP/1.0 would).
    pub fn new(timeout: Duration, http2: bool, keep_alive: bool) -> Result<Fetcher, String> {
        let builder = crate::roles::fetch::client()
            .redirect(redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .tcp_nodelay(true)
            .user_agent(concat!("cdnlab-has-client/", env!("CARGO_PKG_VERSION")));
        let builder = if http2 {
            builder.http2_prior_knowledge()
        } else {
            builder.http1_only()
        };
        let builder = if keep_alive {
            builder
        } else {
            builder.pool_max_idle_per_host(0)
        };
        let client = builder
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", describe(&e)))?;
        Ok(Fetcher { client, timeout })
    }

    /// GETs `url` (only `range` of it, if given), following redirects and retrying transient
    /// failures as the module documentation describes.
    pub async fn get(
        &self,
        url: &str,
        range: Option<ByteRange>,
        body: Body,
    ) -> Result<Fetched, FetchError> {
        let mut attempt = 1;
        loop {
            match self.attempt(url, range, body).await {
                Ok(mut fetched) => {
                    fetched.attempts = attempt;
                    return Ok(fetched);
                }
                Err(failure) if failure.transient && attempt < MAX_ATTEMPTS => {
                    tokio::time::sleep(RETRY_BACKOFF * attempt).await;
                    attempt += 1;
                }
                Err(failure) => {
                    return Err(FetchError {
                        url: url.to_string(),
                        cause: failure.cause,
                        attempts: attempt,
                    })
                }
            }
        }
    }

    /// One attempt: request, follow up to [`MAX_REDIRECTS`] redirects, read the body.
    async fn attempt(
        &self,
        url: &str,
        range: Option<ByteRange>,
        body: Body,
    ) -> Result<Fetched, Failure> {
        let mut current = url.to_string();
        let mut hops = Vec::new();
        loop {
            // Errors about a later hop name its URL; the caller names the first.
            let at = |what: String| {
                if current == url {
                    what
                } else {
                    format!("{current}: {what}")
                }
            };
            let parsed = Url::parse(&current)
                .map_err(|e| Failure::permanent(at(format!("not a URL: {e}"))))?;
            let host = authority(&parsed);
            let started = Instant::now();
            let mut request = self.client.get(parsed);
            if let Some(range) = range {
                request = request.header(RANGE, range_header(range).map_err(Failure::permanent)?);
            }
            let mut response = request
                .send()
                .await
                .map_err(|e| Failure::transient(at(self.transport(&e))))?;
            let status = response.status();
            if is_redirect(status) {
                let location = response
                    .headers()
                    .get(LOCATION)
                    .map(|value| value.to_str().map(str::to_string));
                drain(&mut response).await;
                hops.push(Hop {
                    host,
                    seconds: started.elapsed().as_secs_f64(),
                });
                let location = match location {
                    Some(Ok(location)) => location,
                    Some(Err(_)) => {
                        return Err(Failure::permanent(at(format!(
                            "{status} with a Location that is not text"
                        ))))
                    }
                    None => {
                        return Err(Failure::permanent(at(format!(
                            "{status} without a Location"
                        ))))
                    }
                };
                if hops.len() > MAX_REDIRECTS {
                    return Err(Failure::permanent(format!(
                        "too many redirects: more than {MAX_REDIRECTS} in a row (the last from {current} to {location})"
                    )));
                }
                current = resolve(&current, &location).map_err(|e| {
                    Failure::permanent(at(format!("{status} to a bad Location: {e}")))
                })?;
                continue;
            }
            if !status.is_success() {
                drain(&mut response).await;
                let cause = at(format!("answered {status}"));
                return Err(if status.is_server_error() {
                    Failure::transient(cause)
                } else {
                    Failure::permanent(cause)
                });
            }
            if let Some(range) = range {
                check_partial(&response, range).map_err(|e| Failure::permanent(at(e)))?;
            }
            let (bytes, kept) = self
                .read_body(&mut response, body)
                .await
                .map_err(|failure| Failure {
                    cause: at(failure.cause),
                    ..failure
                })?;
            check_length(bytes, range, body).map_err(|e| Failure::permanent(at(e)))?;
            hops.push(Hop {
                host,
                seconds: started.elapsed().as_secs_f64(),
            });
            return Ok(Fetched {
                final_url: current,
                hops,
                bytes,
                body: kept,
                attempts: 1,
            });
        }
    }

    /// Reads the whole body, counting it and keeping it if asked.
    async fn read_body(
        &self,
        response: &mut reqwest::Response,
        body: Body,
    ) -> Result<(u64, Vec<u8>), Failure> {
        let expected = response.content_length();
        let mut bytes = 0u64;
        let mut kept = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    bytes += chunk.len() as u64;
                    if body == Body::Keep {
                        if kept.len() + chunk.len() > MAX_KEPT_BODY {
                            return Err(Failure::permanent(format!(
                                "the body is longer than {MAX_KEPT_BODY} bytes"
                            )));
                        }
                        kept.extend_from_slice(&chunk);
                    }
                }
                Ok(None) => return Ok((bytes, kept)),
                Err(e) => {
                    let of = expected.map(|n| format!(" of {n}")).unwrap_or_default();
                    return Err(Failure::transient(format!(
                        "the body broke off after {bytes}{of} bytes: {}",
                        self.transport(&e)
                    )));
                }
            }
        }
    }

    /// A transport error in words, saying which timeout expired.
    fn transport(&self, error: &reqwest::Error) -> String {
        if error.is_timeout() {
            format!("no complete answer within {:?} (timeout)", self.timeout)
        } else {
            describe(error)
        }
    }
}

/// The status codes followed: 301, 302, 303, 307, 308 (not 300 or 304/305).
fn is_redirect(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::MOVED_PERMANENTLY
            | StatusCode::FOUND
            | StatusCode::SEE_OTHER
            | StatusCode::TEMPORARY_REDIRECT
            | StatusCode::PERMANENT_REDIRECT
    )
}

/// Reads and drops a redirect's (or error's) small body so its connection goes back to the pool.
async fn drain(response: &mut reqwest::Response) {
    let mut read = 0u64;
    while read <= MAX_REDIRECT_BODY {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len() as u64,
            Ok(None) | Err(_) => return,
        }
    }
}

/// `host` or `host:port` as the URL wrote it: how hops are named in the segment log.
pub fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// A ranged GET's answer must be the part asked for (RFC 9110 §14.4, §15.3.7): 206 with a
/// `Content-Range` of exactly that range. A 200 is the whole file, which a server may send
/// instead (§14.2): it is the part asked for only when the range starts at 0 and the file's
/// stated length is the range's; otherwise the server ignored the range.
fn check_partial(response: &reqwest::Response, range: ByteRange) -> Result<(), String> {
    let asked = range_header(range)?;
    let status = response.status();
    let whole_file_is_the_range =
        range.offset == 0 && response.content_length() == Some(range.length);
    if status == StatusCode::OK && whole_file_is_the_range {
        return Ok(());
    }
    if status != StatusCode::PARTIAL_CONTENT {
        return Err(format!(
            "answered {status} to a request for {asked}, not 206 Partial Content with that range"
        ));
    }
    let Some(value) = response.headers().get(CONTENT_RANGE) else {
        return Err(format!("answered 206 to {asked} without a Content-Range"));
    };
    let text = value.to_str().unwrap_or("");
    // `bytes FIRST-LAST/COMPLETE` (RFC 9110 §14.4), the unit in any case (§14.1).
    let first_last = (text.split_once(' '))
        .filter(|(unit, _)| unit.eq_ignore_ascii_case("bytes"))
        .and_then(|(_, rest)| rest.split_once('/'))
        .map(|(first_last, _complete_length)| first_last.trim());
    let wanted = asked.trim_start_matches("bytes=");
    if first_last != Some(wanted) {
        return Err(format!(
            "answered 206 to {asked} with Content-Range {:?}, another part",
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    Ok(())
}

/// The body read must be as long as the range asked for, and a segment is never empty.
fn check_length(bytes: u64, range: Option<ByteRange>, body: Body) -> Result<(), String> {
    match range {
        Some(range) if bytes != range.length => Err(format!(
            "the body is {bytes} bytes, the range asked for {}",
            range.length
        )),
        None if bytes == 0 && body == Body::Count => Err("the segment is empty".to_string()),
        _ => Ok(()),
    }
}

fn range_header(range: ByteRange) -> Result<String, String> {
    let last = range
        .length
        .checked_sub(1)
        .and_then(|n| range.offset.checked_add(n))
        .ok_or_else(|| {
            format!(
                "byte range of {} bytes at {} is empty or out of range",
                range.length, range.offset
            )
        })?;
    Ok(format!("bytes={}-{last}", range.offset))
}
