//! The telco's bandwidth cost of serving a site's traffic (papers/000, §5.1.2, from its [47]).

/// The pieces of Equation 7 as (lower bound of D/C, slope a, intercept b): g = a·D − b·C on
/// [bound, next bound). The intercepts make g continuous; the slopes grow steeply past 90% and
/// again past capacity, so overloading any site dominates the total.
const PIECES: [(f64, f64, f64); 6] = [
    (0.0, 1.0, 0.0),
    (1.0 / 3.0, 3.0, 2.0 / 3.0),
    (2.0 / 3.0, 10.0, 16.0 / 3.0),
    (9.0 / 10.0, 70.0, 178.0 / 3.0),
    (1.0, 500.0, 1468.0 / 3.0),
    (11.0 / 10.0, 5000.0, 16318.0 / 3.0),
];

/// Bandwidth cost g(D) of Equation 7 of the LDP/PARM paper (papers/000): piecewise linear in the
/// site's load D/C, with the slope of the last piece whose lower bound D/C has reached. The
/// first piece also covers a negative D (g = D). A capacity that is not a positive number gives
/// NaN: the load, and so the cost, is undefined.
pub fn bandwidth_cost(demand: f64, capacity: f64) -> f64 {
    if !(capacity > 0.0 && capacity.is_finite()) {
        return f64::NAN;
    }
    let load = demand / capacity;
    let (_, slope, intercept) = PIECES
        .iter()
        .rev()
        .find(|(bound, _, _)| load >= *bound)
        .copied()
        .unwrap_or(PIECES[0]);
    slope * demand - intercept * capacity
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: f64 = 3.0;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * (1.0 + b.abs())
    }

    #[test]
    fn values_on_each_piece() {
        // One point inside each piece, computed from Eq. 7 as printed.
        assert!(close(bandwidth_cost(0.5, C), 0.5));
        assert!(close(bandwidth_cost(1.5, C), 3.0 * 1.5 - 2.0 / 3.0 * C));
        assert!(close(bandwidth_cost(2.4, C), 10.0 * 2.4 - 16.0 / 3.0 * C));
        assert!(close(
            bandwidth_cost(2.85, C),
            70.0 * 2.85 - 178.0 / 3.0 * C
        ));
        assert!(close(
            bandwidth_cost(3.15, C),
            500.0 * 3.15 - 1468.0 / 3.0 * C
        ));
        assert!(close(
            bandwidth_cost(6.0, C),
            5000.0 * 6.0 - 16318.0 / 3.0 * C
        ));
        assert_eq!(bandwidth_cost(0.0, C), 0.0);
    }

    #[test]
    fn continuous_at_every_boundary() {
        // At each boundary the cost equals both neighbouring pieces' formulas: C/3, 4C/3,
        // 11C/3, 32C/3 and 182C/3.
        let expected = [
            (1.0 / 3.0, 1.0 / 3.0),
            (2.0 / 3.0, 4.0 / 3.0),
            (0.9, 11.0 / 3.0),
            (1.0, 32.0 / 3.0),
            (1.1, 182.0 / 3.0),
        ];
        for (load, cost_per_c) in expected {
            let d = load * C;
            let at = bandwidth_cost(d, C);
            assert!(close(at, cost_per_c * C), "g({load}C) = {at}");
            let below = bandwidth_cost(d - 1e-9, C);
            let above = bandwidth_cost(d + 1e-9, C);
            assert!(
                (below - at).abs() < 1e-5,
                "jump below {load}: {below} vs {at}"
            );
            assert!(
                (above - at).abs() < 1e-5,
                "jump above {load}: {above} vs {at}"
            );
        }
    }

    #[test]
    fn slopes_grow_with_load() {
        let slope =
            |load: f64| (bandwidth_cost(load * C + 1e-6, C) - bandwidth_cost(load * C, C)) / 1e-6;
        let slopes: Vec<f64> = [0.1, 0.5, 0.8, 0.95, 1.05, 1.5]
            .iter()
            .map(|&l| slope(l))
            .collect();
        for (got, want) in slopes.iter().zip([1.0, 3.0, 10.0, 70.0, 500.0, 5000.0]) {
            assert!((got - want).abs() < 1e-3 * want, "{slopes:?}");
        }
    }

    #[test]
    fn undefined_capacity_gives_nan() {
        assert!(bandwidth_cost(1.0, 0.0).is_nan());
        assert!(bandwidth_cost(1.0, -1.0).is_nan());
        assert!(bandwidth_cost(1.0, f64::NAN).is_nan());
    }
}
