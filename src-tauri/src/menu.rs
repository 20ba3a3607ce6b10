//! Native menus and what their items do.
//!
//! | item | shortcut | action |
//! |---|---|---|
//! | File › Open workspace… | Ctrl+O | dialog, then the workspace replaces the open one (the page reloads) |
//! | File › Open recent › … | | the same for a remembered workspace |
//! | File › Import files… | Ctrl+I | dialog, then `import_files`; the page refreshes on its `workspace_changed` event |
//! | File › Import folders… | Ctrl+Shift+I | the same for trajectory folders (Android, OS) |
//! | File › Quit | Ctrl+Q | exits |
//! | Edit › Undo / Redo | Ctrl+Z / Ctrl+Shift+Z | sent to the page as a [`MENU_EVENT`]: the page undoes the workspace change (the API's `undo` / `redo`), or the text edit when a text field has the focus |
//! | Go › Previous turn / Next turn | Alt+Left / Alt+Right | sent to the page as a [`MENU_EVENT`] (the page also takes ←/→ and j/k) |
//! | Go › Present | F5 | sent to the page as a [`MENU_EVENT`]: presentation mode on the branch shown (the page also takes P; the page asks the webview for full screen) |
//!
//! GTK gives menu shortcuts the key before the webview, so Undo and Redo go
//! through the page (which knows what has the focus) rather than straight to
//! the API. Cut, copy, paste and select-all are left to the webview (no menu
//! items: a GTK menu item would take those keys from it).
//!
//! Everything slow (dialogs, opening, importing) runs on its own thread,
//! never in the menu handler, which runs on the UI thread.

use std::path::{Path, PathBuf};

use tauri::menu::{Menu, MenuBuilder, MenuEvent, MenuItemBuilder, SubmenuBuilder};
use tauri::{AppHandle, Emitter, Manager, Runtime};
use tauri_plugin_dialog::{DialogExt, MessageDialogKind};

use crate::recent;
use crate::shell::{self, MAIN_WINDOW, MENU_EVENT, Shell};

const RECENT_PREFIX: &str = "recent:";

/// Builds the menu bar, with `recent` (newest first) under File › Open
/// recent; workspaces that no longer exist are left out.
///
/// # Errors
/// Tauri's menu errors.
pub fn build<R: Runtime>(app: &AppHandle<R>, recent: &[PathBuf]) -> tauri::Result<Menu<R>> {
    let mut open_recent = SubmenuBuilder::new(app, "Open recent");
    let mut any = false;
    for (i, path) in recent.iter().enumerate().filter(|(_, p)| p.is_file()) {
        open_recent = open_recent.text(format!("{RECENT_PREFIX}{i}"), path.display().to_string());
        any = true;
    }
    let open_recent = open_recent.enabled(any).build()?;
    let item = |id: &str, text: &str, accel: &str| {
        MenuItemBuilder::with_id(id, text)
            .accelerator(accel)
            .build(app)
    };
    let file = SubmenuBuilder::new(app, "File")
        .item(&item("open_workspace", "Open workspace…", "CmdOrCtrl+O")?)
        .item(&open_recent)
        .separator()
        .item(&item("import_files", "Import files…", "CmdOrCtrl+I")?)
        .item(&item(
            "import_folders",
            "Import folders…",
            "CmdOrCtrl+Shift+I",
        )?)
        .separator()
        .item(&item("quit", "Quit", "CmdOrCtrl+Q")?)
        .build()?;
    let edit = SubmenuBuilder::new(app, "Edit")
        .item(&item("undo", "Undo", "CmdOrCtrl+Z")?)
        .item(&item("redo", "Redo", "CmdOrCtrl+Shift+Z")?)
        .build()?;
    let go = SubmenuBuilder::new(app, "Go")
        .item(&item("previous_turn", "Previous turn", "Alt+Left")?)
        .item(&item("next_turn", "Next turn", "Alt+Right")?)
        .separator()
        .item(&item("present", "Present", "F5")?)
        .build()?;
    MenuBuilder::new(app).items(&[&file, &edit, &go]).build()
}

