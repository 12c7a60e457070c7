//! Which bytes a connection writes carry answers, so that its stall timer counts only those: a
//! client taking its answers makes them go, one that stopped reading does not. Over HTTP/1.1
//! every byte written is an answer's. Over h2c the server also writes frames of its own
//! accord or at the client's asking (pings and their acknowledgements, settings, window
//! updates): a client that stopped reading but answers or sends pings would keep them going.
//! Only DATA frames' payloads are answers there.

/// The preface an HTTP/2 client opens a connection with (RFC 9113, section 3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// An HTTP/2 frame header's length: payload length (24 bits), type, flags, stream (RFC 9113,
/// section 4.1).
const FRAME_HEADER: usize = 9;
/// The DATA frame's type.
const DATA: u8 = 0;

/// What a connection speaks, as its first bytes read tell.
#[derive(Debug)]
pub(super) enum AnswerBytes {
    /// This many of HTTP/2's preface read so far, and nothing else.
    Unknown(usize),
    Http1,
    Http2(Frames),
}

/// Where the server's HTTP/2 frames are in what it has written.
#[derive(Debug, Default)]
pub(super) struct Frames {
    header: [u8; FRAME_HEADER],
    /// Bytes of the present frame's header written so far.
    have: usize,
    /// Bytes of the present frame's payload still to be written.
    left: usize,
    /// Whether the present frame is a DATA frame.
    data: bool,
}

impl AnswerBytes {
    pub(super) fn new() -> AnswerBytes {
        AnswerBytes::Unknown(0)
    }

    /// Takes the bytes the client sent, in order: the first tell HTTP/2 from HTTP/1.1.
    pub(super) fn read(&mut self, bytes: &[u8]) {
        let AnswerBytes::Unknown(matched) = *self else {
            return;
        };
        let expected = &PREFACE[matched..];
        let n = expected.len().min(bytes.len());
        *self = if bytes[..n] != expected[..n] {
            AnswerBytes::Http1
        } else if matched + n == PREFACE.len() {
            AnswerBytes::Http2(Frames::default())
        } else {
            AnswerBytes::Unknown(matched + n)
        };
    }

    /// Whether `written`, the next bytes the server wrote, carry part of an answer. Before
    /// the client's first bytes tell, every byte counts.
    pub(super) fn carry_answer<'a>(&mut self, written: impl IntoIterator<Item = &'a [u8]>) -> bool {
        match self {
            AnswerBytes::Http2(frames) => {
                // Every slice walked, so the frames are followed through all of them.
                let mut carried = false;
                for bytes in written {
                    carried |= frames.walk(bytes);
                }
                carried
            }
            _ => written.into_iter().any(|bytes| !bytes.is_empty()),
        }
    }
}

impl Frames {
    /// Follows the frames through `bytes`; whether any is a DATA frame's payload.
    fn walk(&mut self, mut bytes: &[u8]) -> bool {
        let mut data = false;
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = self.left.min(bytes.len());
                data |= self.data;
                self.left -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (FRAME_HEADER - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == FRAME_HEADER {
                let [a, b, c, kind, ..] = self.header;
                self.left = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
                self.data = kind == DATA;
                self.have = 0;
            }
        }
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
        let mut frame = vec![len[1], len[2], len[3], kind, 0, 0, 0, 0, 1];
        frame.extend_from_slice(payload);
        frame
    }

    #[test]
    fn the_first_bytes_read_tell_http2_from_http1() {
        let mut split = AnswerBytes::new();
        split.read(&PREFACE[..5]);
        assert!(matches!(split, AnswerBytes::Unknown(5)));
        split.read(&[PREFACE[5..].to_vec(), b"\0\0\0\x04".to_vec()].concat());
        assert!(matches!(split, AnswerBytes::Http2(_)));
        for first in [&b"GET / HTTP/1.1\r\n"[..], b"PRI * HTTP/1.1", b"P"] {
            let mut http1 = AnswerBytes::new();
            http1.read(first);
            http1.read(b"x");
            assert!(matches!(http1, AnswerBytes::Http1), "{first:?}");
        }
    }

    /// Over HTTP/2 only DATA payloads carry answers, however the frames are cut into writes;
    /// over HTTP/1.1 (or before the client has said) every byte does.
    #[test]
    fn only_data_frames_carry_http2_answers() {
        let mut http2 = AnswerBytes::new();
        http2.read(PREFACE);
        let ping = frame(6, &[0; 8]);
        let settings = frame(4, &[]);
        let window = frame(8, &[0, 0, 1, 0]);
        let control = [ping.clone(), settings, window, ping].concat();
        assert!(!http2.carry_answer([&control[..]]));
        // A DATA frame cut anywhere, its header's end and payload in a later write.
        let data = frame(DATA, b"answer");
        for cut in 1..data.len() {
            let mut before = control.clone();
            before.extend_from_slice(&data[..cut]);
            let answered_before = http2.carry_answer([&before[..]]);
            assert_eq!(answered_before, cut > FRAME_HEADER, "cut at {cut}");
            let after = [&data[cut..], &control[..]].concat();
            assert!(
                http2.carry_answer([&after[..5], &after[5..]]),
                "cut at {cut}"
            );
            assert!(!http2.carry_answer([&control[..]]), "cut at {cut}");
        }
        // An empty DATA frame (an answer's end) carries no bytes of it.
        assert!(!http2.carry_answer([&frame(DATA, &[])[..]]));
        let mut http1 = AnswerBytes::new();
        assert!(http1.carry_answer([&b"HTTP/1.1 200 OK\r\n"[..]]));
        http1.read(b"GET / HTTP/1.1\r\n\r\n");
        assert!(http1.carry_answer([&[][..], &b"x"[..]]));
        assert!(!http1.carry_answer([&[][..]]));
    }
}
