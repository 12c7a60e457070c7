//! The newest records of a stream a long run keeps for later readers (the live view's history,
//! the P2P tracker's `dispatch.csv`): at most so many and so many bytes, the oldest dropped
//! first, so neither a long run nor large records can grow it without bound.

use bytes::Bytes;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct Newest {
    records: VecDeque<Bytes>,
    bytes: usize,
    max_records: usize,
    max_bytes: usize,
}

impl Newest {
    pub fn new(max_records: usize, max_bytes: usize) -> Newest {
        Newest {
            records: VecDeque::new(),
            bytes: 0,
            max_records,
            max_bytes,
        }
    }

    /// Keeps `record`, dropping the oldest until both bounds hold (`record` too, if it alone
    /// is larger than the byte bound).
    pub fn push(&mut self, record: Bytes) {
        self.bytes += record.len();
        self.records.push_back(record);
        while self.records.len() > self.max_records || self.bytes > self.max_bytes {
            let Some(oldest) = self.records.pop_front() else {
                break;
            };
            self.bytes -= oldest.len();
        }
    }

    /// The records kept, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Bytes> {
        self.records.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_within_both_bounds() {
        let mut newest = Newest::new(3, 10);
        for record in ["a", "b", "c", "d"] {
            newest.push(Bytes::from(record));
        }
        let kept = |n: &Newest| n.iter().map(|b| b.to_vec()).collect::<Vec<_>>();
        assert_eq!(kept(&newest), [b"b", b"c", b"d"]);
        newest.push(Bytes::from("12345678"));
        let bytes = |records: &[&str]| records.iter().map(|r| r.as_bytes().to_vec()).collect();
        let want: Vec<Vec<u8>> = bytes(&["c", "d", "12345678"]);
        assert_eq!(kept(&newest), want, "ten bytes, three records");
        newest.push(Bytes::from("e"));
        let want: Vec<Vec<u8>> = bytes(&["d", "12345678", "e"]);
        assert_eq!(kept(&newest), want);
        newest.push(Bytes::from("ff"));
        let want: Vec<Vec<u8>> = bytes(&["e", "ff"]);
        assert_eq!(kept(&newest), want, "the bytes bound drops two");
        newest.push(Bytes::from("x".repeat(11)));
        assert_eq!(kept(&newest), Vec::<Vec<u8>>::new());
    }
}
