//! tc's units for time, rate and percentages: `50ms`, `1.5s`, `500us`; `5mbit`, `1gbit`; `0.5%`.
//!
//! The topology files and the CLI speak these units, so a value means what it would mean to
//! `tc qdisc ... netem`. Unlike tc, a bare number is refused: tc reads a bare time as
//! microseconds and a bare rate as bytes per second, a trap we would rather not set.

use crate::params::check_limit;
use std::fmt;

/// A parse error: what was wrong with the text (the caller adds where it was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

/// Splits `"1.5ms"` into `(1.5, "1.5", "ms")`; the number must be finite.
fn split_number(text: &str) -> Result<(f64, &str, &str), UnitError> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let value: f64 = number
        .parse()
        .map_err(|_| UnitError(format!("`{text}` does not start with a number")))?;
    if !value.is_finite() {
        return Err(UnitError(format!("`{text}` is not a finite number")));
    }
    Ok((value, number, unit.trim()))
}

/// `number × scale` rounded to the nearest whole unit (halves up), in integers so that every
/// value the `format_*` functions write reads back as itself (through f64, 1234567.000000001s
/// would not). Decimals past the 24th are ignored: they are below 10⁻¹¹ of the smallest unit.
/// `number` is what [`split_number`] accepted and found non-negative; None above `u64::MAX / 2`.
fn scaled(number: &str, scale: u64) -> Option<u64> {
    let digits = number.trim_start_matches(['+', '-']);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let fraction = &fraction[..fraction.len().min(24)];
    let parse = |digits: &str| -> Option<u128> {
        if digits.is_empty() {
            Some(0)
        } else {
            digits.parse().ok()
        }
    };
    let denominator = 10u128.pow(fraction.len() as u32);
    // Below 10²⁴ × 8·10¹² (the largest scale): no overflow in u128.
    let numerator = parse(fraction)? * u128::from(scale);
    let rounded = (2 * numerator + denominator) / (2 * denominator);
    let total = parse(whole)?
        .checked_mul(u128::from(scale))?
        .checked_add(rounded)?;
    u64::try_from(total).ok().filter(|&n| n <= u64::MAX / 2)
}

/// A time in nanoseconds, parsed from tc's time units (`s`, `ms`, `us`, `ns` and their long forms).
pub fn parse_duration_ns(text: &str) -> Result<u64, UnitError> {
    let (value, number, unit) = split_number(text)?;
    if value < 0.0 {
        return Err(UnitError(format!(
            "`{}` is negative; a time must be 0 or more",
            text.trim()
        )));
    }
    let scale = match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" => 1_000_000_000,
        "ms" | "msec" | "msecs" => 1_000_000,
        "us" | "usec" | "usecs" => 1_000,
        "ns" | "nsec" | "nsecs" => 1,
        "" if value == 0.0 => 1,
        "" => {
            return Err(UnitError(format!(
                "`{}` has no unit; write it as e.g. `50ms`, `1.5s` or `500us`",
                text.trim()
            )))
        }
        other => {
            return Err(UnitError(format!(
                "`{}`: unknown time unit `{other}` (use s, ms, us or ns)",
                text.trim()
            )))
        }
    };
    scaled(number, scale).ok_or_else(|| UnitError(format!("`{}` is too long a time", text.trim())))
}

/// A rate in bits per second, parsed from tc's rate units: `bit`, `kbit`, `mbit`, `gbit`, `tbit`
/// (powers of 1000), `kibit`… (powers of 1024), and `bps`, `kbps`, `mbps`, `gbps`, `tbps`
/// (bytes per second, as tc reads them).
pub fn parse_rate_bps(text: &str) -> Result<u64, UnitError> {
    let (value, number, unit) = split_number(text)?;
    if value < 0.0 {
        return Err(UnitError(format!(
            "`{}` is negative; a rate must be above 0",
            text.trim()
        )));
    }
    let scale = match unit.to_ascii_lowercase().as_str() {
        "bit" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "tbit" => 1_000_000_000_000,
        "kibit" => 1 << 10,
        "mibit" => 1 << 20,
        "gibit" => 1 << 30,
        "tibit" => 1 << 40,
        "bps" => 8,
        "kbps" => 8_000,
        "mbps" => 8_000_000,
        "gbps" => 8_000_000_000,
        "tbps" => 8_000_000_000_000,
        "" => {
            return Err(UnitError(format!(
                "`{}` has no unit; write it as e.g. `5mbit`, `100mbit` or `1gbit`",
                text.trim()
            )))
        }
        other => {
            return Err(UnitError(format!(
                "`{}`: unknown rate unit `{other}` (use bit, kbit, mbit, gbit, or bps, kbps, mbps, gbps)",
                text.trim()
            )))
        }
    };
    match scaled(number, scale) {
        Some(0) => Err(UnitError(format!(
            "`{}`: a rate must be above 0",
            text.trim()
        ))),
        // The kernel counts rates in bytes a second: below 8 bit/s is 0 there, no limit.
        Some(bps) if bps < 8 => Err(UnitError(format!(
            "`{}`: a rate must be at least 8bit (a byte a second)",
            text.trim()
        ))),
        Some(bps) => Ok(bps),
        None => Err(UnitError(format!("`{}` is too high a rate", text.trim()))),
    }
}

