//! Topology errors: every problem found, each with where it is (`FILE:LINE:COL`), so a user
//! fixes a file in one pass instead of one error per run.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

/// Byte offsets into the topology file's text.
pub type Span = Range<usize>;

/// One problem with a topology, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file as the user named it, or the command-line option at fault (`--set NAME`).
    pub source: String,
    /// 1-based line and column (in characters) of the offending key or value, when there is one.
    pub line_col: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((line, col)) => write!(f, "{}:{line}:{col}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

/// Why a topology could not be loaded: one or more problems, shown one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyError {
    pub problems: Vec<Problem>,
}

impl TopologyError {
    /// A problem with the file as a whole (it cannot be read, it has no nodes…).
    pub fn file(source: &str, message: impl Into<String>) -> TopologyError {
        TopologyError {
            problems: vec![Problem {
                source: source.to_string(),
                line_col: None,
                message: message.into(),
            }],
        }
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TopologyError {}

/// Where a problem is, before byte offsets become lines and columns.
#[derive(Debug, Clone)]
enum Place {
    Span(Span),
    File,
    /// A command-line option, e.g. `--set internet_delay`.
    Option(String),
}

/// Collects problems while a file is read, so that independent mistakes are all reported.
pub(crate) struct Diags<'t> {
    text: &'t str,
    found: Vec<(Place, String)>,
    /// Start offsets of values already reported (a `${var}` that could not be substituted):
    /// further complaints about the same value would only repeat the first one.
    poisoned: HashSet<usize>,
}

impl<'t> Diags<'t> {
    pub(crate) fn new(text: &'t str) -> Diags<'t> {
        Diags {
            text,
            found: Vec::new(),
            poisoned: HashSet::new(),
        }
    }

    /// A problem at a key or value.
    pub(crate) fn at(&mut self, span: &Span, message: impl Into<String>) {
        if !self.poisoned.contains(&span.start) {
            self.found.push((Place::Span(span.clone()), message.into()));
        }
    }

    /// A problem at a value, after which nothing else is said about that value.
    pub(crate) fn at_and_poison(&mut self, span: &Span, message: impl Into<String>) {
        self.at(span, message);
        self.poisoned.insert(span.start);
    }

    /// A problem with the file as a whole.
    pub(crate) fn file(&mut self, message: impl Into<String>) {
        self.found.push((Place::File, message.into()));
    }

    /// A problem with a command-line option (`--set NAME`, `--name`).
    pub(crate) fn option(&mut self, option: impl Into<String>, message: impl Into<String>) {
        self.found
            .push((Place::Option(option.into()), message.into()));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The 1-based line a span starts on, for messages that point at a second place.
    pub(crate) fn line_of(&self, span: &Span) -> usize {
        line_col(self.text, span.start).0
    }

    /// The problems found, in file order (then whole-file and option problems).
    pub(crate) fn into_error(self, source: &str) -> TopologyError {
        let mut found = self.found;
        found.sort_by_key(|(place, _)| match place {
            Place::Span(span) => (0, span.start),
            Place::File | Place::Option(_) => (1, 0),
        });
        let problems = found
            .into_iter()
            .map(|(place, message)| match place {
                Place::Span(span) => Problem {
                    source: source.to_string(),
                    line_col: Some(line_col(self.text, span.start)),
                    message,
                },
                Place::File => Problem {
                    source: source.to_string(),
                    line_col: None,
                    message,
                },
                Place::Option(option) => Problem {
                    source: option,
                    line_col: None,
                    message,
                },
            })
            .collect();
        TopologyError { problems }
    }
}

/// 1-based line and column (counted in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_character_columns() {
        let text = "ab\ncdé\nxyz";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        assert_eq!(line_col(text, 5), (2, 3));
        // After the two-byte `é`, the column counts characters.
        assert_eq!(line_col(text, 7), (2, 4));
        assert_eq!(line_col(text, 9), (3, 2));
        assert_eq!(line_col(text, 100), (3, 4));
    }

    #[test]
    fn problems_are_sorted_and_shown_one_per_line() {
        let mut diags = Diags::new("a = 1\nb = 2\n");
        diags.option("--set x", "no such variable");
        diags.at(&(6..7), "second");
        diags.at(&(0..1), "first");
        diags.at_and_poison(&(4..5), "bad value");
        diags.at(&(4..5), "repeated complaint");
        let error = diags.into_error("t.toml");
        assert_eq!(
            error.to_string(),
            "t.toml:1:1: first\nt.toml:1:5: bad value\nt.toml:2:1: second\n--set x: no such variable"
        );
    }
}
