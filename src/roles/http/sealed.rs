//! Bytes a server sends again and again (a content server's cached chunks), kept in a file
//! that cannot change and is mapped read-only: the same pages are `Bytes` for everything that
//! wants a slice (HTTP/2, ranges, small answers) and a file that the HTTP/1.1 fast path hands
//! to the socket by `sendfile` without copying them, as nginx sends its static files. The file
//! is immutable (`large_folios`) or a memfd under seals (no write, shrink or grow, no further
//! seals), so its pages stay as they are for as long as any socket refers to them.
//!
//! Only bytes the fast path may send by `sendfile` (above `MAX_COPIED_BODY`) get a file: each
//! holds a descriptor and whole pages. That file is an unnamed, read-only one of large folios
//! (`large_folios`), which costs less CPU per `sendfile` than a memfd's 4 KiB pages; on kernels
//! before 6.14, whose folios there are all 2 MiB, only for bytes above `MAX_MEMFD_BYTES`. The
//! rest, and any where that file cannot be had (no `CAP_SYS_ADMIN` for its tmpfs, a seccomp
//! filter), go to a sealed memfd up to `MAX_MEMFD_BYTES`. Others, and any where no file can be
//! had at all (out of descriptors), live on the heap and are copied.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;

use bytes::Bytes;

use super::head_only::MAX_COPIED_BODY;
use super::large_folios;

/// The largest bytes kept in a memfd: where no file of large folios can be had, larger ones
/// are copied, since a 2 MB chunk was measured slower by `sendfile` from a memfd's 4 KiB pages
/// than by copy on one VM (BENCHMARKS.md, http); where only 2 MiB folios can be had, smaller
/// ones go to a memfd, since a folio would waste more than half its memory on them.
const MAX_MEMFD_BYTES: usize = 1024 * 1024;

/// The machine's page size: what a memfd's memory comes in.
#[cfg(test)]
pub(super) fn page_bytes() -> usize {
    // SAFETY: sysconf has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// Immutable bytes, and when the kernel allowed it the sealed memfd or read-only file they
/// are mapped from.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// The bytes: all of the file's mapping, or a slice of it from `offset`.
    bytes: Bytes,
    file: Option<Arc<File>>,
    /// Where `bytes` starts in `file`.
    offset: u64,
    /// The memory the whole storage takes, which every slice keeps alive.
    footprint: usize,
}

impl Sealed {
    /// `bytes` moved into a read-only file of large folios or a sealed memfd where that is
    /// possible and worth it (see the module's doc), else kept on the heap.
    pub fn new(bytes: Vec<u8>) -> Sealed {
        if bytes.len() <= MAX_COPIED_BODY {
            return Sealed::on_heap(bytes.into());
        }
        let in_folios = large_folios::every_folio_size() || bytes.len() > MAX_MEMFD_BYTES;
        let file = if in_folios {
            large_folios::read_only_file(&bytes).or_else(|e| {
                if bytes.len() > MAX_MEMFD_BYTES {
                    return Err(e);
                }
                tracing::debug!("no file of large folios ({e}): the bytes go to a memfd");
                sealed_memfd(&bytes)
            })
        } else {
            sealed_memfd(&bytes)
        };
        match file.and_then(|file| {
            let footprint = large_folios::allocated_bytes(&file)?;
            let mapping = Mapping::new(&file, bytes.len())?;
            Ok((footprint, file, mapping))
        }) {
            Ok((footprint, file, mapping)) => Sealed {
                footprint,
                bytes: Bytes::from_owner(mapping),
                file: Some(Arc::new(file)),
                offset: 0,
            },
            Err(e) => {
                tracing::debug!(
                    "no file for the bytes ({e}): they stay on the heap and are copied"
                );
                Sealed::on_heap(bytes.into())
            }
        }
    }

    /// Bytes already in memory, kept as they are (sent by copy).
    fn on_heap(bytes: Bytes) -> Sealed {
        Sealed {
            footprint: bytes.len(),
            bytes,
            file: None,
            offset: 0,
        }
    }

    /// The memory these bytes' storage takes: the blocks of a large folio file (as the kernel
    /// counts them), whole pages of a memfd, the bytes themselves on the heap. A slice reports
    /// its whole's.
    pub fn footprint(&self) -> usize {
        self.footprint
    }

    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The file and where these bytes start in it, if they are in one.
    pub fn file(&self) -> Option<(&File, u64)> {
        self.file.as_deref().map(|file| (file, self.offset))
    }

    /// `length` bytes from `offset` (the caller keeps them within `len`, as `Bytes::slice`).
    pub fn slice(&self, offset: usize, length: usize) -> Sealed {
        Sealed {
            bytes: self.bytes.slice(offset..offset + length),
            file: self.file.clone(),
            offset: self.offset + offset as u64,
            footprint: self.footprint,
        }
    }
}

