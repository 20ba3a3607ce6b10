//! `worldloom serve [PATH…] [--workspace FILE] [--port P]`: the studio in a
//! browser. Serves the studio API and the built UI on 127.0.0.1 (see the
//! `worldloom-server` crate for the security model) and prints the URL with
//! its access token.
//!
//! Each PATH is either a workspace file (SQLite, written by Worldloom) or a
//! trajectory file or folder in any format `worldloom import` reads; those
//! are imported into the workspace (`--workspace`, the one workspace among
//! the paths, or `./studio.worldloom`, created when missing). Importing the
//! same file twice adds nothing. The desktop app takes the same paths: both
//! use `worldloom_api::launch`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use worldloom_api::launch;

/// The workspace used when none is named.
const DEFAULT_WORKSPACE: &str = "studio.worldloom";

/// Set to `memory` to keep endpoint API keys in memory instead of the OS
/// keyring (the UI's tests; a machine without a keyring).
pub const KEY_STORE_ENV: &str = "WORLDLOOM_KEY_STORE";

/// Arguments of `worldloom serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Workspace files, or trajectory files and folders to import.
    pub paths: Vec<PathBuf>,
    /// The workspace file to open (created when missing).
    #[arg(long, value_name = "FILE")]
    pub workspace: Option<PathBuf>,
    /// The port on 127.0.0.1; 0 picks a free port.
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
    /// A built user interface folder to serve instead of the one built into
    /// this binary (development; default: $WORLDLOOM_UI_DIR when set).
    #[arg(long, value_name = "DIR")]
    pub ui_dir: Option<PathBuf>,
}

/// Runs `worldloom serve` until interrupted.
///
/// # Errors
/// A path that does not exist, a workspace that cannot be opened, or a port
/// that is taken. A file that does not import is reported on stderr (naming
/// file and line or field) and the rest is served.
pub fn run(args: &ServeArgs) -> anyhow::Result<()> {
    let plan = launch::plan_paths(
        &args.paths,
        args.workspace.as_deref(),
        Path::new(DEFAULT_WORKSPACE),
    )?;
    let new = !plan.workspace.exists();
    let studio = launch::open_workspace(&plan.workspace)?;
    // The UI's tests serve with `WORLDLOOM_KEY_STORE=memory`: endpoint keys
    // then live in memory for the server's life, the OS keyring untouched.
    if std::env::var_os(KEY_STORE_ENV).is_some_and(|v| v == "memory") {
        studio.set_key_store(Arc::new(worldloom_api::keys::MemoryKeyStore::default()));
    }
    outln!(
        "workspace: {}{}",
        plan.workspace.display(),
        if new { " (new)" } else { "" }
    );
    let summary = launch::import_paths(&studio, &plan.imports)?;
    for w in &summary.warnings {
        eprintln!("warning: {w}");
    }
    // As the desktop app does: a file that does not import is reported and
    // the rest opens.
    for f in &summary.failures {
        eprintln!("error: {f} (not imported; serving the rest)");
    }
    if !plan.imports.is_empty() {
        outln!(
            "imported {} trajectories ({} already in the workspace)",
            summary.added,
            summary.kept
        );
        for run in &summary.runs {
            outln!("run: {run}");
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let server = worldloom_server::start(
            Arc::new(studio),
            worldloom_server::ServeOptions {
                port: args.port,
                ui_dir: args.ui_dir.clone(),
                token: None,
                ..Default::default()
            },
        )
        .await?;
        match &server.ui {
            Some(ui) => outln!("user interface: {ui}"),
            None => eprintln!(
                "warning: no built user interface (this binary was built before ui/dist, or --ui-dir has no index.html); pages explain how to build it"
            ),
        }
        outln!("Worldloom studio: {}", server.url());
        outln!("(the token in the URL is required; press Ctrl+C to stop)");
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl+C")?;
        server.stop().await.context("stopping the server")?;
        Ok::<(), anyhow::Error>(())
    })
}
