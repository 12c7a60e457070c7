//! `HOST[:PORT]` targets: a node name, an IPv4 address, or an IPv6 address (in brackets when it
//! carries a port), resolved through the system resolver so node names from the lab's hosts
//! file work.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// The port `probe serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 9000;

/// Splits `HOST[:PORT]` into host and port (`default_port` when none is given).
pub fn split_target(text: &str, default_port: u16) -> Result<(String, u16), String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty target; expected HOST[:PORT]".to_string());
    }
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok((addr.ip().to_string(), addr.port()));
    }
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Ok((ip.to_string(), default_port));
    }
    if text.starts_with('[') {
        let inner = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
        return match inner.and_then(|ip| ip.parse::<IpAddr>().ok()) {
            Some(ip) => Ok((ip.to_string(), default_port)),
            None => Err(format!("target `{text}`: expected [IPV6] or [IPV6]:PORT")),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("target `{text}`: port `{port}` is not a number 0-65535"))?;
            if host.is_empty() {
                return Err(format!("target `{text}` has no host"));
            }
            Ok((host.to_string(), port))
        }
        _ => Ok((text.to_string(), default_port)),
    }
}

/// Resolves `HOST[:PORT]` to one socket address, preferring IPv4 (the labs' address pool).
pub fn resolve_target(text: &str, default_port: u16) -> io::Result<SocketAddr> {
    let (host, port) = split_target(text, default_port)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let addrs: Vec<SocketAddr> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| io::Error::new(e.kind(), format!("resolving `{host}`: {e}")))?
        .collect();
    addrs
        .iter()
        .find(|addr| addr.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("`{host}` resolves to no address"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_host_and_port() {
        let split = |t| split_target(t, 9000);
        assert_eq!(split("server"), Ok(("server".into(), 9000)));
        assert_eq!(split("server:80"), Ok(("server".into(), 80)));
        assert_eq!(split("198.18.0.2"), Ok(("198.18.0.2".into(), 9000)));
        assert_eq!(split("198.18.0.2:7"), Ok(("198.18.0.2".into(), 7)));
        assert_eq!(split("::1"), Ok(("::1".into(), 9000)));
        assert_eq!(split("[::1]:80"), Ok(("::1".into(), 80)));
        assert_eq!(split("[::1]"), Ok(("::1".into(), 9000)));
        assert!(split("[::1]:x").unwrap_err().contains("expected [IPV6]"));
        assert!(split("server:http").unwrap_err().contains("port `http`"));
        assert!(split(":80").unwrap_err().contains("no host"));
        assert!(split(" ").unwrap_err().contains("empty"));
    }

    #[test]
    fn loopback_resolves() {
        assert_eq!(
            resolve_target("127.0.0.1:5", 9000).unwrap(),
            "127.0.0.1:5".parse().unwrap()
        );
        assert_eq!(resolve_target("localhost", 9000).unwrap().port(), 9000);
    }
}
