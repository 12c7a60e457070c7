//! Wiring each role to its sockets: what `bins/{ucs,dcs,urr,drr}.rs` run (`ucs`, `dcs`, `urr`,
//! `drr`), and what the loopback tests start with `127.0.0.1` addresses (`start_*`).
//!
//! Readiness is the HTTP port: every role listens only once it can answer, and the uRR only
//! after the chunk-location exchange, so a topology's `ready = { tcp = PORT }` on the uRR means
//! routing is ready. (The dRR and dCS listen at once: the dRR answers 503 and a dCS 503 or from
//! the origin until their locations arrive, which the uRR's readiness implies.)

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use super::config::{DcsConfig, DrrConfig, UcsConfig, UrrConfig};
use super::content_server::{ContentServer, Source};
use super::exchange::{build_locations, offload_request};
use super::exchange_io::{offer, DcsControl, DrrControl};
use super::request_router::{DownstreamRouter, UpstreamRouter};
use crate::cdn::{Assign, Video};
use crate::control::{self, Identity};
use crate::roles::control::load_identity;
use crate::roles::http::any_address;
use crate::roles::http::{serve_until_stopped, spawn_head_only, Running, ServeOptions};
use crate::roles::Start;

/// The uCS: the origin, all chunks and manifests.
pub async fn start_ucs(config: &UcsConfig, http: SocketAddr) -> Result<Running, String> {
    let server = Arc::new(ContentServer::origin(
        config.videos.clone(),
        config.url.clone(),
        Source::new(config.media_dir.clone()),
    )?);
    let handler = Arc::new(move |request: hyper::Request<()>| {
        let server = server.clone();
        async move { server.handle(request).await }
    });
    let options = ServeOptions {
        role: "ucs",
        access_log: config.access_log,
    };
    let running = spawn_head_only(http, handler, options, None).await?;
    tracing::info!(
        "ucs: serving {} from {} at {} on {}",
        describe_videos(&config.videos),
        describe_source(&config.media_dir),
        config.url,
        running.http
    );
    Ok(running)
}

/// A dCS: HTTP at once (503 until assigned, unless it fetches from the origin) and the control
/// service that receives its assignment.
pub async fn start_dcs(
    config: &DcsConfig,
    identity: Arc<Identity>,
    http: SocketAddr,
    control_bind: SocketAddr,
) -> Result<Running, String> {
    let (published, assignment) = watch::channel(None);
    let control_service = Arc::new(DcsControl::new(config.drr_node.clone(), published));
    let callers = control_service.callers();
    let control = control::serve(control_bind, &identity, callers, move |_peer, request| {
        let service = control_service.clone();
        async move { service.handle(request) }
    })
    .await
    .map_err(|e| e.to_string())?;
    let origin = config
        .fetch_from_origin
        .clone()
        .map(|url| (url, config.origin_timeout));
    let server = Arc::new(ContentServer::edge(
        Source::new(config.media_dir.clone()),
        assignment,
        origin,
    )?);
    let handler = Arc::new(move |request: hyper::Request<()>| {
        let server = server.clone();
        async move { server.handle(request).await }
    });
    let options = ServeOptions {
        role: "dcs",
        access_log: config.access_log,
    };
    let running = spawn_head_only(http, handler, options, Some(control)).await?;
    tracing::info!(
        "dcs: serving assigned chunks ({}) on {}; control on {} for node {}; fetch from origin: {}",
        describe_source(&config.media_dir),
        running.http,
        control_bind_addr(&running),
        config.drr_node,
        config
            .fetch_from_origin
            .as_ref()
            .map_or("off".to_string(), |u| u.to_string())
    );
    Ok(running)
}

/// The dRR: HTTP at once (503 until the uRR's offer arrives) and the control service.
pub async fn start_drr(
    config: &DrrConfig,
    identity: Arc<Identity>,
    http: SocketAddr,
    control_bind: SocketAddr,
) -> Result<Running, String> {
    let (published, locations) = watch::channel(None);
    let service = Arc::new(DrrControl::new(
        config.urr_node.clone(),
        config.dcs.clone(),
        config.assign.clone(),
        config.exchange_timeout,
        identity.clone(),
        published,
    ));
    let control = control::serve(
        control_bind,
        &identity,
        service.callers(),
        move |_peer, request| service.clone().handle(request),
    )
    .await
    .map_err(|e| e.to_string())?;
    let router = Arc::new(DownstreamRouter::new(locations));
    let handler =
        Arc::new(move |request: hyper::Request<()>| std::future::ready(router.handle(&request)));
    let options = ServeOptions {
        role: "drr",
        access_log: config.access_log,
    };
    let running = spawn_head_only(http, handler, options, Some(control)).await?;
    let dcs: Vec<String> = config
        .dcs
        .iter()
        .map(|p| format!("{} ({})", p.url, p.control))
        .collect();
    tracing::info!(
        "drr: HTTP on {}, control on {} for node {}; dCS: {}; assign {}",
        running.http,
        control_bind_addr(&running),
        config.urr_node,
        dcs.join(", "),
        describe_assign(&config.assign)
    );
    Ok(running)
}

