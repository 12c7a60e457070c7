//! Which chunks the upstream CDN offloads to the downstream CDN.
//!
//! Placement is per chunk *index*, across all qualities: offloading chunk 42 puts 42 of every
//! quality downstream. The paper distributes "the chunks of a single HAS content stream across
//! multiple CDNs" by popularity, and the client picks the quality only when it asks for a chunk,
//! so a time position, not a (quality, index) pair, is what sits in one CDN; it also keeps a
//! client's route independent of its rate adaptation. Which server holds each (quality, index)
//! is decided afterwards (`assign`), per path.
//!
//! Every mode is deterministic: random choices derive from a seed through `mix64`, never from
//! a clock or an RNG whose output could change between library versions.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::hashing::mix64;

/// How many and which chunk indices go downstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Offload {
    All,
    None,
    /// `round(f × segments)` indices (halves round up) chosen at random under the seed. A
    /// larger fraction under the same seed offloads a superset.
    Fraction(f64),
    /// Indices `0..k` (all of them if `k ≥ segments`): the start of a video, which every
    /// viewer plays.
    FirstK(usize),
    /// The `k` most popular indices according to a `Popularity`.
    MostPopular(usize),
}

/// Chunk popularity, for `Offload::MostPopular`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Popularity {
    /// Request counts per chunk index (e.g. from a previous run's logs); ties go to the lower
    /// index.
    Counts(Vec<u64>),
    /// Popularity ranks drawn at random under the seed, as when chunk requests follow a Zipf
    /// law over shuffled chunks. Only the ranking decides which `k` are most popular, so no
    /// exponent is needed.
    ZipfRank,
}

/// Why a placement could not be made.
#[derive(Debug, Clone, PartialEq)]
pub enum PlacementError {
    BadFraction(f64),
    CountsLength { counts: usize, segments: usize },
}

impl fmt::Display for PlacementError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlacementError::BadFraction(x) => {
                write!(f, "offload fraction {x} must be between 0 and 1")
            }
            PlacementError::CountsLength { counts, segments } => write!(
                f,
                "popularity counts give {counts} chunks but the video has {segments}"
            ),
        }
    }
}

impl std::error::Error for PlacementError {}

/// The chunk indices placed downstream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    downstream: Vec<bool>,
}

impl Placement {
    pub fn segments(&self) -> usize {
        self.downstream.len()
    }

    /// False for indices out of range: what is not offloaded stays upstream.
    pub fn is_offloaded(&self, index: usize) -> bool {
        self.downstream.get(index).copied().unwrap_or(false)
    }

    pub fn count(&self) -> usize {
        self.downstream.iter().filter(|&&d| d).count()
    }

    /// Offloaded indices, ascending.
    pub fn offloaded(&self) -> impl Iterator<Item = usize> + '_ {
        self.downstream
            .iter()
            .enumerate()
            .filter_map(|(i, &d)| d.then_some(i))
    }

    fn from_indices(segments: usize, indices: impl IntoIterator<Item = usize>) -> Placement {
        let mut downstream = vec![false; segments];
        for i in indices {
            downstream[i] = true;
        }
        Placement { downstream }
    }
}

/// Places the `segments` chunk indices of a video. `popularity` is consulted by `MostPopular`
/// only; `seed` by `Fraction` and `ZipfRank` only.
pub fn place(
    offload: &Offload,
    segments: usize,
    popularity: &Popularity,
    seed: u64,
) -> Result<Placement, PlacementError> {
    let placement = match *offload {
        Offload::All => Placement {
            downstream: vec![true; segments],
        },
        Offload::None => Placement {
            downstream: vec![false; segments],
        },
        Offload::FirstK(k) => Placement::from_indices(segments, 0..k.min(segments)),
        Offload::Fraction(f) => {
            if !(0.0..=1.0).contains(&f) {
                return Err(PlacementError::BadFraction(f));
            }
            let k = ((f * segments as f64).round() as usize).min(segments);
            Placement::from_indices(segments, random_order(segments, seed).take(k))
        }
        Offload::MostPopular(k) => {
            let order: Vec<usize> = match popularity {
                Popularity::ZipfRank => random_order(segments, seed).collect(),
                Popularity::Counts(counts) => {
                    if counts.len() != segments {
                        return Err(PlacementError::CountsLength {
                            counts: counts.len(),
                            segments,
                        });
                    }
                    let mut order: Vec<usize> = (0..segments).collect();
                    // Stable sort: equal counts keep ascending index order.
                    order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
                    order
                }
            };
            Placement::from_indices(segments, order.into_iter().take(k))
        }
    };
    Ok(placement)
}

/// `0..n` in a pseudo-random order fixed by `seed`: sorted by a bijective hash of the index,
/// so no two keys tie and a prefix of the order never changes when more is taken.
fn random_order(n: usize, seed: u64) -> impl Iterator<Item = usize> {
    let base = mix64(seed);
    let mut keyed: Vec<(u64, usize)> = (0..n)
        .map(|i| (mix64(base.wrapping_add(i as u64)), i))
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, i)| i)
}

impl fmt::Display for Offload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Offload::All => f.write_str("all"),
            Offload::None => f.write_str("none"),
            Offload::Fraction(x) => write!(f, "fraction:{x}"),
            Offload::FirstK(k) => write!(f, "first:{k}"),
            Offload::MostPopular(k) => write!(f, "most-popular:{k}"),
        }
    }
}

/// An offload setting that is not `all`, `none`, `fraction:F`, `first:K` or `most-popular:K`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseOffloadError(pub String);

impl fmt::Display for ParseOffloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "offload {:?}: expected all, none, fraction:F (0 to 1), first:K or most-popular:K",
            self.0
        )
    }
}

impl std::error::Error for ParseOffloadError {}

impl FromStr for Offload {
    type Err = ParseOffloadError;

    /// The form `Display` writes: `all`, `none`, `fraction:0.5`, `first:10`, `most-popular:10`.
    fn from_str(s: &str) -> Result<Offload, ParseOffloadError> {
        let err = || ParseOffloadError(s.to_string());
        match s.split_once(':') {
            None if s == "all" => Ok(Offload::All),
            None if s == "none" => Ok(Offload::None),
            Some(("fraction", x)) => match x.parse::<f64>() {
                Ok(f) if (0.0..=1.0).contains(&f) => Ok(Offload::Fraction(f)),
                _ => Err(err()),
            },
            Some(("first", k)) => k.parse().map(Offload::FirstK).map_err(|_| err()),
            Some(("most-popular", k)) => k.parse().map(Offload::MostPopular).map_err(|_| err()),
            _ => Err(err()),
        }
    }
}
