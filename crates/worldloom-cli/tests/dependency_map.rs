//! The crate map of `ARCHITECTURE.md`, enforced over `cargo metadata`.
//!
//! [`MAP`] is the architecture's crate table: for each workspace crate, the
//! workspace crates it may depend on (its "depends on" column) and the
//! families of outside crates it must know nothing of. The test fails, naming
//! the crate, the dependency and the chain that brings it in, when
//! - a crate reaches, through normal or build dependencies (transitively,
//!   for the host platform), a crate of a family it must not know (candle,
//!   SQLite, HTTP, axum, Tauri);
//! - a crate reaches a workspace crate its row does not allow, directly or
//!   through what it may use (arrows point one way: shells → api → store,
//!   engine, eval, model server → obs → core);
//! - a dev-dependency points up the map (a test may use a crate beside or
//!   below its own, never one that depends on it);
//! - a row names a crate that is no longer a direct dependency, or a
//!   workspace crate has no row (the map and `ARCHITECTURE.md` are updated
//!   with the code).
//!
//! Dev-dependencies may use outside crates freely (tests start HTTP servers
//! for the clients they test).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A family of outside crates, matched by name or by name prefix (`candle`
/// matches `candle-core` and `candle-nn`).
struct Family {
    /// What the architecture calls it.
    name: &'static str,
    /// Crate names; each also matches `<name>-…`.
    crates: &'static [&'static str],
}

const CANDLE: Family = Family {
    name: "candle",
    crates: &["candle"],
};
const SQLITE: Family = Family {
    name: "SQLite",
    crates: &["rusqlite", "libsqlite3-sys"],
};
const HTTP: Family = Family {
    name: "HTTP",
    crates: &["reqwest", "axum", "hyper"],
};
const AXUM: Family = Family {
    name: "axum",
    crates: &["axum"],
};
const TAURI: Family = Family {
    name: "Tauri",
    crates: &["tauri", "wry", "tao"],
};

/// One row of the crate table.
struct Row {
    /// The workspace crate (package name).
    krate: &'static str,
    /// The workspace crates it depends on directly ("depends on" in
    /// `ARCHITECTURE.md`); with the crates these may use in turn, all it may
    /// reach.
    uses: &'static [&'static str],
    /// Outside crates it must not reach.
    forbidden: &'static [&'static Family],
}

const CORE: &str = "worldloom-core";
const OBS: &str = "worldloom-obs";
const ENGINE: &str = "worldloom-engine";
const DOOR: &str = "worldloom-door";
const MODEL_SERVER: &str = "worldloom-model-server";
const PREDICT: &str = "worldloom-predict";
const EVAL: &str = "worldloom-eval";
const STORE: &str = "worldloom-store";
const ENV: &str = "worldloom-env";
const API: &str = "worldloom-api";
const SERVER: &str = "worldloom-server";
const CLI: &str = "worldloom-cli";
const STUDIO: &str = "worldloom-studio";

/// The crate table of `ARCHITECTURE.md`, bottom up. Only the desktop shell
/// knows Tauri; only the store (and what stands on it) knows SQLite.
const MAP: &[Row] = &[
    Row {
        krate: CORE,
        uses: &[],
        forbidden: &[&CANDLE, &SQLITE, &HTTP, &TAURI],
    },
    Row {
        krate: OBS,
        uses: &[CORE],
        forbidden: &[&CANDLE, &SQLITE, &HTTP, &TAURI],
    },
    Row {
        krate: ENGINE,
        uses: &[CORE],
        forbidden: &[&SQLITE, &AXUM, &TAURI],
    },
    Row {
        krate: DOOR,
        uses: &[],
        forbidden: &[&CANDLE, &SQLITE, &HTTP, &TAURI],
    },
    Row {
        krate: MODEL_SERVER,
        uses: &[ENGINE, DOOR],
        forbidden: &[&SQLITE, &TAURI],
    },
    Row {
        krate: PREDICT,
        uses: &[CORE, ENGINE],
        forbidden: &[&SQLITE, &AXUM, &TAURI],
    },
    Row {
        krate: EVAL,
        uses: &[CORE, OBS, ENGINE, PREDICT],
        forbidden: &[&SQLITE, &AXUM, &TAURI],
    },
    Row {
        krate: STORE,
        uses: &[CORE],
        forbidden: &[&CANDLE, &HTTP, &TAURI],
    },
    Row {
        krate: ENV,
        uses: &[CORE, OBS, ENGINE, PREDICT, STORE, MODEL_SERVER, DOOR],
        forbidden: &[&TAURI],
    },
    Row {
        krate: API,
        uses: &[CORE, OBS, STORE, ENGINE, PREDICT, EVAL],
        forbidden: &[&AXUM, &TAURI],
    },
    Row {
        krate: SERVER,
        uses: &[API, DOOR],
        forbidden: &[&TAURI],
    },
    Row {
        krate: CLI,
        uses: &[
            CORE,
            OBS,
            ENGINE,
            PREDICT,
            MODEL_SERVER,
            EVAL,
            ENV,
            API,
            SERVER,
        ],
        forbidden: &[&TAURI],
    },
    Row {
        krate: STUDIO,
        uses: &[API],
        forbidden: &[&AXUM],
    },
];

