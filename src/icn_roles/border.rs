//! `icn-border`: the border router of an ICN region (papers/000, Section 3, R2 in Figure 1).
//! The region's ICN routers send it their cache misses; it sends application n's misses to CDN
//! site m in the proportions α_nlm of its FIB rules — a smooth weighted split, so every window
//! of requests follows the shares — marking each with the region (`x-icn-region`). Until the
//! controller installs rules, every application goes to the region's nearest site (`home`);
//! a border that loses the controller keeps forwarding on the last rules it was given.
//!
//! Its part of the SM module: it probes every site's round trip and reports the latencies, with
//! the version of the rules it forwards by, to the controller ([`BorderRequest::Report`]). The latency it reports for
//! a site, t_lm, is the smallest round trip of the last `latency_window` (30 s), as TCP BBR
//! estimates a path's propagation delay: the paper's t_lm is a property of the path between
//! region and site, and congestion reaches PARM through θ_m and (4b). Queueing at an overloaded
//! site would otherwise enter t_lm just when the mapping has to move, and since (4b)'s lower
//! bound keeps loading that site, make (4c) infeasible (measured: with the period's median,
//! 0.6–3.5 s, PARM was infeasible from the first period after a site's rate drop; with the
//! period's minimum, 0.44–1.9 s, a standing queue, still so).

use super::messages::{AppRule, BorderReport, BorderRequest, BorderResponse, FibRules};
use crate::control::{Callers, Identity, ServerHandle};
use crate::icn::split::SmoothSplit;
use crate::roles::config::Keys;
use crate::roles::control::load_identity;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use crate::roles::env::NodeEnv;
use crate::roles::fetch::body_at_most;
use crate::roles::http::any_address;
use crate::roles::http::semantics::{error, refuse_method};
use crate::roles::http::spawn_http;
use crate::roles::http::{Body, ServeOptions};
use hyper::header::{HeaderValue, CONTENT_LENGTH};
use hyper::{Request, Response, StatusCode};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toml::Table;

#[derive(Debug, Clone)]
pub struct BorderConfig {
    /// The region's name, as sites and the controller know it.
    pub region: String,
    /// The controller's node name: the only node that may install rules or read reports.
    pub controller: String,
    /// The CDN sites' node names.
    pub sites: Vec<String>,
    /// The site nearest the region: every application's misses go there until rules arrive.
    pub home: String,
    pub apps: Vec<String>,
    pub port: u16,
    pub control_port: u16,
    pub site_port: u16,
    pub probe_interval: Duration,
    /// t_lm is the smallest probe round trip within this long.
    pub latency_window: Duration,
    pub timeout: Duration,
}

pub fn config(table: &Table) -> Result<BorderConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "region",
            "controller",
            "sites",
            "home",
            "apps",
            "port",
            "control_port",
            "site_port",
            "probe_interval",
            "latency_window",
            "timeout",
        ],
        "role icn-border",
    )?;
    let sites = keys.node_names("sites", super::controller::MAX_NODES)?;
    let home = match keys.string("home")? {
        Some(home) if sites.iter().any(|s| s == home) => home.to_string(),
        Some(home) => return keys.fail("home", format!("`{home}` is not one of `sites`")),
        None => return keys.fail("home", "is required: the region's nearest site"),
    };
    let positive = |key: &str, default: Duration| -> Result<Duration, String> {
        match keys.duration(key)? {
            Some(d) if d.is_zero() => keys.fail(key, "must be above zero"),
            d => Ok(d.unwrap_or(default)),
        }
    };
    Ok(BorderConfig {
        region: match keys.string("region")? {
            Some(region) => {
                crate::topology::check_node_name(region, "region")
                    .or_else(|e| keys.fail("region", e))?;
                region.to_string()
            }
            None => return keys.fail("region", "is required"),
        },
        controller: keys
            .string("controller")?
            .unwrap_or("controller")
            .to_string(),
        sites,
        home,
        apps: keys.items("apps")?,
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        site_port: keys.port("site_port", 80)?,
        probe_interval: positive("probe_interval", Duration::from_millis(500))?,
        latency_window: positive("latency_window", Duration::from_secs(30))?,
        timeout: positive("timeout", Duration::from_secs(4))?,
    })
}

