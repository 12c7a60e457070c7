//! The role configuration of `probe --config FILE`: the node's `config` table from the topology.
//!
//! ```toml
//! mode = "server"          # port = 9000, duration = "0" (forever)
//! ```
//! ```toml
//! mode = "client"
//! target = "server"        # HOST[:PORT]; port = 9000 unless given here or in `port`
//! rtt_count = 200          # 0 skips; rtt_interval = "10ms", rtt_size = 64
//! rtt_samples = false      # true: every ping's RTT in the summary, in send order
//! goodput_seconds = 5      # 0 skips; goodput_warmup = "1s", goodput_direction = "download"
//! stream_count = 0         # 0 skips; stream_rate_pps = 1000, stream_size = 200
//! reach_timeout = "10s"    # how long the target may stay silent at the start
//! ```
//! Read with `crate::roles::config::Keys`: times use tc's units (`netem::units::parse_duration_ns`),
//! numbers may be strings holding one (topology `${var}` substitution), and an unknown key is an
//! error that names it, so a typo does not silently fall back to a default.

use std::time::Duration;

use toml::Table;

use super::goodput::{Direction, GoodputOptions};
use super::rtt::RttOptions;
use super::stream::StreamOptions;
use super::target::DEFAULT_PORT;
use crate::roles::config::Keys;

/// Keys a server config may have.
const SERVER_KEYS: &[&str] = &["mode", "port", "duration"];

/// Keys a client config may have.
const CLIENT_KEYS: &[&str] = &[
    "mode",
    "target",
    "port",
    "rtt_count",
    "rtt_interval",
    "rtt_size",
    "rtt_samples",
    "goodput_seconds",
    "goodput_warmup",
    "goodput_direction",
    "stream_count",
    "stream_rate_pps",
    "stream_size",
    "reach_timeout",
];

/// What the node should be.
#[derive(Debug, Clone, PartialEq)]
pub enum RoleConfig {
    Server(ServerRole),
    Client(ClientRole),
}

/// `mode = "server"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRole {
    pub port: u16,
    /// `None`: until stopped.
    pub duration: Option<Duration>,
}

/// `mode = "client"`: the tests to run, in order; `None` skips one.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRole {
    /// `HOST[:PORT]` as written.
    pub target: String,
    /// The port used when `target` names none.
    pub port: u16,
    pub reach_timeout: Duration,
    pub rtt: Option<RttOptions>,
    pub goodput: Option<GoodputOptions>,
    pub stream: Option<StreamOptions>,
}

/// Parses a config table.
pub fn parse_role_config(table: &Table) -> Result<RoleConfig, String> {
    let config = Keys::new(table);
    match config.string("mode")? {
        Some("server") => {
            config.only(SERVER_KEYS, "mode `server`")?;
            Ok(RoleConfig::Server(ServerRole {
                port: config.port("port", DEFAULT_PORT)?,
                duration: config
                    .duration("duration")?
                    .filter(|duration| !duration.is_zero()),
            }))
        }
        Some("client") => {
            config.only(CLIENT_KEYS, "mode `client`")?;
            parse_client(&config).map(RoleConfig::Client)
        }
        Some(other) => Err(format!(
            "config key `mode`: unknown mode `{other}` (use \"server\" or \"client\")"
        )),
        None => Err("config key `mode` is missing (\"server\" or \"client\")".to_string()),
    }
}

