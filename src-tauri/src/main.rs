//! `worldloom-studio [PATH…] [--workspace FILE]`: the Worldloom desktop app.
//!
//! A Tauri 2 shell over the studio API (`worldloom-api`): the front end
//! (`ui/dist`, embedded at build time) runs in the system webview and calls
//! the API through one generic IPC command ([`shell::api`], forwarding to
//! `worldloom_api::dispatch`); events come back on a channel
//! ([`shell::subscribe_events`]). Native menus, the "Open workspace" and
//! "Import" dialogs and the recent-workspaces list live here ([`menu`],
//! [`recent`]).
//!
//! The paths are read as `worldloom serve` reads them (both use
//! `worldloom_api::launch`): a workspace file opens; trajectory files and
//! folders are imported into the given workspace, the one among the paths,
//! or `$XDG_DATA_HOME/worldloom/default.worldloom` (created when missing).
//! A bad path stops the app with a message naming it (stderr, and a dialog
//! when there is a display); a file that does not import is reported and
//! the rest opens.

mod menu;
mod recent;
mod shell;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tauri::{Manager, WebviewUrl, WebviewWindowBuilder};
use tauri_plugin_dialog::{DialogExt, MessageDialogKind};
use worldloom_api::launch;

use crate::shell::{MAIN_WINDOW, Shell};

/// Arguments of `worldloom-studio`.
#[derive(Parser, Debug)]
#[command(
    name = "worldloom-studio",
    version,
    about = "The Worldloom studio: real vs predicted observations side by side (desktop app).",
    after_help = "Without a display, use `worldloom serve` with the same paths and open the printed URL in a browser."
)]
struct Args {
    /// Workspace files, or trajectory files and folders to import.
    paths: Vec<PathBuf>,
    /// The workspace file to open (created when missing). Default: the one
    /// workspace among PATHs, else $XDG_DATA_HOME/worldloom/default.worldloom.
    #[arg(long, value_name = "FILE")]
    workspace: Option<PathBuf>,
    /// Added by WebKitWebDriver when a test drives the app; ignored.
    #[arg(long, hide = true)]
    automation: bool,
}

/// The workspace opened when none is named.
fn default_workspace() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("worldloom")
        .join("default.worldloom")
}

/// Whether a window can be shown (Linux: an X11 or Wayland display is set).
fn has_display() -> bool {
    if cfg!(target_os = "linux") {
        ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
    } else {
        true
    }
}

/// What start-up prepared: the studio, and messages to show once the
/// window is up (files that did not import).
struct Startup {
    studio: worldloom_api::Studio,
    workspace: PathBuf,
    import_failures: Vec<String>,
}

/// Opens the workspace and imports the paths, as `worldloom serve` does.
fn start(args: &Args) -> Result<Startup, launch::LaunchError> {
    let plan = launch::plan_paths(&args.paths, args.workspace.as_deref(), &default_workspace())?;
    let workspace = std::path::absolute(&plan.workspace).unwrap_or(plan.workspace);
    if let Some(dir) = workspace.parent()
        && !dir.as_os_str().is_empty()
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        return Err(launch::LaunchError::Open {
            path: workspace.clone(),
            message: format!("cannot create its folder: {e}"),
        });
    }
    let new = !workspace.exists();
    let studio = launch::open_workspace(&workspace)?;
    eprintln!(
        "workspace: {}{}",
        workspace.display(),
        if new { " (new)" } else { "" }
    );
    let summary = launch::import_paths(&studio, &plan.imports)?;
    for w in &summary.warnings {
        eprintln!("warning: {w}");
    }
    for f in &summary.failures {
        eprintln!("error: {f}");
    }
    if !plan.imports.is_empty() {
        eprintln!(
            "imported {} trajectories ({} already in the workspace)",
            summary.added, summary.kept
        );
    }
    Ok(Startup {
        studio,
        workspace,
        import_failures: summary.failures,
    })
}

fn context() -> tauri::Context<tauri::Wry> {
    tauri::generate_context!()
}

