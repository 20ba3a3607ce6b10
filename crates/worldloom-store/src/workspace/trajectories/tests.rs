//! Tests of importing and reading back trajectories.

use super::*;
use worldloom_core::action::ActionFormat;
use worldloom_core::{Action, Domain, Observation, Representation};

#[test]
fn the_fingerprint_hashes_the_path_as_one_nul_separated_text() {
    // Fed piece by piece, the hash is that of the pieces joined, each
    // followed by a NUL: domain, id, system prompt, then per turn the
    // prompt (or action) and the real observation.
    let mut t = Trajectory::new(
        "t-1",
        Domain::Android,
        Some(Observation::new(Representation::AndroidXml, "<a/>")),
    );
    t.system_prompt = Some("sys".into());
    let root = t.root();
    let (_, n1) = t
        .add_step(
            root,
            Action::new("{\"action_type\": \"wait\"}", ActionFormat::AndroidJson),
            Some(Observation::new(Representation::AndroidXml, "<b/>")),
        )
        .unwrap();
    t.add_step(
        n1,
        Action::new("{\"action_type\": \"back\"}", ActionFormat::AndroidJson),
        None,
    )
    .unwrap();
    let joined =
        "android\0t-1\0sys\0{\"action_type\": \"wait\"}\0<b/>\0{\"action_type\": \"back\"}\0\0";
    assert_eq!(
        trajectory_fingerprint(&t),
        super::super::sha256_hex(joined.as_bytes())
    );
}
