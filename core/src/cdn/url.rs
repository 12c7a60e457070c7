//! The URL handling the CDN needs: server origins (`BaseUrl`) that paths are appended to, and
//! reference resolution for manifest parsers (relative segment URIs resolve against the
//! manifest's URL) by the `url` crate.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An HTTP origin such as `http://ucs1:8080`: scheme `http` or `https`, a host, an optional
/// port, nothing else (a trailing `/` is dropped). `join` appends a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BaseUrl(String);

/// Why a URL was rejected or a reference could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlError {
    pub url: String,
    pub reason: &'static str,
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "URL {:?}: {}", self.url, self.reason)
    }
}

impl std::error::Error for UrlError {}

impl BaseUrl {
    pub fn parse(url: &str) -> Result<BaseUrl, UrlError> {
        let err = |reason| {
            Err(UrlError {
                url: url.to_string(),
                reason,
            })
        };
        let trimmed = url.strip_suffix('/').unwrap_or(url);
        let Some((scheme, authority)) = trimmed.split_once("://") else {
            return err("expected http://HOST[:PORT]");
        };
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return err("the scheme must be http or https");
        }
        if authority.contains(['/', '?', '#', '@']) {
            return err("only an origin is allowed: no path, query, fragment or user");
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            // An IPv6 literal: `[::1]:8080`.
            let Some((addr, rest)) = v6.split_once(']') else {
                return err("malformed IPv6 host");
            };
            if addr.is_empty()
                || !addr
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.'))
            {
                return err("malformed IPv6 host");
            }
            match rest {
                "" => (addr, None),
                _ => match rest.strip_prefix(':') {
                    Some(port) => (addr, Some(port)),
                    None => return err("unexpected text after the IPv6 host"),
                },
            }
        } else {
            match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return err("the host is empty");
        }
        if !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':'))
        {
            return err("the host has characters other than letters, digits, '-' and '.'");
        }
        if let Some(port) = port {
            let number = port.parse::<u32>();
            if !port.bytes().all(|b| b.is_ascii_digit()) || !matches!(number, Ok(p) if p <= 65_535)
            {
                return err("the port must be a number from 0 to 65535");
            }
        }
        Ok(BaseUrl(trimmed.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `path` must start with `/` (the `paths` module's functions make such paths).
    pub fn join(&self, path: &str) -> String {
        self.join_with(path.len(), |url| url.push_str(path))
    }

    /// The base followed by what `write_path` appends (a path starting with `/`), in one buffer
    /// of room for about `path_len` more bytes: how a router writes a `Location` without
    /// building the path apart first.
    pub fn join_with(&self, path_len: usize, write_path: impl FnOnce(&mut String)) -> String {
        let mut url = String::with_capacity(self.0.len() + path_len);
        url.push_str(&self.0);
        write_path(&mut url);
        url
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for BaseUrl {
    type Err = UrlError;

    fn from_str(s: &str) -> Result<BaseUrl, UrlError> {
        BaseUrl::parse(s)
    }
}

impl Serialize for BaseUrl {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for BaseUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<BaseUrl, D::Error> {
        let text = String::deserialize(deserializer)?;
        BaseUrl::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Resolves `reference` (absolute, network-path `//host/x`, absolute-path `/x` or relative
/// `x`, `../x`, `?q`) against the absolute URL `base`: RFC 3986 §5.2 as the WHATWG URL
/// standard has it (`url::Url::join`), which also normalizes what it resolves (a lower-case
/// scheme and host, no default port, an empty path as `/`, non-ASCII percent-encoded).
/// Surrounding whitespace is trimmed (playlists carry it); inner whitespace or control
/// characters are an error, which the standard's parser would drop or encode silently.
pub fn resolve(base: &str, reference: &str) -> Result<String, UrlError> {
    let reference = reference.trim();
    let error = |url: &str, reason| UrlError {
        url: url.to_string(),
        reason,
    };
    if reference.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(error(
            reference,
            "contains whitespace or control characters",
        ));
    }
    let base_url = url::Url::parse(base)
        .map_err(|_| error(base, "the base URL must be absolute (have a scheme)"))?;
    base_url
        .join(reference)
        .map(String::from)
        .map_err(|_| error(reference, "does not resolve against its base URL"))
}