fn main() -> ExitCode {
    #[allow(unsafe_code)]
    // SAFETY: first thing in `main`, before any other thread exists.
    unsafe {
        worldloom_api::engine::pin_rayon_threads();
    }
    let args = Args::parse();
    if !has_display() {
        // Check the paths all the same, but open and import nothing.
        if let Err(e) =
            launch::plan_paths(&args.paths, args.workspace.as_deref(), &default_workspace())
        {
            eprintln!("worldloom-studio: error: {e}");
        }
        eprintln!(
            "worldloom-studio: no display ($DISPLAY and $WAYLAND_DISPLAY are empty); \
             run `worldloom serve` with the same paths and open its URL in a browser"
        );
        return ExitCode::from(2);
    }
    let startup = start(&args);
    if let Err(e) = &startup {
        eprintln!("worldloom-studio: error: {e}");
    }
    match run(startup) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worldloom-studio: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the app: the studio window, or, when start-up failed, only a
/// message box naming the problem (the app then exits with status 2).
fn run(startup: Result<Startup, launch::LaunchError>) -> anyhow::Result<()> {
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(tauri::generate_handler![
            shell::api,
            shell::subscribe_events,
            shell::choose_import_paths
        ])
        .on_menu_event(menu::on_event)
        .setup(move |app| {
            let startup = match startup {
                Ok(s) => s,
                Err(e) => {
                    let handle = app.handle().clone();
                    app.dialog()
                        .message(e.to_string())
                        .title("Worldloom studio cannot start")
                        .kind(MessageDialogKind::Error)
                        .show(move |_| handle.exit(2));
                    return Ok(());
                }
            };
            let recent_file = app.path().app_config_dir()?.join(recent::FILE_NAME);
            let shell = Shell::new(startup.studio, recent_file);
            let list = shell::remember_workspace(&shell, &startup.workspace);
            app.manage(shell);
            let handle = app.handle();
            app.set_menu(menu::build(handle, &list)?)?;
            WebviewWindowBuilder::new(app, MAIN_WINDOW, WebviewUrl::App("index.html".into()))
                .title(shell::window_title(&startup.workspace))
                .inner_size(1440.0, 900.0)
                .min_inner_size(800.0, 560.0)
                .build()?;
            if !startup.import_failures.is_empty() {
                menu::error_dialog(
                    handle,
                    &format!(
                        "These files did not import:\n\n{}",
                        startup.import_failures.join("\n")
                    ),
                );
            }
            Ok(())
        })
        .run(context())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn arguments_read_like_worldloom_serve() {
        let args = Args::try_parse_from([
            "worldloom-studio",
            "--automation",
            "samples/web/a.json",
            "--workspace",
            "w.worldloom",
            "samples/os/t",
        ])
        .expect("parse");
        assert_eq!(
            args.paths,
            vec![
                PathBuf::from("samples/web/a.json"),
                PathBuf::from("samples/os/t")
            ]
        );
        assert_eq!(args.workspace.as_deref(), Some(Path::new("w.worldloom")));
        assert!(Args::try_parse_from(["worldloom-studio", "--port", "1"]).is_err());
    }

    #[test]
    fn start_imports_into_the_named_workspace_and_names_a_bad_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("nested").join("w.worldloom");
        let sample =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/os/thunar_rename_trajectory");
        let args = Args {
            paths: vec![sample.clone()],
            workspace: Some(ws.clone()),
            automation: false,
        };
        let started = start(&args).expect("start");
        assert!(started.import_failures.is_empty());
        assert!(ws.is_file());
        let list = worldloom_api::dispatch(
            &started.studio,
            "list_trajectories",
            serde_json::Value::Null,
        )
        .expect("list");
        assert_eq!(
            list["trajectories"].as_array().map(Vec::len),
            Some(1),
            "{list}"
        );
        drop(started);

        let missing = dir.path().join("nope.json");
        let err = start(&Args {
            paths: vec![missing],
            workspace: Some(ws),
            automation: false,
        })
        .err()
        .expect("missing path");
        assert!(err.to_string().contains("nope.json: no such file"), "{err}");
    }
}
