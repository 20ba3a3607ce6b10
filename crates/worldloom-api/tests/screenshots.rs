//! Screenshots through the API: shown in `get_turn`, their bytes from
//! `get_screenshot`, set on a state with `set_screenshot` (undoable, a bad
//! file named), and a round trip through the workspace and a native export
//! with its sidecar folder.

#[allow(dead_code)] // the shared helpers this file does not call
mod common;

use base64::Engine as _;
use common::{export_native, get_turn, studio};
use worldloom_api::types::*;
use worldloom_api::{ErrorCode, Studio, commands};

/// A PNG of `w`×`h` pixels of one colour (the core's fixture encoder).
fn png(w: u32, h: u32) -> Vec<u8> {
    worldloom_core::screenshot::solid_png(w, h, [200, 200, 200])
}

/// An Android folder of two states, the first with a screenshot.
fn phone_folder(dir: &std::path::Path) -> std::path::PathBuf {
    let folder = dir.join("phone");
    std::fs::create_dir_all(&folder).expect("folder");
    for i in 0..2 {
        std::fs::write(
            folder.join(format!("step_0{i}.xml")),
            "<hierarchy><node bounds=\"[0,0][40,80]\" class=\"android.widget.FrameLayout\" /></hierarchy>",
        )
        .expect("dump");
    }
    std::fs::write(
        folder.join("actions.jsonl"),
        "{\"step\": 0, \"action\": {\"action_type\": \"click\", \"x\": 5, \"y\": 5}}\n",
    )
    .expect("actions");
    std::fs::write(folder.join("step_00.png"), png(40, 80)).expect("png");
    folder
}

fn import(studio: &Studio, path: &std::path::Path) -> String {
    let resp = commands::import_files(
        studio,
        ImportFilesRequest {
            paths: vec![path.display().to_string()],
        },
    )
    .expect("import");
    assert!(resp.failed.is_empty(), "{:?}", resp.failed);
    resp.imported[0].trajectory_id.clone()
}

fn bytes_of(studio: &Studio, sha256: &str) -> Vec<u8> {
    let data = commands::get_screenshot(
        studio,
        GetScreenshotRequest {
            sha256: sha256.into(),
        },
    )
    .expect("screenshot");
    assert_eq!(data.media_type, ImageType::Png);
    base64::engine::general_purpose::STANDARD
        .decode(data.data_base64)
        .expect("base64")
}

/// Trajectory `id`'s first state shows the 40 × 80 PNG, as imported (no
/// file left, the same bytes back); its second none.
fn first_state_shows_the_png(studio: &Studio, id: &str) {
    let turn = get_turn(studio, id, 0);
    let shot = turn.real_screenshot.expect("screenshot");
    assert_eq!(
        (shot.media_type, shot.width_px, shot.height_px, shot.file),
        (ImageType::Png, 40, 80, None)
    );
    assert_eq!(bytes_of(studio, &shot.sha256), png(40, 80));
    assert_eq!(get_turn(studio, id, 1).real_screenshot, None);
}

#[test]
fn a_turn_shows_its_screenshot_and_its_bytes_come_back_as_imported() {
    let (dir, studio) = studio();
    let id = import(&studio, &phone_folder(dir.path()));
    first_state_shows_the_png(&studio, &id);
    let err = commands::get_screenshot(
        &studio,
        GetScreenshotRequest {
            sha256: "../x".into(),
        },
    )
    .expect_err("not a hash");
    assert_eq!(err.code, ErrorCode::BadRequest);
}

#[test]
fn set_screenshot_attaches_a_file_undoably_and_names_a_bad_one() {
    let (dir, studio) = studio();
    let id = import(&studio, &phone_folder(dir.path()));
    let file = dir.path().join("later.png");
    std::fs::write(&file, png(7, 9)).expect("png");
    let set = |path: &std::path::Path| {
        commands::set_screenshot(
            &studio,
            SetScreenshotRequest {
                trajectory_id: id.clone(),
                node_id: 1,
                path: path.display().to_string(),
            },
        )
    };
    let change = set(&file).expect("set").change.expect("change");
    assert_eq!(change.kind, ChangeKind::SetScreenshot);
    let shot = get_turn(&studio, &id, 1).real_screenshot.expect("set");
    assert_eq!((shot.width_px, shot.height_px), (7, 9));
    commands::undo(&studio, EmptyRequest {}).expect("undo");
    assert_eq!(get_turn(&studio, &id, 1).real_screenshot, None);
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not an image").expect("txt");
    let err = set(&text).expect_err("refused");
    assert_eq!(err.code, ErrorCode::BadRequest);
    assert!(
        err.message.contains("notes.txt") && err.message.contains("not a PNG or JPEG"),
        "{}",
        err.message
    );
}

#[test]
fn a_native_export_carries_screenshots_beside_it_into_another_workspace() {
    let (dir, studio) = studio();
    let id = import(&studio, &phone_folder(dir.path()));
    let sha = get_turn(&studio, &id, 0)
        .real_screenshot
        .expect("shot")
        .sha256;
    let out = dir.path().join("export").join("phone.worldloom.json");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("dir");
    let exported = export_native(&studio, &id, &out);
    let rel = format!("phone.worldloom.screenshots/{sha}.png");
    assert!(exported.content.contains(&format!("\"file\": \"{rel}\"")));
    assert_eq!(
        std::fs::read(dir.path().join("export").join(&rel)).expect("sidecar"),
        png(40, 80)
    );
    // Into a new workspace: the same screenshot, its bytes from the sidecar.
    let other = Studio::open(&dir.path().join("other.worldloom")).expect("open");
    let back = import(&other, &out);
    let shot = get_turn(&other, &back, 0).real_screenshot.expect("shot");
    assert_eq!((shot.sha256.as_str(), shot.width_px), (sha.as_str(), 40));
    assert_eq!(bytes_of(&other, &sha), png(40, 80));
}

#[test]
fn a_webarena_render_keeps_its_inline_screenshot_through_the_workspace() {
    let (dir, studio) = studio();
    let shot = base64::engine::general_purpose::STANDARD.encode(png(40, 80));
    let render = format!(
        "<html><body><pre>intent: Open the forums\n</pre>\n\
         <h3 class='url'><a href=http://forum.example/>URL: http://forum.example/</a></h3>\n\
         <div class='state_obv'><pre>[1] RootWebArea 'Home'\n\t[12] link 'Forums'</pre><div>\n\
         <img src='data:image/png;base64,{shot}' style='width:50vw'/>\n\
         <div class='prev_action'>None</div>\n\
         <div class='predict_action'><div class='parsed_action'><pre>click [12] where [12] is Forums</pre></div></div>\n\
         <h3 class='url'><a href=http://forum.example/f>URL: http://forum.example/f</a></h3>\n\
         <div class='state_obv'><pre>[1] RootWebArea 'Forums'</pre><div>\n\
         <div class='prev_action'>click [12] where [12] is Forums</div>\n\
         <div class='predict_action'><div class='parsed_action'><pre>stop [done]</pre></div></div>\n\
         </body></html>"
    );
    let path = dir.path().join("render_5.html");
    std::fs::write(&path, render).expect("render");
    let id = import(&studio, &path);
    first_state_shows_the_png(&studio, &id);
}
