//! `worldloom diff`: compare a predicted observation with the real one and
//! print fidelity metrics and per-node statuses.

use std::path::{Path, PathBuf};

use anyhow::Context;
use worldloom_core::domain::Representation;
use worldloom_obs::diff::NodeStatus;
use worldloom_obs::metrics::{EvalError, EvalStatus, evaluate};

/// Arguments of `worldloom diff`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The real observation (state t+1).
    #[arg(long)]
    pub real: PathBuf,
    /// The predicted observation for the same state.
    #[arg(long)]
    pub pred: PathBuf,
    /// The previous real observation (state t), for transition F1.
    #[arg(long)]
    pub prev: Option<PathBuf>,
    /// html, axtree, os-xml, os-table, android-xml, json or text.
    #[arg(long, short = 'r')]
    pub representation: Representation,
    /// Print the full evaluation as JSON (see `docs/metrics.md`).
    #[arg(long)]
    pub json: bool,
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Runs `worldloom diff`. Errors name the file (and line and column for a
/// malformed real observation).
pub fn run(args: &DiffArgs) -> anyhow::Result<()> {
    let real = read(&args.real)?;
    let pred = read(&args.pred)?;
    let prev = args.prev.as_deref().map(read).transpose()?;
    let eval = evaluate(
        Some(&real),
        Some(&pred),
        prev.as_deref(),
        args.representation,
    )
    .map_err(|e| match e {
        EvalError::Real(err) => anyhow::anyhow!("{}: {err}", args.real.display()),
    })?;
    if args.json {
        let mut text = serde_json::to_string_pretty(&eval)?;
        text.push('\n');
        return crate::parse::write_stdout(&text);
    }
    let status = match eval.status {
        EvalStatus::Scored => "scored",
        EvalStatus::Skipped => "skipped",
        EvalStatus::Missing => "missing",
    };
    outln!("status: {status}");
    if let Some(r) = &eval.reason {
        outln!("reason: {r}");
    }
    let num = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "n/a".into());
    if let Some(e) = eval.exact {
        outln!("exact: {e}");
    }
    outln!("text_f1: {}", num(eval.text_f1));
    outln!("node_f1: {}", num(eval.node_f1));
    outln!("attribute_accuracy: {}", num(eval.attribute_accuracy));
    if args.prev.is_some() {
        outln!("transition_f1: {}", num(eval.transition_f1));
    }
    for a in &eval.anchors {
        outln!(
            "anchor {}: {:?} (real: {}, pred: {})",
            a.anchor,
            a.status,
            a.real.as_deref().unwrap_or("-"),
            a.pred.as_deref().unwrap_or("-")
        );
    }
    if let Some(nodes) = &eval.nodes {
        let s = &nodes.summary;
        outln!(
            "nodes: {} unchanged, {} changed, {} moved, {} added, {} removed",
            s.unchanged,
            s.changed,
            s.moved,
            s.added,
            s.removed
        );
        for (i, st) in nodes.real.iter().enumerate() {
            match st {
                NodeStatus::Unchanged { .. } | NodeStatus::Added => {}
                NodeStatus::Removed => outln!("  removed real#{i}"),
                NodeStatus::Changed {
                    counterpart,
                    changes,
                }
                | NodeStatus::Moved {
                    counterpart,
                    changes,
                } => {
                    let fields: Vec<String> = changes
                        .iter()
                        .map(|c| {
                            let show = |v: &Option<String>| {
                                v.as_ref()
                                    .map(|s| format!("{s:?}"))
                                    .unwrap_or_else(|| "(absent)".into())
                            };
                            format!("{}: {} -> {}", c.field, show(&c.real), show(&c.pred))
                        })
                        .collect();
                    outln!(
                        "  {} real#{i} ~ pred#{}: {}",
                        st.name(),
                        counterpart.0,
                        fields.join(", ")
                    );
                }
            }
        }
        for (i, st) in nodes.pred.iter().enumerate() {
            if matches!(st, NodeStatus::Added) {
                outln!("  added pred#{i}");
            }
        }
    }
    Ok(())
}