/// A probability in [0, 1], parsed from a percentage such as `0.5%` (tc's notation).
pub fn parse_percent(text: &str) -> Result<f64, UnitError> {
    let (value, _, unit) = split_number(text)?;
    if unit != "%" {
        return Err(UnitError(format!(
            "`{}` is not a percentage; write it as e.g. `0.5%`",
            text.trim()
        )));
    }
    if !(0.0..=100.0).contains(&value) {
        return Err(UnitError(format!(
            "`{}` is outside 0% to 100%",
            text.trim()
        )));
    }
    Ok(value / 100.0)
}

/// A queue limit in packets: a whole number that [`check_limit`] accepts.
pub fn parse_limit(text: &str) -> Result<u32, UnitError> {
    let limit: u32 = text
        .trim()
        .parse()
        .map_err(|_| UnitError(format!("`{text}` is not a whole number of packets")))?;
    check_limit(limit)
}

/// Writes a time in nanoseconds the way tc would accept it back (`50ms`, `1.5s`, `250us`),
/// exactly: the largest unit that is not above the value, with as many decimals as it takes.
pub fn format_duration_ns(ns: u64) -> String {
    if ns == 0 {
        return "0ms".to_string();
    }
    let (scale, unit) = [
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ]
    .into_iter()
    .find(|(scale, _)| ns >= *scale)
    .unwrap_or((1, "ns"));
    format!("{}{unit}", exact_decimal(ns, scale))
}

/// `value / scale` written exactly in decimal (`scale` a power of ten).
fn exact_decimal(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let fraction = value % scale;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = scale.ilog10() as usize;
    let fraction = format!("{fraction:0digits$}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// Writes a rate in bits per second the way tc would accept it back (`5mbit`, `1.5gbit`, `64kbit`).
pub fn format_rate_bps(bps: u64) -> String {
    let (scale, unit) = [
        (1_000_000_000_000, "tbit"),
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ]
    .into_iter()
    .find(|(scale, _)| bps >= *scale)
    .unwrap_or((1, "bit"));
    format!("{}{unit}", exact_decimal(bps, scale))
}

/// Writes a probability in [0, 1] as a percentage (`0.5%`), to nine decimals of a percent
/// (finer than the kernel's 32-bit probabilities), without trailing zeros.
pub fn format_percent(probability: f64) -> String {
    let percent = (probability * 100.0 * 1e9).round() / 1e9;
    format!("{percent}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_tc_units() {
        assert_eq!(parse_duration_ns("50ms"), Ok(50_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        assert_eq!(parse_duration_ns("2 msec"), Ok(2_000_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert!(parse_duration_ns("50").unwrap_err().0.contains("no unit"));
        assert!(parse_duration_ns("-5ms")
            .unwrap_err()
            .0
            .contains("negative"));
        assert!(parse_duration_ns("5 parsecs")
            .unwrap_err()
            .0
            .contains("unknown time unit"));
        assert!(parse_duration_ns("fast").unwrap_err().0.contains("number"));
    }

    #[test]
    fn rates_follow_tc_units() {
        assert_eq!(parse_rate_bps("5mbit"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("1gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("1.5Mbit"), Ok(1_500_000));
        assert_eq!(parse_rate_bps("1kibit"), Ok(1024));
        assert_eq!(parse_rate_bps("1mbps"), Ok(8_000_000));
        assert!(parse_rate_bps("0mbit").unwrap_err().0.contains("above 0"));
        assert!(parse_rate_bps("7bit")
            .unwrap_err()
            .0
            .contains("at least 8bit"));
        assert_eq!(parse_rate_bps("8bit"), Ok(8));
        assert!(parse_rate_bps("100").unwrap_err().0.contains("no unit"));
        assert!(parse_rate_bps("-1mbit").unwrap_err().0.contains("negative"));
    }

    #[test]
    fn percentages_are_bounded() {
        assert_eq!(parse_percent("0.5%"), Ok(0.005));
        assert_eq!(parse_percent("100%"), Ok(1.0));
        assert!(parse_percent("101%").unwrap_err().0.contains("outside"));
        assert!(parse_percent("0.5")
            .unwrap_err()
            .0
            .contains("not a percentage"));
    }

    #[test]
    fn formatting_round_trips() {
        for ns in [
            0,
            1,
            1_000,
            500_000,
            1_500_000,
            50_000_000,
            1_500_000_000,
            1_000_000_001,
            // Found by prop_units_durations_round_trip when parsing went through f64.
            66_935_466_371_630_897,
        ] {
            assert_eq!(parse_duration_ns(&format_duration_ns(ns)), Ok(ns));
        }
        for bps in [
            9,
            1_000,
            64_000,
            5_000_000,
            1_500_000_000,
            1_000_000_001,
            15_594_677_109_410_033,
        ] {
            assert_eq!(parse_rate_bps(&format_rate_bps(bps)), Ok(bps));
        }
        assert_eq!(format_percent(0.005), "0.5%");
    }
}
