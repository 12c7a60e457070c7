//! The dispatcher's line to the data center: it gives the data center the key of the tickets
//! it takes, and reads its counts, summed over the data center's runs.

use crate::control::Identity;
use crate::farm_roles::config::DispatcherConfig;
use crate::farm_roles::messages::{DataCenterRequest, DataCenterResponse, DataCenterUsage};
use crate::roles::peers::Peer;
use crate::roles::tokens::{KeyBytes, TokenKey};
use std::sync::Arc;
use std::time::Duration;

/// The data center as the dispatcher keys and samples it, over one kept control connection.
pub struct DataCenterLine {
    peer: Peer,
    control_port: u16,
    identity: Arc<Identity>,
    /// The key of the dispatcher's tickets.
    key: KeyBytes,
    runs: Runs,
}

impl DataCenterLine {
    pub fn new(config: &DispatcherConfig, identity: &Arc<Identity>, tickets: &TokenKey) -> Self {
        DataCenterLine {
            peer: Peer::new(&config.datacenter),
            control_port: config.control_port,
            identity: identity.clone(),
            key: tickets.bytes(),
            runs: Runs::default(),
        }
    }

    /// Gives the data center the key of its tickets, and `floor`, below which it refuses a
    /// loss's ticket; whether it took them.
    pub async fn give_key(&mut self, floor: u64, timeout: Duration) -> bool {
        let key = DataCenterRequest::Key {
            ticket_key: self.key,
            floor,
        };
        let answer = self
            .peer
            .call(self.control_port, &self.identity, &key, timeout);
        answer.await == Some(DataCenterResponse::Keyed)
    }

    /// The data center's counts over all its runs, None if it did not answer. One started
    /// again (a timeline's `stop` and `start`) has no key, and is given it again, with the
    /// dispatcher's next ticket (`next_ticket`) as floor: until then it would refuse every
    /// loss and copy.
    pub async fn measure(&mut self, next_ticket: impl FnOnce() -> u64) -> Option<DataCenterUsage> {
        let timeout = Duration::from_secs(1);
        let request = DataCenterRequest::Measure;
        let answer = self
            .peer
            .call(self.control_port, &self.identity, &request, timeout);
        let Some(DataCenterResponse::Usage { usage, keyed }) = answer.await else {
            return None;
        };
        if !keyed {
            tracing::info!("farm-dispatcher: the data center has no key; giving it again");
            if !self.give_key(next_ticket(), timeout).await {
                tracing::warn!("farm-dispatcher: the data center did not take the key");
            }
        }
        Some(self.runs.total(usage, keyed))
    }
}

/// The data center's counts summed over its runs: one started again counts from zero.
#[derive(Default)]
struct Runs {
    /// What the runs before the present one had counted when last sampled.
    before: DataCenterUsage,
    /// What the present run had counted when last sampled.
    present: DataCenterUsage,
}

impl Runs {
    /// The counts over every run, given a sample's: `keyed` false marks a new run, since the
    /// dispatcher keys the data center before its first sample and only a data center started
    /// again has no key. A new run has counted nothing (it serves nothing without a key); what
    /// the run before counted after its last sample is lost with its process.
    fn total(&mut self, usage: DataCenterUsage, keyed: bool) -> DataCenterUsage {
        if !keyed {
            self.before.add(&std::mem::take(&mut self.present));
        }
        self.present = usage;
        let mut total = self.before.clone();
        total.add(&self.present);
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(user_requests: u64, copy_bytes: u64) -> DataCenterUsage {
        DataCenterUsage {
            user_requests,
            copy_bytes,
            ..DataCenterUsage::default()
        }
    }

    /// A run's counts are carried past a restart, once, however many samples find the new
    /// run without its key.
    #[test]
    fn counts_are_summed_over_the_data_centers_runs() {
        let mut runs = Runs::default();
        assert_eq!(runs.total(usage(2, 10), true), usage(2, 10));
        assert_eq!(runs.total(usage(5, 30), true), usage(5, 30));
        assert_eq!(
            runs.total(usage(0, 0), false),
            usage(5, 30),
            "started again"
        );
        assert_eq!(runs.total(usage(0, 0), false), usage(5, 30), "still no key");
        assert_eq!(runs.total(usage(1, 7), true), usage(6, 37));
        assert_eq!(
            runs.total(usage(0, 0), false),
            usage(6, 37),
            "started again"
        );
        assert_eq!(runs.total(usage(4, 0), true), usage(10, 37));
    }
}
