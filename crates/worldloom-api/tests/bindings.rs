//! The committed TypeScript bindings (`ui/src/bindings/api.ts`) must equal
//! what this build generates. Regenerate with
//! `WORLDLOOM_UPDATE_BINDINGS=1 cargo test -p worldloom-api --test bindings`.

use std::path::PathBuf;

fn bindings_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(worldloom_api::bindings::BINDINGS_PATH)
}

#[test]
fn committed_bindings_match_the_rust_types() {
    let generated = worldloom_api::bindings::typescript();
    let path = bindings_file();
    if std::env::var_os("WORLDLOOM_UPDATE_BINDINGS").is_some() {
        std::fs::write(&path, &generated).expect("write bindings");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is out of date with the Rust API types; regenerate it with \
         `WORLDLOOM_UPDATE_BINDINGS=1 cargo test -p worldloom-api --test bindings` and commit it",
        path.display()
    );
}

#[test]
fn bindings_are_self_contained_and_list_every_command() {
    let generated = worldloom_api::bindings::typescript();
    assert_eq!(
        worldloom_api::bindings::undeclared_names(&generated),
        Vec::<String>::new()
    );
    for command in worldloom_api::COMMANDS {
        assert!(
            generated.contains(&format!("  {command}: [")),
            "command {command} missing from the table"
        );
    }
    assert!(generated.contains("export type TurnDetail = {"));
    assert!(generated.contains("export type DiffStatus = \"unchanged\" | \"changed\" | \"moved\" | \"added\" | \"removed\";"));
    // The judge's dimensions come from worldloom-core, checked against
    // JudgeScores' fields by tsc.
    assert!(generated.contains(
        "export const JUDGE_DIMENSIONS = [\"format\", \"factuality\", \"consistency\", \"realism\", \"quality\"] as const satisfies readonly (keyof JudgeScores)[];"
    ));
    // No 64-bit integers reach TypeScript as bigint.
    assert!(!generated.contains("bigint"));
}

#[test]
fn the_self_containment_check_finds_missing_types() {
    let file = "/** A doc with Words. */\nexport type A = { b: B, c: Array<string>, \"Quoted\": number };\nexport type B = \"X\" | \"Y\";\n";
    assert_eq!(
        worldloom_api::bindings::undeclared_names(file),
        Vec::<String>::new()
    );
    let broken = "export type A = { b: Missing, c: B };\nexport type B = number;\n";
    assert_eq!(
        worldloom_api::bindings::undeclared_names(broken),
        vec!["Missing".to_string()]
    );
}