/// A sealed memfd holding `bytes`.
fn sealed_memfd(bytes: &[u8]) -> io::Result<File> {
    // SAFETY: a NUL-terminated name and plain flags; the result is checked.
    let fd = unsafe {
        libc::memfd_create(
            c"cdnlab-chunk".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    seal(&file)?;
    Ok(file)
}

/// Seals `file`: its size and contents can no longer change, nor its seals.
fn seal(file: &File) -> io::Result<()> {
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on an open descriptor with an integer argument.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A read-only shared mapping of a file, unmapped when dropped.
pub(super) struct Mapping {
    address: *mut u8,
    len: usize,
}

// SAFETY: read-only memory that nobody writes (a memfd sealed against writes, or a file marked
// immutable with no writable descriptor left).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// A read-only mapping of the first `len` bytes of `file`.
    pub(super) fn new(file: &File, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh mapping of `len` bytes of an open file, checked for failure.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            address: address.cast(),
            len,
        })
    }
}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: `len` mapped bytes live until `drop`.
        unsafe { std::slice::from_raw_parts(self.address, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; nothing refers to it any more.
        unsafe {
            libc::munmap(self.address.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;

    /// Whether `file` is a memfd (its /proc link names one) rather than a file of large folios.
    fn is_memfd(file: &File) -> bool {
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .is_ok_and(|target| target.to_string_lossy().starts_with("/memfd:"))
    }

    /// Whether no write can reach `file` any more: a memfd sealed against writes, or a file
    /// that cannot be opened for writing again (immutable), even through its /proc link.
    fn takes_no_write(file: &File) -> bool {
        if is_memfd(file) {
            // SAFETY: fcntl on an open descriptor.
            let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
            return seals >= 0 && seals & libc::F_SEAL_WRITE != 0;
        }
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        std::fs::OpenOptions::new().write(true).open(link).is_err()
    }

    #[test]
    fn bytes_are_kept_in_a_file_that_takes_no_write_and_their_slices_share_it() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let sealed = Sealed::new(bytes.clone());
        assert_eq!(&sealed.bytes()[..], &bytes[..]);
        let (file, offset) = sealed
            .file()
            .expect("this kernel makes sealed memfds at least");
        assert_eq!(offset, 0);
        let mut read = vec![0u8; bytes.len()];
        file.read_exact_at(&mut read, 0).unwrap();
        assert_eq!(read, bytes, "the file holds the bytes");
        assert!(takes_no_write(file), "the file can still be written");

        let slice = sealed.slice(1000, 500);
        assert_eq!(&slice.bytes()[..], &bytes[1000..1500]);
        let (slice_file, slice_offset) = slice.file().unwrap();
        assert_eq!(slice_offset, 1000);
        assert_eq!(slice_file.as_raw_fd(), file.as_raw_fd(), "one file");
        let inner = slice.slice(100, 10);
        assert_eq!(inner.file().unwrap().1, 1100);
        assert_eq!(&inner.bytes()[..], &bytes[1100..1110]);
        drop(sealed);
        assert_eq!(
            &inner.bytes()[..],
            &bytes[1100..1110],
            "a slice outlives the whole"
        );
    }

    /// The fallback where no file of large folios can be had.
    #[test]
    fn a_memfd_is_sealed_against_writes_and_changes_of_size() {
        let file = sealed_memfd(&[7u8; 20_000]).unwrap();
        assert!(is_memfd(&file));
        // SAFETY: fcntl on an open descriptor.
        let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
        let wanted =
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
        assert_eq!(seals & wanted, wanted, "seals {seals:#x}");
        assert!(
            file.write_at(b"x", 0).is_err(),
            "a sealed memfd took a write"
        );
        assert!(file.set_len(1).is_err(), "a sealed memfd shrank");
        assert!(file.set_len(40_000).is_err(), "a sealed memfd grew");
    }

    /// As root (CI), every size sent by `sendfile` goes to a file of large folios (on kernels
    /// before 6.14 only those above `MAX_MEMFD_BYTES`), which takes what its folios take;
    /// otherwise a memfd up to `MAX_MEMFD_BYTES`, of whole pages, and the heap above. No file
    /// can be opened for writing again, whatever it is.
    #[test]
    fn sizes_copied_with_their_heads_get_no_file_and_larger_ones_a_file() {
        let may_mount = large_folios::may_mount();
        let round = |len: usize, unit: usize| len.div_ceil(unit) * unit;
        for len in [0, 16 * 1024] {
            let sealed = Sealed::new(vec![1u8; len]);
            assert!(sealed.file().is_none(), "{len} bytes");
            assert_eq!(sealed.footprint(), len, "{len} bytes");
        }
        for len in [16 * 1024 + 1, 600_000, MAX_MEMFD_BYTES, 2_000_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i % 241) as u8).collect();
            let sealed = Sealed::new(bytes.clone());
            assert_eq!(&sealed.bytes()[..], &bytes[..], "{len} bytes");
            let in_folios =
                may_mount && (large_folios::every_folio_size() || len > MAX_MEMFD_BYTES);
            let in_file = in_folios || len <= MAX_MEMFD_BYTES;
            assert_eq!(sealed.file().is_some(), in_file, "{len} bytes");
            let footprint = match (in_file, large_folios::every_folio_size()) {
                (false, _) => len,
                (true, true) => round(len, page_bytes()),
                // Before 6.14 a file of folios takes whole 2 MiB ones.
                (true, false) if in_folios => round(len, 2 * 1024 * 1024),
                (true, false) => round(len, page_bytes()),
            };
            assert_eq!(sealed.footprint(), footprint, "{len} bytes");
            assert_eq!(
                sealed.slice(5, 100).footprint(),
                footprint,
                "a slice keeps it all"
            );
            if let Some((file, offset)) = sealed.slice(5, 100).file() {
                assert_eq!(offset, 5);
                assert_eq!(is_memfd(file), !in_folios, "{len} bytes");
                assert!(takes_no_write(file), "{len} bytes can still be written");
            }
        }
    }
}
