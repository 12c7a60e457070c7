//! Wiring each role to its sockets: what `bins/{ucs,dcs,urr,drr}.rs` run, and what the loopback
//! tests start with `127.0.0.1` addresses.
//!
//! Readiness is the HTTP port: every role listens only once it can answer, and the uRR only
//! after the chunk-location exchange, so a topology's `ready = { tcp = PORT }` on the uRR means
//! routing is ready. (The dRR and dCS listen at once: the dRR answers 503 and a dCS 503 or from
//! the origin until their locations arrive, which the uRR's readiness implies.)

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::config::{read_table, DcsConfig, DrrConfig, UcsConfig, UrrConfig};
use super::content_server::{ContentServer, Source};
use super::exchange::{build_locations, offload_request};
use super::exchange_io::{offer, DcsControl, DrrControl};
use super::request_router::{DownstreamRouter, UpstreamRouter};
use super::server::{serve_http, shutdown_signal, ServeOptions};
use crate::cdn::{Assign, Video};
use crate::control::{self, Identity, ServerHandle};

/// A role server running in the background.
pub struct Running {
    /// Where HTTP listens (the real port when bound to port 0).
    pub http: SocketAddr,
    /// Where the control service listens, for the dRR and dCS.
    pub control: Option<SocketAddr>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<io::Result<()>>,
}

impl Running {
    /// Stops accepting, drains in-flight requests (bounded), closes the control service.
    pub async fn stop(self) -> Result<(), String> {
        let _ = self.stop.send(());
        join(self.task).await
    }

    /// Runs until `shutdown` resolves (then stops gracefully) or the server fails.
    pub async fn run_until(mut self, shutdown: impl Future<Output = ()>) -> Result<(), String> {
        tokio::select! {
            () = shutdown => self.stop().await,
            finished = &mut self.task => join_result(finished),
        }
    }
}

async fn join(task: JoinHandle<io::Result<()>>) -> Result<(), String> {
    join_result(task.await)
}

fn join_result(result: Result<io::Result<()>, tokio::task::JoinError>) -> Result<(), String> {
    match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("HTTP server: {e}")),
        Err(e) => Err(format!("HTTP server task: {e}")),
    }
}

/// Listens on `http` and serves `handler` in a task; `control` (if any) lives as long.
pub(crate) async fn spawn_http<H, Fut>(
    http: SocketAddr,
    handler: H,
    options: ServeOptions,
    control: Option<ServerHandle>,
) -> Result<Running, String>
where
    H: Fn(hyper::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = hyper::Response<super::Body>> + Send + 'static,
{
    let listener = TcpListener::bind(http)
        .await
        .map_err(|e| format!("listening for HTTP on {http}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let control_addr = control.as_ref().map(ServerHandle::local_addr);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let result = serve_http(listener, handler, options, async {
            let _ = stopped.await;
        })
        .await;
        drop(control);
        result
    });
    Ok(Running {
        http: local,
        control: control_addr,
        stop,
        task,
    })
}

