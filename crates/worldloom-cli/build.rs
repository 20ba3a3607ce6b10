//! Build script: records the commit the binary is built from, for
//! `worldloom --version` (`WORLDLOOM_COMMIT`: the 12-digit short hash of
//! `HEAD`; `unknown` outside a git checkout, such as a crate unpacked from a
//! registry). The script runs again when `HEAD` or the branch it names moves.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = git(&manifest, &["rev-parse", "--short=12", "HEAD"]);
    println!(
        "cargo:rustc-env=WORLDLOOM_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    if commit.is_some() {
        let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
        watched.extend(git(&manifest, &["symbolic-ref", "-q", "HEAD"]));
        for name in watched {
            // `--git-path` resolves each name in a linked worktree too.
            if let Some(path) = git(
                &manifest,
                &["rev-parse", "--path-format=absolute", "--git-path", &name],
            ) {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
