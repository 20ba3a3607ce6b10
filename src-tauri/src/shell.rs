//! The shell's state and the IPC commands the front end calls.
//!
//! The front end reaches the studio API through one generic command,
//! [`api`], which forwards `{command, request}` to
//! [`worldloom_api::dispatch`]: every API command (including ones added
//! later) works without a change here. Commands run on a blocking thread
//! (`spawn_blocking`), never on the UI thread. Events reach the page on a
//! `tauri::ipc::Channel` handed to [`subscribe_events`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, Runtime, State};
use tauri_plugin_dialog::DialogExt;
use worldloom_api::{ApiError, Studio, StudioEvent};

use crate::recent;

/// The event name menu actions that act in the page are sent under, with the
/// action as payload (`"next_turn"`, `"previous_turn"`, `"undo"`, `"redo"`).
pub const MENU_EVENT: &str = "worldloom://menu";

/// The label of the studio window.
pub const MAIN_WINDOW: &str = "main";

type Channels = Arc<Mutex<Vec<Channel<Value>>>>;

/// The shell's state: the open workspace's studio, the pages' event
/// channels and where the recent-workspaces list lives.
pub struct Shell {
    studio: RwLock<Arc<Studio>>,
    channels: Channels,
    recent_file: PathBuf,
}

impl Shell {
    /// Wraps the studio opened at start-up.
    pub fn new(studio: Studio, recent_file: PathBuf) -> Self {
        let channels: Channels = Arc::default();
        attach_channels(&studio, &channels);
        Self {
            studio: RwLock::new(Arc::new(studio)),
            channels,
            recent_file,
        }
    }

