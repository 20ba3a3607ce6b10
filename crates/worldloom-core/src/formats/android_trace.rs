//! Android trace folders laid out as numbered dumps with an action log, as
//! LlamaTouch's evaluator and similar Android agent benchmarks keep them:
//! `0.xml`, `1.xml`, … (uiautomator dumps, state N), `N.png` (its
//! screenshot), `N.activity` (the foreground activity), `eventStructs.txt`
//! (one event per line, line N the action taken from state N) and
//! `instruction.txt` (the task: an episode id on its first line when that
//! line is a number, then the instruction).
//!
//! Event lines, in either wording the recorders write:
//!
//! | event | English | Chinese | Android action |
//! |---|---|---|---|
//! | home | `[Home]` | `【Home键】` | `navigate_home` |
//! | back | `[Back]` | `【Back键】` | `navigate_back` |
//! | enter | `[Enter]` | `【Enter键】` | `keyboard_enter` |
//! | tap | `[Click] Screen Resolution (W, H), Click Position (x, y)` | `【点击事件】屏幕大小：（wW，hH），触摸位置：（xX，yY）` | `click` `x`, `y` |
//! | long press | `[LongClick] …` as a tap | `【长按事件】…` | `long_press` |
//! | swipe | `[Swipe] Screen Resolution (W, H), Start Position (x, y), End Position (x, y)` | `【滑动事件】屏幕大小：…，起始位置：…，结束位置：…` | `swipe` with the finger's `direction`, from `x`, `y` |
//! | text | `[Input] text` or `[Type] text` | `【键盘输入】text` | `input_text` |
//!
//! Coordinates are read as the numbers of the line in order: the screen
//! size first, then the positions. Where the stated screen size differs
//! from the dump's (the `<hierarchy>`'s `width`/`height`, else the first
//! node's `bounds`), positions are scaled to the dump's pixels, and the
//! logged values are kept in the edge's `extra` (`logged`). The event line
//! itself is kept as `event`. An event of another kind is kept as an
//! action of that name, with a warning naming the line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::action::{Action, ActionFormat};
use crate::domain::{Domain, Representation};
use crate::error::{CoreError, ImportWarning, Result};
use crate::formats::{file_name, file_stem};
use crate::observation::ScreenSize;
use crate::trajectory::{Source, Trajectory};

/// The source format name of trajectories read here.
pub const FORMAT: &str = "android-trace";

/// The action log's file name.
pub const EVENTS: &str = "eventStructs.txt";

/// The instruction's file name.
pub const INSTRUCTION: &str = "instruction.txt";

/// The numbered dumps of a folder (`N.xml`), by number.
fn numbered(dir: &Path, ext: &str) -> BTreeMap<usize, PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let name = path.file_name()?.to_str()?;
            let n = name.strip_suffix(ext)?.parse().ok()?;
            Some((n, path))
        })
        .collect()
}

/// Whether `dir` is a numbered Android trace: it holds `0.xml` and an
/// action log or an instruction file.
pub fn is_trace_folder(dir: &Path) -> bool {
    dir.is_dir()
        && dir.join("0.xml").is_file()
        && (dir.join(EVENTS).is_file() || dir.join(INSTRUCTION).is_file())
}

/// One event of the log, as an Android action.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The action object (AndroidWorld JSON style).
    pub action: Map<String, Value>,
    /// The screen size the line states, when it states one.
    pub resolution: Option<(f64, f64)>,
}