/// The resolved dependency graph of the workspace for the host platform.
struct Graph {
    /// Package id → package name.
    names: BTreeMap<String, String>,
    /// Workspace crate name → package id.
    members: BTreeMap<String, String>,
    /// Package id → (dependency id, its kinds: `normal`, `build`, `dev`).
    deps: BTreeMap<String, Vec<(String, BTreeSet<String>)>>,
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// The host's target triple, as cargo reports it (`host: …` of `cargo -vV`).
fn host_triple() -> String {
    let out = Command::new(cargo())
        .arg("-vV")
        .output()
        .expect("runs `cargo -vV`");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("no `host:` line in `cargo -vV`:\n{text}"))
        .trim()
        .to_owned()
}

fn metadata() -> Graph {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let out = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--filter-platform"])
        .arg(host_triple())
        .arg("--manifest-path")
        .arg(&manifest)
        .output()
        .expect("runs `cargo metadata`");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let text = |v: &Value| v.as_str().expect("a string").to_owned();
    let names: BTreeMap<String, String> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (text(&p["id"]), text(&p["name"])))
        .collect();
    let members = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .map(|id| (names[&text(id)].clone(), text(id)))
        .collect();
    let mut deps = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().expect("resolve.nodes") {
        let edges = node["deps"]
            .as_array()
            .expect("deps")
            .iter()
            .map(|d| {
                let kinds = d["dep_kinds"]
                    .as_array()
                    .expect("dep_kinds")
                    .iter()
                    .map(|k| k["kind"].as_str().unwrap_or("normal").to_owned())
                    .collect();
                (text(&d["pkg"]), kinds)
            })
            .collect();
        deps.insert(text(&node["id"]), edges);
    }
    Graph {
        names,
        members,
        deps,
    }
}

impl Graph {
    /// Every package `from` needs to build (normal and build dependencies,
    /// transitively), with the chain of names that leads to it.
    fn reach(&self, from: &str) -> BTreeMap<String, Vec<String>> {
        let start = &self.members[from];
        let mut chains = BTreeMap::from([(start.clone(), vec![from.to_owned()])]);
        let mut queue = VecDeque::from([start.clone()]);
        while let Some(id) = queue.pop_front() {
            let chain = chains[&id].clone();
            for (dep, kinds) in self.deps.get(&id).into_iter().flatten() {
                if !kinds.contains("normal") && !kinds.contains("build") {
                    continue;
                }
                if !chains.contains_key(dep) {
                    let mut next = chain.clone();
                    next.push(self.names[dep].clone());
                    chains.insert(dep.clone(), next);
                    queue.push_back(dep.clone());
                }
            }
        }
        chains.remove(start);
        chains
    }

    /// The direct dependencies of workspace crate `krate` of `kind`, by name.
    fn direct(&self, krate: &str, kind: &str) -> BTreeSet<String> {
        self.deps[&self.members[krate]]
            .iter()
            .filter(|(_, kinds)| kinds.contains(kind))
            .map(|(dep, _)| self.names[dep].clone())
            .collect()
    }
}

fn row(krate: &str) -> Option<&'static Row> {
    MAP.iter().find(|r| r.krate == krate)
}

