//! `cdnlab sweep`: its flags, checked before any run starts; the engine is `crate::sweep`.

use super::{default_out_dir, failure, parse_duration, usage_error, Failure};
use crate::lab::{interrupt, BackendChoice};
use crate::sweep::REPEAT;
use crate::topology::{self, LoadOptions};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The topology file.
    topology: PathBuf,
    /// A variable and its values: `--vary internet_delay=0ms,50ms,100ms` (repeatable).
    #[arg(long, value_name = "KEY=V1,V2,...", value_parser = crate::sweep::grid::parse_vary, required = true)]
    vary: Vec<(String, Vec<String>)>,
    /// A variable every run gets.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = topology::parse_set)]
    set: Vec<(String, String)>,
    /// How many labs run at once (1 to 64).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    parallel: u16,
    /// The sweep directory (default: results/sweep-UNIXTIME).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A metric against a varied variable, tabulated and plotted: `--plot startup_delay_s:internet_delay`.
    #[arg(long, value_name = "METRIC:VARIABLE")]
    plot: Vec<String>,
    /// The client field that names the lines of a plot.
    #[arg(long, default_value = "policy")]
    series: String,
    /// A --vary variable whose values are replicates (e.g. workload traces), not a dimension:
    /// tables and plots show the mean over them ± the 95% confidence interval.
    #[arg(long, value_name = "VARIABLE")]
    replicates: Option<String>,
    /// Run every combination N times (labelled `repeat=1..N`, all combinations once before any
    /// twice): tables and plots show the mean over the repeats ± the 95% confidence interval.
    /// For scenarios with no workload of their own to vary; not with --replicates.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Link emulation of every run, as for `up`.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    link_backend: BackendChoice,
    /// Per run: stop clients still running after this long (tc time units).
    #[arg(long, default_value = "600s")]
    timeout: String,
    /// Run nothing: tabulate and plot the runs already in --out.
    #[arg(long, requires = "out")]
    replot: bool,
    /// Continue the interrupted sweep in DIR (given the flags it was started with): the
    /// combinations that finished are kept, the others run; then the tables and plots of all.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "replot"])]
    resume: Option<PathBuf>,
}

pub fn run(mut args: SweepArgs) -> Result<(), Failure> {
    let plots = parse_plots(&args.plot)?;
    if let Some(var) = &args.replicates {
        check_replicates(var, &args.vary, &plots, &args.series)?;
    }
    parse_duration("--timeout", &args.timeout)?;
    check_run_count(&args.vary, args.repeat)?;
    check_combinations(&args)?;
    if args.repeat > 1 {
        check_repeat(
            args.repeat,
            args.replicates.as_deref(),
            &args.vary,
            &args.series,
            &plots,
        )?;
        let repeats = (1..=args.repeat).map(|r| r.to_string()).collect();
        args.vary.insert(0, (REPEAT.to_string(), repeats));
        args.replicates = Some(REPEAT.to_string());
    }
    let resume = args.resume.is_some();
    let out = args
        .resume
        .or(args.out)
        .unwrap_or_else(|| default_out_dir("sweep"));
    interrupt::install();
    let report = crate::sweep::sweep(&crate::sweep::SweepOptions {
        topology: args.topology,
        set: args.set,
        vary: args.vary,
        parallel: usize::from(args.parallel),
        out_dir: out,
        plots,
        series: args.series,
        replicates: args.replicates,
        replot: args.replot,
        resume,
        run_flags: vec![
            "--link-backend".into(),
            args.link_backend.name().into(),
            "--timeout".into(),
            args.timeout,
        ],
    })
    .map_err(failure)?;
    crate::say_text!("{report}");
    Ok(())
}

/// Each `--plot METRIC:VARIABLE` as `(METRIC, VARIABLE)`. Both name the plot's file
/// (`METRIC-vs-VARIABLE.svg`), so both are held to the variable names' rule: nothing else
/// could be a field or a variable, and a `/` or `..` would write outside the sweep.
fn parse_plots(plots: &[String]) -> Result<Vec<(String, String)>, Failure> {
    plots
        .iter()
        .map(|p| {
            let (y, x) = p
                .split_once(':')
                .ok_or_else(|| usage_error(format!("--plot `{p}`: expected METRIC:VARIABLE")))?;
            if let Some(bad) = [y, x].into_iter().find(|n| !topology::is_var_name(n)) {
                return Err(usage_error(format!(
                    "--plot `{p}`: `{bad}` is not a metric or variable name (letters, digits and `_`, not starting with a digit)"
                )));
            }
            Ok((y.to_string(), x.to_string()))
        })
        .collect()
}

/// The most runs one sweep may make: every combination is held in memory and its file loaded
/// before the first run starts.
const MAX_RUNS: u64 = 10_000;

