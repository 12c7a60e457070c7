//! The config tables of the farm's roles. The dispatcher and the load share the model's
//! parameters (`Model`): both must agree on the contents, their popularity and the load, the
//! dispatcher to replicate for it and the load to send it.

use crate::replication::{self as model, ParamError, Replication, System};
use crate::roles::config::Keys;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use std::time::Duration;
use toml::Table;

/// The loss network's parameters (papers/004, Section IV) in real units.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// n: contents `0 … n−1`, content c the (c+1)-th most popular at the start.
    pub contents: usize,
    /// Zipf exponent of the popularity.
    pub alpha: f64,
    /// ρ = Σλ_c / m.
    pub rho: f64,
    /// The mean service time (the model's time unit).
    pub service: Duration,
    pub object_size: u64,
}

impl Model {
    const KEYS: [&'static str; 5] = ["contents", "alpha", "rho", "service", "object_size"];

    fn read(keys: &Keys) -> Result<Model, String> {
        let contents = contents(keys)?;
        let alpha = keys.number("alpha")?.unwrap_or(0.8);
        if !(alpha.is_finite() && alpha >= 0.0) {
            return keys.fail("alpha", "must be a number ≥ 0");
        }
        let rho = keys.number("rho")?.unwrap_or(0.6);
        if !(rho.is_finite() && rho > 0.0) {
            return keys.fail("rho", "must be a number above 0 (and below 1)");
        }
        let (service, object_size) = service_and_size(keys)?;
        Ok(Model {
            contents,
            alpha,
            rho,
            service,
            object_size,
        })
    }

    /// λ_c per unit of mean service time for a farm of m servers: Zipf(α) scaled so that
    /// Σλ_c = ρ·m.
    pub fn lambdas(&self, servers: usize) -> Vec<f64> {
        let lambda_bar = self.rho * servers as f64 / self.contents as f64;
        model::popularity::zipf(self.contents, self.alpha, lambda_bar)
    }

    /// The checked farm; each refusal names the config key it is about.
    pub fn system(&self, keys: &Keys, servers: usize, slots: usize) -> Result<System, String> {
        System::new(self.lambdas(servers), servers, slots).or_else(|e| {
            let key = match &e {
                ParamError::StorageBelowCatalog { .. } | ParamError::SlotsAboveCatalog { .. } => {
                    "slots"
                }
                ParamError::Overload { .. } => "rho",
                ParamError::UnknownScheme { .. } => "scheme",
                ParamError::Invalid { name, .. } => match *name {
                    "m" => "servers",
                    "d" => "slots",
                    "n" => "contents",
                    _ => "alpha",
                },
            };
            keys.fail(key, e)
        })
    }
}

/// The most contents a farm's catalog holds: the model's state grows with it (and with m·d,
/// which the caps on `servers` and `slots` bound).
const MAX_CONTENTS: usize = 1_000_000;

/// The most slots one server has.
const MAX_SLOTS: usize = 1024;

/// `contents`, n: the catalog's size, which the dispatcher's model, the load and the data
/// center must agree on.
fn contents(keys: &Keys) -> Result<usize, String> {
    let contents = keys.count("contents")?.unwrap_or(50);
    if !(1..=MAX_CONTENTS).contains(&contents) {
        return keys.fail("contents", format!("must be 1 to {MAX_CONTENTS}"));
    }
    Ok(contents)
}

/// `slots`, d, when given: the contents each server stores.
fn slots(keys: &Keys) -> Result<Option<usize>, String> {
    match keys.count("slots")? {
        Some(d) if !(1..=MAX_SLOTS).contains(&d) => {
            keys.fail("slots", format!("must be 1 to {MAX_SLOTS}"))
        }
        d => Ok(d),
    }
}

/// A time limit at `key`: `default` when absent, and 100ms to 600s when given.
fn limit(keys: &Keys, key: &str, default: Duration) -> Result<Duration, String> {
    keys.duration_within(
        key,
        default,
        Duration::from_millis(100)..=Duration::from_secs(600),
    )
}

/// `service` (the mean service time) and `object_size`, which the dispatcher's model and
/// every server must agree on.
fn service_and_size(keys: &Keys) -> Result<(Duration, u64), String> {
    let service = keys
        .duration("service")?
        .unwrap_or(Duration::from_millis(250));
    if service < Duration::from_millis(10) {
        return keys.fail("service", "must be at least 10ms");
    }
    let object_size = keys.integer("object_size")?.unwrap_or(20_000);
    if !(1..=64 << 20).contains(&object_size) {
        return keys.fail("object_size", "must be 1 byte to 64 MiB");
    }
    Ok((service, object_size))
}

/// The node named at `key`, `default` if the key is absent.
fn name(keys: &Keys, key: &str, default: &str) -> Result<String, String> {
    keys.node_name(key, keys.string(key)?.unwrap_or(default))
}

#[derive(Debug, Clone)]
pub struct DispatcherConfig {
    pub model: Model,
    pub system: System,
    /// The servers' node names, server i the i-th.
    pub servers: Vec<String>,
    pub datacenter: String,
    pub replication: Replication,
    pub port: u16,
    /// The port the servers and the data center serve HTTP on.
    pub server_port: u16,
    pub control_port: u16,
    pub sample_every: Duration,
    /// LFL's EWMA time constant, in mean service times.
    pub lfl_tau: f64,
    /// A server the dispatcher sent a request to and that has not reported its end after
    /// this long is counted idle again (its client never came).
    pub lease: Duration,
    pub seed: u64,
}

pub fn dispatcher(table: &Table) -> Result<DispatcherConfig, String> {
    let keys = Keys::new(table);
    let mut known = vec![
        "servers",
        "datacenter",
        "slots",
        "scheme",
        "port",
        "server_port",
        "control_port",
        "sample_every",
        "lfl_tau",
        "lease",
        "seed",
    ];
    known.extend(Model::KEYS);
    keys.only(&known, "role farm-dispatcher")?;
    let model = Model::read(&keys)?;
    let servers = keys.node_names("servers", 4096)?;
    let slots = match slots(&keys)? {
        Some(d) => d,
        None => return keys.fail("slots", "is required: d, the contents each server stores"),
    };
    let system = model.system(&keys, servers.len(), slots)?;
    let replication = match keys.string("scheme")? {
        Some(text) => text.parse().or_else(|e| keys.fail("scheme", e))?,
        None => Replication::Proportional,
    };
    let sample_every = keys
        .duration("sample_every")?
        .unwrap_or(Duration::from_secs(2));
    if sample_every < Duration::from_millis(100) {
        return keys.fail("sample_every", "must be at least 100ms");
    }
    let lfl_tau = keys.number("lfl_tau")?.unwrap_or(20.0);
    if !(lfl_tau.is_finite() && lfl_tau > 0.0) {
        return keys.fail("lfl_tau", "must be a number of mean service times above 0");
    }
    let lease = keys.duration("lease")?.unwrap_or(model.service * 40);
    if lease <= model.service {
        return keys.fail("lease", "must be longer than the mean service time");
    }
    Ok(DispatcherConfig {
        model,
        system,
        servers,
        datacenter: name(&keys, "datacenter", "datacenter")?,
        replication,
        port: keys.port("port", 80)?,
        server_port: keys.port("server_port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        sample_every,
        lfl_tau,
        lease,
        seed: keys.integer("seed")?.unwrap_or(1),
    })
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub dispatcher: String,
    pub datacenter: String,
    pub slots: usize,
    pub service: Duration,
    pub object_size: u64,
    pub port: u16,
    pub control_port: u16,
    /// How long a fetch of a replica may take.
    pub fetch_timeout: Duration,
    pub seed: u64,
}

pub fn server(table: &Table) -> Result<ServerConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "dispatcher",
            "datacenter",
            "slots",
            "service",
            "object_size",
            "port",
            "control_port",
            "fetch_timeout",
            "seed",
        ],
        "role farm-server",
    )?;
    let slots = slots(&keys)?.unwrap_or(8);
    let (service, object_size) = service_and_size(&keys)?;
    Ok(ServerConfig {
        dispatcher: name(&keys, "dispatcher", "dispatcher")?,
        datacenter: name(&keys, "datacenter", "datacenter")?,
        slots,
        service,
        object_size,
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
        fetch_timeout: limit(&keys, "fetch_timeout", Duration::from_secs(10))?,
        seed: keys.integer("seed")?.unwrap_or(1),
    })
}

