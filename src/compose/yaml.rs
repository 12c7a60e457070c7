//! The little YAML a compose file needs: maps, lists, strings (always double-quoted, so no
//! value is read as a number or a boolean), literal blocks for multi-line text, and comments.

/// A YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// Written double-quoted, as JSON writes it (valid YAML).
    Str(String),
    /// A bare scalar the writer chose (`true`, a number).
    Plain(String),
    /// Multi-line text, written as a literal block (`|`).
    Block(String),
    List(Vec<Yaml>),
    /// A list written on one line: `[a, b]`.
    Flow(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

/// `key: value` pairs in order; a pair whose key starts with `#` is written as comment lines
/// (the key's lines, each starting with `#`), its value ignored.
pub type Map = Vec<(String, Yaml)>;

impl Yaml {
    pub fn str(text: impl Into<String>) -> Yaml {
        Yaml::Str(text.into())
    }

    /// Text written as a literal block when it has several lines and none starts with a space
    /// (a block's indentation is read off its first line), else double-quoted. A block splits
    /// at `\n` only, so text with YAML's other line breaks, or any character a block cannot
    /// hold, is quoted: a break the writer did not indent would end the block and let the
    /// rest be read as keys of the service.
    pub fn text(text: impl Into<String>) -> Yaml {
        let text = text.into();
        let blockable = text.contains('\n')
            && text
                .chars()
                .all(|c| c == '\n' || (printable(c) && !is_break(c)))
            && text
                .lines()
                .all(|l| !l.starts_with([' ', '\t']) && !l.ends_with([' ', '\t']));
        if blockable {
            Yaml::Block(text)
        } else {
            Yaml::Str(text)
        }
    }

    fn is_inline(&self) -> bool {
        match self {
            Yaml::Str(_) | Yaml::Plain(_) | Yaml::Flow(_) => true,
            Yaml::List(items) => items.is_empty(),
            Yaml::Map(pairs) => pairs.is_empty(),
            Yaml::Block(_) => false,
        }
    }

    fn inline(&self) -> String {
        match self {
            Yaml::Str(text) => quoted(text),
            Yaml::Plain(text) => text.clone(),
            Yaml::Flow(items) => {
                let items: Vec<String> = items.iter().map(Yaml::inline).collect();
                format!("[{}]", items.join(", "))
            }
            Yaml::List(_) => "[]".into(),
            Yaml::Map(_) => "{}".into(),
            Yaml::Block(text) => quoted(text),
        }
    }
}

/// `text` double-quoted: JSON's escapes, and YAML's `\uXXXX` for what JSON leaves raw but YAML
/// would read as a line break (NEL, LS, PS, folded into a space) or refuses (other
/// non-printable characters).
fn quoted(text: &str) -> String {
    let json = serde_json::to_string(text).expect("a string serializes");
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if printable(c) && !is_break(c) {
            out.push(c);
        } else {
            out += &format!("\\u{:04X}", u32::from(c));
        }
    }
    out
}

/// YAML's line breaks besides `\n`.
const BREAKS: [char; 4] = ['\r', '\u{85}', '\u{2028}', '\u{2029}'];

fn is_break(c: char) -> bool {
    BREAKS.contains(&c)
}

/// YAML 1.2's printable characters (`c-printable`) but the byte order mark, which a stream may
/// hold unescaped inside a scalar.
fn printable(c: char) -> bool {
    c != '\u{FEFF}' && c_printable(c)
}

fn c_printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}')
        || c >= '\u{10000}'
}

/// A double-quoted string (short for [`Yaml::str`], for building documents).
pub fn s(text: impl Into<String>) -> Yaml {
    Yaml::str(text)
}

/// One `key: value` pair of a [`Map`].
pub fn pair(key: &str, value: Yaml) -> (String, Yaml) {
    (key.to_string(), value)
}

/// A key as written: bare when it is plainly a name, else quoted.
fn key(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if plain {
        text.to_string()
    } else {
        quoted(text)
    }
}

