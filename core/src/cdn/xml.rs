//! DASH MPDs as a tree of elements, read with `roxmltree`: namespaces reduced to local names
//! (`<mpd:MPD>` is `MPD`, as MPD readers match elements), text and CDATA directly inside an
//! element joined, each element's line kept for error messages. A DOCTYPE's internal subset is
//! read (packagers write one) but external entities are not fetched, roxmltree refuses entity
//! expansion that loops or explodes, and the number of nodes and the nesting depth are
//! bounded.

use std::fmt;

/// Deepest element nesting accepted; MPDs nest about 6 deep.
pub(crate) const MAX_DEPTH: usize = 64;
/// The most XML nodes (elements, attributes' owners, text, comments) one document may hold:
/// an MPD of a two-hour video listing every 2 s segment of 10 renditions has about 40 000.
const MAX_NODES: u32 = 1_000_000;

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

/// One element without its children, which the caller attaches.
fn element(doc: &roxmltree::Document<'_>, node: roxmltree::Node<'_, '_>) -> Element {
    Element {
        name: node.tag_name().name().to_string(),
        attrs: node
            .attributes()
            .map(|a| (a.name().to_string(), a.value().to_string()))
            .collect(),
        children: Vec::new(),
        text: node
            .children()
            .filter(|c| c.is_text())
            .filter_map(|c| c.text())
            .collect(),
        line: doc.text_pos_at(node.range().start).row as usize,
    }
}

/// Parses a document into its root element's tree.
pub(crate) fn parse(text: &str) -> Result<Element, XmlError> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        nodes_limit: MAX_NODES,
        ..roxmltree::ParsingOptions::default()
    };
    let doc = roxmltree::Document::parse_with_options(text, options).map_err(|e| XmlError {
        line: e.pos().row as usize,
        message: e.to_string(),
    })?;
    // The tree is built without recursion: a stack of the open elements, each finished element
    // attached to its parent once every child of it has been.
    let root = doc.root_element();
    let mut open: Vec<(Element, roxmltree::Children<'_, '_>)> =
        vec![(element(&doc, root), root.children())];
    let mut tree = None;
    while let Some((_, children)) = open.last_mut() {
        match children.find(|c| c.is_element()) {
            Some(child) => {
                if open.len() >= MAX_DEPTH {
                    return Err(XmlError {
                        line: doc.text_pos_at(child.range().start).row as usize,
                        message: format!("elements nest deeper than {MAX_DEPTH}"),
                    });
                }
                open.push((element(&doc, child), child.children()));
            }
            None => {
                if let Some((done, _)) = open.pop() {
                    match open.last_mut() {
                        Some((parent, _)) => parent.children.push(done),
                        None => tree = Some(done),
                    }
                }
            }
        }
    }
    tree.ok_or_else(|| XmlError {
        line: 1,
        message: "no root element".into(),
    })
}
