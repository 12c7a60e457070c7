//! `cdnlab sweep`: one `cdnlab run` per combination of varied variables, several labs at once,
//! with a progress bar; then one CSV of every client of every run, a table and SVG plots.

pub mod grid;
pub mod plot;
pub mod table;

use crate::lab::file_lock::FileLock;
use crate::regular_file::{Beneath, MAX_RUN_FILE};
use crate::run::summary::RunSummary;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pseudo-variable that labels `--repeat`'s runs: a column of `sweep.csv`, never passed to
/// `cdnlab run`.
pub const REPEAT: &str = "repeat";

pub struct SweepOptions {
    pub topology: PathBuf,
    /// `--set` values every run gets.
    pub set: Vec<(String, String)>,
    pub vary: Vec<(String, Vec<String>)>,
    pub parallel: usize,
    pub out_dir: PathBuf,
    /// `(y, x)` pairs to tabulate and plot.
    pub plots: Vec<(String, String)>,
    /// The client field that names a plot's lines.
    pub series: String,
    /// A varied variable whose values are independent replicates (workload traces) rather than
    /// a dimension: tables and plots show the mean over them with a 95% confidence interval.
    pub replicates: Option<String>,
    /// Extra flags for each `cdnlab run` (`--link-backend`, `--timeout`).
    pub run_flags: Vec<String>,
    /// Run nothing: tabulate and plot the runs already in `out_dir`.
    pub replot: bool,
    /// Continue the sweep in `out_dir`: run only the combinations with no `summary.json`.
    pub resume: bool,
}

/// The file in a sweep's directory that records what defines its runs, so `--resume` can tell
/// it is continuing the same sweep.
pub const PLAN_FILE: &str = "sweep.json";

/// The lock a sweep holds on its directory while it runs.
const LOCK_FILE: &str = "sweep.lock";

/// The directory below a sweep's that holds its runs.
const RUNS_DIR: &str = "runs";

/// The `summary.json` run `index` wrote, beneath the sweep's directory `out_dir`.
///
/// The user hands that directory in (`--resume`, `--replot`), so its files are read only
/// through [`Beneath`]: a regular file reached through no link below `out_dir`, and a FIFO not
/// waited on. (What the sweep writes there replaces a file whole, never through a link:
/// `atomic_write`.)
fn run_summary(out_dir: &Path, index: usize, run: &[(String, String)]) -> Beneath {
    let relative = Path::new(RUNS_DIR)
        .join(run_name(index, run))
        .join("summary.json");
    Beneath::new(out_dir, relative)
}

/// What defines a sweep's runs: the topology, its variables, every run's flags.
fn plan(options: &SweepOptions) -> serde_json::Value {
    serde_json::json!({
        "topology": options.topology,
        "set": options.set,
        "vary": options.vary,
        "run_flags": options.run_flags,
    })
}

/// For `--resume`: the sweep in `out_dir` must be this one; names what differs if not.
fn check_resumable(options: &SweepOptions) -> Result<(), String> {
    let plan_file = Beneath::new(&options.out_dir, PLAN_FILE);
    let text = plan_file.read(MAX_RUN_FILE).map_err(|e| {
        format!(
            "--resume {}: cannot read its {PLAN_FILE} ({e}): not a sweep directory this cdnlab wrote",
            options.out_dir.display()
        )
    })?;
    let recorded: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", plan_file.path().display()))?;
    let current = plan(options);
    let differs: Vec<String> = ["topology", "set", "vary", "run_flags"]
        .iter()
        .filter(|key| recorded.get(**key) != current.get(**key))
        .map(|key| {
            format!(
                "{key}: it was {} and is now {}",
                recorded[*key], current[*key]
            )
        })
        .collect();
    if differs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "--resume {}: a different sweep ({}); give the flags it was started with",
            options.out_dir.display(),
            differs.join("; ")
        ))
    }
}

