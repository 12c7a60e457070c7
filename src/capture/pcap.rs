//! The classic pcap file format with nanosecond timestamps, as tcpdump, Wireshark and libpcap
//! read it: a 24-byte file header, then a 16-byte header before each packet's bytes.

use std::io::{self, Write};

/// The magic number of a pcap file whose timestamps' fraction is in nanoseconds.
const MAGIC_NANOSECONDS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET: every record is an Ethernet frame, as a veth carries it.
const LINKTYPE_ETHERNET: u32 = 1;
/// The most bytes of one packet kept, as tcpdump's default: a GSO or GRO packet of up to 64 KB
/// and more fits whole.
pub const SNAPLEN: usize = 262_144;

/// Writes a pcap stream: the file header when made, then one record per packet.
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header (version 2.4, UTC, Ethernet, [`SNAPLEN`]).
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut header = Vec::with_capacity(24);
        header.extend(MAGIC_NANOSECONDS.to_le_bytes());
        header.extend(2u16.to_le_bytes());
        header.extend(4u16.to_le_bytes());
        header.extend(0i32.to_le_bytes()); // thiszone: timestamps are UTC
        header.extend(0u32.to_le_bytes()); // sigfigs
        header.extend((SNAPLEN as u32).to_le_bytes());
        header.extend(LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header)?;
        Ok(PcapWriter { out })
    }

    /// Writes one packet received at `unix_ns` (ns since the epoch, UTC): `bytes` as captured
    /// (at most [`SNAPLEN`]) of a packet `original_len` bytes long on the wire.
    pub fn write_packet(
        &mut self,
        unix_ns: u64,
        bytes: &[u8],
        original_len: usize,
    ) -> io::Result<()> {
        let captured = bytes.len().min(SNAPLEN);
        let mut header = [0u8; 16];
        header[0..4].copy_from_slice(&((unix_ns / 1_000_000_000) as u32).to_le_bytes());
        header[4..8].copy_from_slice(&((unix_ns % 1_000_000_000) as u32).to_le_bytes());
        header[8..12].copy_from_slice(&(captured as u32).to_le_bytes());
        header[12..16].copy_from_slice(&(original_len.max(captured) as u32).to_le_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(&bytes[..captured])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(bytes: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn header_and_records_are_laid_out_as_libpcap_reads_them() {
        let mut file = Vec::new();
        let mut writer = PcapWriter::new(&mut file).unwrap();
        writer
            .write_packet(1_700_000_000_123_456_789, &[1, 2, 3], 1514)
            .unwrap();
        writer.write_packet(5, &[9], 0).unwrap();
        assert_eq!(file.len(), 24 + 16 + 3 + 16 + 1);
        assert_eq!(u32_at(&file, 0), 0xa1b2_3c4d);
        assert_eq!(&file[4..8], &[2, 0, 4, 0]);
        assert_eq!(u32_at(&file, 16), 262_144);
        assert_eq!(u32_at(&file, 20), 1);
        let record = &file[24..];
        assert_eq!(u32_at(record, 0), 1_700_000_000);
        assert_eq!(u32_at(record, 4), 123_456_789);
        assert_eq!(u32_at(record, 8), 3);
        assert_eq!(u32_at(record, 12), 1514);
        assert_eq!(&record[16..19], &[1, 2, 3]);
        // An original length shorter than what was captured is raised to it.
        let second = &record[19..];
        assert_eq!((u32_at(second, 0), u32_at(second, 4)), (0, 5));
        assert_eq!((u32_at(second, 8), u32_at(second, 12)), (1, 1));
    }

    #[test]
    fn bytes_beyond_the_snap_length_are_cut() {
        let mut file = Vec::new();
        let packet = vec![7u8; SNAPLEN + 10];
        PcapWriter::new(&mut file)
            .unwrap()
            .write_packet(0, &packet, packet.len())
            .unwrap();
        assert_eq!(file.len(), 24 + 16 + SNAPLEN);
        assert_eq!(u32_at(&file, 24 + 8), SNAPLEN as u32);
        assert_eq!(u32_at(&file, 24 + 12), (SNAPLEN + 10) as u32);
    }
}
