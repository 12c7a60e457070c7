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
use crate::cdn::hashing::hash64;
use crate::cdn::Payload;
use crate::control::Callers;
use crate::roles::config::Keys;
use crate::roles::control::load_identity;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use crate::roles::env::NodeEnv;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{self as http, error};
use crate::roles::http::spawn_http;
use crate::roles::http::{Body, ServeOptions};
use crate::roles::links;
use hyper::header::HeaderValue;
use hyper::{Request, Response, StatusCode};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
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
    /// The node at the other end of the site's link (in a container also the name of the
    /// link's network): C_m is that link's current rate.
    pub capacity_link: Option<String>,
    pub apps: Vec<String>,
    pub object_size: u64,
    /// Distinct regions counted apart between two measurements; bytes of any further region
    /// count under [`OVERFLOW_REGION`].
    pub max_regions: usize,
}

/// Where the bytes of regions past `max_regions` are counted. The region is what a client's
/// `x-icn-region` header says, so the map needs a bound; the bytes are still counted (under this
/// key, which the controller knows no region by) so that the site's load d_m stays whole.
pub const OVERFLOW_REGION: &str = "(other regions)";

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
            "max_regions",
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
    if !(1..=super::MAX_OBJECT_BYTES).contains(&object_size) {
        return keys.fail(
            "object_size",
            format!("must be 1 to {} bytes", super::MAX_OBJECT_BYTES),
        );
    }
    Ok(SiteConfig {
        controller: keys
            .string("controller")?
            .unwrap_or("controller")
            .to_string(),
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        capacity_bps,
        capacity_link: keys.string("capacity_link")?.map(str::to_string),
        apps: keys.items("apps")?,
        object_size,
        // Its demand report is a control message: 4096 regions × a few applications fit.
        max_regions: keys.count_within("max_regions", 64, 1..=4096)?,
    })
}

/// The SM module's counters since the last measurement.
struct Counters {
    since: Instant,
    demand: DemandCounter,
}

/// Bytes served per (application, region), with at most `max_regions` regions apart.
struct DemandCounter {
    max_regions: usize,
    bytes: BTreeMap<(String, String), u64>,
    regions: BTreeSet<String>,
}

impl DemandCounter {
    fn new(max_regions: usize) -> DemandCounter {
        DemandCounter {
            max_regions,
            bytes: BTreeMap::new(),
            regions: BTreeSet::new(),
        }
    }

    /// Counts `bytes` of `app` for `region`. A region that is not a well-formed name (a
    /// region's name follows the rule for node names, at most 63 bytes) is counted with the
    /// overflow, so no header can make the counts, or the report that carries them, large.
    fn add(&mut self, app: &str, region: &str, bytes: u64) {
        let named = crate::topology::check_node_name(region, "region").is_ok();
        let region =
            if named && (self.regions.contains(region) || self.regions.len() < self.max_regions) {
                self.regions.insert(region.to_string());
                region
            } else {
                OVERFLOW_REGION
            };
        *self
            .bytes
            .entry((app.to_string(), region.to_string()))
            .or_default() += bytes;
    }

    /// The counts so far, starting again from none.
    fn take(&mut self) -> Vec<Demand> {
        self.regions.clear();
        std::mem::take(&mut self.bytes)
            .into_iter()
            .map(|((app, region), bytes)| Demand { app, region, bytes })
            .collect()
    }
}

struct Site {
    node: String,
    env: NodeEnv,
    config: SiteConfig,
    counters: Mutex<Counters>,
}

impl Site {
    fn handle_http(&self, request: &Request<hyper::body::Incoming>) -> Response<Body> {
        if let Some(refusal) = http::refuse_method(request.method()) {
            return refusal;
        }
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
            .unwrap_or("unknown");
        let size = self.config.object_size;
        // A HEAD sends no bytes, so it is no demand on the site.
        if request.method() == hyper::Method::GET {
            self.counters
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .demand
                .add(app, region, size);
        }
        let mut response = http::payload(
            // A stable hash of the name: the same bytes at every site.
            Payload::numbered(hash64(path.as_bytes())),
            size,
        );
        if let Ok(value) = HeaderValue::from_str(&self.node) {
            response.headers_mut().insert("x-icn-site", value);
        }
        response
    }

