//! The controller role's table: which sites, borders, regions and applications, the periods,
//! the mode and the pricing parameters.

use super::{ControllerConfig, Mode};
use crate::icn::control::check_periods;
use crate::pricing::cabp::PriceRange;
use crate::pricing::ldp::LdpParams;
use crate::roles::config::Keys;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use std::time::Duration;
use toml::Table;

const KEYS: &[&str] = &[
    "sites",
    "users",
    "borders",
    "regions",
    "apps",
    "deadlines",
    "sm_period",
    "parm_period",
    "ldp_period",
    "mode",
    "psi",
    "tau",
    "theta_bar",
    "p_const",
    "p_min",
    "p_max",
    "delta",
    "control_port",
];

pub fn config(table: &Table) -> Result<ControllerConfig, String> {
    let keys = Keys::new(table);
    keys.only(KEYS, "role controller")?;
    let sites = keys.node_names("sites", super::MAX_NODES)?;
    let borders = keys.node_names("borders", super::MAX_NODES)?;
    let regions = keys.distinct_items("regions")?;
    for region in &regions {
        crate::topology::check_node_name(region, "region").or_else(|e| keys.fail("regions", e))?;
    }
    let apps = keys.distinct_items("apps")?;
    if regions.len() != borders.len() {
        return keys.fail("regions", "needs one region name per border router");
    }
    let users = keys.numbers("users")?;
    if users.len() != sites.len() {
        return keys.fail("users", "needs one number of users per site");
    }
    let deadlines_ms = deadlines(&keys, apps.len())?;
    let (sm_period, parm_period, ldp_period) = periods(&keys)?;
    let mode = mode(&keys)?;
    let ldp = ldp_params(&keys)?;
    Ok(ControllerConfig {
        sites,
        users,
        borders,
        regions,
        apps,
        deadlines_ms,
        sm_period,
        parm_period,
        ldp_period,
        mode,
        psi: keys.number("psi")?.unwrap_or(0.5),
        tau: keys.number("tau")?.unwrap_or(0.15),
        aggregate_theta_bar: aggregate_theta_bar(&keys)?,
        ldp,
        p_const: keys.number("p_const")?.unwrap_or(0.3),
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
    })
}

/// t_n per application, in milliseconds.
fn deadlines(keys: &Keys, apps: usize) -> Result<Vec<f64>, String> {
    let deadlines_ms = keys
        .items("deadlines")?
        .iter()
        .map(|text| {
            netem::units::parse_duration_ns(text)
                .map(|ns| ns as f64 / 1e6)
                .or_else(|e| keys.fail("deadlines", e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if deadlines_ms.len() != apps {
        return keys.fail(
            "deadlines",
            "needs one expected response time per application",
        );
    }
    Ok(deadlines_ms)
}

/// T_SM, T_PARM and T_LDP, which Equation (1) must hold between.
fn periods(keys: &Keys) -> Result<(Duration, Duration, Duration), String> {
    // A period's calls must have time to cross the lab (each gets most of its period), and
    // a period of a day is already a run of a day.
    let period = |key: &str, default: u64| -> Result<Duration, String> {
        keys.duration_within(
            key,
            Duration::from_secs(default),
            Duration::from_millis(100)..=Duration::from_secs(24 * 3600),
        )
    };
    let (sm, parm, ldp) = (
        period("sm_period", 5)?,
        period("parm_period", 10)?,
        period("ldp_period", 30)?,
    );
    check_periods(sm, parm, ldp)?;
    Ok((sm, parm, ldp))
}

fn mode(keys: &Keys) -> Result<Mode, String> {
    match keys.string("mode")?.unwrap_or("parm") {
        "base" => Ok(Mode::Base),
        "purm" => Ok(Mode::Purm),
        "parm" => Ok(Mode::Parm),
        other => keys.fail("mode", format!("`{other}`: expected base, purm or parm")),
    }
}

/// LDP's parameters: the paper's, with the price range and δ the table may set.
fn ldp_params(keys: &Keys) -> Result<LdpParams, String> {
    let mut params = LdpParams::paper();
    params.range = PriceRange {
        p_min: keys.number("p_min")?.unwrap_or(params.range.p_min),
        p_max: keys.number("p_max")?.unwrap_or(params.range.p_max),
    };
    params.delta = keys.number("delta")?.unwrap_or(params.delta);
    if params.range.p_min > params.range.p_max {
        return keys.fail("p_max", "is below p_min");
    }
    Ok(params)
}

fn aggregate_theta_bar(keys: &Keys) -> Result<bool, String> {
    match keys.string("theta_bar")?.unwrap_or("aggregate") {
        "aggregate" => Ok(true),
        "mean" => Ok(false),
        other => keys.fail(
            "theta_bar",
            format!("`{other}`: expected aggregate or mean"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().expect("test TOML")
    }

    const GOOD: &str = r#"
        sites = ["s1", "s2"]
        users = ["100", 300]
        borders = ["b1", "b2"]
        regions = ["r1", "r2"]
        apps = "a1,a2"
        deadlines = "60ms,45ms"
    "#;

    #[test]
    fn config_reads_the_paper_defaults_and_refuses_bad_periods() {
        let c = config(&table(GOOD)).expect("valid");
        assert_eq!(c.users, [100.0, 300.0]);
        assert_eq!(c.deadlines_ms, [60.0, 45.0]);
        assert_eq!(c.mode, Mode::Parm);
        assert_eq!((c.psi, c.tau, c.p_const), (0.5, 0.15, 0.3));
        assert!(c.aggregate_theta_bar);
        let bad = format!("{GOOD}\nsm_period = '10s'\nparm_period = '5s'");
        let e = config(&table(&bad)).unwrap_err();
        assert!(e.contains("T_LDP > T_PARM ≥ T_SM"), "{e}");
    }

    #[test]
    fn config_errors_name_the_key() {
        for (extra, key) in [
            ("mode = 'cheap'", "`mode`"),
            ("theta_bar = 'median'", "`theta_bar`"),
            ("p_min = 0.6", "`p_max`"),
            ("typo = 1", "`typo`"),
        ] {
            let e = config(&table(&format!("{GOOD}\n{extra}"))).unwrap_err();
            assert!(e.contains(key), "{extra}: {e}");
        }
        let e = config(&table(
            &GOOD.replace("deadlines = \"60ms,45ms\"", "deadlines = \"60ms\""),
        ))
        .unwrap_err();
        assert!(
            e.contains("`deadlines`: needs one expected response time per application"),
            "{e}"
        );
        let e = config(&table(
            &GOOD.replace("users = [\"100\", 300]", "users = [1]"),
        ))
        .unwrap_err();
        assert!(e.contains("`users`"), "{e}");
        for (from, to, want) in [
            (
                "regions = [\"r1\", \"r2\"]",
                "regions = [\"r1\", \"r1\"]",
                "`regions`: `r1`",
            ),
            ("apps = \"a1,a2\"", "apps = \"a1,a1\"", "`apps`: `a1`"),
        ] {
            let e = config(&table(&GOOD.replace(from, to))).unwrap_err();
            assert!(e.contains(&format!("{want} is listed twice")), "{to}: {e}");
        }
    }
}
