//! ICN tables (papers/000, in the manner of NFD): names as URL path components, the Content
//! Store, the Pending Interest Table, the FIB with longest-prefix match, and the smooth weighted
//! split a border router maps misses to CDN sites with; and the controller's sums (`control`).
//! Sans-IO: plain types, instants passed in; the main crate's `icn_roles` runs them over HTTP.

pub mod content_store;
pub mod control;
pub mod fib;
pub mod name;
pub mod pit;
pub mod split;

#[cfg(test)]
mod name_props;

pub use content_store::{ContentStore, CsStats};
pub use fib::{Fib, NextHop};
pub use name::Name;
pub use pit::{Outcome, Pit, PitStats, Ticket};
pub use split::SmoothSplit;
