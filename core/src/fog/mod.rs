//! Federated fog delivery networks (papers/003, F-FDN), sans-IO: latency distributions and
//! robustness, learned path models, the segment cost estimator, its inputs and its six
//! methods, the processing backlog, the fog monitor, the catalog and its cache placement,
//! workload traces, an FDN's bounded session table.

pub mod catalog;
pub mod estimator;
pub mod inputs;
pub mod monitor;
pub mod normal;
pub mod sessions;
pub mod stats;
pub mod workload;
