//! No import circle between the Rust modules of a crate.
//!
//! Every source file under a workspace crate's `src/` is one module
//! (`lib.rs` / `main.rs` the root, `a.rs` and `a/mod.rs` the module `a`,
//! `a/b.rs` the module `a::b`). A file depends on another when it names it
//! by path: a `use` tree or an inline path starting with `crate::`,
//! `super::` or `self::`, resolved to the deepest module file the path
//! reaches (`crate::commands::turns::get_turn` → `commands/turns.rs`);
//! a re-export (`pub use`) is a facade and draws no arrow. A
//! module and its own descendants are one unit that may refer to each other
//! freely (a parent declares and re-exports its children; a child uses what
//! its parent defines), so edges between an ancestor and a descendant are not
//! counted. Any other circle of files fails the test, naming the files and,
//! for each arrow, the line that makes it.
//!
//! Comments, string literals and items under `#[cfg(test)]` are skipped, so
//! a path in a doc comment or a unit test is not an import. Inline `mod x { … }` blocks and `#[path]` attributes count
//! as part of the file they stand in.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module path inside one crate: `[]` for the root, `["commands", "turns"]`.
type ModPath = Vec<String>;

/// One arrow: from a file to a module, with the line that names it.
#[derive(Debug, Clone)]
struct Arrow {
    to: ModPath,
    line: usize,
    text: String,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/worldloom-cli sits two levels below the workspace root")
        .to_path_buf()
}

/// The `src/` folders of every workspace crate (`crates/*/src`, `src-tauri/src`).
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let crates = root.join("crates");
    let mut entries: Vec<PathBuf> = fs::read_dir(&crates)
        .expect("read crates/")
        .map(|e| e.expect("crates/ entry").path())
        .collect();
    entries.sort();
    for dir in entries {
        if dir.join("src").is_dir() {
            out.push(dir.join("src"));
        }
    }
    if root.join("src-tauri/src").is_dir() {
        out.push(root.join("src-tauri/src"));
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The module a file under `src` is. `src/bin/*.rs` are their own roots and
/// are skipped by the caller.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(parts.is_empty() && (stem == "lib" || stem == "main")) && stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

/// The text with comments and the insides of string and char literals
/// replaced by spaces (line breaks kept, so line numbers stay right).
fn strip_comments_and_strings(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let blank = |b: u8| if b == b'\n' { b'\n' } else { b' ' };
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'/' && bytes.get(i + 1) == Some(&b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let mut depth = 0usize;
            while i < bytes.len() {
                if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(bytes[i]));
                    i += 1;
                }
            }
        } else if b == b'r' && matches!(bytes.get(i + 1), Some(b'"') | Some(b'#')) && {
            // A raw string r"…", r#"…"#: not an identifier ending in r.
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')
        } {
            let mut j = i + 1;
            let mut hashes = 0;
            while bytes.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if bytes.get(j) != Some(&b'"') {
                out.push(b);
                i += 1;
                continue;
            }
            out.resize(out.len() + (j + 1 - i), b' ');
            i = j + 1;
            loop {
                if i >= bytes.len() {
                    break;
                }
                if bytes[i] == b'"'
                    && bytes[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == b'#')
                        .count()
                        == hashes
                {
                    out.resize(out.len() + 1 + hashes, b' ');
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(bytes[i]));
                i += 1;
            }
        } else if b == b'"' {
            out.push(b' ');
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                if bytes[i] == b'\\' && i + 1 < bytes.len() {
                    out.push(blank(bytes[i]));
                    i += 1;
                }
                out.push(blank(bytes[i]));
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else if b == b'\''
            && (bytes.get(i + 2) == Some(&b'\'')
                || (bytes.get(i + 1) == Some(&b'\\') && bytes[i + 2..].contains(&b'\'')))
        {
            // A char literal ('a', '\n', '\u{1F600}'); lifetimes have no closing quote.
            let end = bytes[i + 1..]
                .iter()
                .position(|&c| c == b'\'')
                .map(|p| i + 1 + p)
                .unwrap_or(i);
            let end = if bytes.get(i + 1) == Some(&b'\\') {
                bytes[i + 3..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 3 + p)
                    .unwrap_or(end)
            } else {
                end
            };
            out.resize(out.len() + (end + 1 - i), b' ');
            i = end + 1;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Expands a `use` tree (`crate::{a::X, b::{Y, Z}}`) into its paths.
fn expand_use_tree(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect();
    let Some(open) = tree.find('{') else {
        return vec![tree];
    };
    let prefix = &tree[..open];
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close];
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (k, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            expand_use_tree(p)
                .into_iter()
                .map(|q| format!("{prefix}{q}"))
        })
        .collect()
}

