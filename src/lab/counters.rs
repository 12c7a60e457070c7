//! Every link direction's counters at one instant, from whichever backend carries the lab: the
//! userspace shaper's queues (asked over its control socket), or the kernel's root qdisc on each
//! sender's egress (the counters `tc -s qdisc show` prints, read over rtnetlink). `cdnlab web`
//! samples them live and `cdnlab run` keeps them in `links.jsonl`.

use super::qdisc_stats::Namespace;
use super::{shaper, Backend, LabState, Result};
use serde::{Deserialize, Serialize};

/// One link direction's counters: frames and bytes sent, frames dropped (by loss or a full
/// queue), frames queued now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub id: String,
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub queued: usize,
}

/// Every direction's counters at `time_unix_s` (a line of `links.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub time_unix_s: f64,
    pub links: Vec<Counters>,
}

/// The sample of a shaper's `show` answer taken at `time_unix_s`; `None` if it lists no queues.
pub fn from_shaper(time_unix_s: f64, shown: &netem::daemon::Response) -> Option<Sample> {
    let links = shown
        .queues
        .as_ref()?
        .iter()
        .map(|q| Counters {
            id: q.id.clone(),
            bytes: q.stats.bytes,
            packets: q.stats.packets,
            drops: q.stats.dropped_loss + q.stats.dropped_queue_full,
            queued: q.queued,
        })
        .collect();
    Some(Sample { time_unix_s, links })
}

/// Where a lab's counters are read.
pub enum LinkCounters {
    Shaper,
    /// Per sender namespace: its socket, and the direction each of its interfaces sends.
    Kernel(Vec<(Namespace, Vec<String>)>),
}

impl LinkCounters {
    /// Ready to sample `state`'s lab (under the kernel backend: a socket in every sender's
    /// namespace, each interface found there).
    pub fn open(state: &LabState) -> Result<LinkCounters> {
        if state.backend == Backend::Userspace {
            return Ok(LinkCounters::Shaper);
        }
        let mut senders: Vec<(&str, Vec<String>, Vec<String>)> = Vec::new();
        for direction in &state.directions {
            let id = direction.id(&state.topology);
            let ifname = direction.sender_ifname.clone();
            match senders
                .iter_mut()
                .find(|(netns, _, _)| *netns == direction.sender_netns)
            {
                Some((_, ifnames, ids)) => {
                    ifnames.push(ifname);
                    ids.push(id);
                }
                None => senders.push((&direction.sender_netns, vec![ifname], vec![id])),
            }
        }
        let namespaces = senders
            .into_iter()
            .map(|(netns, ifnames, ids)| Ok((Namespace::open(netns, &ifnames)?, ids)))
            .collect::<Result<Vec<_>>>()?;
        Ok(LinkCounters::Kernel(namespaces))
    }

    /// Every direction's counters now (a direction whose interface has no root qdisc is left
    /// out).
    pub fn sample(&mut self, state: &LabState) -> Result<Sample> {
        let time_unix_s = crate::wall_clock::unix_now_s();
        match self {
            LinkCounters::Shaper => {
                let shown = shaper::show(state)?;
                Ok(from_shaper(time_unix_s, &shown).unwrap_or(Sample {
                    time_unix_s,
                    links: Vec::new(),
                }))
            }
            LinkCounters::Kernel(namespaces) => {
                let mut links = Vec::new();
                for (namespace, ids) in namespaces {
                    for (id, stats) in ids.iter().zip(namespace.read()?) {
                        let Some(stats) = stats else { continue };
                        links.push(Counters {
                            id: id.clone(),
                            bytes: stats.bytes,
                            packets: stats.packets,
                            drops: stats.drops,
                            queued: stats.qlen as usize,
                        });
                    }
                }
                Ok(Sample { time_unix_s, links })
            }
        }
    }
}
