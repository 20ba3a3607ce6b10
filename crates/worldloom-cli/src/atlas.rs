//! `worldloom atlas`: the fidelity atlas of a run (what its predictions get
//! wrong, by error kind, domain, role, attribute, action type and turn), or
//! of two runs side by side. A run is an eval output file, as for
//! `worldloom score`: `worldloom eval`'s predictions or judged file, or the
//! official script's `predictions.jsonl` / `judged.jsonl`.

use std::path::PathBuf;

use clap::Args;
use worldloom_eval::atlas::{atlas_of_file, compare, render};

/// Arguments of `worldloom atlas`.
#[derive(Debug, Args)]
pub struct AtlasArgs {
    /// The run: a predictions or judged JSON Lines file.
    pub run: PathBuf,
    /// A second run over the same dataset, shown beside the first with the
    /// difference of each rate (A − B).
    pub run_b: Option<PathBuf>,
    /// Print the atlas as JSON (`{"a": …, "b": … | null, "compare": […]}`)
    /// instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `worldloom atlas`.
pub fn run(args: &AtlasArgs) -> anyhow::Result<()> {
    let (a, _) = atlas_of_file(&args.run)?;
    let b = match &args.run_b {
        Some(p) => Some(atlas_of_file(p)?.0),
        None => None,
    };
    if args.json {
        let deltas = b.as_ref().map(|b| compare(&a, b)).unwrap_or_default();
        let out = serde_json::json!({ "a": a, "b": b, "compare": deltas });
        outln!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        out!("{}", render(&a, b.as_ref()));
    }
    Ok(())
}
