//! The videos of a fog experiment and what each FDN caches, generated from a seed so that the
//! cloud, every FDN and the viewers agree without exchanging the catalog.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// How to generate the catalog (the same numbers in every process of a run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogSpec {
    pub seed: u64,
    pub videos: usize,
    /// Segments (GOPs) per video, drawn uniformly in [min, max].
    pub segments_min: usize,
    pub segments_max: usize,
    /// Presentation time of one segment, seconds.
    pub segment_duration_s: f64,
    /// Bit rate of a video, drawn uniformly in [min, max] bits/s; a segment is rate × duration.
    pub bitrate_min_bps: u64,
    pub bitrate_max_bps: u64,
    /// Mean on-demand processing time of a segment, drawn uniformly in [min, max] seconds.
    pub processing_min_s: f64,
    pub processing_max_s: f64,
    /// Standard deviation of a segment's processing time as a fraction of its mean.
    pub processing_cv: f64,
}

/// One GOP segment: its size and the distribution of its processing time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    pub bytes: u64,
    pub processing_mean_s: f64,
    pub processing_sd_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Video {
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub spec: CatalogSpec,
    pub videos: Vec<Video>,
}

impl Catalog {
    /// The catalog `spec` describes; the same spec gives the same catalog.
    pub fn generate(spec: &CatalogSpec) -> Catalog {
        let mut rng = StdRng::seed_from_u64(spec.seed);
        let videos = (0..spec.videos)
            .map(|_| {
                let n =
                    rng.random_range(spec.segments_min..=spec.segments_max.max(spec.segments_min));
                let bitrate = rng.random_range(
                    spec.bitrate_min_bps..=spec.bitrate_max_bps.max(spec.bitrate_min_bps),
                );
                let bytes = (bitrate as f64 * spec.segment_duration_s / 8.0).round() as u64;
                let segments = (0..n)
                    .map(|_| {
                        let mean = if spec.processing_max_s > spec.processing_min_s {
                            rng.random_range(spec.processing_min_s..spec.processing_max_s)
                        } else {
                            spec.processing_min_s
                        };
                        Segment {
                            bytes,
                            processing_mean_s: mean,
                            processing_sd_s: mean * spec.processing_cv,
                        }
                    })
                    .collect();
                Video { segments }
            })
            .collect();
        Catalog {
            spec: spec.clone(),
            videos,
        }
    }

    pub fn segment(&self, video: usize, index: usize) -> Option<&Segment> {
        self.videos.get(video)?.segments.get(index)
    }
}

/// A deterministic hash of (seed, a, b) into [0, 1): placement decisions without shared state.
fn unit_hash(seed: u64, a: u64, b: u64) -> f64 {
    // SplitMix64 over the three words.
    let mut z =
        seed ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The segments one FDN holds pre-processed (Section III-C, "Cached Video Segments"): the hot
/// portions of videos, as the paper lays them out. A region's hot videos (`hot_share` of the
/// catalog, a seeded choice of its own, so neighbours hold what the local FDN lacks) come
/// first, then the beginning portions of the other videos (the part of a video streamed most
/// often), to `round(level × all segments)` in all. Within each tier the FDN fills every video
/// to the same depth (share of its segments) from its first segment on.
#[derive(Debug, Clone, PartialEq)]
pub struct Holdings {
    /// (video, index), sorted.
    held: Vec<(u32, u32)>,
}

impl Holdings {
    /// What FDN `fdn` holds at caching `level` (0–1) with `hot_share` (0–1) of the videos hot
    /// in its region.
    pub fn of_fdn(catalog: &Catalog, fdn: usize, level: f64, hot_share: f64) -> Holdings {
        let n_videos = catalog.videos.len();
        let hot_count = (hot_share.clamp(0.0, 1.0) * n_videos as f64).round() as usize;
        let mut by_heat: Vec<usize> = (0..n_videos).collect();
        by_heat.sort_by(|&a, &b| {
            let key = |v: usize| unit_hash(catalog.spec.seed ^ 0x407, fdn as u64 + 1, v as u64);
            key(a).total_cmp(&key(b)).then(a.cmp(&b))
        });
        let mut hot = vec![false; n_videos];
        for &v in &by_heat[..hot_count] {
            hot[v] = true;
        }
        // Every segment with its place in the order of filling: tier, then depth.
        let mut order: Vec<(bool, f64, u32, u32)> = Vec::new();
        for (v, video) in catalog.videos.iter().enumerate() {
            let n = video.segments.len();
            for i in 0..n {
                order.push((!hot[v], i as f64 / n as f64, v as u32, i as u32));
            }
        }
        order.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then(a.1.total_cmp(&b.1))
                .then((a.2, a.3).cmp(&(b.2, b.3)))
        });
        let total = (level.clamp(0.0, 1.0) * order.len() as f64).round() as usize;
        let mut held: Vec<(u32, u32)> = order[..total].iter().map(|s| (s.2, s.3)).collect();
        held.sort_unstable();
        Holdings { held }
    }

    pub fn contains(&self, video: usize, index: usize) -> bool {
        match (u32::try_from(video), u32::try_from(index)) {
            (Ok(v), Ok(i)) => self.held.binary_search(&(v, i)).is_ok(),
            _ => false,
        }
    }

    /// (video, index) of every segment held, sorted.
    pub fn segments(&self) -> &[(u32, u32)] {
        &self.held
    }
}

