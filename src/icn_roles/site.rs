//! `cdn-site`: a telco CDN site (papers/000, Section 3): a content server holding every object
//! of the applications it serves, and its SM module, which counts the bytes served per
//! (application, region) — the region is the `x-icn-region` header the border router sets — and
//! hands them to the controller on request. Its bandwidth capacity C_m is the rate of its link:
//! under `cdnlab up` the SM reads that link's current rate from the lab's state (so a timeline
//! event that lowers it changes C_m), in a testbed container from the container's link state
//! (so `scripts/set-bandwidth.sh --compose` does), elsewhere the configured `capacity`.
//!
//! HTTP: `GET /APP/NAME…` an object of `object_size` bytes (404 for an application it does not
//! serve), with `x-icn-site: NODE`; `GET /.site/probe` a few bytes, not counted (the border
//! routers' latency probes). Control plane: [`SiteRequest::Measure`].

use super::messages::{Demand, SiteRequest, SiteResponse, SiteUsage};
use crate::cdn::Payload;
use crate::cdn_roles::http::{self, error};
use crate::cdn_roles::run::{load_identity, spawn_http};
use crate::cdn_roles::{Body, ServeOptions};
use crate::control::Callers;
use crate::role_config::Keys;
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use toml::Table;

#[derive(Debug, Clone)]
pub struct SiteConfig {
    /// The controller's node name: the only node that may read the SM module's measurements.
    pub controller: String,
    pub port: u16,
    pub control_port: u16,
    /// C_m when it cannot be read from the lab, bits per second.
    pub capacity_bps: u64,
    /// The node at the other end of the site's link (in a lab) or the compose network of its
    /// link (in a container): C_m is that link's current rate.
    pub capacity_link: Option<String>,
    pub apps: Vec<String>,
    pub object_size: u64,
}

pub fn config(table: &Table) -> Result<SiteConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "controller",
            "port",
            "control_port",
            "capacity",
            "capacity_link",
            "apps",
            "object_size",
        ],
        "role cdn-site",
    )?;
    let capacity_bps = match keys.string("capacity")? {
        Some(text) => netem::units::parse_rate_bps(text).or_else(|e| keys.fail("capacity", e))?,
        None => return keys.fail("capacity", "is required: the site's bandwidth (`8mbit`)"),
    };
    if capacity_bps == 0 {
        return keys.fail("capacity", "must be above zero");
    }
    let object_size = keys.integer("object_size")?.unwrap_or(10_000);
    if object_size == 0 {
        return keys.fail("object_size", "must be at least one byte");
    }
    Ok(SiteConfig {
        controller: keys
            .string("controller")?
            .unwrap_or("controller")
            .to_string(),
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", 4433)?,
        capacity_bps,
        capacity_link: keys.string("capacity_link")?.map(str::to_string),
        apps: keys.items("apps")?,
        object_size,
    })
}

/// The SM module's counters since the last measurement.
struct Counters {
    since: Instant,
    /// (application, region) → bytes.
    demand: BTreeMap<(String, String), u64>,
}

struct Site {
    node: String,
    config: SiteConfig,
    counters: Mutex<Counters>,
}

impl Site {
    fn handle_http(&self, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        let path = request.uri().path();
        if path == "/.site/probe" {
            return http::json(&serde_json::json!({ "site": self.node }));
        }
        let app = super::application(path);
        if !self.config.apps.iter().any(|a| a == app) || path.trim_matches('/') == app {
            return error(StatusCode::NOT_FOUND, format!("no object {path} here"));
        }
        let region = request
            .headers()
            .get("x-icn-region")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("unknown")
            .to_string();
        let size = self.config.object_size;
        {
            let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
            *counters
                .demand
                .entry((app.to_string(), region))
                .or_default() += size;
        }
        let mut response = http::payload(Payload::numbered(name_key(path)), size);
        if let Ok(value) = HeaderValue::from_str(&self.node) {
            response.headers_mut().insert("x-icn-site", value);
        }
        response
    }

    /// C_m now: the rate of the site's link — towards node `capacity_link` in a lab, or of
    /// compose network `capacity_link` in a testbed container — else the configured capacity.
    fn capacity_bps(&self) -> u64 {
        let link = self.config.capacity_link.as_deref();
        let in_lab = |peer| {
            let state = crate::lab::LabState::load(&std::env::var("CDNLAB_LAB").ok()?).ok()?;
            state.egress_rate_bps(&self.node, peer).flatten()
        };
        let in_container = |net: &str| {
            let state = crate::container::links::ContainerState::load().ok()?;
            state
                .nets
                .iter()
                .find(|n| n.name == net)?
                .impairments
                .rate_bps
        };
        link.and_then(|l| in_lab(l).or_else(|| in_container(l)))
            .unwrap_or(self.config.capacity_bps)
    }

    fn measure(&self) -> SiteUsage {
        let (interval_s, demand) = {
            let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
            let interval_s = counters.since.elapsed().as_secs_f64();
            counters.since = Instant::now();
            (interval_s, std::mem::take(&mut counters.demand))
        };
        SiteUsage {
            site: self.node.clone(),
            interval_s,
            capacity_bps: self.capacity_bps() as f64,
            demand: demand
                .into_iter()
                .map(|((app, region), bytes)| Demand { app, region, bytes })
                .collect(),
        }
    }
}

/// The same name gives the same bytes at every site (FNV-1a of the path).
fn name_key(path: &str) -> u64 {
    path.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub async fn run(config: SiteConfig, shutdown: impl Future<Output = ()>) -> Result<(), String> {
    let node = crate::probe::node_name();
    let identity = load_identity(Some(&node))?;
    let any = |port| SocketAddr::from(([0, 0, 0, 0], port));
    let site = Arc::new(Site {
        node,
        config: config.clone(),
        counters: Mutex::new(Counters {
            since: Instant::now(),
            demand: BTreeMap::new(),
        }),
    });
    let for_control = site.clone();
    // Measuring restarts the counters: a second reader would steal the controller's demand.
    let control = crate::control::serve(
        any(config.control_port),
        &identity,
        Callers::only("CDN site's SM module", [config.controller.clone()]),
        move |_peer, request: SiteRequest| {
            let site = for_control.clone();
            async move {
                match request {
                    SiteRequest::Measure => SiteResponse::Usage(site.measure()),
                }
            }
        },
    )
    .await
    .map_err(|e| e.to_string())?;
    eprintln!(
        "cdn-site {}: applications {}; objects of {} bytes; capacity {} bit/s",
        site.node,
        config.apps.join(", "),
        config.object_size,
        site.capacity_bps()
    );
    let handler = move |request: Request<hyper::body::Incoming>| {
        let site = site.clone();
        async move { site.handle_http(&request) }
    };
    let options = ServeOptions {
        role: "cdn-site",
        access_log: false,
    };
    spawn_http(any(config.port), handler, options, Some(control))
        .await?
        .run_until(shutdown)
        .await
}
