//! The shaper daemon's control protocol: one JSON request per line on a Unix stream socket, one
//! JSON response line for each. The orchestrator uses these types and [`request`] to change a
//! link at run time and to read its counters.

use crate::daemon_schedule::{ArrivalStats, Lateness};
use crate::params::Impairments;
use crate::shaper::ShaperStats;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// How long [`request`] waits for the daemon.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// A request line: `{"op":"ping"}`, `{"op":"set","id":"router/eth0","impairments":{...}}`,
/// `{"op":"show"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
pub enum Request {
    /// Is the daemon serving?
    Ping,
    /// Replaces one queue's impairments; packets already held keep their departure times.
    Set {
        id: String,
        impairments: Impairments,
    },
    /// Every queue's impairments and counters.
    Show,
}

/// A response line: `{"ok":true}`, `{"ok":true,"queues":[...]}` or `{"ok":false,"error":"..."}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<QueueStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<DaemonStatus>,
}

/// One queue (link direction) in a `show` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueStatus {
    pub id: String,
    pub queue_num: u16,
    pub impairments: Impairments,
    pub stats: ShaperStats,
    /// Packets the shaper counts as queued (accepted, not yet departed).
    pub queued: usize,
}

/// The daemon's own health, in a `show` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// Packets held in userspace for their departure time, over all queues.
    pub held: usize,
    /// Times the kernel reported ENOBUFS: packet messages were lost (and their packets dropped)
    /// because a socket's receive buffer was full.
    pub overruns: u64,
    /// Error reports from the kernel for verdicts (e.g. an unknown packet id).
    pub verdict_errors: u64,
    /// Netlink messages that could not be parsed (each skipped; the rest of its batch was read).
    pub malformed: u64,
    /// Packets named by malformed messages, given a drop verdict so they do not fill the queue.
    #[serde(default)]
    pub malformed_dropped: u64,
    /// Timer wake-ups: how late the event loop ran after the time the timer was armed for.
    pub wakeup_lateness: Lateness,
    /// How far ahead of a departure the timer is armed, learnt from `wakeup_lateness`.
    pub wakeup_lead_ns: u64,
    /// Every verdict given: how long after its departure time it was sent (for a packet
    /// already due when read, after the later of that time and its arrival).
    pub verdict_lateness: Lateness,
    /// Packets read from a socket left out of the epoll set (`daemon_deferral`) only after
    /// they were due; each makes that socket's arrivals be read at once for a second.
    #[serde(default)]
    pub deferred_late: u64,
    /// How the packets' arrival times were taken (the kernel's stamp or the daemon's read).
    #[serde(default)]
    pub arrivals: ArrivalStats,
    /// The keeper (which wakes the daemon's CPU before long timer waits end), if one runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeper: Option<KeeperStatus>,
}

/// What the daemon's keeper has done since it started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeeperStatus {
    /// Its thread's CPU time, ns.
    pub cpu_ns: u64,
    /// Wake-ups made before the daemon's timer.
    pub wakeups: u64,
    /// Wake-ups skipped because its budget was spent.
    pub skipped: u64,
}

impl Response {
    pub fn ok() -> Response {
        Response {
            ok: true,
            ..Response::default()
        }
    }

    pub fn error(message: impl Into<String>) -> Response {
        Response {
            ok: false,
            error: Some(message.into()),
            ..Response::default()
        }
    }

    /// The response when it says `ok`, else its error as an `io::Error`.
    pub fn into_result(self) -> io::Result<Response> {
        if self.ok {
            Ok(self)
        } else {
            Err(io::Error::other(self.error.unwrap_or_else(|| {
                "the shaper daemon refused the request".to_string()
            })))
        }
    }

    /// The response as one line of JSON, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"ok":false,"error":"cannot encode the response: {e}"}}"#)
        });
        line.push('\n');
        line
    }
}

/// Parses one request line; the error names what was wrong with it.
pub fn parse_request(line: &str) -> Result<Request, String> {
    serde_json::from_str(line.trim()).map_err(|e| format!("bad request `{}`: {e}", line.trim()))
}

