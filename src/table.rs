//! Markdown tables as the benchmarks print them: columns padded to their widest cell so the
//! table reads well in a terminal and pastes unchanged into BENCHMARKS.md.

/// A table under construction: a header row and data rows of preformatted cells.
/// Serialized as `{"headers": [...], "rows": [[...], ...]}` (`--json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are left empty and extra ones dropped, so a short row still
    /// renders as valid markdown.
    pub fn push(&mut self, mut cells: Vec<String>) {
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table in GitHub markdown, one line per row, each ending in a newline.
    pub fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|row| row[c].chars().count())
                    .chain([self.headers[c].chars().count(), 3])
                    .max()
                    .unwrap_or(3)
            })
            .collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, &width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
                .collect();
            format!("| {} |\n", padded.join(" | "))
        };
        let mut text = line(&self.headers);
        let rules: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        text += &line(&rules);
        for row in &self.rows {
            text += &line(row);
        }
        text
    }
}

/// `value` with `decimals` decimals, or `—` when there is none (nothing was measured).
pub fn num(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "—".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_the_widest_cell() {
        let mut table = Table::new(&["rate", "goodput (Mbit/s)"]);
        table.push(vec!["1mbit".into(), "0.95".into()]);
        table.push(vec!["500mbit".into()]);
        assert_eq!(
            table.render(),
            "| rate    | goodput (Mbit/s) |\n\
             | ------- | ---------------- |\n\
             | 1mbit   | 0.95             |\n\
             | 500mbit |                  |\n"
        );
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let mut table = Table::new(&["σ", "x"]);
        table.push(vec!["—".into(), "1".into()]);
        let text = table.render();
        // Every line has the same number of characters, whatever the cells' UTF-8 lengths.
        let widths: Vec<usize> = text.lines().map(|l| l.chars().count()).collect();
        assert_eq!(widths, vec![widths[0]; 3], "{text}");
        assert!(text.starts_with("| σ   | x   |\n"), "{text}");
    }

    #[test]
    fn numbers_and_missing_values() {
        assert_eq!(num(Some(0.12345), 2), "0.12");
        assert_eq!(num(Some(-1.0), 0), "-1");
        assert_eq!(num(None, 2), "—");
        assert_eq!(num(Some(f64::NAN), 2), "—");
    }
}
