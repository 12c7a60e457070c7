//! One direction of a link: the impairments tc-netem would apply on that egress.

use crate::units::{format_duration_ns, format_percent, format_rate_bps, UnitError};
use serde::{Deserialize, Serialize};
use std::fmt;

/// tc-netem's default queue limit, in packets.
pub const DEFAULT_LIMIT: u32 = 1000;

/// The largest queue limit, in packets: what the userspace backend's NFQUEUE holds (its
/// `max_len`); past it the kernel would drop packets before the shaper counts them. tc-netem has
/// no such bound, but a limit that means the same on both backends is simpler.
pub const MAX_LIMIT: u32 = 65_536;

/// Refuses a queue limit no backend honours the same way: 0 (every packet dropped) and above
/// [`MAX_LIMIT`]. The one rule the topology, `cdnlab link set` and the daemon's `set` share.
pub fn check_limit(limit: u32) -> Result<u32, UnitError> {
    if limit == 0 {
        return Err(UnitError(
            "a queue limit must be at least 1 packet".to_string(),
        ));
    }
    if limit > MAX_LIMIT {
        return Err(UnitError(format!(
            "a queue limit of {limit} packets is above the maximum, {MAX_LIMIT} (what the \
             kernel's NFQUEUE holds)"
        )));
    }
    Ok(limit)
}

/// The delay distribution for jitter, as `tc qdisc ... netem delay D J distribution X` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Uniform,
    Normal,
    Pareto,
    Paretonormal,
}

impl Distribution {
    pub const ALL: [Distribution; 4] = [
        Distribution::Uniform,
        Distribution::Normal,
        Distribution::Pareto,
        Distribution::Paretonormal,
    ];

    /// The name tc uses.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
            Distribution::Pareto => "pareto",
            Distribution::Paretonormal => "paretonormal",
        }
    }

    pub fn from_name(name: &str) -> Option<Distribution> {
        Distribution::ALL.into_iter().find(|d| d.name() == name)
    }
}

/// The impairments of one link direction, with tc-netem's meaning: egress delay with jitter
/// (and its correlation and distribution), random loss (and its correlation), a rate, and a
/// queue limit in packets. Probabilities and correlations are in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Impairments {
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub delay_correlation: f64,
    /// `None` is tc's default when jitter is given without a distribution.
    pub distribution: Option<Distribution>,
    pub loss: f64,
    pub loss_correlation: f64,
    /// Bits per second; `None` is unlimited.
    pub rate_bps: Option<u64>,
    pub limit: u32,
}

impl Default for Impairments {
    fn default() -> Self {
        Impairments {
            delay_ns: 0,
            jitter_ns: 0,
            delay_correlation: 0.0,
            distribution: None,
            loss: 0.0,
            loss_correlation: 0.0,
            rate_bps: None,
            limit: DEFAULT_LIMIT,
        }
    }
}

impl Impairments {
    /// True when the direction has nothing to emulate (a plain veth is enough).
    pub fn is_none(&self) -> bool {
        self.delay_ns == 0 && self.jitter_ns == 0 && self.loss == 0.0 && self.rate_bps.is_none()
    }

    /// Refuses impairments a backend would silently clamp, misread or refuse: probabilities
    /// outside [0, 1], a queue limit of 0 or above what the kernel's queue holds, and a jitter
    /// table (`distribution` other than uniform) without a delay, which tc refuses
    /// ("distribution specified but no latency and jitter values"). The one rule the
    /// topology, `cdnlab link set`, the timeline and both backends share, so a change one
    /// backend takes the other does not refuse.
    pub fn check(&self) -> Result<(), String> {
        let probabilities = [
            ("loss", self.loss),
            ("loss_correlation", self.loss_correlation),
            ("delay_correlation", self.delay_correlation),
        ];
        for (name, value) in probabilities {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("{name} {value} is outside 0..=1"));
            }
        }
        check_limit(self.limit).map_err(|e| e.0)?;
        if let Some(distribution) = self.table_distribution() {
            if self.delay_ns == 0 {
                return Err(format!(
                    "jitter with `distribution {}` needs a delay above 0 (tc refuses a \
                     distribution table without one)",
                    distribution.name()
                ));
            }
        }
        Ok(())
    }

    /// The delay table tc would load: only with jitter, and none for uniform (the kernel's
    /// default; iproute2 has no `uniform.dist`).
    pub fn table_distribution(&self) -> Option<Distribution> {
        self.distribution
            .filter(|d| self.jitter_ns > 0 && *d != Distribution::Uniform)
    }
}