/// `text` as comment lines, each starting with `#`: a line break inside a value (a variable,
/// a file's path) must not end the comment and let the rest be read as YAML or shell. YAML
/// parsers break lines at `\r`, NEL, LS and PS as well as at `\n`.
pub fn commented(text: &str) -> String {
    text.split(|c| c == '\n' || is_break(c))
        .map(|line| {
            // A character a YAML stream cannot hold is written as its escape: a comment has
            // no quoting of its own.
            let line: String = (line.chars())
                .map(|c| {
                    if printable(c) {
                        c.to_string()
                    } else {
                        format!("\\u{:04X}", u32::from(c))
                    }
                })
                .collect();
            if line.starts_with('#') {
                line
            } else {
                format!("# {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The document: a top-level map.
pub fn write(map: &Map) -> String {
    let mut out = String::new();
    write_map(map, 0, &mut out);
    out
}

fn write_map(map: &Map, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    for (k, value) in map {
        if k.starts_with('#') {
            for line in commented(k).lines() {
                out.push_str(&format!("{pad}{line}\n"));
            }
            continue;
        }
        write_entry(&format!("{pad}{}:", key(k)), value, indent, out);
    }
}

/// `head` (`key:` or `-`) followed by the value, inline or on the lines below.
fn write_entry(head: &str, value: &Yaml, indent: usize, out: &mut String) {
    match value {
        Yaml::Block(text) => {
            out.push_str(&format!("{head} |\n"));
            let pad = " ".repeat(indent + 2);
            for line in text.lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&format!("{pad}{line}\n"));
                }
            }
        }
        value if value.is_inline() => out.push_str(&format!("{head} {}\n", value.inline())),
        Yaml::Map(pairs) => {
            out.push_str(&format!("{head}\n"));
            write_map(pairs, indent + 2, out);
        }
        Yaml::List(items) => {
            out.push_str(&format!("{head}\n"));
            let pad = " ".repeat(indent + 2);
            for item in items {
                match item {
                    Yaml::Map(pairs) if !pairs.is_empty() => {
                        // `- key: value` with the rest of the map aligned under the first key.
                        let mut text = String::new();
                        write_map(pairs, indent + 4, &mut text);
                        out.push_str(&format!("{pad}- {}", &text[indent + 4..]));
                    }
                    item => write_entry(&format!("{pad}-"), item, indent + 2, out),
                }
            }
        }
        _ => unreachable!("inline values are written above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value with a line break inside a comment (a `[vars]` value, a file's path) stays
    /// comment: nothing after the break is read as YAML.
    #[test]
    fn a_line_break_inside_a_comment_does_not_end_it() {
        let doc: Map = vec![(
            "# x=1\nservices: {evil: {privileged: true}}\r  image: x\u{2028}a: 1\u{85}b: 2\u{7}\u{FEFF}"
                .into(),
            Yaml::Plain(String::new()),
        )];
        assert_eq!(
            write(&doc),
            "# x=1\n# services: {evil: {privileged: true}}\n#   image: x\n# a: 1\n# b: 2\\u0007\\uFEFF\n"
        );
    }

    #[test]
    fn writes_maps_lists_blocks_and_comments() {
        let doc: Map = vec![
            (
                "# a comment\n# second line".into(),
                Yaml::Plain(String::new()),
            ),
            (
                "services".into(),
                Yaml::Map(vec![(
                    "a-b".into(),
                    Yaml::Map(vec![
                        ("restart".into(), Yaml::str("no")),
                        ("init".into(), Yaml::Plain("true".into())),
                        ("cap_add".into(), Yaml::Flow(vec![Yaml::str("NET_ADMIN")])),
                        (
                            "command".into(),
                            Yaml::List(vec![
                                Yaml::str("run"),
                                Yaml::text("x = \"1\"\ny = 2"),
                                Yaml::text(" indented\nlines"),
                            ]),
                        ),
                        ("empty".into(), Yaml::Map(vec![])),
                    ]),
                )]),
            ),
        ];
        assert_eq!(
            write(&doc),
            r#"# a comment
# second line
services:
  a-b:
    restart: "no"
    init: true
    cap_add: ["NET_ADMIN"]
    command:
      - "run"
      - |
        x = "1"
        y = 2
      - " indented\nlines"
    empty: {}
"#
        );
    }

    /// Text holding a line break other than `\n` (LS, PS, NEL, CR) is never a block, and
    /// inside quotes those and YAML's non-printable characters are escaped: one written raw
    /// would end a block early (and the rest be read as keys: `privileged: true`) or be folded.
    #[test]
    fn yamls_other_line_breaks_and_unprintables_are_escaped() {
        for text in [
            "r\u{2028}    privileged: true\n",
            "a\nb\u{2029}c",
            "a\nb\u{85}c",
            "a\nb\rc",
            "a\nb\u{7F}c",
        ] {
            let Yaml::Str(quoted_text) = Yaml::text(text) else {
                panic!("{text:?} became a block");
            };
            assert_eq!(quoted_text, text);
        }
        let doc: Map = vec![(
            "v".into(),
            Yaml::text("r\u{2028}  privileged: true\u{85}\u{2029}\u{7F}\u{9F}\u{FFFE}é\n"),
        )];
        assert_eq!(
            write(&doc),
            "v: \"r\\u2028  privileged: true\\u0085\\u2029\\u007F\\u009F\\uFFFEé\\n\"\n"
        );
    }

    /// A list of maps puts its first key on the dash's line.
    #[test]
    fn a_list_of_maps_starts_each_map_at_its_dash() {
        let doc: Map = vec![(
            "config".into(),
            Yaml::List(vec![Yaml::Map(vec![
                ("subnet".into(), Yaml::str("198.18.0.0/29")),
                ("gateway".into(), Yaml::str("198.18.0.1")),
            ])]),
        )];
        assert_eq!(
            write(&doc),
            "config:\n  - subnet: \"198.18.0.0/29\"\n    gateway: \"198.18.0.1\"\n"
        );
    }
}
