//! A TCP socket's congestion control by name: the fast path copies large bodies on
//! connections BBR paces (`writes`), and tests check which one a socket got.

use std::io;
use std::os::fd::AsRawFd;

/// The congestion control of TCP socket `socket`: `cubic`, `bbr`, `reno`, …
pub fn congestion_control(socket: &impl AsRawFd) -> io::Result<String> {
    // The kernel's names are at most TCP_CA_NAME_MAX (16) bytes, NUL-padded.
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: the buffer and its length are valid for the call on an open descriptor.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let name = &name[..(len as usize).min(name.len())];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}
