//! The segment cost estimator's inputs (Section IV) from what an FDN knows: the neighbours the
//! cloud's metadata manager lists, the paths the FDN learned, and the session's start-up
//! delay. The FDN role adds its cache, its backlog and the viewer's path.

use super::normal::Normal;
use super::stats::PathModel;
use super::workload::deadline_s;

/// A neighbouring FDN as the metadata lists it, with the path this FDN learned to it.
#[derive(Debug, Clone, Copy)]
pub struct Neighbor<'a> {
    pub index: usize,
    /// Held up by the fog monitor.
    pub up: bool,
    /// The (video, segment) pairs it holds pre-processed, sorted.
    pub cached: &'a [(u32, u32)],
    pub path: Option<&'a PathModel>,
}

/// The neighbours other than `own` that are up, hold `segment` (video, index) and have a
/// measured path, each with N^τ of its transfer of `bytes` to here: `SegmentOptions::neighbors`.
pub fn neighbor_transfers<'a>(
    neighbors: impl IntoIterator<Item = Neighbor<'a>>,
    own: usize,
    segment: (u32, u32),
    bytes: u64,
) -> Vec<(usize, Normal)> {
    neighbors
        .into_iter()
        .filter(|f| f.up && f.index != own && f.cached.binary_search(&segment).is_ok())
        .filter_map(|f| {
            let path = f.path.filter(|p| p.known())?;
            Some((f.index, path.transfer(bytes)))
        })
        .collect()
}

/// N^τ of `bytes` from the cloud over the learned `path`; never on time while there is none.
pub fn cloud_transfer(path: Option<&PathModel>, bytes: u64) -> Normal {
    path.map(|p| p.transfer(bytes))
        .unwrap_or(Normal::point(f64::INFINITY))
}

/// δ_i of Equation (4) as the estimator takes it: seconds from `now_s` to the deadline of
/// segment `index` of a stream that arrived at `arrival_s` (both on one clock), its
/// presentation time `workload::deadline_s` after the arrival. The viewer scores the segment
/// against the same instant: the stream's arrival travels with its request, so the ingestion's
/// round trip to the cloud and the open at the FDN come out of the segment's time.
pub fn time_to_deadline_s(
    arrival_s: f64,
    now_s: f64,
    startup_s: f64,
    index: usize,
    segment_duration_s: f64,
) -> f64 {
    arrival_s + deadline_s(index, startup_s, segment_duration_s) - now_s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(first_byte_s: f64) -> PathModel {
        let mut p = PathModel::default();
        p.observe(1000, first_byte_s, first_byte_s + 0.001);
        p
    }

    #[test]
    fn neighbors_up_holding_the_segment_over_a_known_path() {
        let (known, unknown) = (path(0.01), PathModel::default());
        let cached = [(0, 1), (2, 3)];
        let neighbor = |index, up, path| Neighbor {
            index,
            up,
            cached: &cached,
            path,
        };
        let all = [
            neighbor(0, true, Some(&known)),   // this FDN
            neighbor(1, true, Some(&known)),   // the one
            neighbor(2, false, Some(&known)),  // down
            neighbor(3, true, Some(&unknown)), // never measured
            neighbor(4, true, None),           // no path
        ];
        let found = neighbor_transfers(all, 0, (2, 3), 1000);
        assert_eq!(found, [(1, known.transfer(1000))]);
        assert!(neighbor_transfers(all, 0, (2, 4), 1000).is_empty());
        assert_eq!(cloud_transfer(None, 1).mean, f64::INFINITY);
        assert_eq!(cloud_transfer(Some(&unknown), 1), unknown.transfer(1));
        // Arrived at 100 s, looked at 100.6 s: segment 3 of 4 s segments after 2 s is due at
        // 114 s, 13.4 s from now.
        assert!((time_to_deadline_s(100.0, 100.6, 2.0, 3, 4.0) - 13.4).abs() < 1e-12);
    }
}
