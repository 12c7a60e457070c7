//! The replications by name: the two static ones and the adaptive schemes of Section V.

use super::error::ParamError;
use std::fmt;
use std::str::FromStr;

/// The eviction rule of the generic adaptive algorithm (Section V-A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// An available content picked uniformly at random.
    Random,
    /// The least recently lost available content.
    Lrl,
    /// The available content with the smallest loss-rate estimate (an exponentially weighted
    /// moving average).
    Lfl,
}

/// An adaptive scheme: a rule, reacting to real losses only or to virtual losses too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    pub rule: Rule,
    pub virtual_losses: bool,
}

/// How a run replicates: fixed from the start, or adapting from proportional replication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    Proportional,
    Optimized,
    Adaptive(Scheme),
}

/// Every name `Replication` reads, in the order tables list them.
pub const NAMES: [&str; 8] = [
    "proportional",
    "optimized",
    "random",
    "lrl",
    "lfl",
    "random-virtual",
    "lrl-virtual",
    "lfl-virtual",
];

impl FromStr for Replication {
    type Err = ParamError;

    fn from_str(name: &str) -> Result<Replication, ParamError> {
        let (rule, virtual_losses) = match name.strip_suffix("-virtual") {
            Some(rule) => (rule, true),
            None => (name, false),
        };
        let rule = match rule {
            "proportional" if !virtual_losses => return Ok(Replication::Proportional),
            "optimized" if !virtual_losses => return Ok(Replication::Optimized),
            "random" => Rule::Random,
            "lrl" => Rule::Lrl,
            "lfl" => Rule::Lfl,
            _ => {
                return Err(ParamError::UnknownScheme {
                    name: name.to_string(),
                    known: "proportional, optimized, random, lrl, lfl, random-virtual, lrl-virtual, lfl-virtual",
                })
            }
        };
        Ok(Replication::Adaptive(Scheme {
            rule,
            virtual_losses,
        }))
    }
}

impl fmt::Display for Replication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self {
            Replication::Proportional => return f.write_str("proportional"),
            Replication::Optimized => return f.write_str("optimized"),
            Replication::Adaptive(scheme) => scheme,
        };
        let rule = match scheme.rule {
            Rule::Random => "random",
            Rule::Lrl => "lrl",
            Rule::Lfl => "lfl",
        };
        let suffix = if scheme.virtual_losses {
            "-virtual"
        } else {
            ""
        };
        write!(f, "{rule}{suffix}")
    }
}