/// Does the CDN server of site `site` hold `video` whole? A seeded `share` of the videos
/// (the paper's CDN holds 75%).
pub fn cdn_caches_video(catalog: &Catalog, site: usize, share: f64, video: usize) -> bool {
    video < catalog.videos.len()
        && unit_hash(catalog.spec.seed ^ 0xCD, site as u64 + 1, video as u64) < share
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn spec() -> CatalogSpec {
        CatalogSpec {
            seed: 7,
            videos: 50,
            segments_min: 10,
            segments_max: 30,
            segment_duration_s: 1.0,
            bitrate_min_bps: 1_000_000,
            bitrate_max_bps: 4_000_000,
            processing_min_s: 0.2,
            processing_max_s: 0.6,
            processing_cv: 0.2,
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_catalog() {
        let a = Catalog::generate(&spec());
        assert_eq!(a, Catalog::generate(&spec()));
        assert_ne!(a, Catalog::generate(&CatalogSpec { seed: 8, ..spec() }));
        for video in &a.videos {
            assert!((10..=30).contains(&video.segments.len()));
            for s in &video.segments {
                assert!((125_000..=500_000).contains(&s.bytes));
                assert!((0.2..0.6).contains(&s.processing_mean_s));
                assert!((s.processing_sd_s - 0.2 * s.processing_mean_s).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn an_fdn_holds_its_level_hot_videos_first_then_beginnings() {
        let catalog = Catalog::generate(&spec());
        let total: usize = catalog.videos.iter().map(|v| v.segments.len()).sum();
        let hot = |h: &Holdings, v: usize| {
            (0..catalog.videos[v].segments.len()).all(|i| h.contains(v, i))
        };
        for level in [0.0, 0.3, 0.6, 0.9, 1.0] {
            let held = Holdings::of_fdn(&catalog, 0, level, 0.1);
            assert_eq!(
                held.segments().len(),
                (level * total as f64).round() as usize,
                "level {level}"
            );
            // Of every video the FDN holds a beginning: no segment without all before it.
            for &(v, i) in held.segments() {
                assert!((0..i).all(|j| held.contains(v as usize, j as usize)));
            }
        }
        // At 30%, its 5 hot videos (10% of 50) are held whole and every other video's first
        // segment too (the other 20% of the budget, about a fifth of each).
        let held = Holdings::of_fdn(&catalog, 0, 0.3, 0.1);
        let whole: Vec<usize> = (0..50).filter(|&v| hot(&held, v)).collect();
        assert_eq!(whole.len(), 5, "{whole:?}");
        assert!((0..50).all(|v| held.contains(v, 0)));
        // Another region finds other videos hot: its neighbour holds what it lacks.
        let other = Holdings::of_fdn(&catalog, 1, 0.3, 0.1);
        let other_whole: Vec<usize> = (0..50).filter(|&v| hot(&other, v)).collect();
        assert_ne!(whole, other_whole);
        assert_eq!(held, Holdings::of_fdn(&catalog, 0, 0.3, 0.1), "seeded");
        // Below the hot share the budget goes to the hot videos' beginnings only.
        let low = Holdings::of_fdn(&catalog, 0, 0.05, 0.1);
        assert!(low
            .segments()
            .iter()
            .all(|&(v, _)| whole.contains(&(v as usize))));
        assert!(!low.contains(usize::MAX, 0));
    }

    #[test]
    fn a_cdn_site_holds_about_its_share_of_videos() {
        let catalog = Catalog::generate(&CatalogSpec {
            videos: 1000,
            ..spec()
        });
        let held = (0..1000)
            .filter(|&v| cdn_caches_video(&catalog, 0, 0.75, v))
            .count();
        assert!((700..=800).contains(&held), "{held}");
    }
}
