//! A small XML reader for DASH MPDs: elements, attributes, text, comments, CDATA, processing
//! instructions and a DOCTYPE (skipped), the five predefined entities and character
//! references. Namespaces are reduced to local names (`<mpd:MPD>` is `MPD`), which is how MPD
//! readers match elements. No DTD processing, so no entity expansion attacks; nesting depth is
//! bounded, and the tree is built without recursion.

use std::fmt;

/// Deepest element nesting accepted; MPDs nest about 6 deep.
pub(crate) const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Element {
    /// The local name (after any `prefix:`).
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    /// Character data directly inside this element, concatenated.
    pub text: String,
    /// 1-based line of the start tag.
    pub line: usize,
}

impl Element {
    /// The attribute with local name `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct XmlError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for XmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    /// Line number at `line_pos`, advanced lazily (positions only grow).
    line: usize,
    line_pos: usize,
}

impl<'a> Reader<'a> {
    fn line_at(&mut self, pos: usize) -> usize {
        let pos = pos.min(self.text.len());
        if pos > self.line_pos {
            self.line += self.text.as_bytes()[self.line_pos..pos]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.line_pos = pos;
        }
        self.line
    }

    fn error<T>(&mut self, at: usize, message: impl Into<String>) -> Result<T, XmlError> {
        Err(XmlError {
            line: self.line_at(at),
            message: message.into(),
        })
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    /// Moves past `end`, returning the text before it.
    fn until(&mut self, end: &str, what: &str) -> Result<&'a str, XmlError> {
        match self.rest().find(end) {
            Some(i) => {
                let found = &self.text[self.pos..self.pos + i];
                self.pos += i + end.len();
                Ok(found)
            }
            None => {
                let at = self.pos;
                self.error(at, format!("unterminated {what}"))
            }
        }
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn name(&mut self) -> Result<&'a str, XmlError> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '/' | '>' | '=' | '<' | '"' | '\''))
            .unwrap_or(rest.len());
        if len == 0 {
            let at = self.pos;
            return self.error(at, "expected a name");
        }
        self.pos += len;
        Ok(&rest[..len])
    }
}

fn local(name: &str) -> &str {
    name.rsplit_once(':').map_or(name, |(_, local)| local)
}

/// Parses a document into its root element.
pub(crate) fn parse(text: &str) -> Result<Element, XmlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut r = Reader {
        text,
        pos: 0,
        line: 1,
        line_pos: 0,
    };
    // Open elements with their qualified names (end tags must match them exactly).
    let mut stack: Vec<(Element, &str)> = Vec::new();
    let mut root: Option<Element> = None;
    while r.pos < text.len() {
        let start = r.pos;
        let rest = r.rest();
        if rest.starts_with("<!--") {
            r.pos += 4;
            r.until("-->", "comment")?;
        } else if rest.starts_with("<?") {
            r.pos += 2;
            r.until("?>", "processing instruction")?;
        } else if rest.starts_with("<![CDATA[") {
            r.pos += 9;
            let data = r.until("]]>", "CDATA section")?;
            match stack.last_mut() {
                Some((open, _)) => open.text.push_str(data),
                None => return r.error(start, "CDATA outside the root element"),
            }
        } else if rest.starts_with("<!") {
            skip_declaration(&mut r)?;
        } else if rest.starts_with("</") {
            r.pos += 2;
            let name = r.name()?;
            r.skip_space();
            if !r.rest().starts_with('>') {
                return r.error(start, format!("malformed end tag </{name}"));
            }
            r.pos += 1;
            match stack.pop() {
                Some((element, open)) if open == name => {
                    attach(&mut r, &mut stack, &mut root, element, start)?
                }
                Some((_, open)) => return r.error(start, format!("</{name}> closes <{open}>")),
                None => return r.error(start, format!("</{name}> without a start tag")),
            }
        } else if rest.starts_with('<') {
            r.pos += 1;
            let (element, qname, empty) = start_tag(&mut r, start)?;
            if empty {
                attach(&mut r, &mut stack, &mut root, element, start)?;
            } else {
                if stack.len() >= MAX_DEPTH {
                    return r.error(start, format!("elements nest deeper than {MAX_DEPTH}"));
                }
                stack.push((element, qname));
            }
        } else {
            let len = rest.find('<').unwrap_or(rest.len());
            let raw = &rest[..len];
            r.pos += len;
            match stack.last_mut() {
                Some((open, _)) => match decode(raw) {
                    Ok(t) => open.text.push_str(&t),
                    Err(message) => return r.error(start, message),
                },
                None if raw.trim().is_empty() => {}
                None => return r.error(start, "text outside the root element"),
            }
        }
    }
    if let Some((_, open)) = stack.last() {
        let open = open.to_string();
        let end = text.len();
        return r.error(end, format!("<{open}> is never closed"));
    }
    match root {
        Some(root) => Ok(root),
        None => r.error(text.len(), "no root element"),
    }
}

