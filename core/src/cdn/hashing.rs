//! Stable hashing and a consistent-hash ring.
//!
//! The ring works like Apache Traffic Control's Traffic Router choosing a cache within a cache
//! group: each server owns many points ("virtual nodes") on a 64-bit ring, hashed from its name
//! and the replica number; a request's path hashes to a point and goes to the owner of the
//! next point clockwise. Adding a server only takes over the arcs its own points cut out, so
//! about 1/(n+1) of the paths move, all of them to the new server. Traffic Router hashes with
//! MD5; here FNV-1a followed by a 64-bit finalizer, which is as well spread for this use and
//! needs no dependency. Both are fixed functions: results never change between builds or
//! processes (std's `DefaultHasher` promises neither).

use std::fmt;

/// FNV-1a over `bytes`, then `mix64` so that similar inputs (paths differing in one digit)
/// land far apart.
pub fn hash64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let fnv = bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    mix64(fnv)
}

/// The splitmix64 finalizer: a bijection on u64 whose output bits each depend on every input
/// bit. Used to derive independent-looking values from a seed and a counter.
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Virtual nodes per server by default: with 500, the busiest of 4 servers gets within a few
/// percent of its fair share (Traffic Router's default is in the same range, weight × 1000).
pub const DEFAULT_VNODES: usize = 500;
/// Upper bound on virtual nodes per server, to bound the ring's memory (16 bytes per point).
pub const MAX_VNODES: usize = 100_000;

/// Why a ring could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashRingError {
    NoServers,
    BadVnodes { vnodes: usize },
    DuplicateServer { name: String },
}

impl fmt::Display for HashRingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HashRingError::NoServers => f.write_str("a hash ring needs at least one server"),
            HashRingError::BadVnodes { vnodes } => {
                write!(
                    f,
                    "virtual nodes per server = {vnodes}; expected 1 to {MAX_VNODES}"
                )
            }
            HashRingError::DuplicateServer { name } => {
                write!(f, "server {name:?} appears twice on the hash ring")
            }
        }
    }
}

impl std::error::Error for HashRingError {}

/// Servers placed on a ring by name; `server_for(key)` is the index (in the order given to
/// `new`) of the server owning `key`.
#[derive(Debug, Clone)]
pub struct HashRing {
    /// (point, server index), sorted by point then server so that even colliding points are
    /// owned deterministically.
    points: Vec<(u64, usize)>,
}

impl HashRing {
    pub fn new<S: AsRef<str>>(servers: &[S], vnodes: usize) -> Result<HashRing, HashRingError> {
        if servers.is_empty() {
            return Err(HashRingError::NoServers);
        }
        if vnodes == 0 || vnodes > MAX_VNODES {
            return Err(HashRingError::BadVnodes { vnodes });
        }
        let mut points = Vec::with_capacity(servers.len() * vnodes);
        for (i, server) in servers.iter().enumerate() {
            let name = server.as_ref();
            if servers[..i].iter().any(|other| other.as_ref() == name) {
                return Err(HashRingError::DuplicateServer {
                    name: name.to_string(),
                });
            }
            for replica in 0..vnodes {
                points.push((hash64(format!("{name}#{replica}").as_bytes()), i));
            }
        }
        points.sort_unstable();
        Ok(HashRing { points })
    }

    /// The server owning `key`: the first point at or after `hash64(key)`, wrapping around.
    pub fn server_for(&self, key: &str) -> usize {
        let h = hash64(key.as_bytes());
        let at = self.points.partition_point(|&(point, _)| point < h);
        // `new` guarantees at least one point.
        self.points[at % self.points.len()].1
    }
}
