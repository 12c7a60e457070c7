//! Independent jobs on every core: offline experiments (replication, P2P) run their
//! simulations side by side and get the results back in the jobs' order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// `run(i, &jobs[i])` for every job, on as many threads as there are cores (at most one per
/// job); the results in the jobs' order.
pub fn map<T: Sync, R: Send>(jobs: &[T], run: impl Fn(usize, &T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<R>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.min(jobs.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let outcome = run(i, job);
                done.lock().expect("no worker panics holding it")[i] = Some(outcome);
            });
        }
    });
    let done = done.into_inner().expect("no worker panics holding it");
    done.into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// Writes each `(name, text)` into `out`, creating it if missing. Callers render everything
/// first, so a failed experiment writes nothing.
pub fn write_files(out: &std::path::Path, files: &[(String, String)]) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for (name, text) in files {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