/// The FIB rules in force: per application, the sites and their smooth split.
struct Rules {
    /// The controller's run the rules came from (None: the initial nearest-site rules).
    epoch: Option<u64>,
    version: u64,
    apps: BTreeMap<String, (Vec<String>, SmoothSplit)>,
}

impl Rules {
    /// Every application to `home`.
    fn nearest(apps: &[String], home: &str) -> Rules {
        let apps = apps
            .iter()
            .filter_map(|app| {
                let split = SmoothSplit::new(&[1.0]).ok()?;
                Some((app.clone(), (vec![home.to_string()], split)))
            })
            .collect();
        Rules {
            epoch: None,
            version: 0,
            apps,
        }
    }

    /// Checks every rule before replacing any: a bad set leaves the old rules in force, and so
    /// does one not newer than them from the same run of the controller (a call that arrived
    /// after the next one, say).
    fn install(&mut self, fib: &FibRules, known_sites: &[String]) -> Result<(), String> {
        if self.epoch == Some(fib.epoch) && fib.version <= self.version {
            return Err(format!(
                "rules {} are not newer than rules {} in force",
                fib.version, self.version
            ));
        }
        let mut apps = BTreeMap::new();
        for AppRule { app, sites } in &fib.rules {
            if let Some((site, _)) = sites.iter().find(|(s, _)| !known_sites.contains(s)) {
                return Err(format!("rule for {app}: unknown site {site}"));
            }
            let weights: Vec<f64> = sites.iter().map(|(_, w)| *w).collect();
            let split = SmoothSplit::new(&weights).map_err(|e| format!("rule for {app}: {e}"))?;
            let names = sites.iter().map(|(s, _)| s.clone()).collect();
            apps.insert(app.clone(), (names, split));
        }
        self.apps = apps;
        self.epoch = Some(fib.epoch);
        self.version = fib.version;
        Ok(())
    }

    fn pick(&mut self, app: &str) -> Option<String> {
        let (sites, split) = self.apps.get_mut(app)?;
        sites.get(split.next()).cloned()
    }
}

/// A windowed minimum, as TCP BBR's min_rtt filter: the smallest sample of the last `window`,
/// which a standing queue cannot raise while the window holds a sample from before it. With no
/// sample in the window (the site stopped answering) it keeps the last minimum it gave.
struct WindowedMin {
    window: Duration,
    samples: std::collections::VecDeque<(Instant, f64)>,
    last: Option<f64>,
}

impl WindowedMin {
    fn new(window: Duration) -> WindowedMin {
        WindowedMin {
            window,
            samples: std::collections::VecDeque::new(),
            last: None,
        }
    }

    /// Samples older than the window go now too, so a border nobody asks for reports (its
    /// controller gone) holds one window of them, not every probe since.
    fn observe(&mut self, at: Instant, value: f64) {
        self.forget_before(at);
        self.samples.push_back((at, value));
    }

    fn current(&mut self, now: Instant) -> Option<f64> {
        self.forget_before(now);
        if let Some(min) = self.samples.iter().map(|(_, v)| *v).reduce(f64::min) {
            self.last = Some(min);
        }
        self.last
    }

    fn forget_before(&mut self, now: Instant) {
        while self
            .samples
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > self.window)
        {
            self.samples.pop_front();
        }
    }
}

struct Border {
    config: BorderConfig,
    client: reqwest::Client,
    rules: Mutex<Rules>,
    /// Per site: the windowed minimum of its probe round trips (ms).
    probes: Mutex<BTreeMap<String, WindowedMin>>,
}

impl Border {
    async fn handle_http(&self, request: Request<hyper::body::Incoming>) -> Response<Body> {
        if let Some(refusal) = refuse_method(request.method()) {
            return refusal;
        }
        let path = request.uri().path().to_string();
        let app = super::application(&path);
        let site = self
            .rules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pick(app);
        let Some(site) = site else {
            return error(
                StatusCode::NOT_FOUND,
                format!(
                    "no FIB rule for {path} (applications: {})",
                    self.config.apps.join(", ")
                ),
            );
        };
        let url = format!("http://{site}:{}{path}", self.config.site_port);
        match self.fetch(request.method(), &url).await {
            Ok(response) => response,
            Err(e) => error(StatusCode::BAD_GATEWAY, format!("{url}: {e}")),
        }
    }