/// Reads one event line; `None` for a line of an unknown kind.
pub fn parse_event(line: &str) -> Option<Event> {
    let line = line.trim();
    let (tag, rest) = if let Some(r) = line.strip_prefix('[') {
        r.split_once(']')?
    } else if let Some(r) = line.strip_prefix('【') {
        r.split_once('】')?
    } else {
        return None;
    };
    let kind = match tag.trim().to_ascii_lowercase().as_str() {
        "home" | "home键" => "navigate_home",
        "back" | "back键" => "navigate_back",
        "enter" | "enter键" => "keyboard_enter",
        "click" | "tap" | "点击事件" => "click",
        "longclick" | "long click" | "longpress" | "long press" | "长按事件" => "long_press",
        "swipe" | "scroll" | "滑动事件" => "swipe",
        "input" | "type" | "text" | "键盘输入" => "input_text",
        _ => return None,
    };
    let mut action = Map::new();
    action.insert("action_type".into(), json!(kind));
    let numbers = numbers_of(rest);
    let mut resolution = None;
    match kind {
        "click" | "long_press" | "swipe" => {
            let needed = if kind == "swipe" { 6 } else { 4 };
            let (size, points) = match numbers.len() {
                n if n >= needed => (Some((numbers[0], numbers[1])), &numbers[2..]),
                n if n + 2 == needed => (None, &numbers[..]),
                _ => return None,
            };
            resolution = size;
            action.insert("x".into(), json!(points[0]));
            action.insert("y".into(), json!(points[1]));
            if kind == "swipe" {
                let (dx, dy) = (points[2] - points[0], points[3] - points[1]);
                let direction = if dx.abs() > dy.abs() {
                    if dx > 0.0 { "right" } else { "left" }
                } else if dy > 0.0 {
                    "down"
                } else {
                    "up"
                };
                action.insert("direction".into(), json!(direction));
                action.insert("end_x".into(), json!(points[2]));
                action.insert("end_y".into(), json!(points[3]));
            }
        }
        "input_text" => {
            action.insert("text".into(), json!(rest.trim()));
        }
        _ => {}
    }
    Some(Event { action, resolution })
}

/// The numbers of a text, in order (integers or decimals).
fn numbers_of(text: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() || (c == '.' && !current.is_empty()) {
            current.push(c);
        } else if !current.is_empty() {
            if let Ok(n) = current.trim_end_matches('.').parse() {
                out.push(n);
            }
            current.clear();
        }
    }
    out
}

/// The screen size of a dump: the `<hierarchy>`'s `width` and `height`,
/// else the right and bottom of the first `bounds`.
fn dump_screen(text: &str) -> Option<(f64, f64)> {
    let attr = |name: &str| -> Option<f64> {
        let head = &text[text.find("<hierarchy")?..];
        let head = &head[..head.find('>')?];
        let at = head.find(&format!(" {name}=\""))? + name.len() + 3;
        head[at..].split('"').next()?.parse().ok()
    };
    if let (Some(w), Some(h)) = (attr("width"), attr("height")) {
        return Some((w, h));
    }
    let at = text.find("bounds=\"")? + 8;
    let bounds = text[at..].split('"').next()?;
    let n = numbers_of(bounds);
    (n.len() == 4).then(|| (n[2], n[3]))
}

/// Scales an event's positions from the stated resolution to the dump's
/// screen; returns the logged values when they were changed.
fn scale(event: &mut Event, screen: Option<(f64, f64)>) -> Option<Value> {
    let ((lw, lh), (sw, sh)) = (event.resolution?, screen?);
    if lw <= 0.0 || lh <= 0.0 || ((lw - sw).abs() < 0.5 && (lh - sh).abs() < 0.5) {
        return None;
    }
    let mut logged = Map::new();
    logged.insert("resolution".into(), json!([lw, lh]));
    for (key, factor) in [
        ("x", sw / lw),
        ("y", sh / lh),
        ("end_x", sw / lw),
        ("end_y", sh / lh),
    ] {
        if let Some(v) = event.action.get(key).and_then(Value::as_f64) {
            logged.insert(key.into(), json!(v));
            event.action.insert(key.into(), json!((v * factor).round()));
        }
    }
    Some(Value::Object(logged))
}

