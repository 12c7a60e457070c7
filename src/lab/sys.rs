//! Thin wrappers over the system: running `ip`/`iptables`/`tc`, entering a namespace from a
//! thread, and identifying processes.

use std::fmt;
use std::io::Write;
use std::process::{Command, Stdio};

/// An error of the lab: one message naming what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Builds an error message.
pub fn err<T>(message: impl Into<String>) -> Result<T> {
    Err(Error(message.into()))
}

/// Runs `argv` to completion, feeding `stdin`; fails with the command and its stderr.
pub fn run(argv: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error(format!("cannot run `{}`: {e}", argv[0])))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A command that fails early closes its stdin; its stderr says why.
        let _ = pipe.write_all(text.as_bytes());
    }
    let output = child
        .wait_with_output()
        .map_err(|e| Error(format!("`{}`: {e}", argv.join(" "))))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return err(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            output.status,
            stderr.trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs a batch of `ip` commands (one per line) in one process, optionally inside `netns`.
pub fn ip_batch(netns: Option<&str>, lines: &[String]) -> Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut argv = vec!["ip"];
    if let Some(ns) = netns {
        argv.extend(["-n", ns]);
    }
    argv.extend(["-batch", "-"]);
    run(&argv, Some(&(lines.join("\n") + "\n"))).map(|_| ())
}

/// Runs `f` on a thread that has entered network namespace `netns` (by its /run/netns name),
/// so sockets it opens and /proc/sys/net files it writes belong to that namespace.
/// Processes it starts are born there too. The thread is scoped, so `f` may borrow.
pub fn in_netns<T: Send>(netns: &str, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let path = format!("/run/netns/{netns}");
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let file = std::fs::File::open(&path).map_err(|e| Error(format!("{path}: {e}")))?;
                // SAFETY: setns on a valid descriptor affects only this thread, which ends
                // after `f`.
                let rc = unsafe {
                    libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET)
                };
                if rc != 0 {
                    return err(format!(
                        "cannot enter namespace {path}: {}",
                        std::io::Error::last_os_error()
                    ));
                }
                f()
            })
            .join()
            .map_err(|_| Error(format!("the thread working in {netns} panicked")))?
    })
}

/// Writes a sysctl of the current thread's namespace (`net/ipv4/ip_forward` form).
pub fn write_sysctl(key: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/{key}");
    std::fs::write(&path, value).map_err(|e| Error(format!("{path}: {e}")))
}

/// The processes inside any of the namespaces named (by their /run/netns names): one pass
/// over /proc for all of them, where `ip netns pids` makes one per namespace.
pub fn pids_in_netns(namespaces: &[&str]) -> Vec<i32> {
    use std::os::unix::fs::MetadataExt;
    let id = |path: &str| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let wanted: std::collections::HashSet<(u64, u64)> = namespaces
        .iter()
        .filter_map(|ns| id(&format!("/run/netns/{ns}")))
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| id(&format!("/proc/{pid}/ns/net")).is_some_and(|ns| wanted.contains(&ns)))
        .collect()
}

/// Field 22 of /proc/PID/stat: when the process started. `None` if it is gone.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; it ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// True if `pid` is still the process that started at `start_time` and is not a zombie.
pub fn process_alive(pid: i32, start_time: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(close) = stat.rfind(')') else {
        return false;
    };
    let mut fields = stat[close + 2..].split_whitespace();
    let state = fields.next();
    let started = fields.nth(18).and_then(|s| s.parse::<u64>().ok());
    state != Some("Z") && started == Some(start_time)
}

/// This process, as a record that outlives a recycled pid.
pub fn own_process() -> Result<super::state::ProcessRecord> {
    let pid = std::process::id() as i32;
    let start_time = process_start_time(pid)
        .ok_or_else(|| Error(format!("cannot read /proc/{pid}/stat of this process")))?;
    Ok(super::state::ProcessRecord { pid, start_time })
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Killed(i32),
    /// It cannot be told: not this process's child, or reaped already.
    Gone,
}

impl Ended {
    /// Anything but a clean exit (a one-shot command may end with status 0).
    pub fn failed(self) -> bool {
        self != Ended::Exited(0)
    }
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Ended::Exited(status) => write!(f, "exited with status {status}"),
            Ended::Killed(signal) => {
                // SAFETY: strsignal returns a pointer to a static or thread-local string.
                let name = unsafe { std::ffi::CStr::from_ptr(libc::strsignal(signal)) };
                let name = name.to_string_lossy();
                write!(f, "was killed by signal {signal} ({name})")
            }
            Ended::Gone => f.write_str("is gone"),
        }
    }
}

/// How child `pid` ended, if it is a child of this process that has ended or is ending and has
/// not been reaped yet (it is reaped now). `None` if it is not this process's child or has not
/// ended within `within`.
///
/// Waits because /proc shows a multi-threaded process as a zombie (and its sockets are closed)
/// as soon as its main thread has exited, while `waitpid` reaps it only once its last thread
/// has: in between, a check that gives up at once reports the death without its cause.
pub fn reap_exit(pid: i32, within: std::time::Duration) -> Option<Ended> {
    let deadline = std::time::Instant::now() + within;
    let mut status = 0;
    loop {
        // SAFETY: waitpid with WNOHANG on one pid writes only `status`.
        match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
            reaped if reaped == pid => break,
            0 if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            // Not our child (ECHILD), or still running at the deadline.
            _ => return None,
        }
    }
    Some(if libc::WIFSIGNALED(status) {
        Ended::Killed(libc::WTERMSIG(status))
    } else {
        Ended::Exited(libc::WEXITSTATUS(status))
    })
}

/// Sends `signal` to the process group led by `pid` (nodes run in their own sessions) and
/// to the process itself.
pub fn signal_group(pid: i32, signal: i32) {
    // SAFETY: kill has no memory effects; errors (already gone) are fine.
    unsafe {
        libc::kill(-pid, signal);
        libc::kill(pid, signal);
    }
}

/// Whether `meta` is of a directory of this user's that no one else can write: root may act
/// on what such a directory holds, since no other user can have placed it there.
pub fn private_dir(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    meta.is_dir() && meta.uid() == euid && meta.mode() & 0o022 == 0
}

pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// True if `program` is found on PATH.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}

/// The directory of the running executable, where the role binaries and the shaper are.
pub fn bin_dir() -> Result<std::path::PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error(format!("cannot locate cdnlab: {e}")))?;
    exe.parent()
        .map(|p| p.to_path_buf())
        .ok_or_else(|| Error("cannot locate cdnlab's directory".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_child_killed_just_now_is_reaped_with_its_signal() {
        #[allow(clippy::zombie_processes)] // reap_exit, under test, reaps it.
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let pid = child.id() as i32;
        // SAFETY: kill has no memory effects.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        // Asked at once: the child may not have ended yet, so this must wait for it.
        let how = reap_exit(pid, Duration::from_secs(5));
        assert_eq!(how, Some(Ended::Killed(9)));
        assert_eq!(
            Ended::Killed(9).to_string(),
            "was killed by signal 9 (Killed)"
        );
        assert!(Ended::Killed(9).failed() && Ended::Gone.failed() && Ended::Exited(1).failed());
        assert!(!Ended::Exited(0).failed());
    }

    #[test]
    fn a_process_that_is_not_a_child_is_not_waited_for() {
        let started = Instant::now();
        assert_eq!(reap_exit(1, Duration::from_secs(5)), None);
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
