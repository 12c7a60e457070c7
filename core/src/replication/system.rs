//! A farm's parameters, checked once: n contents with Poisson request rates λ_c, m servers of
//! d slots each, mean service time 1.

use super::error::{invalid, ParamError};

/// Checked parameters: every constructor of the model, the replications and the simulator
/// starts from one, so none of them meets an impossible farm.
#[derive(Debug, Clone, PartialEq)]
pub struct System {
    lambdas: Vec<f64>,
    m: usize,
    d: usize,
}

impl System {
    /// Refuses m·d < n, d > n, ρ ≥ 1, and rates that are negative or not finite.
    pub fn new(lambdas: Vec<f64>, m: usize, d: usize) -> Result<System, ParamError> {
        let n = lambdas.len();
        if n == 0 {
            return Err(invalid("n", "the catalog is empty"));
        }
        if m == 0 {
            return Err(invalid("m", "there must be at least one server"));
        }
        if d == 0 {
            return Err(invalid("d", "a server must store at least one content"));
        }
        if d > n {
            return Err(ParamError::SlotsAboveCatalog { d, n });
        }
        if m.saturating_mul(d) < n {
            return Err(ParamError::StorageBelowCatalog { m, d, n });
        }
        if let Some(c) = lambdas.iter().position(|l| !l.is_finite() || *l < 0.0) {
            return Err(invalid(
                "lambda",
                format!("content {c}'s rate {} is not a finite rate ≥ 0", lambdas[c]),
            ));
        }
        let system = System { lambdas, m, d };
        let rho = system.rho();
        if rho >= 1.0 {
            return Err(ParamError::Overload { rho });
        }
        Ok(system)
    }

    pub fn lambdas(&self) -> &[f64] {
        &self.lambdas
    }

    pub fn n(&self) -> usize {
        self.lambdas.len()
    }

    pub fn m(&self) -> usize {
        self.m
    }

    pub fn d(&self) -> usize {
        self.d
    }

    /// Load ρ = Σ_c λ_c / m (service times have mean 1).
    pub fn rho(&self) -> f64 {
        self.lambdas.iter().sum::<f64>() / self.m as f64
    }

    /// Average popularity λ̄.
    pub fn mean_lambda(&self) -> f64 {
        self.lambdas.iter().sum::<f64>() / self.n() as f64
    }

    /// Average number of replicas D̄ = m·d / n.
    pub fn mean_replicas(&self) -> f64 {
        (self.m * self.d) as f64 / self.n() as f64
    }

    /// The same farm with other request rates (a popularity change), checked again.
    pub fn with_lambdas(&self, lambdas: Vec<f64>) -> Result<System, ParamError> {
        System::new(lambdas, self.m, self.d)
    }

    /// Checks that `replication` gives each content a count of distinct servers (≤ m) and
    /// fits the m·d slots.
    pub fn check_replication(&self, replication: &[u32]) -> Result<(), ParamError> {
        if replication.len() != self.n() {
            return Err(invalid(
                "replication",
                format!("{} counts for {} contents", replication.len(), self.n()),
            ));
        }
        if let Some(c) = replication.iter().position(|&r| r as usize > self.m) {
            return Err(invalid(
                "replication",
                format!(
                    "content {c} has {} replicas on m = {} servers",
                    replication[c], self.m
                ),
            ));
        }
        let total: u64 = replication.iter().map(|&r| r as u64).sum();
        if total > (self.m * self.d) as u64 {
            return Err(invalid(
                "replication",
                format!(
                    "{total} replicas exceed the m·d = {} slots",
                    self.m * self.d
                ),
            ));
        }
        Ok(())
    }
}