/// tc-netem's own words for the impairments (`delay 50ms 5ms distribution normal loss 1% rate 5mbit limit 1000`).
impl fmt::Display for Impairments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if self.delay_ns > 0 || self.jitter_ns > 0 {
            let mut delay = format!("delay {}", format_duration_ns(self.delay_ns));
            if self.jitter_ns > 0 {
                delay += &format!(" {}", format_duration_ns(self.jitter_ns));
                if self.delay_correlation > 0.0 {
                    delay += &format!(" {}", format_percent(self.delay_correlation));
                }
                if let Some(distribution) = self.distribution {
                    delay += &format!(" distribution {}", distribution.name());
                }
            }
            parts.push(delay);
        }
        if self.loss > 0.0 {
            let mut loss = format!("loss {}", format_percent(self.loss));
            if self.loss_correlation > 0.0 {
                loss += &format!(" {}", format_percent(self.loss_correlation));
            }
            parts.push(loss);
        }
        if let Some(rate) = self.rate_bps {
            parts.push(format!("rate {}", format_rate_bps(rate)));
        }
        if self.limit != DEFAULT_LIMIT {
            parts.push(format!("limit {}", self.limit));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(" "))
        }
    }
}

/// A change to some impairments, as `cdnlab link set --delay 80ms` or a timeline event says it:
/// the fields given replace the current ones, the rest stay.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImpairmentsChange {
    pub delay_ns: Option<u64>,
    pub jitter_ns: Option<u64>,
    pub delay_correlation: Option<f64>,
    pub distribution: Option<Distribution>,
    pub loss: Option<f64>,
    pub loss_correlation: Option<f64>,
    /// `Some(None)` removes the rate limit.
    pub rate_bps: Option<Option<u64>>,
    pub limit: Option<u32>,
}

impl ImpairmentsChange {
    /// The impairments after the change.
    pub fn apply_to(&self, base: &Impairments) -> Impairments {
        Impairments {
            delay_ns: self.delay_ns.unwrap_or(base.delay_ns),
            jitter_ns: self.jitter_ns.unwrap_or(base.jitter_ns),
            delay_correlation: self.delay_correlation.unwrap_or(base.delay_correlation),
            distribution: self.distribution.or(base.distribution),
            loss: self.loss.unwrap_or(base.loss),
            loss_correlation: self.loss_correlation.unwrap_or(base.loss_correlation),
            rate_bps: self.rate_bps.unwrap_or(base.rate_bps),
            limit: self.limit.unwrap_or(base.limit),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ImpairmentsChange::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impairment_checks() {
        assert_eq!(Impairments::default().check(), Ok(()));
        let bad = Impairments {
            loss: 1.5,
            ..Impairments::default()
        };
        assert!(bad.check().unwrap_err().contains("loss 1.5"));
        let bad = Impairments {
            delay_correlation: f64::NAN,
            ..Impairments::default()
        };
        assert!(bad.check().unwrap_err().contains("delay_correlation"));
        let bad = Impairments {
            limit: 0,
            ..Impairments::default()
        };
        assert!(bad.check().is_err());
        let at_most = Impairments {
            limit: MAX_LIMIT,
            ..Impairments::default()
        };
        assert_eq!(at_most.check(), Ok(()));
        let too_many = Impairments {
            limit: MAX_LIMIT + 1,
            ..Impairments::default()
        };
        let err = too_many.check().unwrap_err();
        assert!(err.contains("65537") && err.contains("65536"), "{err}");
    }

    /// A jitter table needs a delay, as tc says; uniform jitter has no table and needs none,
    /// and a distribution without jitter loads no table either.
    #[test]
    fn a_distribution_table_needs_a_delay() {
        let jitter = |delay_ns, distribution| Impairments {
            delay_ns,
            jitter_ns: 2_000_000,
            distribution: Some(distribution),
            ..Impairments::default()
        };
        for d in [
            Distribution::Normal,
            Distribution::Pareto,
            Distribution::Paretonormal,
        ] {
            let err = jitter(0, d).check().unwrap_err();
            assert!(err.contains(d.name()) && err.contains("delay"), "{err}");
            assert_eq!(jitter(1, d).check(), Ok(()));
        }
        assert_eq!(jitter(0, Distribution::Uniform).check(), Ok(()));
        let no_jitter = Impairments {
            jitter_ns: 0,
            ..jitter(0, Distribution::Normal)
        };
        assert_eq!(no_jitter.check(), Ok(()));
    }
}
