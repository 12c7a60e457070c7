//! What a request mapping does to the sites: their load and congestion, the latency requests
//! see, and the left-hand sides of PARM's constraints. Shapes follow `ParmInput`: demand
//! `[n][l]`, latency `[l][m]`, α `[n][l][m]`; the functions iterate with `zip`, so mismatched
//! shapes give truncated sums, never a panic (`parm::solve` checks shapes before it uses them).

/// The traffic each site serves, Σ_n Σ_l λ_nl α_nlm (the numerator of (4b) and of Eq. 2).
pub fn site_load(demand: &[Vec<f64>], alpha: &[Vec<Vec<f64>>]) -> Vec<f64> {
    let sites = alpha
        .iter()
        .flatten()
        .map(|row| row.len())
        .max()
        .unwrap_or(0);
    let mut load = vec![0.0; sites];
    for (app_demand, app_alpha) in demand.iter().zip(alpha) {
        for (lambda, shares) in app_demand.iter().zip(app_alpha) {
            for (site, share) in load.iter_mut().zip(shares) {
                *site += lambda * share;
            }
        }
    }
    load
}

/// Each site's congestion level θ_m = D_m / C_m (Eq. 2).
pub fn congestion(load: &[f64], capacity: &[f64]) -> Vec<f64> {
    load.iter().zip(capacity).map(|(d, c)| d / c).collect()
}

/// The mean of `values`; 0 for none.
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// The population variance of `values` (divided by their number); 0 for none.
pub fn population_variance(values: &[f64]) -> f64 {
    let m = mean(values);
    mean(&values.iter().map(|v| (v - m).powi(2)).collect::<Vec<_>>())
}

/// The latency the average request sees, Σ λ_nl α_nlm t_lm / Σ λ_nl; `None` without demand.
pub fn mean_latency(
    demand: &[Vec<f64>],
    latency: &[Vec<f64>],
    alpha: &[Vec<Vec<f64>>],
) -> Option<f64> {
    let total: f64 = demand.iter().flatten().sum();
    if total <= 0.0 {
        return None;
    }
    Some(total_latency(demand, latency, alpha) / total)
}

/// Σ λ_nl α_nlm t_lm: the latency term of (4a).
pub fn total_latency(demand: &[Vec<f64>], latency: &[Vec<f64>], alpha: &[Vec<Vec<f64>>]) -> f64 {
    demand
        .iter()
        .zip(alpha)
        .flat_map(|(app_demand, app_alpha)| app_demand.iter().zip(app_alpha).zip(latency))
        .map(|((lambda, shares), row)| {
            lambda * shares.iter().zip(row).map(|(a, t)| a * t).sum::<f64>()
        })
        .sum()
}

/// The left-hand side of (4c) for every application: Σ_m Σ_l α_nlm t_lm / L. As printed in the
/// paper it is not weighted by λ: each region counts the same however many requests it sends.
pub fn response_times(latency: &[Vec<f64>], alpha: &[Vec<Vec<f64>>]) -> Vec<f64> {
    alpha
        .iter()
        .map(|app_alpha| {
            let regions = app_alpha.len().max(1) as f64;
            app_alpha
                .iter()
                .zip(latency)
                .map(|(shares, row)| shares.iter().zip(row).map(|(a, t)| a * t).sum::<f64>())
                .sum::<f64>()
                / regions
        })
        .collect()
}

/// BASE's mapping (Table 4, "direct requests to the nearest site") where site l is region l's
/// own: every request of region l goes to site l. `applications` × `regions` × `regions`.
pub fn local_mapping(applications: usize, regions: usize) -> Vec<Vec<Vec<f64>>> {
    let own = |l: usize| {
        (0..regions)
            .map(|m| if m == l { 1.0 } else { 0.0 })
            .collect()
    };
    vec![(0..regions).map(own).collect(); applications]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_latency_and_response_time_of_a_split() {
        // 1 app, 2 regions (λ = 1 and 3), 2 sites; region 0 splits 25/75.
        let demand = vec![vec![1.0, 3.0]];
        let latency = vec![vec![10.0, 20.0], vec![30.0, 40.0]];
        let alpha = vec![vec![vec![0.25, 0.75], vec![0.0, 1.0]]];
        assert_eq!(site_load(&demand, &alpha), vec![0.25, 3.75]);
        assert_eq!(congestion(&[0.25, 3.75], &[0.5, 5.0]), vec![0.5, 0.75]);
        // (1·17.5 + 3·40) / 4.
        assert_eq!(mean_latency(&demand, &latency, &alpha), Some(34.375));
        // Unweighted: (17.5 + 40) / 2.
        assert_eq!(response_times(&latency, &alpha), vec![28.75]);
        assert_eq!(mean_latency(&[vec![0.0, 0.0]], &latency, &alpha), None);
    }

    #[test]
    fn variance_and_local_mapping() {
        assert_eq!(population_variance(&[1.0, 3.0]), 1.0);
        assert_eq!(population_variance(&[]), 0.0);
        let base = local_mapping(2, 3);
        assert_eq!(base.len(), 2);
        assert_eq!(base[1][2], vec![0.0, 0.0, 1.0]);
        let demand = vec![vec![1.0, 2.0, 3.0], vec![10.0, 20.0, 30.0]];
        assert_eq!(site_load(&demand, &base), vec![11.0, 22.0, 33.0]);
    }
}
