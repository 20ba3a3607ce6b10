//! Fuzz target: the `os_xml` parser must never panic, and whatever it
//! accepts must align and diff against itself without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use worldloom_core::domain::Representation;

fuzz_target!(|data: &[u8]| {
    if let Ok(parsed) = worldloom_obs::parse_bytes(data, Representation::OsXml) {
        let (metrics, _, _) = worldloom_obs::metrics::tree_metrics(&parsed.tree, &parsed.tree, Some(&parsed.tree));
        assert!(metrics.exact, "a tree must equal itself");
        let _ = serde_json::to_string(&parsed.tree);
    }
});
