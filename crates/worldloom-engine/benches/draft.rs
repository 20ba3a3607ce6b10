//! How much of the real next observation each drafter of
//! `worldloom_engine::draft` would propose, per domain: every turn of the
//! given trajectory files is simulated as a perfect model would verify the
//! drafts (`draft::simulate`), the output being the real next observation's
//! tokens, the prompt the turn's prompt (an AgentWorldBench row's user
//! message, else the goal and the earlier observations and actions).
//!
//! Run: `cargo bench -p worldloom-engine --bench draft` (the AgentWorldBench
//! sample and the bundled tiny model's tokenizer), or `cargo bench -p
//! worldloom-engine --bench draft -- FILE…` for other trajectory files or
//! folders; `WORLDLOOM_BENCH_TOKENIZER=path/to/tokenizer.json` tokenizes
//! with another model's tokenizer. Prints one table (docs/benchmarks.md,
//! "Drafting from the observation").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use worldloom_core::{ImportOptions, Trajectory, import_path};
use worldloom_engine::draft::{DraftStats, Drafter, NgramDrafter, ObservationDrafter, simulate};
use worldloom_engine::tokenizer::Tokenizer;

/// The most tokens one forward may verify (the drafters' own bound).
const MAX_DRAFT: usize = worldloom_engine::draft::MAX_DRAFT;
/// Prompt lookup's settings: a match of at most 3 tokens, 8 tokens drafted.
const NGRAM_MAX_N: usize = 3;
/// See [`NGRAM_MAX_N`].
const NGRAM_K: usize = 8;

/// One turn's texts: the prompt, the current observation (inside the
/// prompt too), the earlier observations, the real next observation.
struct TurnTexts {
    domain: String,
    prompt: String,
    current: String,
    earlier: Vec<String>,
    next: String,
}

fn turns_of(t: &Trajectory) -> Vec<TurnTexts> {
    let path = t.main_path();
    let text_of = |i: usize| {
        t.node(path.nodes[i])
            .and_then(|n| n.real.as_ref())
            .map(|o| o.text.clone())
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (i, edge_id) in path.edges.iter().enumerate() {
        let Some(edge) = t.edges.get(edge_id.0 as usize) else {
            continue;
        };
        let next = text_of(i + 1);
        if next.is_empty() {
            continue;
        }
        let earlier: Vec<String> = (0..i).rev().map(text_of).collect();
        let current = text_of(i);
        let prompt = edge.prompt.clone().unwrap_or_else(|| {
            let mut p = t.goal.clone().unwrap_or_default();
            for (j, e) in path.edges[..=i].iter().enumerate() {
                p.push('\n');
                p.push_str(&text_of(j));
                if let Some(e) = t.edges.get(e.0 as usize) {
                    p.push('\n');
                    p.push_str(&e.action.raw);
                }
            }
            p
        });
        out.push(TurnTexts {
            domain: t.domain.to_string(),
            prompt,
            current,
            earlier,
            next,
        });
    }
    out
}

#[derive(Default)]
struct Row {
    turns: usize,
    aligned: DraftStats,
    ngram: DraftStats,
}

fn add(into: &mut DraftStats, s: DraftStats) {
    into.tokens += s.tokens;
    into.forwards += s.forwards;
    into.drafted += s.drafted;
    into.accepted += s.accepted;
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let args: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    let inputs = if args.is_empty() {
        vec![repo.join("samples/agentworldbench/agentworldbench_sample.jsonl")]
    } else {
        args
    };
    let tokenizer_path = std::env::var_os("WORLDLOOM_BENCH_TOKENIZER")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("assets/tiny-world-model/tokenizer.json"));
    let tokenizer = Tokenizer::from_file(&tokenizer_path).expect("tokenizer");
    let encode = |s: &str| tokenizer.encode(s).expect("encodes");

    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for input in &inputs {
        let imported = import_path(input, &ImportOptions::default()).expect("imports");
        for t in &imported.trajectories {
            for turn in turns_of(t) {
                let next = encode(&turn.next);
                let current = encode(&turn.current);
                let earlier: Vec<Vec<u32>> = turn.earlier.iter().map(|e| encode(e)).collect();
                let mut history = earlier;
                history.push(encode(&turn.prompt));
                let mut aligned = ObservationDrafter::new(current, history);
                let mut ngram = NgramDrafter::new(encode(&turn.prompt), NGRAM_MAX_N, NGRAM_K);
                let a = simulate(&mut aligned as &mut dyn Drafter, &next, MAX_DRAFT);
                let n = simulate(&mut ngram, &next, MAX_DRAFT);
                for key in [turn.domain.clone(), "all".to_owned()] {
                    let row = rows.entry(key).or_default();
                    row.turns += 1;
                    add(&mut row.aligned, a);
                    add(&mut row.ngram, n);
                }
            }
        }
    }

    println!(
        "tokenizer: {} ({} tokens)",
        tokenizer_path.display(),
        tokenizer.vocab_size()
    );
    println!(
        "| domain | turns | next-observation tokens | observation-aligned: drafted share | tokens / forward | prompt lookup: drafted share | tokens / forward |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let all = rows.remove("all");
    let ordered = rows
        .iter()
        .map(|(d, r)| (d.as_str(), r))
        .chain(all.as_ref().map(|r| ("all", r)));
    for (domain, row) in ordered {
        println!(
            "| {domain} | {} | {} | {:.1} % | {:.2} | {:.1} % | {:.2} |",
            row.turns,
            row.aligned.tokens,
            100.0 * row.aligned.drafted_share(),
            row.aligned.tokens_per_forward(),
            100.0 * row.ngram.drafted_share(),
            row.ngram.tokens_per_forward(),
        );
    }
}