fn parse_client(config: &Keys) -> Result<ClientRole, String> {
    let target = config
        .string("target")?
        .ok_or("config key `target` is missing (the server node's name)")?
        .to_string();
    let rtt_defaults = RttOptions {
        count: 200,
        ..RttOptions::default()
    };
    let rtt = RttOptions {
        count: config.integer("rtt_count")?.unwrap_or(rtt_defaults.count),
        interval: config
            .duration("rtt_interval")?
            .unwrap_or(rtt_defaults.interval),
        size: config.count("rtt_size")?.unwrap_or(rtt_defaults.size),
        keep_samples: config.boolean("rtt_samples")?.unwrap_or(false),
    };
    let goodput_defaults = GoodputOptions::default();
    let goodput_seconds = config
        .seconds("goodput_seconds")?
        .unwrap_or(goodput_defaults.duration);
    let goodput = GoodputOptions {
        direction: match config.string("goodput_direction")? {
            Some(text) => text
                .parse()
                .or_else(|e| config.fail("goodput_direction", e))?,
            None => Direction::Download,
        },
        duration: goodput_seconds,
        warmup: config
            .duration("goodput_warmup")?
            .unwrap_or(goodput_defaults.warmup),
    };
    let stream_defaults = StreamOptions::default();
    let stream = StreamOptions {
        rate_pps: config
            .number("stream_rate_pps")?
            .unwrap_or(stream_defaults.rate_pps),
        count: config.integer("stream_count")?.unwrap_or(0),
        size: config.count("stream_size")?.unwrap_or(stream_defaults.size),
    };
    Ok(ClientRole {
        target,
        port: config.port("port", DEFAULT_PORT)?,
        reach_timeout: config
            .duration("reach_timeout")?
            .unwrap_or(Duration::from_secs(10)),
        rtt: (rtt.count > 0).then_some(rtt),
        goodput: (!goodput.duration.is_zero()).then_some(goodput),
        stream: (stream.count > 0).then_some(stream),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RoleConfig, String> {
        parse_role_config(&text.parse::<Table>().unwrap())
    }

    #[test]
    fn client_defaults() {
        let RoleConfig::Client(client) = parse("mode = 'client'\ntarget = 'server'").unwrap()
        else {
            panic!("not a client");
        };
        assert_eq!(client.target, "server");
        assert_eq!(client.port, 9000);
        assert_eq!(client.reach_timeout, Duration::from_secs(10));
        let rtt = client.rtt.unwrap();
        assert_eq!((rtt.count, rtt.interval), (200, Duration::from_millis(10)));
        assert!(!rtt.keep_samples, "samples only when asked for");
        let goodput = client.goodput.unwrap();
        assert_eq!(goodput.duration, Duration::from_secs(5));
        assert_eq!(goodput.direction, Direction::Download);
        assert_eq!(client.stream, None);
        let RoleConfig::Client(client) =
            parse("mode = 'client'\ntarget = 'server'\nrtt_samples = true").unwrap()
        else {
            panic!("not a client");
        };
        assert!(client.rtt.unwrap().keep_samples);
    }

    #[test]
    fn client_settings_and_skips() {
        let config = parse(
            "mode = 'client'\ntarget = 'edge:8000'\nrtt_count = 0\nrtt_interval = '1ms'\n\
             goodput_seconds = 0.5\ngoodput_direction = 'upload'\ngoodput_warmup = '200ms'\n\
             stream_count = 100\nstream_rate_pps = 50\nreach_timeout = '2s'",
        )
        .unwrap();
        let RoleConfig::Client(client) = config else {
            panic!("not a client");
        };
        assert_eq!(client.rtt, None);
        let goodput = client.goodput.unwrap();
        assert_eq!(goodput.duration, Duration::from_millis(500));
        assert_eq!(goodput.warmup, Duration::from_millis(200));
        assert_eq!(goodput.direction, Direction::Upload);
        let stream = client.stream.unwrap();
        assert_eq!((stream.count, stream.rate_pps), (100, 50.0));
        assert_eq!(client.reach_timeout, Duration::from_secs(2));
        let skipped = parse("mode = 'client'\ntarget = 's'\ngoodput_seconds = 0").unwrap();
        assert!(matches!(
            skipped,
            RoleConfig::Client(ClientRole { goodput: None, .. })
        ));
    }

    #[test]
    fn numbers_may_be_substituted_strings() {
        let config = parse(
            "mode = 'client'\ntarget = 's'\nport = '7000'\nrtt_count = '5'\nrtt_size = '32'\n\
             goodput_seconds = '1.5'\nstream_count = '10'\nstream_rate_pps = '20'",
        )
        .unwrap();
        let RoleConfig::Client(client) = config else {
            panic!("not a client");
        };
        assert_eq!(client.port, 7000);
        let rtt = client.rtt.unwrap();
        assert_eq!((rtt.count, rtt.size), (5, 32));
        assert_eq!(
            client.goodput.unwrap().duration,
            Duration::from_millis(1500)
        );
        let stream = client.stream.unwrap();
        assert_eq!((stream.count, stream.rate_pps), (10, 20.0));
    }

    #[test]
    fn server_config() {
        assert_eq!(
            parse("mode = 'server'").unwrap(),
            RoleConfig::Server(ServerRole {
                port: 9000,
                duration: None
            })
        );
        assert_eq!(
            parse("mode = 'server'\nport = 7000\nduration = '30s'").unwrap(),
            RoleConfig::Server(ServerRole {
                port: 7000,
                duration: Some(Duration::from_secs(30))
            })
        );
    }

    #[test]
    fn errors_name_the_key() {
        let error = |text| parse(text).unwrap_err();
        assert!(error("mode = 'client'\ntarget = 's'\nrtt_cuont = 5")
            .contains("unknown config key `rtt_cuont` for mode `client`"));
        assert!(error("mode = 'server'\ntarget = 's'").contains("unknown config key `target`"));
        assert!(error("target = 's'").contains("`mode` is missing"));
        assert!(error("mode = 'router'").contains("unknown mode `router`"));
        assert!(error("mode = 'client'").contains("`target` is missing"));
        assert!(error("mode = 'client'\ntarget = 's'\nrtt_interval = '10'")
            .contains("config key `rtt_interval`: `10` has no unit"));
        assert!(error("mode = 'client'\ntarget = 's'\nrtt_count = -1").contains("negative"));
        assert!(error("mode = 'client'\ntarget = 's'\nrtt_count = '5x'")
            .contains("`rtt_count`: expected an integer, found \"5x\""));
        assert!(error("mode = 'server'\nport = 70000").contains("not a port"));
        assert!(error("mode = 'client'\ntarget = 's'\ngoodput_seconds = -1").contains("≥ 0"));
        assert!(
            error("mode = 'client'\ntarget = 's'\ngoodput_direction = 'up'")
                .contains("unknown direction `up`")
        );
    }
}