#[derive(Debug, Clone)]
pub struct DataCenterConfig {
    pub dispatcher: String,
    pub contents: usize,
    pub object_size: u64,
    pub port: u16,
    pub control_port: u16,
}

pub fn datacenter(table: &Table) -> Result<DataCenterConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "dispatcher",
            "contents",
            "object_size",
            "port",
            "control_port",
        ],
        "role farm-datacenter",
    )?;
    let contents = contents(&keys)?;
    let object_size = keys.integer("object_size")?.unwrap_or(20_000);
    if !(1..=64 << 20).contains(&object_size) {
        return keys.fail("object_size", "must be 1 byte to 64 MiB");
    }
    Ok(DataCenterConfig {
        dispatcher: name(&keys, "dispatcher", "dispatcher")?,
        contents,
        object_size,
        port: keys.port("port", 80)?,
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
    })
}

/// The popularity after the load's signal (a `signal` timeline event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The ranks reversed: the least popular content becomes the most popular.
    Reverse,
    /// Every content moves down `k` ranks, the last `k` to the top.
    Shift(usize),
}

#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub model: Model,
    pub dispatcher: String,
    /// m, for the request rate ρ·m per mean service time.
    pub servers: usize,
    pub duration: Duration,
    /// What SIGUSR1 does to the popularity; None: it is ignored.
    pub change: Option<Change>,
    /// Every request (redirect and transfer) is given up after this long.
    pub timeout: Duration,
    pub seed: u64,
}