/// `<!DOCTYPE ...>` with an optional `[...]` internal subset, skipped unread.
fn skip_declaration(r: &mut Reader<'_>) -> Result<(), XmlError> {
    let start = r.pos;
    let mut depth = 0usize;
    for (i, b) in r.rest().bytes().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b'>' if depth == 0 => {
                r.pos += i + 1;
                return Ok(());
            }
            _ => {}
        }
    }
    r.error(start, "unterminated <! declaration")
}

/// Reads a start tag after its `<`: the element (without children), its qualified name, and
/// whether it was empty (`/>`).
fn start_tag<'a>(r: &mut Reader<'a>, start: usize) -> Result<(Element, &'a str, bool), XmlError> {
    let qname = r.name()?;
    let line = r.line_at(start);
    let mut element = Element {
        name: local(qname).to_string(),
        attrs: Vec::new(),
        children: Vec::new(),
        text: String::new(),
        line,
    };
    loop {
        r.skip_space();
        let rest = r.rest();
        if rest.starts_with("/>") {
            r.pos += 2;
            return Ok((element, qname, true));
        }
        if rest.starts_with('>') {
            r.pos += 1;
            return Ok((element, qname, false));
        }
        if rest.is_empty() {
            return r.error(start, format!("unterminated start tag <{qname}"));
        }
        let key = r.name()?;
        r.skip_space();
        if !r.rest().starts_with('=') {
            let at = r.pos;
            return r.error(at, format!("attribute {key} of <{qname}> has no value"));
        }
        r.pos += 1;
        r.skip_space();
        let quote = match r.rest().chars().next() {
            Some(q @ ('"' | '\'')) => q,
            _ => {
                let at = r.pos;
                return r.error(
                    at,
                    format!("attribute {key} of <{qname}>: value must be quoted"),
                );
            }
        };
        r.pos += 1;
        let value_at = r.pos;
        let raw = r.until(if quote == '"' { "\"" } else { "'" }, "attribute value")?;
        if raw.contains('<') {
            return r.error(
                value_at,
                format!("attribute {key} of <{qname}> contains '<'"),
            );
        }
        let value = match decode(raw) {
            Ok(v) => v,
            Err(m) => return r.error(value_at, m),
        };
        // Namespace declarations are not data.
        if key == "xmlns" || key.starts_with("xmlns:") {
            continue;
        }
        let key = local(key);
        if element.attr(key).is_some() {
            return r.error(value_at, format!("attribute {key} repeated in <{qname}>"));
        }
        element.attrs.push((key.to_string(), value));
    }
}

/// Closes `element`: into its parent, or as the root.
fn attach(
    r: &mut Reader<'_>,
    stack: &mut [(Element, &str)],
    root: &mut Option<Element>,
    element: Element,
    at: usize,
) -> Result<(), XmlError> {
    match stack.last_mut() {
        Some((parent, _)) => parent.children.push(element),
        None if root.is_none() => *root = Some(element),
        None => return r.error(at, "a second root element"),
    }
    Ok(())
}

/// Replaces entity and character references.
fn decode(raw: &str) -> Result<String, String> {
    if !raw.contains('&') {
        return Ok(raw.to_string());
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let semi = after
            .find(';')
            .ok_or_else(|| format!("unterminated reference in {raw:?}"))?;
        let name = &after[..semi];
        let c = match name {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(hex) =
                    name.strip_prefix("#x").or_else(|| name.strip_prefix("#X"))
                {
                    u32::from_str_radix(hex, 16).ok()
                } else if let Some(dec) = name.strip_prefix('#') {
                    dec.parse().ok()
                } else {
                    None
                };
                code.and_then(char::from_u32)
                    .ok_or_else(|| format!("unknown reference &{name};"))?
            }
        };
        out.push(c);
        rest = &after[semi + 1..];
    }
    out.push_str(rest);
    Ok(out)
}