    /// The studio of the open workspace.
    pub fn studio(&self) -> Arc<Studio> {
        match self.studio.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The recent-workspaces file.
    pub fn recent_file(&self) -> &Path {
        &self.recent_file
    }

    /// Makes `studio` the current one and drops the pages' channels (the
    /// page is reloaded and subscribes again).
    pub fn replace(&self, studio: Studio) {
        attach_channels(&studio, &self.channels);
        if let Ok(mut chans) = self.channels.lock() {
            chans.clear();
        }
        match self.studio.write() {
            Ok(mut s) => *s = Arc::new(studio),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(studio),
        }
    }

    fn add_channel(&self, channel: Channel<Value>) {
        if let Ok(mut chans) = self.channels.lock() {
            chans.push(channel);
        }
    }
}

/// Forwards the studio's events to every subscribed page; a channel whose
/// page is gone is dropped.
fn attach_channels(studio: &Studio, channels: &Channels) {
    let channels = channels.clone();
    studio.add_event_sink(Box::new(move |event: &StudioEvent| {
        let Ok(value) = serde_json::to_value(event) else {
            return;
        };
        if let Ok(mut chans) = channels.lock() {
            chans.retain(|c| c.send(value.clone()).is_ok());
        }
    }));
}

/// The JSON error the page receives: `{"error": {"code", "message"}}`, as
/// `worldloom serve` replies.
fn error_value(err: &ApiError) -> Value {
    serde_json::to_value(err.body()).unwrap_or_else(
        |_| serde_json::json!({"error": {"code": "internal", "message": err.message}}),
    )
}

/// Runs one studio API command: `command` is a name from
/// [`worldloom_api::COMMANDS`], `request` its JSON request (absent or `null`
/// reads as `{}`). Resolves with the command's JSON response; rejects with
/// `{"error": {"code", "message"}}` (`unknown_command`, `bad_request`, the
/// command's own codes). Runs on a blocking thread.
#[tauri::command]
pub async fn api(
    shell: State<'_, Shell>,
    command: String,
    request: Option<Value>,
) -> Result<Value, Value> {
    let studio = shell.studio();
    let request = request.unwrap_or(Value::Null);
    let joined = tauri::async_runtime::spawn_blocking(move || {
        worldloom_api::dispatch(&studio, &command, request)
    })
    .await;
    match joined {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(error_value(&e)),
        Err(e) => Err(error_value(&ApiError::internal(format!(
            "the command failed: {e}"
        )))),
    }
}

/// Sends the studio's events ([`StudioEvent`] as JSON) to `channel`, starting
/// with `{"type": "hello", "version"}`.
#[tauri::command]
pub fn subscribe_events(shell: State<'_, Shell>, channel: Channel<Value>) -> Result<(), Value> {
    let hello = StudioEvent::Hello {
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let hello =
        serde_json::to_value(hello).map_err(|e| error_value(&ApiError::internal(e.to_string())))?;
    channel
        .send(hello)
        .map_err(|e| error_value(&ApiError::internal(e.to_string())))?;
    shell.add_channel(channel);
    Ok(())
}

/// Opens the native "Import" dialog and resolves with the chosen paths
/// (absolute; empty when cancelled). `folders: true` picks folders (Android
/// and OS trajectories are folders), otherwise files. The page then imports
/// them with the `import_files` command.
#[tauri::command]
pub async fn choose_import_paths<R: Runtime>(
    app: AppHandle<R>,
    folders: Option<bool>,
) -> Result<Vec<String>, Value> {
    let joined = tauri::async_runtime::spawn_blocking(move || {
        pick_import_paths(&app, folders.unwrap_or(false))
    })
    .await;
    joined
        .map(|paths| paths.iter().map(|p| p.display().to_string()).collect())
        .map_err(|e| error_value(&ApiError::internal(format!("the dialog failed: {e}"))))
}

/// Shows the "Import" dialog and waits for it (call off the main thread).
pub fn pick_import_paths<R: Runtime>(app: &AppHandle<R>, folders: bool) -> Vec<PathBuf> {
    let mut dialog = app.dialog().file();
    if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
        dialog = dialog.set_parent(&window);
    }
    let picked = if folders {
        dialog
            .set_title("Import trajectory folders")
            .blocking_pick_folders()
    } else {
        dialog
            .set_title("Import trajectory files")
            .add_filter(
                "Trajectories (JSON, JSONL)",
                &["json", "jsonl", "worldloom.json"],
            )
            .add_filter("All files", &["*"])
            .blocking_pick_files()
    };
    picked
        .unwrap_or_default()
        .into_iter()
        .filter_map(|p| p.into_path().ok())
        .collect()
}

/// Shows the "Open workspace" dialog and waits for it (call off the main
/// thread). `None` when cancelled.
pub fn pick_workspace<R: Runtime>(app: &AppHandle<R>) -> Option<PathBuf> {
    let mut dialog = app.dialog().file();
    if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
        dialog = dialog.set_parent(&window);
    }
    dialog
        .set_title("Open workspace")
        .add_filter("Worldloom workspaces", &["worldloom"])
        .add_filter("All files", &["*"])
        .blocking_pick_file()
        .and_then(|p| p.into_path().ok())
}

/// The window title for a workspace: `Worldloom studio — <file name>`.
pub fn window_title(workspace: &Path) -> String {
    match workspace.file_name() {
        Some(name) => format!("Worldloom studio — {}", name.to_string_lossy()),
        None => "Worldloom studio".to_string(),
    }
}

/// Adds `workspace` to the recent list, reporting a failure on stderr (a
/// list that cannot be written never stops the app).
pub fn remember_workspace(shell: &Shell, workspace: &Path) -> Vec<PathBuf> {
    match recent::remember(shell.recent_file(), workspace) {
        Ok(list) => list,
        Err(e) => {
            eprintln!(
                "warning: {}: cannot write the recent workspaces: {e}",
                shell.recent_file().display()
            );
            recent::load(shell.recent_file())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_title_names_the_workspace_file() {
        assert_eq!(
            window_title(Path::new("/data/worldloom/samples.worldloom")),
            "Worldloom studio — samples.worldloom"
        );
        assert_eq!(window_title(Path::new("/")), "Worldloom studio");
    }

    #[test]
    fn errors_have_the_server_shape() {
        let v = error_value(&ApiError::bad_request(
            "get_turn: request: missing field `turn`",
        ));
        assert_eq!(v["error"]["code"], "bad_request");
        assert_eq!(
            v["error"]["message"],
            "get_turn: request: missing field `turn`"
        );
    }
}