pub fn load(table: &Table) -> Result<LoadConfig, String> {
    let keys = Keys::new(table);
    let mut known = vec![
        "dispatcher",
        "servers",
        "duration",
        "change",
        "timeout",
        "seed",
    ];
    known.extend(Model::KEYS);
    keys.only(&known, "role farm-load")?;
    let model = Model::read(&keys)?;
    let servers = match keys.count("servers")? {
        Some(m) if (1..=4096).contains(&m) => m,
        Some(_) => return keys.fail("servers", "must be 1 to 4096"),
        None => return keys.fail("servers", "is required: m, the farm's server count"),
    };
    if model.rho >= 1.0 {
        return keys.fail("rho", ParamError::Overload { rho: model.rho });
    }
    let change = match keys.string("change")?.unwrap_or("none") {
        "none" => None,
        "reverse" => Some(Change::Reverse),
        text => match text.strip_prefix("shift:").map(str::parse::<usize>) {
            Some(Ok(k)) if k > 0 && k < model.contents => Some(Change::Shift(k)),
            _ => {
                return keys.fail(
                    "change",
                    format!("`{text}` is not none, reverse or shift:K (0 < K < contents)"),
                )
            }
        },
    };
    let duration = keys.duration_within(
        "duration",
        Duration::from_secs(60),
        Duration::from_nanos(1)..=Duration::from_secs(24 * 3600),
    )?;
    Ok(LoadConfig {
        model,
        dispatcher: name(&keys, "dispatcher", "dispatcher")?,
        servers,
        duration,
        change,
        timeout: limit(&keys, "timeout", Duration::from_secs(30))?,
        seed: keys.integer("seed")?.unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    const FARM: &str = r#"servers = ["s1", "s2", "s3", "s4"]
contents = "6"
"#;

    /// The issue's bad inputs each name their key.
    #[test]
    fn impossible_farms_name_the_parameter() {
        let cases = [
            (
                "slots = \"1\"",
                "config key `slots`: m·d = 4·1 = 4 is below n = 6",
            ),
            ("slots = \"7\"", "config key `slots`: d = 7 is above n = 6"),
            ("slots = \"2\"\nrho = \"1\"", "config key `rho`: rho = 1"),
            (
                "slots = \"2\"\nscheme = \"lru\"",
                "config key `scheme`: scheme `lru` does not exist",
            ),
        ];
        for (extra, want) in cases {
            let error = dispatcher(&table(&format!("{FARM}{extra}"))).unwrap_err();
            assert!(error.starts_with(want), "{extra}: {error}");
        }
        let ok = dispatcher(&table(&format!(
            "{FARM}slots = \"2\"\nscheme = \"lrl-virtual\""
        )));
        assert_eq!(ok.unwrap().replication.to_string(), "lrl-virtual");
    }

    /// Sizes that would make a role allocate without end, and time limits that would fail
    /// every request, are refused by name.
    #[test]
    fn sizes_names_and_limits_out_of_range_are_refused() {
        let farm = "servers = [\"s1\", \"s2\"]\nslots = \"2\"\n";
        let cases = [
            (
                format!("{farm}contents = \"1000000000000\""),
                "config key `contents`: must be 1 to 1000000",
            ),
            (
                "servers = [\"s1\"]\ncontents = \"6\"\nslots = \"1000000000\"".to_string(),
                "config key `slots`: must be 1 to 1024",
            ),
            (
                "servers = [\"s1\", \"s1\"]\nslots = \"2\"\ncontents = \"3\"".to_string(),
                "config key `servers`: `s1` is listed twice",
            ),
            (
                "servers = [\"s1\", \"evil.example/x\"]\nslots = \"2\"\ncontents = \"3\""
                    .to_string(),
                "config key `servers`",
            ),
        ];
        for (text, want) in cases {
            let error = dispatcher(&table(&text)).unwrap_err();
            assert!(error.starts_with(want), "{text}: {error}");
        }
        let error = datacenter(&table("contents = \"0\"")).unwrap_err();
        assert!(error.starts_with("config key `contents`"), "{error}");
        for timeout in ["0s", "601s"] {
            let error = server(&table(&format!("fetch_timeout = \"{timeout}\""))).unwrap_err();
            assert!(
                error.starts_with("config key `fetch_timeout`: must be 100ms to 600s"),
                "{error}"
            );
            let error =
                load(&table(&format!("servers = \"4\"\ntimeout = \"{timeout}\""))).unwrap_err();
            assert!(error.starts_with("config key `timeout`"), "{error}");
        }
        assert_eq!(
            server(&table("")).unwrap().fetch_timeout,
            Duration::from_secs(10)
        );
    }

    #[test]
    fn the_load_refuses_an_overload_and_an_unknown_change() {
        let base = "servers = \"4\"\n";
        let error = load(&table(&format!("{base}rho = \"1.2\""))).unwrap_err();
        assert!(error.starts_with("config key `rho`"), "{error}");
        let error = load(&table(&format!("{base}change = \"shift:0\""))).unwrap_err();
        assert!(error.starts_with("config key `change`"), "{error}");
        for duration in ["0s", "86401s"] {
            let error = load(&table(&format!("{base}duration = \"{duration}\""))).unwrap_err();
            assert!(
                error.starts_with("config key `duration`: must be"),
                "{error}"
            );
        }
        let ok = load(&table(&format!("{base}change = \"shift:3\""))).unwrap();
        assert_eq!(ok.change, Some(Change::Shift(3)));
    }
}