/// The workspace crates `krate` may reach: its row's crates and, in turn,
/// theirs.
fn may_reach(krate: &str) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    let mut todo: Vec<&str> = row(krate).map_or(&[][..], |r| r.uses).to_vec();
    while let Some(k) = todo.pop() {
        if out.insert(k) {
            todo.extend(row(k).map_or(&[][..], |r| r.uses));
        }
    }
    out
}

fn in_family(name: &str, family: &Family) -> bool {
    family.crates.iter().any(|c| {
        name == *c
            || name
                .strip_prefix(c)
                .is_some_and(|rest| rest.starts_with('-'))
    })
}

/// Every way the workspace breaks the map, one line each.
fn violations(graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for name in graph.members.keys() {
        if row(name).is_none() {
            out.push(format!(
                "{name} is not on the crate map: add its row to ARCHITECTURE.md and to MAP in {}",
                file!()
            ));
        }
    }
    for r in MAP {
        if !graph.members.contains_key(r.krate) {
            out.push(format!(
                "{} is on the crate map but not in the workspace",
                r.krate
            ));
            continue;
        }
        let allowed = may_reach(r.krate);
        let reached = graph.reach(r.krate);
        for chain in reached.values() {
            let dep = chain.last().map_or("", String::as_str);
            if graph.members.contains_key(dep) && !allowed.contains(dep) {
                out.push(format!(
                    "{} depends on {dep} ({}), which the map does not allow (it may use: {})",
                    r.krate,
                    chain.join(" → "),
                    allowed.iter().copied().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        for family in r.forbidden {
            // The nearest crate of the family, with the chain to it; the
            // others it brings are named after it.
            let mut hits: Vec<&Vec<String>> = reached
                .values()
                .filter(|chain| chain.last().is_some_and(|d| in_family(d, family)))
                .collect();
            hits.sort_by_key(|chain| (chain.len(), chain.last().cloned()));
            if let Some((nearest, rest)) = hits.split_first() {
                let also: Vec<&str> = rest
                    .iter()
                    .filter_map(|c| c.last().map(String::as_str))
                    .collect();
                out.push(format!(
                    "{} must know nothing of {}, but depends on {} ({}){}",
                    r.krate,
                    family.name,
                    nearest.last().map_or("", String::as_str),
                    nearest.join(" → "),
                    if also.is_empty() {
                        String::new()
                    } else {
                        format!("; also {}", also.join(", "))
                    }
                ));
            }
        }
        let normal = graph.direct(r.krate, "normal");
        for used in r.uses {
            if !normal.contains(*used) {
                out.push(format!(
                    "the map says {} depends on {used}, but it no longer does: update ARCHITECTURE.md and MAP",
                    r.krate
                ));
            }
        }
        for dev in graph.direct(r.krate, "dev") {
            if graph.members.contains_key(&dev)
                && (dev == r.krate || may_reach(&dev).contains(r.krate))
            {
                out.push(format!(
                    "{} has a dev-dependency on {dev}, which stands above it on the map",
                    r.krate
                ));
            }
        }
    }
    out
}

#[test]
fn crates_keep_to_the_architecture_map() {
    let graph = metadata();
    let found = violations(&graph);
    assert!(
        found.is_empty(),
        "the workspace breaks the crate map of ARCHITECTURE.md:\n- {}",
        found.join("\n- ")
    );
}

#[test]
fn the_map_reads_as_architecture_md_draws_it() {
    // The shells stand on the API, which stands on the rest; core on nothing.
    assert!(may_reach(CORE).is_empty());
    assert_eq!(
        may_reach(STUDIO),
        BTreeSet::from([API, CORE, OBS, STORE, ENGINE, PREDICT, EVAL])
    );
    // The use-case layer knows the engines and core, nothing above.
    assert_eq!(may_reach(PREDICT), BTreeSet::from([CORE, ENGINE]));
    assert!(!may_reach(ENGINE).contains(STORE));
    assert!(!may_reach(STORE).contains(ENGINE));
    // Families match whole names and dash-separated prefixes only.
    assert!(in_family("candle-nn", &CANDLE));
    assert!(in_family("hyper-util", &HTTP));
    assert!(in_family("tauri-plugin-dialog", &TAURI));
    assert!(!in_family("taurine", &TAURI));
    assert!(!in_family("hyperloglog", &HTTP));
}
