//! ln Γ(x) for x > 0 (std has no gamma function), for Equation (2)'s constant C(λ_c).

/// Euler–Mascheroni constant C_Euler of Equation (2).
pub const EULER: f64 = 0.577_215_664_901_532_9;

/// ln Γ(x), x > 0: Lanczos' approximation (g = 7, 9 terms; relative error below 1e-13), with
/// the recurrence Γ(x) = Γ(x+1)/x below 0.5 where the series is least accurate.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return ln_gamma(x + 1.0) - x.ln();
    }
    let x = x - 1.0;
    let mut sum = COEF[0];
    for (i, c) in COEF.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}
