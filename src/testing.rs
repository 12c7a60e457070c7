//! Helpers the crate's tests share.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Waits until `done()` holds, checking every 5 ms; fails the test, naming `what`, after 10 s.
pub async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A fresh path under the system temp dir (not created: the test decides), removed with all it
/// holds when dropped, even when a test fails.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cdnlab-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The status a GET of `url` gets, asked as a role asks (`roles::fetch::client`).
pub async fn status_of(url: String) -> reqwest::StatusCode {
    let client = crate::roles::fetch::client().build().unwrap();
    client.get(url).send().await.unwrap().status()
}