/// The paths a file names, with the line each starts on: every `use` tree
/// expanded, and every inline path that starts with `crate::`, `super::` or
/// `self::`.
fn named_paths(code: &str) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let line_of = |pos: usize| bytes[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
    let text = |a: usize, b: usize| String::from_utf8_lossy(&bytes[a..b]).into_owned();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"#[cfg(test)]") {
            // Test code is no part of the module graph: skip the item the
            // attribute stands on (to its `;`, or over its braces).
            let mut j = i + b"#[cfg(test)]".len();
            while j < bytes.len() && bytes[j] != b';' && bytes[j] != b'{' {
                j += 1;
            }
            if bytes.get(j) == Some(&b'{') {
                let mut depth = 0usize;
                while j < bytes.len() {
                    match bytes[j] {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
            }
            i = j + 1;
            continue;
        }
        let at_word = i == 0 || !is_ident(bytes[i - 1]);
        if at_word
            && bytes[i..].starts_with(b"use")
            && bytes.get(i + 3).is_some_and(|b| b.is_ascii_whitespace())
        {
            let end = bytes[i..]
                .iter()
                .position(|&b| b == b';')
                .map_or(bytes.len(), |p| i + p);
            // A re-export (`pub use`, `pub(crate) use`) is a facade, not a use.
            let line_start = bytes[..i]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            let reexport = text(line_start, i).trim_start().starts_with("pub");
            if !reexport {
                for path in expand_use_tree(&text(i + 3, end)) {
                    out.push((path, line_of(i)));
                }
            }
            i = end;
            continue;
        }
        if at_word {
            for root in ["crate::", "super::", "self::"] {
                if bytes[i..].starts_with(root.as_bytes()) {
                    let mut j = i;
                    while j < bytes.len() && (is_ident(bytes[j]) || bytes[j] == b':') {
                        j += 1;
                    }
                    out.push((text(i, j), line_of(i)));
                    i = j;
                    break;
                }
            }
        }
        i += 1;
    }
    out
}

/// Resolves a path named in module `from` to a module path of the crate, or
/// `None` for outside crates and the standard library.
fn resolve(from: &ModPath, is_dir_module: bool, path: &str) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (first, rest) = segs.split_first()?;
    // `self` and `super` are relative to the module the file is. A file
    // `a/b.rs` is module a::b; `super` is `a`.
    let _ = is_dir_module;
    let mut base: Vec<String> = match *first {
        "crate" => Vec::new(),
        "self" => from.clone(),
        "super" => {
            let mut b = from.clone();
            b.pop();
            b
        }
        _ => return None,
    };
    let mut rest = rest.iter().peekable();
    while rest.peek() == Some(&&"super") {
        base.pop();
        rest.next();
    }
    base.extend(rest.map(|s| s.to_string()));
    Some(base)
}

/// The deepest module of `modules` that is a prefix of `path`.
fn deepest_module(modules: &BTreeSet<ModPath>, path: &[String]) -> Option<ModPath> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
}

fn is_prefix(a: &[String], b: &[String]) -> bool {
    a.len() <= b.len() && b[..a.len()] == *a
}

/// The arrows between the modules of one crate.
fn arrows(src: &Path) -> BTreeMap<ModPath, Vec<Arrow>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| !f.strip_prefix(src).is_ok_and(|r| r.starts_with("bin")));
    let modules: BTreeMap<ModPath, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let names: BTreeSet<ModPath> = modules.keys().cloned().collect();
    let mut out: BTreeMap<ModPath, Vec<Arrow>> = BTreeMap::new();
    for (module, file) in &modules {
        let text =
            fs::read_to_string(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let code = strip_comments_and_strings(&text);
        let is_dir_module = file.file_name().is_some_and(|n| n == "mod.rs");
        for (path, line) in named_paths(&code) {
            let Some(target) = resolve(module, is_dir_module, &path) else {
                continue;
            };
            let Some(to) = deepest_module(&names, &target) else {
                continue;
            };
            if is_prefix(&to, module) || is_prefix(module, &to) {
                continue;
            }
            out.entry(module.clone()).or_default().push(Arrow {
                to,
                line,
                text: text.lines().nth(line - 1).unwrap_or("").trim().to_string(),
            });
        }
    }
    out
}