/// The uCS: the origin, all chunks and manifests.
pub async fn start_ucs(config: &UcsConfig, http: SocketAddr) -> Result<Running, String> {
    let server = Arc::new(ContentServer::origin(
        config.videos.clone(),
        config.url.clone(),
        Source::new(config.media_dir.clone()),
    )?);
    let handler = move |request| {
        let server = server.clone();
        async move { server.handle(request).await }
    };
    let options = ServeOptions {
        role: "ucs",
        access_log: config.access_log,
    };
    let running = spawn_http(http, handler, options, None).await?;
    eprintln!(
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
    let handler = move |request| {
        let server = server.clone();
        async move { server.handle(request).await }
    };
    let options = ServeOptions {
        role: "dcs",
        access_log: config.access_log,
    };
    let running = spawn_http(http, handler, options, Some(control)).await?;
    eprintln!(
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
    let handler = move |request| {
        let router = router.clone();
        async move { router.handle(&request) }
    };
    let options = ServeOptions {
        role: "drr",
        access_log: config.access_log,
    };
    let running = spawn_http(http, handler, options, Some(control)).await?;
    let dcs: Vec<String> = config
        .dcs
        .iter()
        .map(|p| format!("{} ({})", p.url, p.control))
        .collect();
    eprintln!(
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
    eprintln!(
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
            eprintln!(
                "urr: offering the placement to {} at {}",
                drr.node, drr.control
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
    let handler = move |request| {
        let router = router.clone();
        async move { router.handle(&request) }
    };
    let options = ServeOptions {
        role: "urr",
        access_log: config.access_log,
    };
    let running = spawn_http(http, handler, options, None).await?;
    eprintln!("urr: routing at {} on {}", config.url, running.http);
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

/// `ROLE --config FILE`.
#[derive(Parser)]
struct Args {
    /// The node's config table as TOML (what `cdnlab up` writes).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
}

/// The four role binaries' `main`: parses `--config`, runs the role until SIGTERM or SIGINT.
pub fn main(role: &'static str) -> ExitCode {
    crate::roles::init_logs();
    let args = Args::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))
        .and_then(|runtime| runtime.block_on(run(role, args.config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{role}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(role: &'static str, config: PathBuf) -> Result<(), String> {
    let table = read_table(&config)?;
    let in_file = |e: String| format!("{}: {e}", config.display());
    let node = std::env::var("CDNLAB_NODE").ok();
    let node_or_localhost = node.as_deref().unwrap_or("localhost");
    let shutdown = shutdown_signal()
        .await
        .map_err(|e| format!("installing signal handlers: {e}"))?;
    let mut shutdown = std::pin::pin!(shutdown);
    let any = |port| SocketAddr::from(([0, 0, 0, 0], port));
    let starting = async {
        match role {
            "ucs" => {
                let config = UcsConfig::parse(&table, node_or_localhost).map_err(in_file)?;
                start_ucs(&config, any(config.port)).await
            }
            "dcs" => {
                let config = DcsConfig::parse(&table).map_err(in_file)?;
                let identity = load_identity(node.as_deref())?;
                start_dcs(
                    &config,
                    identity,
                    any(config.port),
                    any(config.control_port),
                )
                .await
            }
            "drr" => {
                let config = DrrConfig::parse(&table).map_err(in_file)?;
                let identity = load_identity(node.as_deref())?;
                start_drr(
                    &config,
                    identity,
                    any(config.port),
                    any(config.control_port),
                )
                .await
            }
            "urr" => {
                let config = UrrConfig::parse(&table, node_or_localhost).map_err(in_file)?;
                let identity = match &config.drr {
                    Some(_) => Some(load_identity(node.as_deref())?),
                    None => None,
                };
                start_urr(&config, identity, any(config.port)).await
            }
            other => Err(format!("unknown role {other:?}")),
        }
    };
    let running = tokio::select! {
        running = starting => running?,
        () = &mut shutdown => return Ok(()),
    };
    running.run_until(shutdown).await
}

/// This node's control-plane identity: `$CDNLAB_NODE`'s certificate from `$CDNLAB_CERTS` (or
/// the lab's state directory named by `$CDNLAB_LAB`).
pub(crate) fn load_identity(node: Option<&str>) -> Result<Arc<Identity>, String> {
    let node = node.ok_or(
        "CDNLAB_NODE is not set: the control plane needs this node's name (run under `cdnlab up`)",
    )?;
    let dir = match std::env::var_os("CDNLAB_CERTS") {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var("CDNLAB_LAB") {
            Ok(lab) => crate::lab::state::lab_dir(&lab)
                .map_err(|e| format!("CDNLAB_LAB: {e}"))?
                .join("certs"),
            Err(_) => return Err(
                "neither CDNLAB_CERTS nor CDNLAB_LAB is set: cannot find the lab's certificates"
                    .into(),
            ),
        },
    };
    Identity::load(&dir, node)
        .map(Arc::new)
        .map_err(|e| format!("loading the control-plane identity of node {node}: {e}"))
}
