//! The videos of a fog experiment and what each FDN caches, generated from a seed so that the
//! cloud, every FDN and the viewers agree without exchanging the catalog.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
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

/// Does FDN `fdn` hold segment `index` of `video` pre-processed at caching level `level`
/// (0–1)? Each FDN holds, of every video, one contiguous run of round(level × n) segments that
/// starts at an offset of its own: regions find different portions hot, so neighbours hold
/// what the local FDN lacks (the federation's premise).
pub fn fdn_caches(catalog: &Catalog, fdn: usize, level: f64, video: usize, index: usize) -> bool {
    let Some(v) = catalog.videos.get(video) else {
        return false;
    };
    let n = v.segments.len();
    let held = (level.clamp(0.0, 1.0) * n as f64).round() as usize;
    if held == 0 || index >= n {
        return false;
    }
    let offset = (unit_hash(catalog.spec.seed, fdn as u64 + 1, video as u64) * n as f64) as usize;
    (index + n - offset) % n < held
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
    fn an_fdn_caches_its_level_of_every_video() {
        let catalog = Catalog::generate(&spec());
        for level in [0.0, 0.3, 0.9, 1.0] {
            for (v, video) in catalog.videos.iter().enumerate() {
                let n = video.segments.len();
                let held = (0..n)
                    .filter(|&i| fdn_caches(&catalog, 0, level, v, i))
                    .count();
                assert_eq!(held, (level * n as f64).round() as usize, "level {level}");
            }
        }
        // Two FDNs hold different portions of some video.
        let differs = (0..catalog.videos.len()).any(|v| {
            (0..10)
                .any(|i| fdn_caches(&catalog, 0, 0.3, v, i) != fdn_caches(&catalog, 1, 0.3, v, i))
        });
        assert!(differs);
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
