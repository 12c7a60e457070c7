//! A server under test (nginx or one of our roles) as a process group of its own.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::cpu_usage::group_cpu_ticks;
use super::pinning::{Pinning, SERVER_CPU};
use crate::lab::{sys, Error, Result};

/// How long a server may take to accept connections after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A server process in its own process group, stopped (the whole group) when dropped.
pub(in crate::bench) struct Server {
    pub(super) name: &'static str,
    child: Child,
    pub(super) port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts `program args` on the server CPU and waits until `port` accepts connections.
    pub(super) fn start(
        name: &'static str,
        pinning: &Pinning,
        program: &Path,
        args: &[&std::ffi::OsStr],
        work: &Path,
        port: u16,
    ) -> Result<Server> {
        let log = work.join(format!("{name}-{port}.log"));
        let file = std::fs::File::create(&log)
            .map_err(|e| Error(format!("creating {}: {e}", log.display())))?;
        let stderr = file
            .try_clone()
            .map_err(|e| Error(format!("{}: {e}", log.display())))?;
        let mut command = pinning.command(SERVER_CPU, program);
        command
            .args(args)
            .env(crate::roles::env::WORKER_THREADS, "1")
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(stderr)
            // Its own group: Ctrl-C reaches only cdnlab, which stops it, and stopping the
            // group stops nginx's worker with its master.
            .process_group(0);
        let child = command
            .spawn()
            .map_err(|e| Error(format!("starting {}: {e}", program.display())))?;
        let mut server = Server {
            name,
            child,
            port,
            log,
        };
        server.wait_ready(port)?;
        Ok(server)
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits until `port` accepts; fails with the server's log if it exits or takes too long.
    pub(super) fn wait_ready(&mut self, port: u16) -> Result<()> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            let exited = !matches!(self.child.try_wait(), Ok(None));
            if exited || Instant::now() >= deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                return Err(Error(format!(
                    "{} did not accept connections on {addr} within {} s; its log:\n{}",
                    self.name,
                    START_TIMEOUT.as_secs(),
                    log.trim_end()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// CPU ticks of every process in the server's group (nginx's master and worker).
    pub(in crate::bench) fn cpu_ticks(&self) -> Option<u64> {
        group_cpu_ticks(self.pid())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        sys::signal_group(self.pid(), libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        sys::signal_group(self.pid(), libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// `N` loopback ports free right now (bound together so they differ, then released).
pub(in crate::bench) fn free_ports<const N: usize>() -> Result<[u16; N]> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error(format!("finding free loopback ports: {e}")))?;
    let mut ports = [0; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(|e| Error(format!("finding free loopback ports: {e}")))?
            .port();
    }
    Ok(ports)
}
