//! The little URL handling the CDN needs, without a URL crate: server origins (`BaseUrl`) that
//! paths are appended to, and RFC 3986 §5 reference resolution for manifest parsers (relative
//! segment URIs resolve against the manifest's URL). Neither percent-decodes nor normalizes
//! case: URLs pass through as written, which is all a client that sends them back needs.

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
        let mut url = String::with_capacity(self.0.len() + path.len());
        url.push_str(&self.0);
        url.push_str(path);
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

/// The five components of RFC 3986 Appendix B; `None` where the component is absent (which
/// differs from empty: `?` alone is an empty query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn split(reference: &str) -> Parts<'_> {
    let (rest, fragment) = match reference.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (reference, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    // A scheme is the text before the first ':' if no '/' comes earlier and it is well-formed;
    // otherwise the colon belongs to a relative path such as `a:b` → treated as path here,
    // which RFC 3986 §4.2 asks writers to avoid anyway.
    let (scheme, rest) = match rest.split_once(':') {
        Some((scheme, after)) if is_scheme(scheme) => (Some(scheme), after),
        _ => (None, rest),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => match after.find('/') {
            Some(slash) => (Some(&after[..slash]), &after[slash..]),
            None => (Some(after), ""),
        },
        None => (None, rest),
    };
    Parts {
        scheme,
        authority,
        path,
        query,
        fragment,
    }
}

fn is_scheme(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// Resolves `reference` (absolute, network-path `//host/x`, absolute-path `/x` or relative
/// `x`, `../x`, `?q`) against the absolute URL `base`, per RFC 3986 §5.2.2. Surrounding
/// whitespace is trimmed (playlists carry it); inner whitespace or control characters are an
/// error.
pub fn resolve(base: &str, reference: &str) -> Result<String, UrlError> {
    let reference = reference.trim();
    if reference.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(UrlError {
            url: reference.to_string(),
            reason: "contains whitespace or control characters",
        });
    }
    let b = split(base);
    if b.scheme.is_none() {
        return Err(UrlError {
            url: base.to_string(),
            reason: "the base URL must be absolute (have a scheme)",
        });
    }
    let r = split(reference);
    let target = if r.scheme.is_some() {
        Parts {
            path: &remove_dot_segments(r.path),
            ..r
        }
        .compose()
    } else if r.authority.is_some() {
        Parts {
            scheme: b.scheme,
            path: &remove_dot_segments(r.path),
            ..r
        }
        .compose()
    } else if r.path.is_empty() {
        Parts {
            query: r.query.or(b.query),
            fragment: r.fragment,
            ..b
        }
        .compose()
    } else {
        let path = if r.path.starts_with('/') {
            remove_dot_segments(r.path)
        } else {
            remove_dot_segments(&merge(&b, r.path))
        };
        Parts {
            path: &path,
            query: r.query,
            fragment: r.fragment,
            ..b
        }
        .compose()
    };
    Ok(target)
}

impl Parts<'_> {
    /// RFC 3986 §5.3.
    fn compose(&self) -> String {
        let mut out = String::new();
        if let Some(scheme) = self.scheme {
            out.push_str(scheme);
            out.push(':');
        }
        if let Some(authority) = self.authority {
            out.push_str("//");
            out.push_str(authority);
        }
        out.push_str(self.path);
        if let Some(query) = self.query {
            out.push('?');
            out.push_str(query);
        }
        if let Some(fragment) = self.fragment {
            out.push('#');
            out.push_str(fragment);
        }
        out
    }
}

/// RFC 3986 §5.2.3: a relative path replaces the base path's last segment.
fn merge(base: &Parts<'_>, relative: &str) -> String {
    if base.authority.is_some() && base.path.is_empty() {
        return format!("/{relative}");
    }
    match base.path.rfind('/') {
        Some(slash) => format!("{}{relative}", &base.path[..=slash]),
        None => relative.to_string(),
    }
}

/// RFC 3986 §5.2.4, on whole segments: `.` disappears, `..` removes the previous segment and
/// never climbs above the root.
fn remove_dot_segments(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    let last = segments.len() - 1;
    // A path ending in `.` or `..` keeps a trailing slash (`a/b/..` → `a/`).
    let mut trailing_slash = false;
    for (i, segment) in segments.iter().enumerate() {
        if absolute && i == 0 {
            continue;
        }
        match *segment {
            "." => trailing_slash = i == last,
            ".." => {
                out.pop();
                trailing_slash = i == last;
            }
            s => {
                out.push(s);
                trailing_slash = false;
            }
        }
    }
    let mut result = String::with_capacity(path.len());
    if absolute {
        result.push('/');
    }
    result.push_str(&out.join("/"));
    if trailing_slash && !result.ends_with('/') {
        result.push('/');
    }
    result
}
