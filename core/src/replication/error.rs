//! What can be wrong with a farm's parameters: each error names the parameter it is about.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum ParamError {
    /// m·d < n: the servers cannot hold every content even once.
    StorageBelowCatalog { m: usize, d: usize, n: usize },
    /// ρ = Σλ_c / m ≥ 1: the farm is overloaded and loses a fixed share whatever it stores.
    Overload { rho: f64 },
    /// d > n: a server's d slots cannot all hold different contents.
    SlotsAboveCatalog { d: usize, n: usize },
    /// A name that is not one of the replications or schemes.
    UnknownScheme { name: String, known: &'static str },
    /// Any other parameter out of its range (`name` is the parameter).
    Invalid { name: &'static str, why: String },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::StorageBelowCatalog { m, d, n } => write!(
                f,
                "m·d = {m}·{d} = {} is below n = {n}: the servers cannot hold every content once",
                m * d
            ),
            ParamError::Overload { rho } => {
                write!(f, "rho = {rho} must be below 1 (load Σλ_c / m)")
            }
            ParamError::SlotsAboveCatalog { d, n } => write!(
                f,
                "d = {d} is above n = {n}: a server cannot store {d} different contents"
            ),
            ParamError::UnknownScheme { name, known } => {
                write!(f, "scheme `{name}` does not exist (known: {known})")
            }
            ParamError::Invalid { name, why } => write!(f, "{name}: {why}"),
        }
    }
}

impl std::error::Error for ParamError {}

/// An `Invalid` error for `name`.
pub(crate) fn invalid(name: &'static str, why: impl Into<String>) -> ParamError {
    ParamError::Invalid {
        name,
        why: why.into(),
    }
}