/// The runs the sweep would make (every combination, `repeat` times), refused past `MAX_RUNS`
/// before anything is built.
fn check_run_count(vary: &[(String, Vec<String>)], repeat: u32) -> Result<(), Failure> {
    let runs = vary
        .iter()
        .try_fold(u64::from(repeat), |runs, (_, values)| {
            runs.checked_mul(values.len() as u64)
        })
        .filter(|&runs| runs <= MAX_RUNS);
    match runs {
        Some(_) => Ok(()),
        None => Err(usage_error(format!(
            "--vary: more than {MAX_RUNS} runs; split the sweep"
        ))),
    }
}

/// Loads the file with every combination's variables, so that a bad value stops the sweep
/// before any run starts.
fn check_combinations(args: &SweepArgs) -> Result<(), Failure> {
    for run in crate::sweep::grid::combinations(&args.vary) {
        let set: Vec<(String, String)> = args.set.iter().cloned().chain(run).collect();
        topology::load(
            &args.topology,
            &LoadOptions {
                name: None,
                set: &set,
            },
        )?;
    }
    Ok(())
}

/// Repeats are the replicates, so no other variable may be, and `repeat` is theirs: no
/// --vary, --series or --plot may name it.
fn check_repeat(
    repeat: u32,
    replicates: Option<&str>,
    vary: &[(String, Vec<String>)],
    series: &str,
    plots: &[(String, String)],
) -> Result<(), Failure> {
    if let Some(var) = replicates {
        return Err(usage_error(format!(
            "--repeat {repeat} with --replicates `{var}`: the repeats are the replicates; give one or the other"
        )));
    }
    let named = vary.iter().any(|(k, _)| k == REPEAT)
        || series == REPEAT
        || plots.iter().any(|(_, x)| x == REPEAT);
    if named {
        return Err(usage_error(format!(
            "--repeat {repeat}: `{REPEAT}` labels the repeats; it cannot be a --vary, --series or --plot variable"
        )));
    }
    Ok(())
}

/// The replicate variable must be varied, or there is nothing to average over, and must be
/// neither a plot's x nor the series, which would split its replicates apart again.
fn check_replicates(
    var: &str,
    vary: &[(String, Vec<String>)],
    plots: &[(String, String)],
    series: &str,
) -> Result<(), Failure> {
    if !vary.iter().any(|(k, _)| k == var) {
        return Err(usage_error(format!(
            "--replicates `{var}`: not a varied variable; give its values with --vary {var}=V1,V2,..."
        )));
    }
    if var == series || plots.iter().any(|(_, x)| x == var) {
        return Err(usage_error(format!(
            "--replicates `{var}`: the replicates cannot also be the --series or a --plot variable"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<(), Failure>) -> String {
        match result {
            Err(failure) => {
                assert_eq!(failure.status, 2, "{}", failure.message);
                failure.message
            }
            Ok(()) => panic!("no error"),
        }
    }

    #[test]
    fn repeats_are_refused_beside_other_replicates_or_where_repeat_is_named() {
        let vary = vec![("internet_delay".to_string(), vec!["0ms".to_string()])];
        let plots = vec![("startup_delay_s".to_string(), "internet_delay".to_string())];
        assert!(check_repeat(5, None, &vary, "policy", &plots).is_ok());
        assert!(
            message(check_repeat(5, Some("trace"), &vary, "policy", &plots))
                .contains("--repeat 5 with --replicates `trace`")
        );
        let mut named = vary.clone();
        named.push((REPEAT.to_string(), vec!["1".to_string()]));
        assert!(message(check_repeat(5, None, &named, "policy", &plots))
            .contains("`repeat` labels the repeats"));
        assert!(message(check_repeat(5, None, &vary, REPEAT, &plots))
            .contains("`repeat` labels the repeats"));
    }

    #[test]
    fn a_sweep_of_too_many_runs_is_refused_before_it_starts() {
        let vary = |n: usize| -> Vec<(String, Vec<String>)> {
            (0..n)
                .map(|i| (format!("v{i}"), (0..10).map(|x| x.to_string()).collect()))
                .collect()
        };
        assert!(check_run_count(&vary(4), 1).is_ok());
        assert!(message(check_run_count(&vary(4), 2)).contains("more than 10000 runs"));
        assert!(message(check_run_count(&vary(40), 1)).contains("more than 10000 runs"));
    }

    /// A plot's names become its file's name: only metric and variable names pass.
    #[test]
    fn plot_names_that_could_leave_the_sweep_are_refused() {
        let plots = |arg: &str| parse_plots(&[arg.to_string()]).map(|_| ());
        assert!(plots("startup_delay_s:internet_delay").is_ok());
        for bad in ["../../etc/x:d", "m:a/b", "m:", ":d", "m:1x", "m-1:d"] {
            assert!(
                message(plots(bad)).contains("is not a metric or variable name"),
                "{bad}"
            );
        }
        assert!(message(plots("startup")).contains("expected METRIC:VARIABLE"));
    }
}
