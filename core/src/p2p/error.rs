//! What can be wrong with a hybrid P2P-cloud system's parameters or its LP: each error names
//! the parameter it is about.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum P2pError {
    /// A parameter out of its range: `name` is the parameter, `why` what is wrong with it.
    Invalid { name: String, why: String },
    /// The LP solver gave up (it should not: every problem here is feasible and bounded).
    Solver(String),
}

impl P2pError {
    pub fn invalid(name: impl Into<String>, why: impl Into<String>) -> P2pError {
        P2pError::Invalid {
            name: name.into(),
            why: why.into(),
        }
    }
}

impl fmt::Display for P2pError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            P2pError::Invalid { name, why } => write!(f, "{name}: {why}"),
            P2pError::Solver(message) => write!(f, "LP solver: {message}"),
        }
    }
}

impl std::error::Error for P2pError {}

/// `value` when it is finite and above zero, else an error naming `name`.
pub fn positive(name: &str, value: f64) -> Result<f64, P2pError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(P2pError::invalid(
            name,
            format!("must be a positive number, not {value}"),
        ))
    }
}

/// `value` when it is finite and at least zero, else an error naming `name`.
pub fn non_negative(name: &str, value: f64) -> Result<f64, P2pError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(P2pError::invalid(
            name,
            format!("must be a number at least 0, not {value}"),
        ))
    }
}