/// Sends one request to the daemon at `socket_path` and reads its response. A response with
/// `ok: false` is returned as it is; [`Response::into_result`] turns it into an error.
pub fn request(socket_path: &Path, request: &Request) -> io::Result<Response> {
    let with_path = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("shaper daemon at {}: {e}", socket_path.display()),
        )
    };
    let mut stream = UnixStream::connect(socket_path).map_err(with_path)?;
    stream
        .set_read_timeout(Some(CLIENT_TIMEOUT))
        .map_err(with_path)?;
    stream
        .set_write_timeout(Some(CLIENT_TIMEOUT))
        .map_err(with_path)?;
    let mut line = serde_json::to_string(request).map_err(io::Error::other)?;
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(with_path)?;
    let mut reply = String::new();
    BufReader::new(stream)
        .read_line(&mut reply)
        .map_err(with_path)?;
    if reply.is_empty() {
        return Err(with_path(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "closed the connection without a response",
        )));
    }
    serde_json::from_str(&reply).map_err(|e| {
        with_path(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad response `{}`: {e}", reply.trim()),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_requests() {
        assert_eq!(parse_request(r#"{"op":"ping"}"#), Ok(Request::Ping));
        assert_eq!(parse_request("  {\"op\":\"show\"}\n"), Ok(Request::Show));
        let set = parse_request(
            r#"{"op":"set","id":"router/eth0","impairments":{"delay_ns":50000000,"loss":0.01}}"#,
        )
        .unwrap();
        let Request::Set { id, impairments } = set else {
            panic!("not a set: {set:?}")
        };
        assert_eq!(id, "router/eth0");
        assert_eq!(impairments.delay_ns, 50_000_000);
        assert_eq!(impairments.loss, 0.01);
        assert_eq!(
            impairments.limit,
            crate::DEFAULT_LIMIT,
            "omitted fields take defaults"
        );
    }

    #[test]
    fn bad_requests_name_the_problem() {
        let err = parse_request("{\"op\":\"reboot\"}").unwrap_err();
        assert!(err.contains("reboot"), "{err}");
        let err = parse_request("not json").unwrap_err();
        assert!(err.starts_with("bad request `not json`"), "{err}");
        let err = parse_request(r#"{"op":"set","impairments":{}}"#).unwrap_err();
        assert!(err.contains("missing field `id`"), "{err}");
        let err =
            parse_request(r#"{"op":"set","id":"a","impairments":{"delay":"5ms"}}"#).unwrap_err();
        assert!(err.contains("unknown field `delay`"), "{err}");
        let err = parse_request(r#"{"op":"set","id":"a","impairments":{},"extra":1}"#).unwrap_err();
        assert!(err.contains("unknown field `extra`"), "{err}");
    }

    #[test]
    fn requests_round_trip_as_the_documented_json() {
        let line = serde_json::to_string(&Request::Ping).unwrap();
        assert_eq!(line, r#"{"op":"ping"}"#);
        let set = Request::Set {
            id: "a/b".into(),
            impairments: Impairments::default(),
        };
        let line = serde_json::to_string(&set).unwrap();
        assert!(
            line.starts_with(r#"{"op":"set","id":"a/b","impairments":{"#),
            "{line}"
        );
        assert_eq!(parse_request(&line), Ok(set));
        // Every f64 reads back exactly (serde_json's float_roundtrip; without it this one came
        // back one ulp off, found by prop_control_requests_round_trip).
        let set = Request::Set {
            id: "a/b".into(),
            impairments: Impairments {
                loss_correlation: 0.062045663166484244,
                ..Impairments::default()
            },
        };
        let line = serde_json::to_string(&set).unwrap();
        assert_eq!(parse_request(&line), Ok(set));
    }

    #[test]
    fn response_lines() {
        assert_eq!(Response::ok().to_line(), "{\"ok\":true}\n");
        assert_eq!(
            Response::error("unknown id `x`").to_line(),
            "{\"ok\":false,\"error\":\"unknown id `x`\"}\n"
        );
        let back: Response = serde_json::from_str(r#"{"ok":false,"error":"e"}"#).unwrap();
        assert_eq!(back.into_result().unwrap_err().to_string(), "e");
    }
}
