//! Control-plane messages of the ICN telco CDN (QUIC, bincode 2, lab certificates). The
//! controller calls every border router and CDN site: its SM module asks each site for the
//! bandwidth it served and each border for the latency it measured to every site (and the
//! rules it forwards by); its PARM module installs FIB rules (the proportions α_nlm) on the borders.

use serde::{Deserialize, Serialize};

/// Controller → border router.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BorderRequest {
    /// Replace the FIB rules that map this region's misses to CDN sites.
    Install(FibRules),
    /// The latencies measured to the sites, and the rules in force.
    Report,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum BorderResponse {
    Installed { version: u64 },
    Report(BorderReport),
    Refused(String),
}

/// One region's rules: for each application, the sites its misses go to and in what shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FibRules {
    /// The controller's run: a random number it draws at its start, so a controller started
    /// again counts its versions afresh.
    pub epoch: u64,
    /// Increases with every PARM solution the controller installs in its run.
    pub version: u64,
    pub rules: Vec<AppRule>,
}

/// α_nl·: application `app`'s share of this region's misses sent to each site.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppRule {
    /// The application's name prefix (its first name component, e.g. `app1`).
    pub app: String,
    /// (site node name, share); the shares sum to 1.
    pub sites: Vec<(String, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BorderReport {
    pub region: String,
    /// The controller's epoch the rules in force came from (None: the initial rules).
    pub rules_epoch: Option<u64>,
    /// The version of the rules in force (0: the border's initial nearest-site rules).
    pub rules_version: u64,
    /// Smallest round trip of the border's probes to each site since the last report, in
    /// milliseconds (the last reported value where no probe came back in the interval).
    pub latency_ms: Vec<(String, f64)>,
}

/// Controller → CDN site (its SM module).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum SiteRequest {
    /// The bandwidth served since the last measurement (the counters restart).
    Measure,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum SiteResponse {
    Usage(SiteUsage),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteUsage {
    pub site: String,
    /// Seconds the counters cover.
    pub interval_s: f64,
    /// C_m: the rate of the site's link, bits per second.
    pub capacity_bps: f64,
    /// Bytes served in the interval, per (application, region).
    pub demand: Vec<Demand>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Demand {
    pub app: String,
    pub region: String,
    pub bytes: u64,
}
