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
    /// (a block's indentation is read off its first line), else double-quoted.
    pub fn text(text: impl Into<String>) -> Yaml {
        let text = text.into();
        let blockable = text.contains('\n')
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

fn quoted(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
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
    text.split(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
        .map(|line| {
            if line.starts_with('#') {
                line.to_string()
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
            "# x=1\nservices: {evil: {privileged: true}}\r  image: x\u{2028}a: 1\u{85}b: 2".into(),
            Yaml::Plain(String::new()),
        )];
        assert_eq!(
            write(&doc),
            "# x=1\n# services: {evil: {privileged: true}}\n#   image: x\n# a: 1\n# b: 2\n"
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
