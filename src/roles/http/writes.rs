//! How the fast path (`head_only`) writes answers: heads batched in a buffer; a body in memory
//! in the same write as the heads before it; a body in a file (`sealed`) by `sendfile` after
//! them (the heads sent with `MSG_MORE`, so they share packets with the body), as nginx sends
//! static files; any other body frame by frame. Every write gives up once the client has taken nothing
//! for the idle time (a client that does not read its answers), however long a slow client
//! takes in all.

use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::body::Body;
use super::congestion::congestion_control;
use super::head_only::MAX_COPIED_BODY;

/// The largest body sent by `sendfile` on a connection BBR paces; larger ones are copied.
/// Measured on loopback against the copy (BENCHMARKS.md, http): `sendfile` served 100 KB and
/// 500 KB chunks faster under both CUBIC and BBR, but on one VM under BBR 1 MB and 2 MB ones
/// at less than half the copy's rate, from memfd pages and large folios alike (nginx was held
/// the same way); under CUBIC, 2 MB ones from large folios were faster than the copy on both
/// VMs measured.
pub(super) const MAX_SENDFILE_BODY_UNDER_BBR: usize = 512 * 1024;

/// Whether a body of `len` bytes kept in a file goes out by `sendfile` on a connection
/// (`bbr`: whether BBR paces it, asked only when it matters). Smaller ones are copied in with
/// their heads; larger ones under BBR are copied from memory.
pub(super) fn sent_by_sendfile(len: usize, bbr: impl FnOnce() -> bool) -> bool {
    len > MAX_COPIED_BODY && (len <= MAX_SENDFILE_BODY_UNDER_BBR || !bbr())
}

/// Whether BBR (any version) is the socket's congestion control.
fn paced_by_bbr(stream: &TcpStream) -> bool {
    congestion_control(stream).is_ok_and(|name| name.starts_with("bbr"))
}

/// Writes on one connection, bounded by its idle timer.
pub(super) struct Writer<'a, 't> {
    stream: &'a TcpStream,
    timer: &'a mut Pin<&'t mut Sleep>,
    idle: Duration,
}

impl<'a, 't> Writer<'a, 't> {
    pub(super) fn new(
        stream: &'a TcpStream,
        timer: &'a mut Pin<&'t mut Sleep>,
        idle: Duration,
    ) -> Writer<'a, 't> {
        Writer {
            stream,
            timer,
            idle,
        }
    }

    /// Writes and clears `output`.
    pub(super) async fn flush(&mut self, output: &mut Vec<u8>) -> io::Result<()> {
        let written = self.write_all(output, &[]).await;
        output.clear();
        written
    }

    /// Writes and clears `output`, then sends `body`.
    pub(super) async fn flush_with(&mut self, output: &mut Vec<u8>, body: Body) -> io::Result<()> {
        let sendfile = match &body {
            Body::Sealed(Some(sealed))
                if sent_by_sendfile(sealed.len(), || paced_by_bbr(self.stream)) =>
            {
                sealed.file()
            }
            _ => None,
        };
        let written = if let Some((file, offset)) = sendfile {
            match self.send_more(output).await {
                Ok(()) => self.send_file(file, offset, body.len()).await,
                Err(e) => Err(e),
            }
        } else if let Some(bytes) = body.in_memory() {
            self.write_all(output, bytes).await
        } else {
            match self.write_all(output, &[]).await {
                Ok(()) => self.send_frames(body).await,
                Err(e) => Err(e),
            }
        };
        output.clear();
        written
    }

    /// Writes all of `head` and then `body`, in one write where the socket takes both.
    async fn write_all(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        let mut parts = [IoSlice::new(head), IoSlice::new(body)];
        let mut parts = &mut parts[..];
        IoSlice::advance_slices(&mut parts, 0);
        self.until_done(|stream| {
            if parts.is_empty() {
                return Ok(true);
            }
            match stream.try_write_vectored(parts)? {
                0 => Err(io::ErrorKind::WriteZero.into()),
                n => {
                    IoSlice::advance_slices(&mut parts, n);
                    Ok(parts.is_empty())
                }
            }
        })
        .await
    }