    /// C_m now: the rate of the site's link towards `capacity_link` (a node in a lab, a
    /// network in a container; `roles::links`), else the configured capacity.
    fn capacity_bps(&self) -> u64 {
        self.config
            .capacity_link
            .as_deref()
            .and_then(|peer| links::egress_rate_bps(&self.env, peer))
            .unwrap_or(self.config.capacity_bps)
    }

    fn measure(&self) -> SiteUsage {
        let (interval_s, demand) = {
            let mut counters = self.counters.lock().unwrap_or_else(|p| p.into_inner());
            let interval_s = counters.since.elapsed().as_secs_f64();
            counters.since = Instant::now();
            (interval_s, counters.demand.take())
        };
        SiteUsage {
            site: self.node.clone(),
            interval_s,
            capacity_bps: self.capacity_bps() as f64,
            demand,
        }
    }
}

pub async fn run(
    config: SiteConfig,
    env: NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let node = env.node_name();
    let identity = load_identity(&env)?;
    let site = Arc::new(Site {
        node,
        env,
        config: config.clone(),
        counters: Mutex::new(Counters {
            since: Instant::now(),
            demand: DemandCounter::new(config.max_regions),
        }),
    });
    let for_control = site.clone();
    // Measuring restarts the counters: a second reader would steal the controller's demand.
    let control = crate::control::serve(
        any_address(config.control_port),
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
    tracing::info!(
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
    spawn_http(any_address(config.port), handler, options, Some(control))
        .await?
        .run_until(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icn_roles::MAX_OBJECT_BYTES;

    fn demand(app: &str, region: &str, bytes: u64) -> Demand {
        Demand {
            app: app.into(),
            region: region.into(),
            bytes,
        }
    }

    /// However many regions clients name, the counter holds `max_regions` of them apart and
    /// the rest under one key, every byte counted; a measurement starts the regions afresh.
    #[test]
    fn regions_past_the_bound_share_one_overflow_key() {
        let mut counter = DemandCounter::new(2);
        for i in 0..1000 {
            counter.add("a1", &format!("r{i}"), 10);
        }
        counter.add("a1", "r0", 5);
        counter.add("a2", "r1", 1);
        assert_eq!(
            counter.take(),
            [
                demand("a1", OVERFLOW_REGION, 9980),
                demand("a1", "r0", 15),
                demand("a1", "r1", 10),
                demand("a2", "r1", 1),
            ]
        );
        counter.add("a1", "r7", 3);
        assert_eq!(counter.take(), [demand("a1", "r7", 3)]);
        // A name no region can have takes no place of its own, however long.
        counter.add("a1", &"x".repeat(400_000), 4);
        counter.add("a1", "R1", 2);
        assert_eq!(counter.take(), [demand("a1", OVERFLOW_REGION, 6)]);
    }

    /// An object size a router or border could not read whole, or more regions than a report
    /// can carry, is refused by name.
    #[test]
    fn object_sizes_and_regions_are_bounded() {
        let site = |size: u64| {
            let text = format!("capacity = \"8mbit\"\napps = [\"app1\"]\nobject_size = {size}");
            config(&text.parse::<Table>().unwrap())
        };
        assert_eq!(
            site(MAX_OBJECT_BYTES).unwrap().object_size,
            MAX_OBJECT_BYTES
        );
        for bad in [0, MAX_OBJECT_BYTES + 1] {
            let refused = site(bad).unwrap_err();
            assert!(refused.contains("object_size"), "{refused}");
        }
        let regions = "capacity = \"8mbit\"\napps = [\"app1\"]\nmax_regions = 100000";
        let refused = config(&regions.parse::<Table>().unwrap()).unwrap_err();
        assert!(refused.contains("max_regions"), "{refused}");
    }
}
