//! `p2p-cloud`: the cloud CDN (papers/002). It holds every chunk and serves any peer what the
//! peers could not (`GET /chunk/J`); its upload is the cloud bandwidth the paper minimises.
//! It counts requests and bytes served, and writes them to `$CDNLAB_OUT_DIR/usage.json` every
//! `record_every` and when it stops.

use super::config::CloudConfig;
use super::{chunk_of, payload};
use crate::atomic_write::write_atomically;
use crate::roles::env::NodeEnv;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::{spawn_http, ServeOptions};
use hyper::{Request, StatusCode};
use serde::Serialize;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(Debug, Default, Serialize)]
struct Usage {
    requests: u64,
    bytes: u64,
    elapsed_s: f64,
}

struct Cloud {
    config: CloudConfig,
    requests: AtomicU64,
    bytes: AtomicU64,
    origin: Instant,
    out: PathBuf,
}

impl Cloud {
    fn record(&self) -> Result<(), String> {
        let usage = Usage {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            elapsed_s: self.origin.elapsed().as_secs_f64(),
        };
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let text = serde_json::to_string_pretty(&usage).map_err(|e| e.to_string())?;
        write_atomically(&self.out.join("usage.json"), text.as_bytes()).map_err(|e| e.to_string())
    }
}

pub async fn run(
    config: CloudConfig,
    env: NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let cloud = Arc::new(Cloud {
        out: env.out_dir.clone().unwrap_or_else(|| PathBuf::from(".")),
        requests: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        origin: Instant::now(),
        config: config.clone(),
    });
    cloud.record()?;
    tracing::info!(
        "p2p-cloud: {} chunks of {} bytes",
        config.chunks,
        config.chunk_size
    );
    let recorder = cloud.clone();
    let ticker = tokio::spawn(async move {
        let mut every = tokio::time::interval(recorder.config.record_every);
        loop {
            every.tick().await;
            if let Err(e) = recorder.record() {
                tracing::warn!("p2p-cloud: {e}");
            }
        }
    });
    let for_http = cloud.clone();
    let handler = move |request: Request<hyper::body::Incoming>| {
        let cloud = for_http.clone();
        async move {
            if let Some(refusal) = http::refuse_method(request.method()) {
                return refusal;
            }
            let Some(chunk) = chunk_of(request.uri().path(), cloud.config.chunks) else {
                return error(StatusCode::NOT_FOUND, "no such chunk");
            };
            let size = cloud.config.chunk_size;
            // HEAD sends no body: only a GET is upload.
            if request.method() == hyper::Method::GET {
                cloud.requests.fetch_add(1, Ordering::Relaxed);
                cloud.bytes.fetch_add(size, Ordering::Relaxed);
            }
            http::payload(payload(chunk), size)
        }
    };
    let options = ServeOptions {
        role: "p2p-cloud",
        access_log: false,
    };
    let result = spawn_http(any_address(config.port), handler, options, None)
        .await?
        .run_until(shutdown)
        .await;
    ticker.abort();
    cloud.record()?;
    result
}