/// Handles a menu click (on the UI thread: anything slow goes to a thread).
pub fn on_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    let id = event.id().as_ref().to_string();
    let app = app.clone();
    match id.as_str() {
        "quit" => app.exit(0),
        "previous_turn" | "next_turn" | "undo" | "redo" | "present" => {
            if let Err(e) = app.emit_to(MAIN_WINDOW, MENU_EVENT, id.as_str()) {
                eprintln!("warning: menu {id}: {e}");
            }
        }
        "open_workspace" => {
            std::thread::spawn(move || {
                if let Some(path) = shell::pick_workspace(&app) {
                    open_workspace(&app, &path);
                }
            });
        }
        "import_files" | "import_folders" => {
            std::thread::spawn(move || {
                let paths = shell::pick_import_paths(&app, id == "import_folders");
                import(&app, &paths);
            });
        }
        other => {
            if let Some(index) = other
                .strip_prefix(RECENT_PREFIX)
                .and_then(|i| i.parse::<usize>().ok())
            {
                std::thread::spawn(move || {
                    let list = recent::load(app.state::<Shell>().recent_file());
                    if let Some(path) = list.get(index) {
                        open_workspace(&app, path);
                    }
                });
            }
        }
    }
}

/// Shows an error message box (non-blocking).
pub fn error_dialog<R: Runtime>(app: &AppHandle<R>, message: &str) {
    eprintln!("worldloom-studio: {message}");
    app.dialog()
        .message(message)
        .title("Worldloom studio")
        .kind(MessageDialogKind::Error)
        .show(|_| {});
}

/// Opens `path` as the workspace (off the UI thread): the studio is
/// replaced, the list of recent workspaces and the title updated, and the
/// page reloaded from its start (the old trajectory ids mean nothing in the
/// new workspace). A file that is not a workspace is reported in a dialog
/// and the open workspace stays.
pub fn open_workspace<R: Runtime>(app: &AppHandle<R>, path: &Path) {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let studio = match worldloom_api::launch::open_workspace(&path) {
        Ok(s) => s,
        Err(e) => return error_dialog(app, &e.to_string()),
    };
    let state = app.state::<Shell>();
    state.replace(studio);
    let list = shell::remember_workspace(&state, &path);
    match build(app, &list) {
        Ok(menu) => {
            if let Err(e) = app.set_menu(menu) {
                eprintln!("warning: menu: {e}");
            }
        }
        Err(e) => eprintln!("warning: menu: {e}"),
    }
    if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
        let _ = window.set_title(&shell::window_title(&path));
        match window.url() {
            Ok(mut url) => {
                url.set_fragment(None);
                url.set_query(None);
                if let Err(e) = window.navigate(url) {
                    eprintln!("warning: reloading the page: {e}");
                }
            }
            Err(e) => eprintln!("warning: reloading the page: {e}"),
        }
    }
}

/// Imports `paths` into the open workspace (off the UI thread). The page
/// refreshes on the `workspace_changed` event the import sends; files that
/// fail are listed in a dialog.
pub fn import<R: Runtime>(app: &AppHandle<R>, paths: &[PathBuf]) {
    if paths.is_empty() {
        return;
    }
    let studio = app.state::<Shell>().studio();
    match worldloom_api::launch::import_paths(&studio, paths) {
        Ok(summary) => {
            for w in &summary.warnings {
                eprintln!("warning: {w}");
            }
            if !summary.failures.is_empty() {
                error_dialog(
                    app,
                    &format!(
                        "Imported {} trajectories ({} already in the workspace). These did not import:\n\n{}",
                        summary.added,
                        summary.kept,
                        summary.failures.join("\n")
                    ),
                );
            }
        }
        Err(e) => error_dialog(app, &e.to_string()),
    }
}
