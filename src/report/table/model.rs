//! The table model: a [`Table`] of columns and groups of rows of cells already formatted, and
//! the [`Markup`] trait every renderer implements (the module doc of `table` says why).

/// How a column's cells line up in the text markups (HTML leaves this to the style sheet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Names and labels.
    Left,
    /// Figures, so that units and digits line up.
    Right,
}

/// One column: its header and alignment.
#[derive(Debug, Clone)]
pub struct Column {
    pub header: String,
    pub(crate) align: Align,
}

/// What a cell is, where a markup can tell it apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// A figure or a word.
    Value,
    /// Something the user typed or could type (a load spec, a budget clause): `<code>` in HTML.
    Code,
    /// The row's own name (the first cell of a row of figures): `<th>` in HTML.
    Label,
}

/// One cell, already formatted (every figure with its unit).
#[derive(Debug, Clone)]
pub struct Cell {
    pub text: String,
    pub kind: CellKind,
    /// A ratio to a reference shown after the value ("p99 1.30x higher"), when there is one.
    pub ratio: Option<String>,
}

impl Cell {
    pub fn code(text: impl Into<String>) -> Self {
        Cell {
            kind: CellKind::Code,
            ..Cell::from(text.into())
        }
    }

    pub fn label(text: impl Into<String>) -> Self {
        Cell {
            kind: CellKind::Label,
            ..Cell::from(text.into())
        }
    }

    pub(crate) fn with_ratio(mut self, ratio: impl Into<String>) -> Self {
        self.ratio = Some(ratio.into());
        self
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Cell {
            text,
            kind: CellKind::Value,
            ratio: None,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Cell::from(text.to_string())
    }
}

/// Rows that share their leading cells (a phase and its CPUs). A plain row is a group without
/// leading cells.
#[derive(Debug, Clone)]
pub struct RowGroup {
    /// The cells of the first columns, common to every row of the group.
    pub lead: Vec<Cell>,
    /// The remaining columns, one entry per row.
    pub rows: Vec<Vec<Cell>>,
    /// Said across the remaining columns when `rows` is empty ("no measurements").
    pub empty: String,
}

/// A table: columns and groups of rows; every row has one cell per column.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub columns: Vec<Column>,
    pub groups: Vec<RowGroup>,
    /// The columns that name a row (a level, its run, a CPU): repeated in every part of a
    /// table too wide for the terminal (`terminal.rs`). None: the groups' leading cells, or
    /// the first column.
    pub(crate) keys: Option<usize>,
}

impl Table {
    /// A table with these columns, all aligned the same way.
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>, align: Align) -> Self {
        Table {
            columns: headers
                .into_iter()
                .map(|h| Column {
                    header: h.into(),
                    align,
                })
                .collect(),
            groups: Vec::new(),
            keys: None,
        }
    }

    /// How many leading columns name a row ([`Table::keys`], or the groups' leading cells,
    /// at least one).
    pub(crate) fn key_columns(&self) -> usize {
        let keys = self.keys.unwrap_or_else(|| {
            self.groups
                .iter()
                .map(|g| g.lead.len())
                .max()
                .unwrap_or(0)
                .max(1)
        });
        keys.min(self.columns.len())
    }

    /// Adds one row.
    pub fn push_row(&mut self, cells: Vec<Cell>) {
        self.groups.push(RowGroup {
            lead: Vec::new(),
            rows: vec![cells],
            empty: String::new(),
        });
    }

    /// Adds a group of rows sharing their leading cells.
    pub(crate) fn push_group(&mut self, lead: Vec<Cell>, rows: Vec<Vec<Cell>>, empty: &str) {
        self.groups.push(RowGroup {
            lead,
            rows,
            empty: empty.to_string(),
        });
    }

    /// The rows as a plain grid of texts, one entry per column: a group's leading cells on its
    /// first row and blank below, an empty group's `empty` text in its first remaining column.
    /// What the text markups lay out.
    pub(crate) fn grid(&self) -> Vec<Vec<String>> {
        let columns = self.columns.len();
        let mut grid = Vec::new();
        for g in &self.groups {
            let blank_lead = || vec![String::new(); g.lead.len()];
            let lead: Vec<String> = g.lead.iter().map(Cell::plain_text).collect();
            if g.rows.is_empty() {
                let mut row = lead.clone();
                row.push(g.empty.clone());
                row.resize(columns, String::new());
                grid.push(row);
            }
            for (k, cells) in g.rows.iter().enumerate() {
                let mut row = if k == 0 { lead.clone() } else { blank_lead() };
                row.extend(cells.iter().map(Cell::plain_text));
                grid.push(row);
            }
        }
        grid
    }
}

impl Cell {
    /// The cell as plain text: the value, then its ratio in parentheses.
    pub(crate) fn plain_text(&self) -> String {
        match &self.ratio {
            Some(r) => format!("{} ({r})", self.text),
            None => self.text.clone(),
        }
    }
}

/// A markup a [`Table`] can be written in.
pub(crate) trait Markup {
    fn render(&self, table: &Table) -> String;
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A phase-like table: a group of two CPUs, and a group without rows.
    pub(crate) fn sample() -> Table {
        let mut t = Table::new(["phase", "CPU", "max"], Align::Right);
        t.columns[0].align = Align::Left;
        t.push_group(
            vec!["idle".into()],
            vec![
                vec!["0".into(), "12.0 us".into()],
                vec!["1".into(), "-3 ns".into()],
            ],
            "no measurements",
        );
        t.push_group(vec![Cell::code("a|b")], Vec::new(), "no measurements");
        t
    }

    #[test]
    fn groups_become_a_grid_with_their_lead_once() {
        assert_eq!(
            sample().grid(),
            vec![
                vec!["idle", "0", "12.0 us"],
                vec!["", "1", "-3 ns"],
                vec!["a|b", "no measurements", ""],
            ]
        );
    }

    #[test]
    fn a_ratio_follows_its_value_in_text() {
        let c = Cell::from("1.00 ms").with_ratio("p99 1.30x higher");
        assert_eq!(c.plain_text(), "1.00 ms (p99 1.30x higher)");
    }
}
