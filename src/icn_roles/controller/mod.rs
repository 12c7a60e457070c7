//! `controller`: the SM, LDP and PARM modules of papers/000 (Figure 2) over the control plane.
//!
//! Every `sm_period` the SM module asks each CDN site for the bytes it served per (application,
//! region) and its capacity C_m, and each border router for the latency it measured to every
//! site. Every `parm_period` PARM solves (4a)–(4f) on the last PARM period's measurements —
//! λ_nl, θ̄, t_lm — with the prices LDP set, and installs the proportions α_nlm on the border
//! routers as FIB rules. LDP runs with the first PARM period (on the congestion the borders'
//! initial nearest-site rules produced, as Section 5.2.1 prices from BASE) and then every
//! `ldp_period` on that period's congestion. Periods must satisfy Equation (1),
//! T_LDP > T_PARM ≥ T_SM, and be multiples of T_SM. An infeasible PARM is logged naming its
//! constraint family and the borders keep the last valid rules.
//!
//! θ̄ in (4b) is the sites' aggregate congestion Σd_m/ΣC_m by default, which is the paper's
//! mean of Θ whenever the C_m are equal (its Section 5); `theta_bar = "mean"` takes the mean
//! literally, which makes (4b) infeasible once one site's capacity drops far below the others'.
//!
//! `mode = "base"` never installs rules (requests stay with the nearest site) and prices at
//! P_const; `"purm"` solves with Ψ = 0 and prices at P_const; `"parm"` (default) is the paper's.
//!
//! Writes to `$CDNLAB_OUT_DIR`: `controller.json` (every SM period and every PARM solution),
//! `lp/` (each LP's input and solution), and the plots `prices.svg`, `congestion.svg`,
//! `mapping.svg`, `cost.svg`, `latency.svg`.
//!
//! The sums are the core crate's (`icn::control`); here `config` reads the role's table, `run`
//! is the SM/LDP/PARM loop over the control plane (`peers`), `record` keeps what it saw and
//! `plots` draws it.

mod config;
mod plots;
mod record;
mod run;

use crate::pricing::ldp::LdpParams;
use std::time::Duration;

pub use config::config;
pub use run::run;

/// The most sites or border routers one controller (or one border's list of sites) takes.
pub const MAX_NODES: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Base,
    Purm,
    Parm,
}

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub sites: Vec<String>,
    /// U_m: the users of each site's region (LDP's population weights), in `sites` order.
    pub users: Vec<f64>,
    /// The border routers' node names and their regions' names, in one order.
    pub borders: Vec<String>,
    pub regions: Vec<String>,
    pub apps: Vec<String>,
    /// t_n per application, milliseconds.
    pub deadlines_ms: Vec<f64>,
    pub sm_period: Duration,
    pub parm_period: Duration,
    pub ldp_period: Duration,
    pub mode: Mode,
    /// Ψ of (4a).
    pub psi: f64,
    /// ξ = τ·θ̄ (Equation 8).
    pub tau: f64,
    /// θ̄ of (4b) as Σ_m d_m / Σ_m C_m (true) or as the mean of the θ_m (false); why the
    /// first is the default: `icn::control::theta_bar`.
    pub aggregate_theta_bar: bool,
    pub ldp: LdpParams,
    pub p_const: f64,
    pub control_port: u16,
}