    /// Asks the site with the client's own method (GET or HEAD): a HEAD is no demand on the
    /// site, and its answer keeps the site's length with no body.
    async fn fetch(&self, method: &hyper::Method, url: &str) -> Result<Response<Body>, String> {
        let upstream = self
            .client
            .request(method.clone(), url)
            .header("x-icn-region", &self.config.region)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = upstream.status();
        let site = upstream.headers().get("x-icn-site").cloned();
        let stated = upstream.headers().get(CONTENT_LENGTH).cloned();
        let body = body_at_most(upstream, super::MAX_OBJECT_BYTES).await?;
        let length = match stated {
            Some(stated) if method == hyper::Method::HEAD => stated,
            _ => HeaderValue::from(body.len()),
        };
        let mut response = Response::new(Body::bytes(body));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_LENGTH, length);
        if let Some(site) = site {
            headers.insert("x-icn-site", site);
        }
        Ok(response)
    }

    fn handle_control(&self, request: BorderRequest) -> BorderResponse {
        match request {
            BorderRequest::Install(fib) => {
                let mut rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
                match rules.install(&fib, &self.config.sites) {
                    Ok(()) => BorderResponse::Installed {
                        version: fib.version,
                    },
                    Err(e) => BorderResponse::Refused(e),
                }
            }
            BorderRequest::Report => BorderResponse::Report(self.report()),
        }
    }

    fn report(&self) -> BorderReport {
        let now = Instant::now();
        let mut probes = self.probes.lock().unwrap_or_else(|p| p.into_inner());
        let latency_ms = probes
            .iter_mut()
            .filter_map(|(site, min)| Some((site.clone(), min.current(now)?)))
            .collect();
        let (rules_epoch, rules_version) = {
            let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
            (rules.epoch, rules.version)
        };
        BorderReport {
            region: self.config.region.clone(),
            rules_epoch,
            rules_version,
            latency_ms,
        }
    }

    /// Probes `site`'s round trip every `probe_interval` over a kept connection. A probe not
    /// back within the interval is timed when it does come back, so queueing at a congested
    /// site shows in full.
    async fn probe(self: Arc<Self>, site: String) {
        let url = format!("http://{site}:{}/.site/probe", self.config.site_port);
        let mut ticker = tokio::time::interval(self.config.probe_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let started = Instant::now();
            let answered = match self.client.get(&url).send().await {
                Ok(response) => crate::roles::fetch::drain_body(response).await.is_ok(),
                Err(_) => false,
            };
            if answered {
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                let mut probes = self.probes.lock().unwrap_or_else(|p| p.into_inner());
                probes
                    .entry(site.clone())
                    .or_insert_with(|| WindowedMin::new(self.config.latency_window))
                    .observe(Instant::now(), ms);
            }
        }
    }
}

impl Border {
    fn new(config: BorderConfig) -> Result<Arc<Border>, String> {
        let client = crate::roles::fetch::client()
            .timeout(config.timeout)
            .pool_idle_timeout(None)
            .build()
            .map_err(|e| format!("building the HTTP client: {e}"))?;
        Ok(Arc::new(Border {
            rules: Mutex::new(Rules::nearest(&config.apps, &config.home)),
            config,
            client,
            probes: Mutex::new(BTreeMap::new()),
        }))
    }

    /// The control service: rules and reports are the controller's alone.
    async fn serve_control(
        self: Arc<Self>,
        identity: &Identity,
        bind: SocketAddr,
    ) -> Result<ServerHandle, String> {
        let callers = Callers::only(
            "border router's FIB service",
            [self.config.controller.clone()],
        );
        crate::control::serve(
            bind,
            identity,
            callers,
            move |_peer, request: BorderRequest| {
                let border = self.clone();
                async move { border.handle_control(request) }
            },
        )
        .await
        .map_err(|e| e.to_string())
    }
}

