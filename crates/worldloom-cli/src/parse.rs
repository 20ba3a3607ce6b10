//! `worldloom parse`: read one observation file into a UI tree and print
//! its node count, warnings and the tree.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;
use worldloom_core::domain::Representation;
use worldloom_obs::{ParseWarning, UiTree, parse_bytes};

/// Arguments of `worldloom parse`.
#[derive(clap::Args, Debug)]
pub struct ParseArgs {
    /// The observation file.
    pub file: PathBuf,
    /// How to read it: html, axtree, os-xml, os-table or android-xml.
    #[arg(long, short = 'r')]
    pub representation: Representation,
    /// Print JSON (`{"file", "representation", "node_count", "warnings",
    /// "tree"}`) instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct ParseReport<'a> {
    file: String,
    representation: Representation,
    node_count: usize,
    max_depth: u32,
    warnings: &'a [ParseWarning],
    tree: &'a UiTree,
}

/// Runs `worldloom parse`. Errors name the file and, for syntax errors, the
/// line and column.
pub fn run(args: &ParseArgs) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let parsed = parse_bytes(&bytes, args.representation)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    let report = ParseReport {
        file: args.file.display().to_string(),
        representation: args.representation,
        node_count: parsed.tree.real_node_count(),
        max_depth: parsed.tree.max_depth(),
        warnings: &parsed.warnings,
        tree: &parsed.tree,
    };
    let mut text = String::new();
    if args.json {
        text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
    } else {
        text.push_str(&format!(
            "{}: {} nodes ({} representation), depth {}, {} warning(s)\n",
            report.file,
            report.node_count,
            report.representation,
            report.max_depth,
            parsed.warnings.len()
        ));
        for w in &parsed.warnings {
            text.push_str(&format!(
                "warning: line {}: {:?}: {}\n",
                w.line, w.kind, w.message
            ));
        }
        text.push_str(&parsed.tree.outline());
    }
    write_stdout(&text)
}

/// Writes to stdout; a closed pipe (`worldloom parse … | head`) is not an
/// error.
pub(crate) fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