/// Imports a numbered Android trace folder.
///
/// # Errors
/// [`CoreError::Io`]; [`CoreError::Format`] for a folder without `0.xml`
/// or with a dump of another GUI format.
pub fn import(dir: &Path, warnings: &mut Vec<ImportWarning>) -> Result<Trajectory> {
    let dumps = numbered(dir, ".xml");
    let Some(last) = dumps.keys().copied().max() else {
        return Err(CoreError::Format {
            path: dir.to_path_buf(),
            message: "no numbered dumps (0.xml, 1.xml, …)".into(),
        });
    };
    let events_path = dir.join(EVENTS);
    let lines: Vec<String> = if events_path.is_file() {
        crate::input::read_text_into(&events_path, warnings)?
            .lines()
            .map(str::to_owned)
            .collect()
    } else {
        warnings.push(ImportWarning {
            path: dir.display().to_string(),
            line: None,
            byte_offset: None,
            message: format!("no {EVENTS}: the states are linked by empty actions"),
        });
        Vec::new()
    };
    let mut t = Trajectory::new(file_stem(dir), Domain::Android, None);
    t.source = Source {
        format: FORMAT.into(),
        path: Some(file_name(dir)),
    };
    let instruction = dir.join(INSTRUCTION);
    if instruction.is_file() {
        let text = crate::input::read_text_into(&instruction, warnings)?;
        let mut rows = text.lines().map(str::trim).filter(|l| !l.is_empty());
        let first = rows.next().unwrap_or("");
        if first.chars().all(|c| c.is_ascii_digit()) && !first.is_empty() {
            t.extra.insert("episode".into(), json!(first));
            let rest: Vec<&str> = rows.collect();
            t.goal = (!rest.is_empty()).then(|| rest.join("\n"));
        } else {
            t.goal = (!text.trim().is_empty()).then(|| text.trim().to_owned());
        }
    }
    let mut node = t.root();
    let mut screen = None;
    for step in 0..=last {
        // The screen the previous state's event was recorded on.
        let from_screen = screen;
        let obs = match dumps.get(&step) {
            Some(path) => {
                let mut obs = crate::formats::folder::observation_from_file(
                    path,
                    Representation::AndroidXml,
                    warnings,
                )?;
                screen = dump_screen(&obs.text).or(screen);
                obs.metadata.screen = screen.map(|(w, h)| ScreenSize {
                    width_px: w as u32,
                    height_px: h as u32,
                });
                let activity = dir.join(format!("{step}.activity"));
                if activity.is_file() {
                    let name = crate::input::read_text_into(&activity, warnings)?;
                    obs.metadata
                        .extra
                        .insert("activity".into(), json!(name.trim()));
                }
                Some(obs)
            }
            None => {
                warnings.push(ImportWarning {
                    path: dir.display().to_string(),
                    line: None,
                    byte_offset: None,
                    message: format!("no {step}.xml: state {step} has no observation"),
                });
                None
            }
        };
        let target = if step == 0 {
            t.nodes[0].real = obs;
            t.root()
        } else {
            let (action, extra) = action_of(&lines, step - 1, from_screen, &events_path, warnings);
            let (edge, next) = t.add_step(node, action, obs)?;
            t.edges[edge.0 as usize].extra = extra;
            next
        };
        // The screen of the state: `N.png` beside the dump.
        let shot = format!("{step}.png");
        if dir.join(&shot).is_file() {
            let node = &mut t.nodes[target.0 as usize];
            node.extra.insert("screenshot_path".into(), json!(shot));
            crate::screenshot::attach(&mut node.screenshot, &dir.join(&shot), warnings);
        }
        node = target;
    }
    // Events past the last state: the last one taken from it is kept there.
    if let Some(line) = lines.get(last).filter(|l| !l.trim().is_empty()) {
        let (action, _) = action_of(&lines, last, screen, &events_path, warnings);
        let extra = &mut t.nodes[node.0 as usize].extra;
        extra.insert("final_action".into(), json!(action.raw));
        extra.insert("final_event".into(), json!(line.trim()));
    }
    if lines.iter().skip(last + 1).any(|l| !l.trim().is_empty()) {
        warnings.push(ImportWarning {
            path: events_path.display().to_string(),
            line: Some(last + 2),
            byte_offset: None,
            message: format!(
                "events from line {} on have no state to start from (the last dump is {last}.xml); ignored",
                last + 2
            ),
        });
    }
    Ok(t)
}

/// The action of event line `index` (0-based) and the edge's `extra`.
fn action_of(
    lines: &[String],
    index: usize,
    screen: Option<(f64, f64)>,
    events_path: &Path,
    warnings: &mut Vec<ImportWarning>,
) -> (Action, Map<String, Value>) {
    let mut extra = Map::new();
    let Some(line) = lines.get(index).map(|l| l.trim()).filter(|l| !l.is_empty()) else {
        return (Action::new("", ActionFormat::AndroidJson), extra);
    };
    extra.insert("event".into(), json!(line));
    let Some(mut event) = parse_event(line) else {
        warnings.push(ImportWarning {
            path: events_path.display().to_string(),
            line: Some(index + 1),
            byte_offset: None,
            message: format!("an event of no known kind, kept as written: {line:?}"),
        });
        return (Action::new(line, ActionFormat::Text), extra);
    };
    if let Some(logged) = scale(&mut event, screen) {
        extra.insert("logged".into(), logged);
    }
    let raw = Value::Object(event.action).to_string();
    (Action::new(raw, ActionFormat::AndroidJson), extra)
}
