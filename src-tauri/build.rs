//! Build script: checks that the front end is built, then lets `tauri-build`
//! read `tauri.conf.json` and the capabilities.

use std::path::Path;

/// The page embedded when `ui/dist` was not built, so that `cargo check`,
/// `clippy` and `test` work on a fresh clone. The app then shows how to
/// build the front end instead of the studio.
const MISSING_UI_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Worldloom studio: user interface not built</title></head>\n<body>\n\
<h1>The Worldloom user interface is not built</h1>\n\
<p>This build of <code>worldloom-studio</code> was made before the front end. Build it with \
<code>npm --prefix ui ci &amp;&amp; npm --prefix ui run build</code>, then rebuild the app \
(<code>cargo build -p worldloom-studio</code>).</p>\n</body></html>\n";

/// The IPC commands the shell registers (`src/shell.rs`).
const COMMANDS: &[&str] = &["api", "subscribe_events", "choose_import_paths"];

fn main() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist");
    let index = dist.join("index.html");
    // Run again when the front end is rebuilt or removed.
    println!("cargo:rerun-if-changed={}", index.display());
    if !index.is_file() {
        println!(
            "cargo:warning=ui/dist/index.html is missing: embedding a page that says how to build the front end (npm --prefix ui ci && npm --prefix ui run build)"
        );
        if let Err(e) =
            std::fs::create_dir_all(&dist).and_then(|()| std::fs::write(&index, MISSING_UI_PAGE))
        {
            println!("cargo:warning=cannot write {}: {e}", index.display());
        }
    }
    // Declaring the app's commands makes each one need a permission: the
    // page gets exactly those its capability lists (capabilities/default.json).
    let manifest = tauri_build::AppManifest::new().commands(COMMANDS);
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest)) {
        println!("cargo:warning=tauri-build: {e:#}");
        std::process::exit(1);
    }
}