/// One circle of the graph, if any (depth-first search with colours).
fn find_circle(graph: &BTreeMap<ModPath, Vec<Arrow>>) -> Option<Vec<(ModPath, Arrow)>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        Grey,
        Black,
    }
    fn visit(
        node: &ModPath,
        graph: &BTreeMap<ModPath, Vec<Arrow>>,
        colour: &mut BTreeMap<ModPath, Colour>,
        stack: &mut Vec<(ModPath, Arrow)>,
    ) -> Option<Vec<(ModPath, Arrow)>> {
        colour.insert(node.clone(), Colour::Grey);
        for arrow in graph.get(node).into_iter().flatten() {
            match colour.get(&arrow.to) {
                Some(Colour::Black) => continue,
                Some(Colour::Grey) => {
                    let start = stack
                        .iter()
                        .position(|(m, _)| *m == arrow.to)
                        .unwrap_or(stack.len());
                    let mut circle = stack[start..].to_vec();
                    circle.push((node.clone(), arrow.clone()));
                    return Some(circle);
                }
                None => {
                    stack.push((node.clone(), arrow.clone()));
                    if let Some(c) = visit(&arrow.to, graph, colour, stack) {
                        return Some(c);
                    }
                    stack.pop();
                }
            }
        }
        colour.insert(node.clone(), Colour::Black);
        None
    }
    let mut colour = BTreeMap::new();
    for node in graph.keys() {
        if !colour.contains_key(node) {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, graph, &mut colour, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

fn show(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

#[test]
fn no_module_of_a_crate_imports_in_a_circle() {
    let root = workspace_root();
    let mut failures = Vec::new();
    let mut crates_read = 0;
    let mut arrows_read = 0;
    for src in crate_sources(&root) {
        crates_read += 1;
        let graph = arrows(&src);
        arrows_read += graph.values().map(Vec::len).sum::<usize>();
        if let Some(circle) = find_circle(&graph) {
            let krate = src.parent().map_or(src.clone(), Path::to_path_buf);
            let mut text = format!(
                "{}: modules import each other in a circle:\n",
                krate.strip_prefix(&root).unwrap_or(&krate).display()
            );
            for (from, arrow) in circle {
                text.push_str(&format!(
                    "  {} → {} (line {}: {})\n",
                    show(&from),
                    show(&arrow.to),
                    arrow.line,
                    arrow.text
                ));
            }
            failures.push(text);
        }
    }
    assert!(crates_read >= 10, "read only {crates_read} crates");
    assert!(arrows_read >= 200, "read only {arrows_read} arrows");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_circle_is_found_and_named() {
    let dir = tempfile_dir();
    let src = dir.join("src");
    fs::create_dir_all(src.join("commands")).expect("mkdir");
    fs::write(src.join("lib.rs"), "mod commands;\nmod scoring;\n").expect("write");
    fs::write(
        src.join("commands/mod.rs"),
        "mod turns;\npub use turns::get_turn;\n",
    )
    .expect("write");
    fs::write(
        src.join("commands/turns.rs"),
        "use super::super::scoring::score; // names scoring\npub fn get_turn() { score() }\n",
    )
    .expect("write");
    fs::write(
        src.join("scoring.rs"),
        "/// Not an import: crate::views\nuse crate::{commands::turns::get_turn, error::E};\npub fn score() {}\nfn f() { let _ = \"crate::x\"; }\n",
    )
    .expect("write");
    let graph = arrows(&src);
    let from_scoring: Vec<String> = graph[&vec!["scoring".to_string()]]
        .iter()
        .map(|a| show(&a.to))
        .collect();
    // `error` is no module here, so it resolves to the crate root, which is an
    // ancestor and not counted; the comment and the string are not read.
    assert_eq!(from_scoring, vec!["commands::turns"]);
    let circle = find_circle(&graph).expect("a circle");
    let names: BTreeSet<String> = circle.iter().map(|(m, _)| show(m)).collect();
    assert_eq!(
        names,
        BTreeSet::from(["commands::turns".to_string(), "scoring".to_string()])
    );
    let lines: Vec<usize> = circle.iter().map(|(_, a)| a.line).collect();
    assert!(lines.contains(&1) && lines.contains(&2), "{lines:?}");

    // A child using its parent, and the parent re-exporting it, is no circle.
    fs::write(src.join("scoring.rs"), "pub fn score() {}\n").expect("write");
    fs::write(
        src.join("commands/turns.rs"),
        "use super::Shared;\npub fn get_turn() {}\n",
    )
    .expect("write");
    fs::write(
        src.join("commands/mod.rs"),
        "mod turns;\npub use self::turns::get_turn;\npub struct Shared;\n",
    )
    .expect("write");
    assert!(find_circle(&arrows(&src)).is_none());
    fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn use_trees_expand() {
    assert_eq!(
        expand_use_tree(" crate::{a::X, b::{Y, z::Z}, c}"),
        vec!["crate::a::X", "crate::b::Y", "crate::b::z::Z", "crate::c"]
    );
    let code = strip_comments_and_strings(
        "let s = r#\"crate::a\"#; // crate::b\nlet c = '\"'; crate::d::e();",
    );
    assert_eq!(named_paths(&code), vec![("crate::d::e".to_string(), 2)]);
    let code =
        "pub use crate::a::X;\n#[cfg(test)]\nmod tests { use crate::b::Y; }\nuse crate::c::Z;";
    assert_eq!(named_paths(code), vec![("crate::c::Z".to_string(), 4)]);
}

/// A fresh folder under the target directory's temp space.
fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "worldloom-module-cycles-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    fs::create_dir_all(&dir).expect("create temp dir");
    dir
}