/// The uRR: places chunks, offers them to the dRR until it answers with locations (bounded by
/// `exchange_timeout`), and only then listens. Without a dRR (`offload = "none"`) it needs no
/// identity and routes everything upstream.
pub async fn start_urr(
    config: &UrrConfig,
    identity: Option<Arc<Identity>>,
    http: SocketAddr,
) -> Result<Running, String> {
    let request = offload_request(config)?;
    let offloaded: usize = request.videos.iter().map(|v| v.placement.count()).sum();
    let total: usize = request.videos.iter().map(|v| v.video.segments()).sum();
    tracing::info!(
        "urr: {}; offload {}: {offloaded} of {total} chunk indices downstream; upstream {} by {}",
        describe_videos(&config.videos),
        config.offload,
        config
            .upstream
            .iter()
            .map(|u| u.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        describe_assign(&config.assign)
    );
    let (locations, drr_url) = match &config.drr {
        Some(drr) => {
            let identity = identity
                .ok_or("the chunk-location exchange with the dRR needs this node's certificate")?;
            tracing::info!(
                "urr: offering the placement to {} at {}",
                drr.node,
                drr.control
            );
            let deadline = tokio::time::Instant::now() + config.exchange_timeout;
            let table = offer(&request, drr, &identity, deadline)
                .await
                .map_err(|e| format!("chunk-location exchange with the dRR: {e}"))?;
            (table, drr.url.clone())
        }
        None => (
            build_locations(&request, &[], &Assign::RoundRobin)?,
            config.url.clone(),
        ),
    };
    let router = Arc::new(UpstreamRouter::new(locations, config.url.clone(), drr_url));
    let handler =
        Arc::new(move |request: hyper::Request<()>| std::future::ready(router.handle(&request)));
    let options = ServeOptions {
        role: "urr",
        access_log: config.access_log,
    };
    let running = spawn_head_only(http, handler, options, None).await?;
    tracing::info!("urr: routing at {} on {}", config.url, running.http);
    Ok(running)
}

fn control_bind_addr(running: &Running) -> String {
    running
        .control
        .map_or_else(|| "-".to_string(), |a| a.to_string())
}

fn describe_videos(videos: &[Video]) -> String {
    let each: Vec<String> = videos
        .iter()
        .map(|v| {
            let ladder: Vec<&str> = v.qualities().iter().map(|q| q.id.as_str()).collect();
            format!(
                "{} ({} × {} ms at {})",
                v.name(),
                v.segments(),
                v.segment_duration_ms(),
                ladder.join("/")
            )
        })
        .collect();
    format!("videos {}", each.join(", "))
}

fn describe_source(media_dir: &Option<PathBuf>) -> String {
    match media_dir {
        Some(dir) => format!("files under {}", dir.display()),
        None => "synthetic payloads".to_string(),
    }
}

fn describe_assign(assign: &Assign) -> String {
    match assign {
        Assign::ConsistentHash { vnodes } => format!("consistent-hash:{vnodes}"),
        Assign::RoundRobin => "round-robin".to_string(),
        Assign::LeastLoaded { .. } => "least-loaded".to_string(),
    }
}

/// The node name a role's default URL uses: `$CDNLAB_NODE`, else `localhost`.
fn url_node(start: &Start) -> &str {
    start.env.node.as_deref().unwrap_or("localhost")
}

/// `ucs --config FILE`: serves until stopped.
pub async fn ucs(start: Start) -> Result<(), String> {
    let config = start.parse(|table| UcsConfig::parse(table, url_node(&start)))?;
    serve_until_stopped(start.shutdown, start_ucs(&config, any_address(config.port))).await
}

/// `dcs --config FILE`: serves until stopped.
pub async fn dcs(start: Start) -> Result<(), String> {
    let config = start.parse(DcsConfig::parse)?;
    let identity = load_identity(&start.env)?;
    let (http, control) = (any_address(config.port), any_address(config.control_port));
    serve_until_stopped(start.shutdown, start_dcs(&config, identity, http, control)).await
}

/// `drr --config FILE`: serves until stopped.
pub async fn drr(start: Start) -> Result<(), String> {
    let config = start.parse(DrrConfig::parse)?;
    let identity = load_identity(&start.env)?;
    let (http, control) = (any_address(config.port), any_address(config.control_port));
    serve_until_stopped(start.shutdown, start_drr(&config, identity, http, control)).await
}

/// `urr --config FILE`: the chunk-location exchange (if it has a dRR), then serves until
/// stopped.
pub async fn urr(start: Start) -> Result<(), String> {
    let config = start.parse(|table| UrrConfig::parse(table, url_node(&start)))?;
    let identity = match &config.drr {
        Some(_) => Some(load_identity(&start.env)?),
        None => None,
    };
    serve_until_stopped(
        start.shutdown,
        start_urr(&config, identity, any_address(config.port)),
    )
    .await
}
