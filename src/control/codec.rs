//! Frames: a 4-byte big-endian payload length, then the message in bincode 2 (serde, standard
//! config). The length is checked against [`MAX_FRAME`] before anything is read, and the payload
//! buffer grows only as bytes arrive, so a hostile length costs nothing.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest payload either end sends or accepts: far above any control message, far below
/// what would hurt a node that many peers write to at once.
pub const MAX_FRAME: usize = 16 << 20;

const HEADER: usize = 4;

/// bincode's own limit also bounds what one length field inside the payload (a `Vec`, a
/// `String`) may make it allocate.
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_FRAME>()
}

/// The whole frame for `message`, header included.
pub(crate) fn encode<T: Serialize>(message: &T) -> io::Result<Vec<u8>> {
    let mut frame = vec![0; HEADER];
    bincode::serde::encode_into_std_write(message, &mut frame, config()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("encoding a control message: {e}"),
        )
    })?;
    let len = frame.len() - HEADER;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("control message of {len} bytes exceeds the {MAX_FRAME}-byte frame limit"),
        ));
    }
    // Fits: MAX_FRAME < 2^32.
    frame[..HEADER].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(frame)
}

/// The payload length a header announces, refused above [`MAX_FRAME`].
pub(crate) fn payload_len(header: [u8; HEADER]) -> io::Result<usize> {
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes exceeds the {MAX_FRAME}-byte limit"),
        ));
    }
    Ok(len)
}

/// The message in a payload, which must use every byte: trailing bytes mean the two ends
/// disagree on the message type.
pub(crate) fn decode<T: DeserializeOwned>(payload: &[u8]) -> io::Result<T> {
    let (message, used) = bincode::serde::decode_from_slice(payload, config()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("undecodable control message: {e}"),
        )
    })?;
    if used != payload.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "control message of {} bytes has {} trailing bytes: wrong message type?",
                payload.len(),
                payload.len() - used
            ),
        ));
    }
    Ok(message)
}

/// Reads one frame and decodes it.
pub(crate) async fn read_frame<T, R>(reader: &mut R) -> io::Result<T>
where
    T: DeserializeOwned,
    R: AsyncRead + Unpin,
{
    let len = read_header(reader).await?;
    read_payload(reader, len).await
}

/// Reads a frame's header: the payload length it announces, refused above [`MAX_FRAME`].
pub(crate) async fn read_header<R: AsyncRead + Unpin>(reader: &mut R) -> io::Result<usize> {
    let mut header = [0; HEADER];
    reader.read_exact(&mut header).await.map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(e.kind(), "stream ended before a frame header")
        } else {
            e
        }
    })?;
    payload_len(header)
}

/// Reads the `len` bytes of payload that follow a header ([`read_header`]) and decodes them.
pub(crate) async fn read_payload<T, R>(reader: &mut R, len: usize) -> io::Result<T>
where
    T: DeserializeOwned,
    R: AsyncRead + Unpin,
{
    let mut payload = Vec::new();
    (&mut *reader)
        .take(len as u64)
        .read_to_end(&mut payload)
        .await?;
    if payload.len() < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "stream ended {} bytes into a {len}-byte frame",
                payload.len()
            ),
        ));
    }
    decode(&payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use tokio::io::AsyncWriteExt;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Msg {
        Where { chunk: u32 },
        Holders(Vec<String>),
    }

    #[tokio::test]
    async fn frames_round_trip_back_to_back() {
        let (mut a, mut b) = tokio::io::duplex(1024);
        let first = Msg::Where { chunk: 7 };
        let second = Msg::Holders(vec!["dcs1".into(), "dcs2".into()]);
        a.write_all(&encode(&first).unwrap()).await.unwrap();
        a.write_all(&encode(&second).unwrap()).await.unwrap();
        assert_eq!(read_frame::<Msg, _>(&mut b).await.unwrap(), first);
        assert_eq!(read_frame::<Msg, _>(&mut b).await.unwrap(), second);
    }

    #[test]
    fn header_over_the_limit_is_refused_before_reading() {
        assert_eq!(
            payload_len((MAX_FRAME as u32).to_be_bytes()).unwrap(),
            MAX_FRAME
        );
        let err = payload_len((MAX_FRAME as u32 + 1).to_be_bytes()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("exceeds"), "{err}");
        assert!(payload_len([0xff; 4]).is_err());
    }

    #[tokio::test]
    async fn hostile_length_errors_without_waiting_for_the_payload() {
        // Only the header is sent: were the length trusted, the read would wait for 4 GiB.
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(&[0xff, 0xff, 0xff, 0xff]).await.unwrap();
        let err = read_frame::<Msg, _>(&mut b).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn oversized_message_is_not_sent() {
        let big = Msg::Holders(vec!["x".repeat(MAX_FRAME)]);
        let err = encode(&big).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("frame limit"), "{err}");
    }

    #[test]
    fn truncated_garbage_and_trailing_bytes_are_errors() {
        let frame = encode(&Msg::Holders(vec!["dcs1".into()])).unwrap();
        let payload = &frame[HEADER..];
        assert!(decode::<Msg>(&payload[..payload.len() - 1]).is_err());
        assert!(
            decode::<Msg>(&[0x09, 0x01]).is_err(),
            "variant 9 does not exist"
        );
        let mut long = payload.to_vec();
        long.push(0);
        let err = decode::<Msg>(&long).unwrap_err();
        assert!(err.to_string().contains("trailing"), "{err}");
    }

    #[test]
    fn a_length_field_inside_the_payload_cannot_force_a_huge_allocation() {
        // Variant 1 (Holders) claiming u64::MAX strings: bincode's limit refuses it.
        let payload = [0x01, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(decode::<Msg>(&payload).is_err());
    }

    #[tokio::test]
    async fn stream_ending_mid_frame_is_an_eof_error() {
        let (mut a, mut b) = tokio::io::duplex(64);
        let frame = encode(&Msg::Where { chunk: 1 }).unwrap();
        a.write_all(&frame[..frame.len() - 1]).await.unwrap();
        drop(a);
        let err = read_frame::<Msg, _>(&mut b).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
