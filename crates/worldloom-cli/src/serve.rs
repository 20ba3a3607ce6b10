//! `worldloom serve [PATH…] [--workspace FILE] [--port P]`: the studio in a
//! browser. Serves the studio API and the built UI on 127.0.0.1 (see the
//! `worldloom-server` crate for the security model) and prints the URL with
//! its access token.
//!
//! Each PATH is either a workspace file (SQLite, written by Worldloom) or a
//! trajectory file or folder in any format `worldloom import` reads; those
//! are imported into the workspace (`--workspace`, the one workspace among
//! the paths, or `./studio.worldloom`, created when missing). Importing the
//! same file twice adds nothing.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use worldloom_api::Studio;
use worldloom_api::types::ImportFilesRequest;

/// The workspace used when none is named.
const DEFAULT_WORKSPACE: &str = "studio.worldloom";

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
    /// The built user interface (default: $WORLDLOOM_UI_DIR, ./ui/dist, or the
    /// checkout's ui/dist).
    #[arg(long, value_name = "DIR")]
    pub ui_dir: Option<PathBuf>,
}

/// Splits the paths into the workspace to open and the files to import.
fn plan(args: &ServeArgs) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    let mut workspaces = Vec::new();
    let mut imports = Vec::new();
    for p in &args.paths {
        if !p.exists() {
            bail!("{}: no such file or folder", p.display());
        }
        if p.is_file() && worldloom_store::is_workspace_file(p) {
            workspaces.push(p.clone());
        } else {
            imports.push(p.clone());
        }
    }
    let workspace = match (&args.workspace, workspaces.as_slice()) {
        (Some(w), []) => w.clone(),
        (Some(w), [other, ..]) => bail!(
            "{}: a workspace was given with --workspace ({}); name one workspace only",
            other.display(),
            w.display()
        ),
        (None, [one]) => one.clone(),
        (None, []) => PathBuf::from(DEFAULT_WORKSPACE),
        (None, [first, second, ..]) => bail!(
            "{} and {} are both workspaces; open one at a time",
            first.display(),
            second.display()
        ),
    };
    Ok((workspace, imports))
}

fn import_all(studio: &Studio, imports: &[PathBuf]) -> anyhow::Result<()> {
    if imports.is_empty() {
        return Ok(());
    }
    let paths = imports.iter().map(|p| p.display().to_string()).collect();
    let resp = worldloom_api::commands::import_files(studio, ImportFilesRequest { paths })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &resp.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(first) = resp.failed.first() {
        for f in &resp.failed[1..] {
            eprintln!("error: {}", f.message);
        }
        bail!("{}", first.message);
    }
    let added = resp.imported.iter().filter(|i| i.added).count();
    let kept = resp.imported.len() - added;
    println!("imported {added} trajectories ({kept} already in the workspace)");
    Ok(())
}

/// Runs `worldloom serve` until interrupted.
///
/// # Errors
/// A path that does not exist or does not import (naming file and line or
/// field), a workspace that cannot be opened, or a port that is taken.
pub fn run(args: &ServeArgs) -> anyhow::Result<()> {
    let (workspace, imports) = plan(args)?;
    let new = !workspace.exists();
    let studio = Studio::open(&workspace).map_err(|e| anyhow::anyhow!("{e}"))?;
    println!(
        "workspace: {}{}",
        workspace.display(),
        if new { " (new)" } else { "" }
    );
    import_all(&studio, &imports)?;
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
            },
        )
        .await?;
        match &server.ui_dir {
            Some(dir) => println!("user interface: {}", dir.display()),
            None => eprintln!(
                "warning: no built user interface found (ui/dist); pages explain how to build it"
            ),
        }
        println!("Worldloom studio: {}", server.url());
        println!("(the token in the URL is required; press Ctrl+C to stop)");
        tokio::signal::ctrl_c()
            .await
            .context("waiting for Ctrl+C")?;
        server.stop().await.context("stopping the server")?;
        Ok::<(), anyhow::Error>(())
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn args(paths: &[&Path], workspace: Option<&Path>) -> ServeArgs {
        ServeArgs {
            paths: paths.iter().map(|p| p.to_path_buf()).collect(),
            workspace: workspace.map(Path::to_path_buf),
            port: 0,
            ui_dir: None,
        }
    }

    #[test]
    fn plan_splits_workspaces_and_imports() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("a.worldloom");
        drop(worldloom_store::Workspace::open(&ws).expect("create"));
        let traj = dir.path().join("t.json");
        std::fs::write(&traj, "{}").expect("write");

        let (w, i) = plan(&args(&[&ws, &traj], None)).expect("plan");
        assert_eq!((w, i), (ws.clone(), vec![traj.clone()]));
        let (w, i) = plan(&args(&[&traj], None)).expect("plan");
        assert_eq!(
            (w, i),
            (PathBuf::from(DEFAULT_WORKSPACE), vec![traj.clone()])
        );
        let other = dir.path().join("b.worldloom");
        let (w, _) = plan(&args(&[&traj], Some(&other))).expect("plan");
        assert_eq!(w, other);

        let err = plan(&args(&[&ws], Some(&other))).expect_err("two workspaces");
        assert!(err.to_string().contains("a.worldloom"), "{err}");
        let missing = dir.path().join("missing.json");
        let err = plan(&args(&[&missing], None)).expect_err("missing");
        assert!(
            err.to_string().contains("missing.json: no such file"),
            "{err}"
        );
    }
}