/// Runs the sweep; returns the text it prints at the end (tables and files written).
pub fn sweep(options: &SweepOptions) -> Result<String, String> {
    let runs = grid::combinations(&options.vary);
    let runs_dir = options.out_dir.join(RUNS_DIR);
    // The runs are read, and resuming removed, below `runs/`: a link there is not followed,
    // so that nothing outside DIR is taken for a run or removed as one.
    if (runs_dir.symlink_metadata()).is_ok_and(|meta| !meta.is_dir()) {
        return Err(format!(
            "{}: not a directory (a link is not followed)",
            runs_dir.display()
        ));
    }
    if options.replot {
        return collect(options, &runs, &runs_dir, Duration::ZERO, &[]);
    }
    // One sweep at a time in a directory: a second (or a --resume while the first runs) would
    // start runs over in directories the first's runs write.
    std::fs::create_dir_all(&options.out_dir)
        .map_err(|e| format!("{}: {e}", options.out_dir.display()))?;
    let lock_path = options.out_dir.join(LOCK_FILE);
    let _lock = FileLock::try_take(&lock_path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
            format!(
                "another sweep is running in {} (it holds {})",
                options.out_dir.display(),
                lock_path.display()
            )
        })?;
    if options.resume {
        check_resumable(options)?;
    } else if options.out_dir.join(PLAN_FILE).symlink_metadata().is_ok() {
        return Err(format!(
            "{} holds a sweep already: --resume to finish it, --replot to tabulate it, or give a new --out",
            options.out_dir.display()
        ));
    } else if runs_dir.symlink_metadata().is_ok() {
        // Without a sweep's record, what `runs/` holds is not this sweep's to start over.
        return Err(format!(
            "{} exists, but no {PLAN_FILE} beside it: not a sweep this cdnlab wrote; give a new --out",
            runs_dir.display()
        ));
    }
    std::fs::create_dir_all(&runs_dir).map_err(|e| format!("{}: {e}", runs_dir.display()))?;
    let plan_path = options.out_dir.join(PLAN_FILE);
    let plan_text = plan(options).to_string() + "\n";
    crate::atomic_write::write_atomically(&plan_path, plan_text.as_bytes())
        .map_err(|e| e.to_string())?;
    // Resuming, a combination with a summary is done, unless a server failed during it; the
    // others (never started, interrupted, without a summary) run again.
    let done = |i: usize| {
        options.resume
            && run_summary(&options.out_dir, i, &runs[i])
                .read(MAX_RUN_FILE)
                .ok()
                .and_then(|text| serde_json::from_str::<RunSummary>(&text).ok())
                .is_some_and(|summary| summary.servers_ended.is_empty())
    };
    // Lab names must be unique on the machine and short: `sw` + this sweep's pid (unique among
    // running sweeps; at most 7 digits) + the index. A leftover lab of a dead sweep whose pid
    // came round again makes that run fail with "already up", never touches the old lab.
    let stamp = std::process::id();
    let pending: Vec<usize> = (0..runs.len()).rev().filter(|&i| !done(i)).collect();
    let bar = indicatif::ProgressBar::new(runs.len() as u64);
    bar.set_position((runs.len() - pending.len()) as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} runs  {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let mut running = Vec::new();
    let played = play(
        options,
        &runs,
        &runs_dir,
        pending,
        &mut running,
        &bar,
        stamp,
    );
    if played.is_err() && !running.is_empty() {
        // No run outlives its sweep: each left would go on writing into the sweep's
        // directory without its lock.
        bar.set_message(format!("stopping {} runs", running.len()));
        stop_runs(running, STOP_GRACE);
    }
    bar.finish_and_clear();
    let failed_runs = played?;
    collect(options, &runs, &runs_dir, started.elapsed(), &failed_runs)
}

