//! Every importer reads each input file once: the bytes that feed the
//! parse are the bytes hashed (`worldloom_core::input`), so a file is never
//! read a second time for its fingerprint, and a format's detection hands
//! the text it looked at to the importer instead of reading the file again.

use std::path::{Path, PathBuf};

use worldloom_core::input::{ReadLimits, Reads, sha256_hex, with_reads};
use worldloom_core::{ImportOptions, import_path};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn import_counting(path: &Path) -> (usize, Reads) {
    let limits = ReadLimits {
        max_bytes: u64::MAX,
        cancel: None,
    };
    let (imported, reads) = with_reads(limits, || import_path(path, &ImportOptions::default()));
    let imported = imported.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (imported.trajectories.len(), reads)
}

/// Each file opened once, each listed with the hash and length of its bytes.
fn assert_read_once(path: &Path, reads: &Reads) {
    let mut opened = reads.opened.clone();
    opened.sort();
    let before = opened.len();
    opened.dedup();
    assert_eq!(
        opened.len(),
        before,
        "{}: a file was opened twice: {:?}",
        path.display(),
        reads.opened
    );
    let mut listed: Vec<PathBuf> = reads.files.iter().map(|f| f.path.clone()).collect();
    listed.sort();
    assert_eq!(listed, opened, "{}", path.display());
    for f in &reads.files {
        let bytes = std::fs::read(&f.path).expect("read back");
        assert_eq!(f.sha256, sha256_hex(&bytes), "{}", f.path.display());
        assert_eq!(f.bytes, bytes.len() as u64, "{}", f.path.display());
    }
}

#[test]
fn each_sample_format_reads_each_of_its_files_once() {
    // (path, trajectories, files read)
    let cases: [(&str, usize, usize); 5] = [
        // The step file and its predictions sidecar.
        ("samples/web/agentlab_larkmail-reply_6steps.json", 1, 2),
        ("samples/agentworldbench/agentworldbench_sample.jsonl", 7, 1),
        // task.json, actions.jsonl, predictions.jsonl and six dumps.
        ("samples/android/harbor-messenger_send_trajectory", 1, 9),
        // task.json, capture_meta.json, actions.jsonl, predictions.jsonl,
        // seven trees and their seven tables.
        ("samples/os/thunar_rename_trajectory", 1, 18),
        ("crates/worldloom-core/tests/fixtures/native_v1.json", 3, 1),
    ];
    for (rel, trajectories, files) in cases {
        let path = repo(rel);
        let (n, reads) = import_counting(&path);
        assert_read_once(&path, &reads);
        assert_eq!(n, trajectories, "{rel}");
        assert_eq!(reads.files.len(), files, "{rel}: {:?}", reads.opened);
    }
}

#[test]
fn an_agentlab_result_folder_reads_each_pickle_once() {
    let path = repo("crates/worldloom-core/tests/fixtures/agentlab/exp_blue-mug");
    let (_, reads) = import_counting(&path);
    assert_read_once(&path, &reads);
    // The experiment pickle, three step pickles and summary_info.json;
    // screenshots are not read.
    let mut names: Vec<String> = reads
        .files
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "exp_args.pkl",
            "step_0.pkl.gz",
            "step_1.pkl.gz",
            "step_2.pkl.gz",
            "summary_info.json"
        ]
    );
}
