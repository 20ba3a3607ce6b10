//! Build script: embeds the built user interface (`ui/dist`) in the crate,
//! so that a `worldloom` binary copied or installed on its own serves the
//! studio. Writes `$OUT_DIR/embedded_ui.rs`: a sorted list of
//! `(path relative to ui/dist, bytes)` pairs, each `include_bytes!`'d (so a
//! change to an embedded file rebuilds the crate).
//!
//! A missing `ui/dist/index.html` (a fresh clone, `cargo install --path
//! crates/worldloom-cli`), or the placeholder page the desktop app's build
//! script writes there, is built first when `npm` is on the `PATH`
//! (`npm ci` when `ui/node_modules` is missing, then `npm run build`, as the
//! README's manual steps do; `WORLDLOOM_SKIP_UI_BUILD=1` turns this off).
//! Without `npm`, or when that build fails, nothing is embedded: the server
//! then answers with a page that says how to build the front end. The script
//! runs again when `ui/dist/index.html` changes; the front-end build rewrites
//! it on every build (it names the hashed asset files), so a rebuilt UI is
//! picked up.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The `<title>` of the "user interface not built" pages (the server's and
/// the desktop app's): an `index.html` holding it is no built UI.
const PLACEHOLDER_TITLE: &str = "user interface not built</title>";

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dist = manifest.join("../../ui/dist");
    let index = dist.join("index.html");
    println!("cargo:rerun-if-changed={}", index.display());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let mut files = Vec::new();
    println!("cargo:rerun-if-env-changed=WORLDLOOM_SKIP_UI_BUILD");
    let is_built =
        || std::fs::read_to_string(&index).is_ok_and(|html| !html.contains(PLACEHOLDER_TITLE));
    if !is_built() && std::env::var_os("WORLDLOOM_SKIP_UI_BUILD").is_none_or(|v| v != "1") {
        build_ui(&manifest.join("../../ui"));
    }
    if is_built() {
        collect(&dist, &dist, &mut files);
        files.sort();
    } else {
        println!(
            "cargo:warning=ui/dist/index.html is missing: `worldloom serve` will answer with a page saying how to build the front end (npm --prefix ui ci && npm --prefix ui run build, then rebuild)"
        );
    }
    let mut code = String::from(
        "/// The built UI: `(path relative to ui/dist, bytes)`, sorted by path.\n\
         pub(crate) static EMBEDDED_UI: &[(&str, &[u8])] = &[\n",
    );
    for (rel, abs) in &files {
        let _ = writeln!(code, "    ({rel:?}, include_bytes!({:?})),", abs.display());
    }
    code.push_str("];\n");
    if let Err(e) = std::fs::write(out.join("embedded_ui.rs"), code) {
        println!("cargo:warning=cannot write embedded_ui.rs: {e}");
        std::process::exit(1);
    }
}

/// Builds the front end in `ui` with npm (installing its packages first when
/// they are missing). Failures are warnings: the crate still builds, without
/// the studio's pages.
fn build_ui(ui: &Path) {
    if !ui.join("package.json").is_file() {
        return;
    }
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let run = |args: &[&str]| -> Result<(), String> {
        let status = std::process::Command::new(npm)
            .args(args)
            .arg("--prefix")
            .arg(ui)
            // Its output would interleave with cargo's; the status says enough.
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| {
                format!("`{npm}` cannot run ({e}); install Node.js 20+ to build the front end")
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`{npm} {}` failed ({status})", args.join(" ")))
        }
    };
    println!(
        "cargo:warning=ui/dist is missing: building the front end with npm (set WORLDLOOM_SKIP_UI_BUILD=1 to skip)"
    );
    let result = if ui.join("node_modules").is_dir() {
        Ok(())
    } else {
        run(&["ci", "--no-audit", "--no-fund", "--loglevel=error"])
    }
    .and_then(|()| run(&["run", "build"]));
    if let Err(e) = result {
        println!("cargo:warning={e}");
    }
}

/// Adds every file under `dir` as `(path relative to root with '/', absolute
/// path)`. Names that are not UTF-8 are left out with a warning.
fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        println!("cargo:warning=cannot read {}", dir.display());
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
        match (parts, std::fs::canonicalize(&path)) {
            (Some(parts), Ok(abs)) => files.push((parts.join("/"), abs)),
            _ => println!(
                "cargo:warning=ui/dist: {} left out of the embedded UI (name not UTF-8 or unreadable)",
                path.display()
            ),
        }
    }
}
