//! Finding a Python with the official `openenv-core` client, shared by the
//! env crate's tests and `worldloom-cli`'s `serve-env` tests.

/// The Python that runs the official `openenv-core` client
/// (`WORLDLOOM_OPENENV_PYTHON`, else `python3`), or `None` after a
/// `SKIPPED {test}: …` line ending in `({hint})` when it cannot import
/// `openenv.core`.
pub fn openenv_python(test: &str, hint: &str) -> Option<String> {
    let python = std::env::var("WORLDLOOM_OPENENV_PYTHON").unwrap_or_else(|_| "python3".into());
    let have = std::process::Command::new(&python)
        .args(["-c", "from openenv.core import GenericEnvClient"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if have {
        Some(python)
    } else {
        println!("SKIPPED {test}: {python} cannot import `openenv.core` ({hint})");
        None
    }
}
