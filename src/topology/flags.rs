//! The impairment flags of `cdnlab link set`, converted by the same code as the file's keys.

use super::impairments::{change_from_flags, ImpairmentFields};
use netem::ImpairmentsChange;

/// `--delay 80ms --rate 5mbit …`: the shared impairment keys as command-line flags; only the
/// flags given change.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ChangeFlags {
    /// One-way delay, e.g. 80ms
    #[arg(long)]
    pub delay: Option<String>,
    /// Delay variation, e.g. 5ms
    #[arg(long)]
    pub jitter: Option<String>,
    /// Correlation of successive delays, e.g. 25%
    #[arg(long)]
    pub delay_correlation: Option<String>,
    /// Jitter distribution: uniform, normal, pareto or paretonormal
    #[arg(long)]
    pub distribution: Option<String>,
    /// Random loss, e.g. 1%
    #[arg(long)]
    pub loss: Option<String>,
    /// Correlation of successive losses, e.g. 25%
    #[arg(long)]
    pub loss_correlation: Option<String>,
    /// Rate limit, e.g. 5mbit, or `unlimited`
    #[arg(long)]
    pub rate: Option<String>,
    /// Queue limit in packets
    #[arg(long)]
    pub limit: Option<String>,
}

impl ChangeFlags {
    /// The change the flags describe; errors name the bad flags, one per line.
    pub fn to_change(&self) -> Result<ImpairmentsChange, String> {
        change_from_flags(&ImpairmentFields {
            delay: self.delay.as_deref(),
            jitter: self.jitter.as_deref(),
            delay_correlation: self.delay_correlation.as_deref(),
            distribution: self.distribution.as_deref(),
            loss: self.loss.as_deref(),
            loss_correlation: self.loss_correlation.as_deref(),
            rate: self.rate.as_deref(),
            limit: self.limit.as_deref(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        change: ChangeFlags,
    }

    #[test]
    fn flags_parse_into_a_change() {
        let cli = Cli::try_parse_from([
            "x",
            "--delay",
            "80ms",
            "--delay-correlation",
            "25%",
            "--rate",
            "unlimited",
        ])
        .unwrap();
        let change = cli.change.to_change().unwrap();
        assert_eq!(change.delay_ns, Some(80_000_000));
        assert_eq!(change.delay_correlation, Some(0.25));
        assert_eq!(change.rate_bps, Some(None));
        assert_eq!(change.loss, None);
        let cli = Cli::try_parse_from(["x", "--loss", "150%"]).unwrap();
        assert_eq!(
            cli.change.to_change().unwrap_err(),
            "--loss: `150%` is outside 0% to 100%"
        );
    }
}
