//! The coordinating entity of Section V-A: it knows which servers are idle and what each
//! stores, sends a request to a uniformly random idle server storing its content or counts it
//! lost, and on every real or virtual loss of c runs the adaptive scheme: the eviction rule
//! picks an available content with an idle replica on a server not storing c, and c takes
//! that slot. The simulator and the real farm's dispatcher both decide through this type.

use super::eviction::Evictor;
use super::farm::{Farm, Observer};
use super::scheme::Scheme;
use super::virtual_loss::{probability, theta_now, MinZStar};
use rand::{Rng, RngExt};

/// Share of the catalog min z* is averaged over, how often (time units) those least popular
/// contents are re-ranked, and the weight of each update of the average.
const MIN_Z_SHARE: f64 = 0.1;
const MIN_Z_WINDOW: f64 = 20.0;
const MIN_Z_WEIGHT: f64 = 0.01;
/// Random idle replicas of a victim tried for one on a server that does not store the lost
/// content.
const SLOT_DRAWS: usize = 4;

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// To this idle server, which stores the content and is now busy with it.
    Serve { server: u32 },
    /// No idle server stores the content: to the data center.
    Lost,
}

/// What made a new replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A real loss: the new replica is a second copy from the data center.
    Loss,
    /// A virtual loss: the request was served, and the copy can come from a server.
    Virtual,
}

/// A replica replaced by the adaptive scheme: `slot` (a global slot index, on the idle
/// server `server`) gave up `evicted` and now stores `content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copy {
    pub server: u32,
    pub slot: u32,
    pub evicted: u32,
    pub content: u32,
    pub trigger: Trigger,
}

/// The coordinator's answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub decision: Decision,
    /// Whether the request was a virtual loss (a served request subsampled by p_c(Z_c)).
    pub virtual_loss: bool,
    pub copy: Option<Copy>,
}

pub struct Coordinator {
    farm: Farm,
    evictor: Option<Evictor>,
    min_z: Option<MinZStar>,
    m: usize,
    d: usize,
}

impl Coordinator {
    /// A farm of n contents on servers of `d` slots laid out as `slots` (`placement::place`),
    /// every server idle; `scheme` None keeps the replication static. `lfl_tau` is LFL's EWMA
    /// time constant.
    pub fn new(
        n: usize,
        d: usize,
        slots: Vec<u32>,
        scheme: Option<Scheme>,
        lfl_tau: f64,
        rng: &mut impl Rng,
    ) -> Coordinator {
        let farm = Farm::new(n, d, slots);
        let m = farm.servers();
        Coordinator {
            farm,
            evictor: scheme.map(|s| Evictor::new(s.rule, n, lfl_tau, rng)),
            min_z: scheme
                .is_some_and(|s| s.virtual_losses)
                .then(|| MinZStar::new(n, MIN_Z_SHARE, MIN_Z_WINDOW, MIN_Z_WEIGHT)),
            m,
            d,
        }
    }

    pub fn farm(&self) -> &Farm {
        &self.farm
    }

    /// The current estimate of min z* (NaN until the first; only with virtual losses).
    pub fn min_z_star(&self) -> Option<f64> {
        self.min_z.as_ref().map(MinZStar::value)
    }

    /// A request for `c` at time `t` (in mean service times).
    pub fn request<R: Rng>(
        &mut self,
        c: u32,
        t: f64,
        observer: &mut impl Observer,
        rng: &mut R,
    ) -> Step {
        if let Some(min_z) = &mut self.min_z {
            min_z.on_request(c, t);
        }
        let z = self.farm.available_count(c);
        if z == 0 {
            let copy = self.adapt(c, t, Trigger::Loss, observer, rng);
            return Step {
                decision: Decision::Lost,
                virtual_loss: false,
                copy,
            };
        }
        let virtual_loss = self.min_z.as_ref().is_some_and(|min_z| {
            let theta = theta_now(self.farm.busy_count(), self.m, self.d);
            let (replicas, lambda) = (self.farm.replicas()[c as usize], self.farm.in_service(c));
            let p = probability(z, replicas, lambda as f64, theta, min_z.value());
            p > 0.0 && rng.random::<f64>() < p
        });
        let slot = self.farm.idle_slot(c, rng.random_range(0..z as usize));
        let server = self.farm.server_of(slot);
        self.farm.start(slot, c, observer);
        let copy = if virtual_loss {
            self.adapt(c, t, Trigger::Virtual, observer, rng)
        } else {
            None
        };
        Step {
            decision: Decision::Serve { server },
            virtual_loss,
            copy,
        }
    }

    /// The busy server `server` ended its service; returns the content it served, or None
    /// if it was not busy (a late or repeated report from a real server).
    pub fn finish(&mut self, server: u32, observer: &mut impl Observer) -> Option<u32> {
        if !self.farm.is_busy(server) {
            return None;
        }
        let c = self.farm.finish(server, observer);
        if let Some(min_z) = &mut self.min_z {
            let theta = theta_now(self.farm.busy_count(), self.m, self.d);
            let (replicas, in_service) =
                (self.farm.replicas()[c as usize], self.farm.in_service(c));
            min_z.on_service_end(c, replicas, in_service, theta);
        }
        Some(c)
    }

    /// The generic adaptive step on a (real or virtual) loss of `c`; None without a scheme or
    /// when no slot qualifies.
    fn adapt<R: Rng>(
        &mut self,
        c: u32,
        t: f64,
        trigger: Trigger,
        observer: &mut impl Observer,
        rng: &mut R,
    ) -> Option<Copy> {
        let evictor = self.evictor.as_mut()?;
        evictor.record_loss(c, t);
        let farm = &self.farm;
        let find_slot = |victim: u32, rng: &mut R| {
            let z = farm.available_count(victim) as usize;
            (0..SLOT_DRAWS.min(z)).find_map(|_| {
                let slot = farm.idle_slot(victim, rng.random_range(0..z));
                (!farm.stores(farm.server_of(slot), c)).then_some(slot)
            })
        };
        let (evicted, slot) = evictor.choose(
            c,
            farm.available(),
            |x| farm.is_available(x),
            find_slot,
            rng,
        )?;
        self.farm.replace(slot, c, observer);
        Some(Copy {
            server: self.farm.server_of(slot),
            slot,
            evicted,
            content: c,
            trigger,
        })
    }
}
