//! OSWorld's linearized accessibility table: a header
//! `tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)`
//! and one row per kept node (OSWorld `mm_agents/agent.py`,
//! `linearize_accessibility_tree`). Files are tab-separated; some published
//! examples are space-aligned instead, with columns starting where the
//! header's words start.

use super::text::{TextLine, WarningSink, non_blank_lines};
use super::{
    ParseError, Parsed, WarningKind, check_os_tree, flag_truncation_line, line_truncation_marker,
    os_xml::pair, starts_like_note,
};
use crate::tree::{Attribute, BoundsPx, SourceSpan, UiTree};
use worldloom_core::domain::Representation;

/// Column names of OSWorld's table, in order.
pub const OS_TABLE_COLUMNS: [&str; 7] = [
    "tag",
    "name",
    "text",
    "class",
    "description",
    "position (top-left x&y)",
    "size (w&h)",
];

/// Parses a linearized table (tab-separated or space-aligned).
///
/// The tree is a synthetic `#table` root with one child per row, in row
/// order. Cells written `""` are empty; a quoted cell has its doubled quotes
/// undone; backslash escapes are kept as written. Rows with too few or too
/// many cells are kept and warned about. A truncation marker line (see
/// [`super::truncation_marker`]) is not a row: it sets
/// [`UiTree::truncated`] and is warned about. A table of exactly 1,000 or
/// 2,000 rows is flagged possibly truncated, and one holding only bare
/// application frames is marked [`UiTree::incomplete`].
///
/// Errors: [`ParseError::FailedCapture`] for empty input.
pub fn parse_os_table(input: &str) -> Result<Parsed, ParseError> {
    let lines = non_blank_lines(input, "empty table")?;
    let mut sink = WarningSink::default();
    let mut tree = UiTree::with_root(Representation::OsTable, "#table");
    let mut header: Option<Header> = None;
    for TextLine {
        start,
        number: line_no,
        text: line,
    } in lines
    {
        if let Some(cap) = line_truncation_marker(line, is_table_row) {
            // A dump tool's note that it cut the tree: not a row.
            flag_truncation_line(&mut tree, &mut sink, cap, line_no, start);
            continue;
        }
        if header.is_none() {
            let h = Header::read(line);
            if h.names
                .first()
                .map(|n| n.eq_ignore_ascii_case("tag"))
                .unwrap_or(false)
            {
                header = Some(h);
                continue;
            }
            sink.push(
                WarningKind::Malformed,
                line_no,
                start,
                "no `tag\tname\ttext…` header; assuming OSWorld's seven tab-separated columns"
                    .to_string(),
            );
            header = Some(Header {
                names: OS_TABLE_COLUMNS.iter().map(|s| s.to_string()).collect(),
                starts: None,
            });
        }
        let Some(h) = header.as_ref() else { continue };
        let cells = h.split(line);
        if cells.len() != h.names.len() {
            sink.push(
                WarningKind::Malformed,
                line_no,
                start,
                format!(
                    "row has {} cells, header has {}",
                    cells.len(),
                    h.names.len()
                ),
            );
        }
        let cell = |name: &str| -> String {
            h.names
                .iter()
                .position(|n| n.starts_with(name))
                .and_then(|i| cells.get(i))
                .cloned()
                .unwrap_or_default()
        };
        let id = tree.push(Some(tree.root()), String::new());
        let n = tree.node_mut(id);
        n.role = cell("tag");
        n.name = cell("name");
        let text = cell("text");
        if !text.is_empty() {
            n.value = Some(text);
        }
        if let (Some((x, y)), Some((w, hgt))) = (pair(&cell("position")), pair(&cell("size"))) {
            n.bounds_px = Some(BoundsPx::from_origin_size(x, y, w, hgt));
        }
        n.attributes = h
            .names
            .iter()
            .zip(cells.iter().chain(std::iter::repeat(&String::new())))
            .map(|(k, v)| Attribute {
                name: k.clone(),
                value: v.clone(),
            })
            .collect();
        n.span = Some(SourceSpan {
            start_byte: start,
            end_byte: start + line.len(),
            line: line_no,
        });
    }
    Ok(check_os_tree(Parsed {
        tree,
        warnings: sink.finish(),
    }))
}

/// Whether a trimmed line is a row of the table rather than a note: a row
/// has cells (a tab, or the two spaces of the space-aligned layout) and does
/// not open the way notes do (`#`, `[`, `...`).
fn is_table_row(line: &str) -> bool {
    !starts_like_note(line) && (line.contains('\t') || line.contains("  "))
}

struct Header {
    names: Vec<String>,
    /// Character offsets where columns start, for space-aligned tables.
    starts: Option<Vec<usize>>,
}

impl Header {
    fn read(line: &str) -> Self {
        if line.contains('\t') {
            return Header {
                names: line.split('\t').map(|s| s.trim().to_string()).collect(),
                starts: None,
            };
        }
        // Space-aligned: columns are separated by two or more spaces.
        let chars: Vec<char> = line.chars().collect();
        let mut names = Vec::new();
        let mut starts = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            if i >= chars.len() {
                break;
            }
            let start = i;
            while i < chars.len()
                && !(chars[i] == ' ' && chars.get(i + 1).is_none_or(|c| *c == ' '))
            {
                i += 1;
            }
            names.push(chars[start..i].iter().collect::<String>());
            starts.push(start);
        }
        Header {
            names,
            starts: Some(starts),
        }
    }

    fn split(&self, line: &str) -> Vec<String> {
        match &self.starts {
            None => line.split('\t').map(unquote).collect(),
            Some(starts) => {
                let chars: Vec<char> = line.chars().collect();
                let aligned = starts
                    .iter()
                    .skip(1)
                    .all(|s| *s == 0 || chars.get(s - 1).is_none_or(|c| *c == ' '));
                if aligned {
                    let mut cells = Vec::with_capacity(starts.len());
                    for (k, s) in starts.iter().enumerate() {
                        let e = starts
                            .get(k + 1)
                            .copied()
                            .unwrap_or(chars.len())
                            .min(chars.len());
                        let s = (*s).min(chars.len());
                        cells.push(unquote(&chars[s..e].iter().collect::<String>()));
                    }
                    cells
                } else {
                    line.split("  ")
                        .filter(|c| !c.trim().is_empty())
                        .map(unquote)
                        .collect()
                }
            }
        }
    }
}

/// Trims a cell and undoes CSV-style quoting (`""` → empty,
/// `"a ""b"""` → `a "b"`).
fn unquote(cell: &str) -> String {
    let t = cell.trim_matches([' ', '\r']);
    if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        t[1..t.len() - 1].replace("\"\"", "\"")
    } else {
        t.to_string()
    }
}
