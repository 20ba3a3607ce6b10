//! What the API test files share: the repository's samples and a studio on
//! a fresh workspace in a temporary folder.

use std::path::{Path, PathBuf};

use worldloom_api::Studio;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The path of a sample under `samples/`.
pub fn sample(rel: &str) -> String {
    repo().join("samples").join(rel).display().to_string()
}

/// A web trajectory sample (AgentLab, six steps).
pub const WEB: &str = "web/agentlab_larkmail-reply_6steps.json";
/// An OS trajectory sample folder.
pub const OS: &str = "os/thunar_rename_trajectory";

/// A studio on a new workspace file; the folder lives as long as the guard.
pub fn studio() -> (tempfile::TempDir, Studio) {
    let dir = tempfile::tempdir().expect("tempdir");
    let studio = Studio::open(&dir.path().join("ws.worldloom")).expect("open");
    (dir, studio)
}
