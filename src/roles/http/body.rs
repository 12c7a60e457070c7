//! Response bodies that never hold a whole segment: synthetic payloads generated chunk by chunk,
//! files read chunk by chunk, or bytes already in memory (manifests, cached copies, those in a
//! sealed memfd or read-only file), at once or paced over a set time.

use std::io::{self, SeekFrom};
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use hyper::body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncSeek, ReadBuf};

use super::sealed::Sealed;
use crate::cdn::Payload;

/// Bytes per data frame: large enough that per-frame overhead is small, small enough that a
/// connection's memory stays bounded whatever the segment size.
pub const CHUNK: u64 = 64 * 1024;

/// A response body whose length is always known in advance (so `Content-Length` is exact).
#[derive(Debug)]
pub enum Body {
    Empty,
    /// In-memory bytes, sent as one frame.
    Bytes(Option<Bytes>),
    /// In-memory bytes, which may be mapped from a sealed memfd or read-only file: the
    /// HTTP/1.1 fast path (`writes`) then may send them by `sendfile`; elsewhere one frame, as
    /// `Bytes`.
    Sealed(Option<Sealed>),
    /// `remaining` bytes of a synthetic payload from `offset` on.
    Synthetic {
        payload: Payload,
        offset: u64,
        remaining: u64,
    },
    /// `remaining` bytes of a file from `seek` (until the seek is done) or its position.
    File {
        file: tokio::fs::File,
        seek: Seek,
        remaining: u64,
    },
    /// In-memory bytes sent at an even pace over a set time.
    Paced(super::paced::Paced),
}

/// Where a file body is in positioning its file before the first read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek {
    To(u64),
    Started,
    Done,
}

/// What a HEAD answer sends.
impl Default for Body {
    fn default() -> Body {
        Body::Empty
    }
}

impl Body {
    pub fn bytes(bytes: impl Into<Bytes>) -> Body {
        Body::Bytes(Some(bytes.into()))
    }

    pub fn sealed(sealed: Sealed) -> Body {
        Body::Sealed(Some(sealed))
    }

    /// `length` bytes of `payload` starting at `offset`.
    pub fn synthetic(payload: Payload, offset: u64, length: u64) -> Body {
        Body::Synthetic {
            payload,
            offset,
            remaining: length,
        }
    }

    /// `length` bytes of `file` starting at `offset`.
    pub fn file(file: tokio::fs::File, offset: u64, length: u64) -> Body {
        Body::File {
            file,
            seek: if offset == 0 {
                Seek::Done
            } else {
                Seek::To(offset)
            },
            remaining: length,
        }
    }

    /// All of the body's bytes, when they are in memory.
    pub fn in_memory(&self) -> Option<&[u8]> {
        match self {
            Body::Bytes(Some(bytes)) => Some(bytes),
            Body::Sealed(Some(sealed)) => Some(sealed.bytes()),
            _ => None,
        }
    }

    /// The number of bytes still to come.
    pub fn len(&self) -> u64 {
        match self {
            Body::Empty | Body::Bytes(None) | Body::Sealed(None) => 0,
            Body::Bytes(Some(bytes)) => bytes.len() as u64,
            Body::Sealed(Some(sealed)) => sealed.len() as u64,
            Body::Synthetic { remaining, .. } | Body::File { remaining, .. } => *remaining,
            Body::Paced(paced) => paced.remaining(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Empty => Poll::Ready(None),
            Body::Bytes(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Body::Sealed(sealed) => {
                Poll::Ready(sealed.take().map(|s| Ok(Frame::data(s.bytes().clone()))))
            }
            Body::Paced(paced) => paced.poll_next(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
            Body::Synthetic {
                payload,
                offset,
                remaining,
            } => {
                if *remaining == 0 {
                    return Poll::Ready(None);
                }
                let n = (*remaining).min(CHUNK);
                // `n` ≤ CHUNK fits in usize.
                let mut buf = BytesMut::zeroed(n as usize);
                payload.fill(*offset, &mut buf);
                *offset += n;
                *remaining -= n;
                Poll::Ready(Some(Ok(Frame::data(buf.freeze()))))
            }
            Body::File {
                file,
                seek,
                remaining,
            } => {
                if *remaining == 0 {
                    return Poll::Ready(None);
                }
                if let Seek::To(offset) = *seek {
                    if let Err(e) = Pin::new(&mut *file).start_seek(SeekFrom::Start(offset)) {
                        return Poll::Ready(Some(Err(e)));
                    }
                    *seek = Seek::Started;
                }
                if *seek == Seek::Started {
                    match Pin::new(&mut *file).poll_complete(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                        Poll::Ready(Ok(_)) => *seek = Seek::Done,
                    }
                }
                // tokio's File keeps an in-flight read in its own buffer, so a fresh buffer per
                // poll loses nothing when the read is still pending.
                let mut storage = vec![0u8; (*remaining).min(CHUNK) as usize];
                let mut buf = ReadBuf::new(&mut storage);
                match Pin::new(file).poll_read(cx, &mut buf) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
                    Poll::Ready(Ok(())) => {
                        let n = buf.filled().len();
                        if n == 0 {
                            // The file shrank after its length was sent: abort the response
                            // rather than send a short one that looks complete.
                            return Poll::Ready(Some(Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!("the file ended {remaining} bytes early"),
                            ))));
                        }
                        *remaining -= n as u64;
                        storage.truncate(n);
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(storage)))))
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len())
    }
}
