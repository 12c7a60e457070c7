//! The reproduction's scenarios: four ISPs of unequal size and upload, J = 300 chunks of Zipf
//! popularity, caches of B = 10 chunks, a peer idle a fifth of the time; once with enough peer
//! upload overall (Theorem 2's case 1) and once without (case 2). `--set key=value` changes
//! any of them, checked before anything runs.

use super::{Isp, Policy, System};

/// What the reproduction runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// N_m of each ISP.
    pub peers: Vec<u32>,
    /// U_m of each ISP in the scenario with enough peer upload (case 1).
    pub upload: Vec<f64>,
    /// U_m of each ISP in the scenario without (case 2).
    pub scarce_upload: Vec<f64>,
    /// J.
    pub chunks: usize,
    /// B.
    pub cache: usize,
    /// π_0.
    pub idle: f64,
    /// The Zipf exponent of chunk popularity.
    pub zipf: f64,
    /// The policies compared.
    pub dispatch: Vec<Policy>,
    /// Slots simulated per run, of which the first `warmup` are not counted.
    pub slots: u64,
    pub warmup: u64,
}

impl Params {
    /// The scenarios as RESULTS.md reports them.
    pub fn paper() -> Params {
        Params {
            peers: vec![400, 250, 150, 100],
            upload: vec![1.4, 1.0, 0.5, 0.4],
            scarce_upload: vec![1.0, 0.7, 0.3, 0.2],
            chunks: 300,
            cache: 10,
            idle: 0.2,
            zipf: 0.8,
            dispatch: Policy::ALL.to_vec(),
            slots: 2000,
            warmup: 200,
        }
    }

    /// Short runs: a smoke test of every file, not a measurement.
    pub fn quick() -> Params {
        Params {
            slots: 120,
            warmup: 40,
            ..Params::paper()
        }
    }

    /// Applies one `key=value` from `--set`.
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("--set {assignment}: expected key=value"))?;
        let bad = |what: &str| format!("--set {key}={value}: {what}");
        match key {
            "peers" => self.peers = list(value).map_err(|e| bad(&e))?,
            "upload" => self.upload = list(value).map_err(|e| bad(&e))?,
            "scarce_upload" => self.scarce_upload = list(value).map_err(|e| bad(&e))?,
            "chunks" => self.chunks = value.parse().map_err(|_| bad("not a whole number"))?,
            "cache" => self.cache = value.parse().map_err(|_| bad("not a whole number"))?,
            "idle" => self.idle = value.parse().map_err(|_| bad("not a number"))?,
            "zipf" => self.zipf = value.parse().map_err(|_| bad("not a number"))?,
            "slots" => self.slots = value.parse().map_err(|_| bad("not a whole number"))?,
            "warmup" => self.warmup = value.parse().map_err(|_| bad("not a whole number"))?,
            "dispatch" => {
                self.dispatch = (value.split(','))
                    .map(|name| name.trim().parse::<Policy>().map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?
            }
            _ => {
                return Err(format!(
                    "--set {key}: unknown key (expected peers, upload, scarce_upload, chunks, \
                     cache, idle, zipf, dispatch, slots, warmup)"
                ))
            }
        }
        Ok(())
    }

    /// The two systems, case 1 then case 2, with every parameter checked.
    pub fn systems(&self) -> Result<[System; 2], String> {
        if !self.zipf.is_finite() || self.zipf < 0.0 {
            return Err(format!(
                "zipf: must be a number at least 0, not {}",
                self.zipf
            ));
        }
        if self.dispatch.is_empty() {
            return Err("dispatch: name at least one policy".into());
        }
        if self.slots <= self.warmup || self.slots > 1_000_000 {
            return Err(format!(
                "slots: {} must exceed the warm-up ({}) and be at most 1000000",
                self.slots, self.warmup
            ));
        }
        // The live roles' bound: the popularity table is allocated whole.
        if !(1..=100_000).contains(&self.chunks) {
            return Err(format!("chunks: {} must be 1 to 100000", self.chunks));
        }
        let popularity = cdnlab_core::zipf::weights(self.chunks, self.zipf);
        let system = |name: &str, upload: &[f64]| {
            if upload.len() != self.peers.len() {
                return Err(format!(
                    "{name}: {} values for {} ISPs (peers)",
                    upload.len(),
                    self.peers.len()
                ));
            }
            let isps = (self.peers.iter().zip(upload))
                .map(|(&peers, &upload)| Isp { peers, upload })
                .collect();
            System::new(isps, self.cache, self.idle, &popularity).map_err(|e| e.to_string())
        };
        let total: u64 = self.peers.iter().map(|&n| u64::from(n)).sum();
        if total > 100_000 {
            return Err(format!("peers: {total} in all; at most 100000"));
        }
        Ok([
            system("upload", &self.upload)?,
            system("scarce_upload", &self.scarce_upload)?,
        ])
    }
}

fn list<T: std::str::FromStr>(value: &str) -> Result<Vec<T>, String> {
    (value.split(','))
        .map(|v| (v.trim().parse()).map_err(|_| format!("`{}` is not a number", v.trim())))
        .collect()
}