    /// Writes all of `head` with `MSG_MORE`: the kernel holds a partial packet for what follows.
    async fn send_more(&mut self, mut head: &[u8]) -> io::Result<()> {
        let socket = self.stream.as_raw_fd();
        self.until_done(|stream| {
            if head.is_empty() {
                return Ok(true);
            }
            let sent = stream.try_io(Interest::WRITABLE, || {
                // SAFETY: sends from a live slice on the connection's own socket.
                let n = unsafe {
                    libc::send(
                        socket,
                        head.as_ptr().cast(),
                        head.len(),
                        libc::MSG_MORE | libc::MSG_NOSIGNAL,
                    )
                };
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            })?;
            match sent {
                0 => Err(io::ErrorKind::WriteZero.into()),
                n => {
                    head = &head[n..];
                    Ok(head.is_empty())
                }
            }
        })
        .await
    }

    /// Sends `len` bytes of `file` from `offset` by `sendfile`: the socket refers to the
    /// file's pages instead of copying them.
    async fn send_file(&mut self, file: &File, offset: u64, len: u64) -> io::Result<()> {
        let socket = self.stream.as_raw_fd();
        let (Ok(mut offset), Ok(end)) = (
            libc::off_t::try_from(offset),
            libc::off_t::try_from(offset.saturating_add(len)),
        ) else {
            return Err(io::ErrorKind::InvalidInput.into());
        };
        self.until_done(|stream| {
            if offset >= end {
                return Ok(true);
            }
            let sent = stream.try_io(Interest::WRITABLE, || {
                // `end - offset` is positive and at most `len`.
                let count = (end - offset) as usize;
                // SAFETY: the kernel reads the file and advances `offset`, a live local.
                let n = unsafe { libc::sendfile(socket, file.as_raw_fd(), &mut offset, count) };
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            })?;
            match sent {
                0 => Err(io::ErrorKind::WriteZero.into()),
                _ => Ok(offset >= end),
            }
        })
        .await
    }

    /// A body not in memory, frame by frame.
    async fn send_frames(&mut self, mut body: Body) -> io::Result<()> {
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                self.write_all(&data, &[]).await?;
            }
        }
        Ok(())
    }

    /// Calls `write` (true: all written; false: some) until all is written, waiting for the
    /// socket between calls; an error once the client has taken nothing for the idle time.
    async fn until_done(
        &mut self,
        mut write: impl FnMut(&TcpStream) -> io::Result<bool>,
    ) -> io::Result<()> {
        let mut progress = Instant::now();
        loop {
            match write(self.stream) {
                Ok(true) => return Ok(()),
                Ok(false) => progress = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            tokio::select! {
                ready = self.stream.writable() => ready?,
                () = self.timer.as_mut() => {
                    if !rearm(self.timer, progress + self.idle) {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                }
            }
        }
    }
}

/// After the timer fired: false if `deadline` has passed, else the timer now waits for it.
pub(super) fn rearm(timer: &mut Pin<&mut Sleep>, deadline: Instant) -> bool {
    if Instant::now() >= deadline {
        return false;
    }
    timer.as_mut().reset(deadline.into());
    true
}

#[cfg(test)]
mod tests {
    use super::super::test_clients::set_congestion_control;
    use super::*;

    #[test]
    fn large_bodies_go_by_sendfile_unless_bbr_paces_the_connection() {
        let asked = std::cell::Cell::new(0);
        let bbr = |is: bool| {
            let asked = &asked;
            move || {
                asked.set(asked.get() + 1);
                is
            }
        };
        assert!(
            !sent_by_sendfile(MAX_COPIED_BODY, bbr(false)),
            "copied with its head"
        );
        assert!(sent_by_sendfile(MAX_COPIED_BODY + 1, bbr(true)));
        assert!(sent_by_sendfile(MAX_SENDFILE_BODY_UNDER_BBR, bbr(true)));
        assert_eq!(asked.get(), 0, "the socket is asked only for larger bodies");
        assert!(!sent_by_sendfile(
            MAX_SENDFILE_BODY_UNDER_BBR + 1,
            bbr(true)
        ));
        assert!(sent_by_sendfile(2_000_000, bbr(false)));
        assert_eq!(asked.get(), 2);
    }

    /// A connection's congestion control as the kernel reports it: reno (every kernel has it,
    /// and any socket may choose it) is not BBR; BBR is, where this kernel has it and lets the
    /// test choose it.
    #[tokio::test]
    async fn bbr_is_told_from_the_sockets_congestion_control() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        for (name, is_bbr) in [("reno", false), ("bbr", true)] {
            let stream = TcpStream::connect(addr).await.unwrap();
            if set_congestion_control(&stream, name).is_err() {
                assert_eq!(name, "bbr", "reno is always allowed");
                continue;
            }
            assert_eq!(paced_by_bbr(&stream), is_bbr, "{name}");
        }
    }
}