/// Runs the `pending` combinations (the last first), `options.parallel` at a time, each as a
/// `cdnlab run` in `running` while it runs; returns the runs that failed, by label. An
/// interrupt or an error returns at once, leaving what still runs in `running`.
fn play(
    options: &SweepOptions,
    runs: &[Vec<(String, String)>],
    runs_dir: &Path,
    mut pending: Vec<usize>,
    running: &mut Vec<(usize, Child)>,
    bar: &indicatif::ProgressBar,
    stamp: u32,
) -> Result<Vec<String>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate cdnlab: {e}"))?;
    let mut failed_runs = Vec::new();
    while !pending.is_empty() || !running.is_empty() {
        while running.len() < options.parallel.max(1) {
            let Some(i) = pending.pop() else { break };
            let child = start_run(&exe, options, &runs[i], i, stamp, runs_dir)?;
            running.push((i, child));
        }
        let mut index = 0;
        while index < running.len() {
            let (i, child) = &mut running[index];
            let i = *i;
            match child.try_wait() {
                Ok(None) => index += 1,
                Ok(Some(status)) => {
                    running.remove(index);
                    if !status.success() {
                        failed_runs.push(format!("{} ({status})", grid::label(&runs[i])));
                    }
                    bar.inc(1);
                    bar.set_message(grid::label(&runs[i]));
                }
                Err(e) => return Err(format!("waiting for run {i}: {e}")),
            }
        }
        if crate::lab::interrupt::interrupted() {
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(failed_runs)
}

/// How long an interrupted run has to take its lab down before it is killed (its lab then
/// left for `cdnlab clean`, which finds its owner gone).
const STOP_GRACE: Duration = Duration::from_secs(60);

/// Interrupts each run, which tears its lab down as on Ctrl-C, and waits for it; one still
/// running after `grace` is killed. Each is reaped.
fn stop_runs(mut running: Vec<(usize, Child)>, grace: Duration) {
    for (_, child) in &running {
        // SAFETY: kill has no memory effects; the child tears its lab down on SIGINT.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    let deadline = Instant::now() + grace;
    while !running.is_empty() && Instant::now() < deadline {
        running.retain_mut(|(_, child)| matches!(child.try_wait(), Ok(None)));
        std::thread::sleep(Duration::from_millis(100));
    }
    for (i, mut child) in running {
        tracing::warn!("run {i} did not stop within {grace:?} of its interrupt; killing it");
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The log of the run whose directory is `name`, beside it: the name with `.log` appended, not
/// put for an extension, since a label may hold dots (`d=0.5ms`, `trace=a.log`).
fn run_log(runs_dir: &Path, name: &str) -> PathBuf {
    runs_dir.join(format!("{name}.log"))
}

/// Run `index`'s directory's name in `runs/`.
fn run_name(index: usize, run: &[(String, String)]) -> String {
    format!("{index:03}-{}", grid::label(run))
}

fn start_run(
    exe: &Path,
    options: &SweepOptions,
    run: &[(String, String)],
    index: usize,
    stamp: u32,
    runs_dir: &Path,
) -> Result<Child, String> {
    let name = run_name(index, run);
    let dir = runs_dir.join(&name);
    let log_path = run_log(runs_dir, &name);
    // A run that did not finish (resuming) runs again from nothing: `cdnlab run` writes only
    // into a new directory. Neither is followed if it is a link.
    for old in [&dir, &log_path] {
        let removed = match old.symlink_metadata() {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(old),
            Ok(_) => std::fs::remove_file(old),
            Err(_) => Ok(()),
        };
        removed.map_err(|e| format!("{}: {e}", old.display()))?;
    }
    let log = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err_log = log.try_clone().map_err(|e| e.to_string())?;
    let mut command = Command::new(exe);
    command
        .arg("run")
        .arg(&options.topology)
        .args(["--name", &format!("sw{stamp}-{index}")])
        .arg("--out")
        .arg(&dir)
        .args(&options.run_flags);
    command.args(set_arguments(&options.set, run));
    command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .spawn()
        .map_err(|e| format!("cannot start run {index}: {e}"))
}

/// `--set KEY=VALUE` for every variable a run gets: the sweep's and its combination's, but not
/// the repeat's label, which is no topology variable.
fn set_arguments(set: &[(String, String)], run: &[(String, String)]) -> Vec<String> {
    set.iter()
        .chain(run)
        .filter(|(key, _)| key != REPEAT)
        .flat_map(|(key, value)| ["--set".to_string(), format!("{key}={value}")])
        .collect()
}

fn collect(
    options: &SweepOptions,
    runs: &[Vec<(String, String)>],
    runs_dir: &Path,
    elapsed: Duration,
    failed_runs: &[String],
) -> Result<String, String> {
    let varied: Vec<String> = options.vary.iter().map(|(k, _)| k.clone()).collect();
    let mut rows = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let summary = run_summary(&options.out_dir, i, run);
        let Ok(text) = summary.read(MAX_RUN_FILE) else {
            continue;
        };
        let summary: RunSummary = serde_json::from_str(&text)
            .map_err(|e| format!("{}: {e}", summary.path().display()))?;
        rows.extend(table::rows_of_run(&grid::label(run), run, &summary));
    }
    let csv_path = options.out_dir.join("sweep.csv");
    let csv = table::to_csv(&rows, &varied);
    crate::atomic_write::write_atomically(&csv_path, csv.as_bytes()).map_err(|e| e.to_string())?;
    let mut report = if options.replot {
        format!("{} client results in {}\n", rows.len(), csv_path.display())
    } else {
        format!(
            "{} runs in {:.1} s ({} at a time); {} client results in {}\n",
            runs.len(),
            elapsed.as_secs_f64(),
            options.parallel,
            rows.len(),
            csv_path.display()
        )
    };
    for (y, x) in &options.plots {
        let grouped = table::group(
            &rows,
            &varied,
            x,
            y,
            &options.series,
            options.replicates.as_deref(),
        );
        report += &table::text_table(&grouped, x, y);
        let sample = options
            .vary
            .iter()
            .find(|(k, _)| k == x)
            .and_then(|(_, values)| values.first())
            .map(String::as_str)
            .unwrap_or("");
        let x_title = table::axis_title(x, sample);
        for file in plot::plot(&grouped, x, &x_title, y, &options.out_dir)? {
            report += &format!("plot: {}\n", file.display());
        }
    }
    if !failed_runs.is_empty() {
        report += &format!(
            "\n{} run(s) did not succeed (their logs are in {}): {}\n",
            failed_runs.len(),
            runs_dir.display(),
            failed_runs.join("; ")
        );
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run that ends on its interrupt is not waited for to the grace; one that ignores it is
    /// killed at the grace; both are reaped (their pids no longer exist).
    #[test]
    fn stopped_runs_are_interrupted_then_killed_and_reaped() {
        use std::os::unix::process::CommandExt;
        /// Children the test has not handed to `stop_runs`, killed if it fails first.
        struct KillOnDrop(Vec<Child>);
        impl Drop for KillOnDrop {
            fn drop(&mut self) {
                for child in &mut self.0 {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        let spawn = |script: &str| {
            let mut command = std::process::Command::new("sh");
            // SAFETY: signal(2) is async-signal-safe. SIGINT as by default, whatever the
            // tests were started with (an ignored signal stays ignored across exec).
            unsafe {
                command.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    Ok(())
                })
            };
            command.args(["-c", script]).spawn().expect("sh")
        };
        let gone = |pid: u32| !Path::new(&format!("/proc/{pid}")).exists();
        // This `sleep` ignores SIGINT, ignored before its exec.
        let mut children = KillOnDrop(vec![
            spawn("exec sleep 30"),
            spawn("trap '' INT; exec sleep 30"),
        ]);
        let pids = [children.0[0].id(), children.0[1].id()];
        // Until the shell has run `trap`, SIGINT would end it: wait until it is `sleep`.
        let is_sleep = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c == "sleep\n")
        };
        let started = Instant::now();
        while !pids.into_iter().all(is_sleep) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sleep never ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        stop_runs(vec![(0, children.0.remove(0))], Duration::from_secs(20));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not interrupted"
        );
        let grace = Duration::from_millis(300);
        let started = Instant::now();
        stop_runs(vec![(1, children.0.remove(0))], grace);
        assert!(started.elapsed() >= grace, "killed before its grace");
        assert!(pids.into_iter().all(gone), "{pids:?} not reaped");
    }

    #[test]
    fn a_repeats_label_is_not_passed_to_the_run() {
        let set = vec![("chunks".to_string(), "100".to_string())];
        let run = vec![
            (REPEAT.to_string(), "2".to_string()),
            ("internet_delay".to_string(), "50ms".to_string()),
        ];
        assert_eq!(
            set_arguments(&set, &run),
            ["--set", "chunks=100", "--set", "internet_delay=50ms"]
        );
    }

    fn options(out_dir: PathBuf, vary: &[&str]) -> SweepOptions {
        SweepOptions {
            topology: "topologies/chain.toml".into(),
            set: vec![("a".into(), "1".into())],
            vary: vec![(
                "internet_delay".into(),
                vary.iter().map(|v| v.to_string()).collect(),
            )],
            parallel: 1,
            out_dir,
            plots: Vec::new(),
            series: "policy".into(),
            replicates: None,
            run_flags: vec!["--timeout".into(), "60s".into()],
            replot: false,
            resume: true,
        }
    }

    #[test]
    fn only_the_same_sweep_resumes() {
        let dir = std::env::temp_dir().join(format!("cdnlab-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let started = options(dir.clone(), &["0ms", "50ms"]);
        let missing = check_resumable(&started).unwrap_err();
        assert!(missing.contains("cannot read its sweep.json"), "{missing}");
        std::fs::write(dir.join(PLAN_FILE), plan(&started).to_string()).unwrap();
        assert_eq!(check_resumable(&started), Ok(()));
        let other = check_resumable(&options(dir.clone(), &["0ms", "100ms"])).unwrap_err();
        assert!(other.contains("a different sweep (vary: it was"), "{other}");
        assert!(!other.contains("topology:"), "{other}");
        std::fs::write(dir.join(PLAN_FILE), "{").unwrap();
        assert!(check_resumable(&started)
            .unwrap_err()
            .contains("sweep.json"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A sweep whose directory another sweep holds is refused before it reads or writes there.
    #[test]
    fn a_sweep_refuses_a_directory_another_sweep_runs_in() {
        let dir = crate::testing::TempDir::new("sweep-lock");
        std::fs::create_dir_all(&dir.0).unwrap();
        let held = FileLock::try_take(&dir.0.join(LOCK_FILE)).unwrap().unwrap();
        let refused = sweep(&options(dir.0.clone(), &["0ms"])).unwrap_err();
        assert!(refused.contains("another sweep is running in"), "{refused}");
        assert!(!dir.0.join("runs").exists());
        drop(held);
        // Free, it gets as far as the plan: this one resumes nothing.
        let next = sweep(&options(dir.0.clone(), &["0ms"])).unwrap_err();
        assert!(next.contains("sweep.json"), "{next}");
    }

    /// A run's log lies beside its directory, under a name of its own, whatever dots the
    /// run's label holds.
    #[test]
    fn a_runs_log_is_named_after_its_whole_directory() {
        let runs = Path::new("out/runs");
        for vary in [("d", "0.5ms"), ("trace", "a.log")] {
            let name = run_name(0, &[(vary.0.into(), vary.1.into())]);
            let log = run_log(runs, &name);
            assert_ne!(log, runs.join(&name));
            assert_eq!(log, runs.join(format!("000-{}={}.log", vary.0, vary.1)));
        }
    }

    /// Without `--resume`, a directory whose `runs/` holds runs but no sweep's record is
    /// refused: those runs are not this sweep's to start over.
    #[test]
    fn runs_without_a_sweeps_record_are_left_alone() {
        let dir = crate::testing::TempDir::new("sweep-foreign-runs");
        let run = dir.0.join("runs/000-internet_delay=0ms");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("summary.json"), "{}").unwrap();
        let started = SweepOptions {
            resume: false,
            ..options(dir.0.clone(), &["0ms"])
        };
        let refused = sweep(&started).unwrap_err();
        assert!(
            refused.contains("not a sweep this cdnlab wrote"),
            "{refused}"
        );
        assert!(run.join("summary.json").exists(), "removed");
        assert!(!dir.0.join(PLAN_FILE).exists());
    }

    /// A sweep directory whose `runs/` is a link is refused, resumed or replotted, before
    /// anything there is read, run or removed.
    #[test]
    fn a_sweep_whose_runs_are_a_link_is_refused() {
        let dir = crate::testing::TempDir::new("sweep-runs-link");
        let elsewhere = dir.0.join("elsewhere");
        let run = elsewhere.join("000-internet_delay=0ms");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("summary.json"), "{}").unwrap();
        let out = dir.0.join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink(&elsewhere, out.join("runs")).unwrap();
        for replot in [false, true] {
            let refused = sweep(&SweepOptions {
                replot,
                ..options(out.clone(), &["0ms"])
            })
            .unwrap_err();
            assert!(refused.ends_with("runs: not a directory (a link is not followed)"));
            assert!(
                run.join("summary.json").exists(),
                "removed through the link"
            );
            assert!(!out.join(PLAN_FILE).exists() && !out.join("sweep.csv").exists());
        }
    }
}