pub async fn run(
    config: BorderConfig,
    env: &NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let node = env.node_name();
    let identity = load_identity(env)?;
    let border = Border::new(config.clone())?;
    let control = border
        .clone()
        .serve_control(&identity, any_address(config.control_port))
        .await?;
    for site in &config.sites {
        tokio::spawn(border.clone().probe(site.clone()));
    }
    tracing::info!(
        "icn-border {node}: region {}; sites {}; every application to {} until the controller's rules",
        config.region,
        config.sites.join(", "),
        config.home
    );
    let handler = move |request: Request<hyper::body::Incoming>| {
        let border = border.clone();
        async move { border.handle_http(request).await }
    };
    let options = ServeOptions {
        role: "icn-border",
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
    use crate::control::{issue_lab_certs, Client};
    use crate::icn_roles::messages::BorderReport;
    use crate::testing::TempDir;

    fn known() -> Vec<String> {
        vec!["s1".into(), "s2".into()]
    }

    #[test]
    fn nearest_site_until_rules_then_the_installed_shares() {
        let mut rules = Rules::nearest(&["a1".into(), "a2".into()], "s2");
        assert_eq!(rules.pick("a1").as_deref(), Some("s2"));
        assert_eq!(rules.pick("a3"), None, "no rule for an unknown application");
        let fib = FibRules {
            epoch: 1,
            version: 7,
            rules: vec![AppRule {
                app: "a1".into(),
                sites: vec![("s1".into(), 0.75), ("s2".into(), 0.25)],
            }],
        };
        rules.install(&fib, &known()).expect("valid rules");
        assert_eq!(rules.version, 7);
        let picks: Vec<String> = (0..8).filter_map(|_| rules.pick("a1")).collect();
        assert_eq!(picks.iter().filter(|s| *s == "s1").count(), 6, "{picks:?}");
        assert_eq!(rules.pick("a2"), None, "the new rules have no a2");

        // Rules of the same run no newer than those in force are refused; a controller
        // started again (another epoch) starts its versions afresh.
        let other = |epoch, version, site: &str| FibRules {
            epoch,
            version,
            rules: vec![AppRule {
                app: "a1".into(),
                sites: vec![(site.into(), 1.0)],
            }],
        };
        for version in [6, 7] {
            let e = rules
                .install(&other(1, version, "s2"), &known())
                .unwrap_err();
            assert!(e.contains("not newer than rules 7"), "{e}");
        }
        assert_eq!(
            rules.pick("a1").as_deref(),
            Some("s1"),
            "the old split goes on"
        );
        rules.install(&other(2, 1, "s2"), &known()).unwrap();
        assert_eq!((rules.epoch, rules.version), (Some(2), 1));
        assert_eq!(rules.pick("a1").as_deref(), Some("s2"));
        rules.install(&other(2, 2, "s1"), &known()).unwrap();
        assert_eq!(rules.pick("a1").as_deref(), Some("s1"));
    }

    #[test]
    fn bad_rules_leave_the_last_ones_in_force() {
        let mut rules = Rules::nearest(&["a1".into()], "s1");
        for sites in [
            vec![("s9".to_string(), 1.0)],
            vec![("s1".to_string(), -1.0), ("s2".to_string(), 2.0)],
            vec![("s1".to_string(), 0.0)],
        ] {
            let fib = FibRules {
                epoch: 1,
                version: 3,
                rules: vec![AppRule {
                    app: "a1".into(),
                    sites,
                }],
            };
            let e = rules.install(&fib, &known()).unwrap_err();
            assert!(e.starts_with("rule for a1"), "{e}");
            assert_eq!(rules.version, 0);
            assert_eq!(rules.pick("a1").as_deref(), Some("s1"));
        }
    }

    #[test]
    fn windowed_minimum_forgets_old_samples_but_not_the_last_minimum() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut min = WindowedMin::new(Duration::from_secs(30));
        assert_eq!(min.current(at(0)), None);
        min.observe(at(0), 25.0);
        min.observe(at(20), 400.0);
        assert_eq!(min.current(at(25)), Some(25.0), "a queue does not raise it");
        assert_eq!(
            min.current(at(40)),
            Some(400.0),
            "the 25 ms sample left the window"
        );
        assert_eq!(
            min.current(at(100)),
            Some(400.0),
            "no sample: the last minimum"
        );
        min.observe(at(101), 30.0);
        assert_eq!(min.current(at(101)), Some(30.0));
    }

    /// Another lab node with a valid certificate (a load generator) can neither install rules
    /// nor read reports; the controller can.
    #[tokio::test]
    async fn only_the_controller_installs_rules_or_reads_reports() {
        let dir = TempDir::new("border-callers");
        issue_lab_certs(&dir.0, "callers", &["border1", "controller", "load1"]).unwrap();
        let identity = |node| Identity::load(&dir.0, node).unwrap();
        let table: Table = r#"
            region = "r1"
            sites = ["s1", "s2"]
            home = "s1"
            apps = ["a1"]
        "#
        .parse()
        .unwrap();
        let border = Border::new(config(&table).unwrap()).unwrap();
        let server = border
            .clone()
            .serve_control(&identity("border1"), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let install = BorderRequest::Install(FibRules {
            epoch: 1,
            version: 9,
            rules: vec![AppRule {
                app: "a1".into(),
                sites: vec![("s2".into(), 1.0)],
            }],
        });
        let call = |node: &'static str, request: BorderRequest| {
            let id = identity(node);
            let addr = server.local_addr();
            async move {
                let client = Client::connect(addr, "border1", &id).await.unwrap();
                client.call::<_, BorderResponse>(&request).await
            }
        };
        for request in [install.clone(), BorderRequest::Report] {
            let err = call("load1", request).await.unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied, "{err}");
            assert!(err.to_string().contains("node load1 may not call"), "{err}");
        }
        assert_eq!(border.rules.lock().unwrap().version, 0, "rules unchanged");
        assert!(matches!(
            call("controller", install).await.unwrap(),
            BorderResponse::Installed { version: 9 }
        ));
        assert!(matches!(
            call("controller", BorderRequest::Report).await.unwrap(),
            BorderResponse::Report(BorderReport {
                rules_version: 9,
                ..
            })
        ));
    }

    /// The border asks the site with the client's method: a GET as a GET, with the site's
    /// body; a HEAD as a HEAD (no demand on the site), keeping the site's length. Other
    /// methods are refused before any site is asked.
    #[tokio::test]
    async fn a_head_is_forwarded_as_a_head_and_keeps_the_sites_length() {
        let methods = Arc::new(Mutex::new(Vec::new()));
        let seen = methods.clone();
        let site = move |request: Request<hyper::body::Incoming>| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(request.method().clone());
                // As a site answers (`http::payload`): the length stated, which its server
                // keeps when it sends a HEAD the GET's head alone.
                let mut response = Response::new(Body::bytes(vec![b'x'; 1234]));
                response
                    .headers_mut()
                    .insert(CONTENT_LENGTH, HeaderValue::from(1234));
                response
            }
        };
        let options = |role| ServeOptions {
            role,
            access_log: false,
        };
        let any = "127.0.0.1:0".parse().unwrap();
        let site = spawn_http(any, site, options("test-site"), None)
            .await
            .unwrap();
        let table: Table = format!(
            "region = \"r1\"\nsites = [\"localhost\"]\nhome = \"localhost\"\napps = [\"a1\"]\nsite_port = {}",
            site.http.port()
        )
        .parse()
        .unwrap();
        let border = Border::new(config(&table).unwrap()).unwrap();
        let handler = move |request: Request<hyper::body::Incoming>| {
            let border = border.clone();
            async move { border.handle_http(request).await }
        };
        let border = spawn_http(any, handler, options("icn-border"), None)
            .await
            .unwrap();
        let url = format!("http://{}/a1/object", border.http);
        let client = crate::roles::fetch::client().build().unwrap();
        let head = client.head(&url).send().await.unwrap();
        assert_eq!(head.status(), StatusCode::OK);
        // The header itself: reqwest's `content_length()` is the body's, 0 for a HEAD.
        assert_eq!(head.headers()[CONTENT_LENGTH], "1234");
        let get = client.get(&url).send().await.unwrap();
        assert_eq!(get.status(), StatusCode::OK);
        assert_eq!(get.bytes().await.unwrap().len(), 1234);
        let post = client.post(&url).send().await.unwrap();
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        let asked = methods.lock().unwrap().clone();
        assert_eq!(asked, [hyper::Method::HEAD, hyper::Method::GET]);
        border.stop().await.unwrap();
        site.stop().await.unwrap();
    }
}
