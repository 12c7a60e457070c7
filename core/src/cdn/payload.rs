//! Synthetic segment payloads, made on demand without disk and without materializing a segment.
//!
//! A segment's bytes are an endless deterministic stream defined by position: byte `o` is byte
//! `o mod 8` (little-endian) of `mix64(seed + o / 8 × φ)`, where the seed hashes the video
//! name, quality id and segment index. Any byte range can thus be produced alone (HTTP Range
//! requests), every server produces the same bytes for the same chunk (a dCS's copy equals the
//! uCS's, so ETags and checksums agree), and different chunks differ. The stream does not end at
//! the segment size: callers clamp ranges to `Video::segment_size`.

use super::content::{Quality, Video};
use super::hashing::{hash64, mix64};

/// The 64-bit golden ratio: consecutive words' inputs are spread over the whole u64 range.
const PHI: u64 = 0x9e37_79b9_7f4a_7c15;

/// The payload stream of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload {
    seed: u64,
}

impl Payload {
    pub fn new(video: &Video, quality: &Quality, index: usize) -> Payload {
        let mut key = Vec::with_capacity(video.name().len() + quality.id.len() + 10);
        key.extend_from_slice(video.name().as_bytes());
        key.push(0);
        key.extend_from_slice(quality.id.as_bytes());
        key.push(0);
        key.extend_from_slice(&(index as u64).to_le_bytes());
        Payload { seed: hash64(&key) }
    }

    /// The payload stream named by a number rather than a chunk (the fog roles' segments).
    pub fn numbered(key: u64) -> Payload {
        Payload { seed: mix64(key) }
    }

    fn word(&self, n: u64) -> [u8; 8] {
        mix64(self.seed.wrapping_add(n.wrapping_mul(PHI))).to_le_bytes()
    }

    /// Writes the stream's bytes `offset .. offset + buf.len()` into `buf`.
    pub fn fill(&self, offset: u64, buf: &mut [u8]) {
        let mut word = offset / 8;
        let skip = (offset % 8) as usize;
        // The partial word before the first 8-byte boundary.
        let head = if skip == 0 {
            0
        } else {
            (8 - skip).min(buf.len())
        };
        let (first, rest) = buf.split_at_mut(head);
        if head > 0 {
            first.copy_from_slice(&self.word(word)[skip..skip + head]);
            word += 1;
        }
        let mut chunks = rest.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.word(word));
            word += 1;
        }
        let tail = chunks.into_remainder();
        let len = tail.len();
        if len > 0 {
            tail.copy_from_slice(&self.word(word)[..len]);
        }
    }
}

/// Fills `buf` with bytes `offset ..` of segment `index` of `quality` of `video` (see the module
/// notes); for one-off calls, `Payload` when filling many buffers of one chunk.
pub fn fill(video: &Video, quality: &Quality, index: usize, offset: u64, buf: &mut [u8]) {
    Payload::new(video, quality, index).fill(offset, buf);
}
