//! Reading observation and edge records whose one string can be hundreds of
//! megabytes (a uiautomator dump, the prompt holding the whole state before
//! a turn).
//!
//! Deserialising such a record into its `worldloom-core` type holds the row's
//! JSON text (SQLite's buffer), serde_json's scratch buffer for the unescaped
//! string and the resulting `String` at once: three copies. Here the record is
//! read with its large string left as raw JSON borrowed from the row's text
//! ([`RawValue`]), and the string is then unescaped straight into one `String`
//! sized from the raw text ([`json_string`]): two copies at the peak, one once
//! the row is released. An edge's prompt can be left unread altogether.

use serde::Deserialize;
use serde::de::Error as _;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use worldloom_core::{
    Action, AwbRowInfo, Edge, EdgeId, NodeId, Observation, ObservationMeta, ObservationView,
    Representation, StepError,
};

/// [`Observation`] with its `text` as raw JSON (same fields, same defaults).
#[derive(Deserialize)]
struct ObservationRecord<'a> {
    representation: Representation,
    #[serde(borrow)]
    text: &'a RawValue,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    views: Vec<ObservationView>,
    #[serde(default)]
    metadata: ObservationMeta,
    #[serde(default)]
    error: Option<StepError>,
}

/// [`Edge`] with its `prompt` as raw JSON (same fields, same defaults).
#[derive(Deserialize)]
struct EdgeRecord<'a> {
    id: EdgeId,
    from: NodeId,
    to: NodeId,
    action: Action,
    #[serde(default, borrow)]
    prompt: Option<&'a RawValue>,
    #[serde(default)]
    edited_from: Option<EdgeId>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    awb_row: Option<AwbRowInfo>,
    #[serde(default)]
    extra: Map<String, Value>,
}

/// An [`Observation`] from its stored JSON record; equal to what
/// `serde_json::from_str::<Observation>` gives, without its scratch copy of
/// the text.
///
/// # Errors
/// The `serde_json` error of a record that does not parse (including an
/// invalid escape in the text).
pub(crate) fn observation_from_json(json: &str) -> serde_json::Result<Observation> {
    let r: ObservationRecord<'_> = serde_json::from_str(json)?;
    // Every field named: a field added to `Observation` fails to build here.
    Ok(Observation {
        representation: r.representation,
        text: json_string(r.text.get())?,
        prefix: r.prefix,
        views: r.views,
        metadata: r.metadata,
        error: r.error,
    })
}

/// An [`Edge`] from its stored JSON record, as [`observation_from_json`]
/// for its prompt; with `prompt` false the prompt is not unescaped at all
/// and reads as `None`.
///
/// # Errors
/// As [`observation_from_json`]; with `prompt` false, an invalid escape in
/// the prompt is not seen.
pub(crate) fn edge_from_json(json: &str, prompt: bool) -> serde_json::Result<Edge> {
    let r: EdgeRecord<'_> = serde_json::from_str(json)?;
    let prompt = match r.prompt {
        Some(raw) if prompt => Some(json_string(raw.get())?),
        _ => None,
    };
    Ok(Edge {
        id: r.id,
        from: r.from,
        to: r.to,
        action: r.action,
        prompt,
        edited_from: r.edited_from,
        note: r.note,
        awb_row: r.awb_row,
        extra: r.extra,
    })
}

/// The string a JSON string literal (`raw`, quotes included, surrounding
/// whitespace allowed) stands for, unescaped into one `String` allocated
/// once: an unescaped string is never longer than its literal. Accepts and
/// rejects what `serde_json::from_str::<String>` does: `\uXXXX` escapes
/// combine as UTF-16 surrogate pairs; a lone or unpaired surrogate, an
/// unknown escape, a raw control character or a bare quote is an error.
///
/// # Errors
/// A `serde_json` error naming the byte offset (within the literal) of the
/// first fault.
pub(crate) fn json_string(raw: &str) -> serde_json::Result<String> {
    let fail = |at: usize, what: &str| {
        serde_json::Error::custom(format!("{what} at byte {at} of a stored string"))
    };
    let lead = raw.len() - raw.trim_start().len();
    let inner = raw
        .trim()
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or_else(|| fail(lead, "expected a JSON string"))?;
    // Offsets in errors count from the literal's opening quote.
    let base = 1;
    let bytes = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    while i < bytes.len() {
        let plain = bytes[i..]
            .iter()
            .position(|&b| b == b'\\' || b == b'"' || b < 0x20)
            .map_or(bytes.len(), |p| i + p);
        // `plain` is at an ASCII byte or the end: a char boundary.
        out.push_str(&inner[i..plain]);
        i = plain;
        if i == bytes.len() {
            break;
        }
        match bytes[i] {
            b'"' => return Err(fail(base + i, "unescaped quote")),
            b'\\' => {}
            _ => return Err(fail(base + i, "control character in a string")),
        }
        let Some(&kind) = bytes.get(i + 1) else {
            return Err(fail(base + i, "unfinished escape"));
        };
        let simple = match kind {
            b'"' => Some('"'),
            b'\\' => Some('\\'),
            b'/' => Some('/'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'n' => Some('\n'),
            b'r' => Some('\r'),
            b't' => Some('\t'),
            b'u' => None,
            _ => return Err(fail(base + i, "invalid escape")),
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
            continue;
        }
        let first = hex4(bytes, i + 2).ok_or_else(|| fail(base + i, "invalid \\u escape"))?;
        i += 6;
        let code = match first {
            0xD800..=0xDBFF => {
                if bytes.get(i) != Some(&b'\\') || bytes.get(i + 1) != Some(&b'u') {
                    return Err(fail(base + i, "lone leading surrogate"));
                }
                let second =
                    hex4(bytes, i + 2).ok_or_else(|| fail(base + i, "invalid \\u escape"))?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(fail(base + i, "lone leading surrogate"));
                }
                i += 6;
                0x1_0000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(fail(base + i - 6, "lone trailing surrogate")),
            c => c,
        };
        // Surrogates are excluded above: every other value is a char.
        let c = char::from_u32(code).ok_or_else(|| fail(base + i, "invalid \\u escape"))?;
        out.push(c);
    }
    out.shrink_to_fit();
    Ok(out)
}

/// The value of the four hex digits at `at`, if there are four.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, &b| {
        let d = (b as char).to_digit(16)?;
        Some(acc * 16 + d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every literal: our result equals serde_json's, or both are errors.
    fn same_as_serde(literals: &[&str]) {
        for lit in literals {
            let ours = json_string(lit);
            let theirs = serde_json::from_str::<String>(lit);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "literal {lit}"),
                (Err(_), Err(_)) => {}
                _ => panic!("literal {lit}: ours {ours:?}, serde_json {theirs:?}"),
            }
        }
    }

    #[test]
    fn unescape_matches_serde_json_on_valid_strings() {
        same_as_serde(&[
            r#""""#,
            r#""plain""#,
            r#"  "surrounded by space"  "#,
            r#""<node text=\"a\" bounds=\"[0,0][1,1]\"/>""#,
            r#""\\ \/ \b \f \n \r \t \"""#,
            r#""\u0041\u00e9\u20AC\uFFFF\u0000""#,
            r#""pair \ud83d\ude00 and \uD834\uDD1E!""#,
            r#""\ud83d\ude00\ud83d\ude00""#,
            "\"raw non-ASCII: é 漢字 😀\"",
            r#""ends with escape\n""#,
            r#""\\u0041 is not an escape""#,
        ]);
        assert_eq!(
            json_string(r#""a\"b\ud83d\ude00""#).unwrap(),
            "a\"b\u{1F600}"
        );
    }

    #[test]
    fn unescape_rejects_what_serde_json_rejects() {
        let bad = [
            r#""lone leading \ud83d""#,
            r#""lone leading \ud83d then text""#,
            r#""leading then non-trailing \ud83d\u0041""#,
            r#""two leading \ud83d\ud83d""#,
            r#""lone trailing \ude00""#,
            r#""short \u12""#,
            r#""not hex \u12G4""#,
            r#""unknown \x41""#,
            r#""unfinished \"#,
            "\"raw control \u{1} char\"",
            "\"raw newline \n\"",
            r#""bare " quote""#,
            r#"unquoted"#,
            r#""unclosed"#,
            "null",
            "42",
        ];
        same_as_serde(&bad);
        for lit in bad {
            assert!(json_string(lit).is_err(), "{lit} must be an error");
        }
    }

    #[test]
    fn records_read_as_serde_reads_them() {
        let mut obs = Observation::new(
            Representation::AndroidXml,
            "<hierarchy><node text=\"a \\ b\" content-desc=\"\u{1F600}\"/></hierarchy>",
        );
        obs.prefix = "**Environment Observation:**\n".into();
        obs.views.push(ObservationView {
            name: "html".into(),
            representation: Representation::Html,
            text: "<p>\"x\"</p>".into(),
        });
        let json = serde_json::to_string(&obs).unwrap();
        assert_eq!(observation_from_json(&json).unwrap(), obs);
        assert_eq!(
            observation_from_json(&json).unwrap(),
            serde_json::from_str::<Observation>(&json).unwrap()
        );
        // An invalid escape in the text is an error, as with serde_json.
        let broken = r#"{"representation":"android-xml","text":"\ud800"}"#;
        assert!(serde_json::from_str::<Observation>(broken).is_err());
        assert!(observation_from_json(broken).is_err());
    }

    #[test]
    fn edges_read_as_serde_reads_them_and_skip_prompts() {
        let edge = Edge {
            id: EdgeId(3),
            from: NodeId(2),
            to: NodeId(3),
            action: Action::new("click('7')", worldloom_core::ActionFormat::Browsergym),
            prompt: Some("state before:\n<node text=\"\u{1F600}\"/>\u{1}".into()),
            edited_from: Some(EdgeId(1)),
            note: Some("a note".into()),
            awb_row: None,
            extra: Map::from_iter([("think".to_string(), Value::from("why"))]),
        };
        let json = serde_json::to_string(&edge).unwrap();
        assert_eq!(edge_from_json(&json, true).unwrap(), edge);
        assert_eq!(
            edge_from_json(&json, true).unwrap(),
            serde_json::from_str::<Edge>(&json).unwrap()
        );
        let without = edge_from_json(&json, false).unwrap();
        assert_eq!(
            without,
            Edge {
                prompt: None,
                ..edge.clone()
            }
        );
        // No prompt, or a null one, reads as none either way.
        let mut bare = edge;
        bare.prompt = None;
        let json = serde_json::to_string(&bare).unwrap();
        assert_eq!(edge_from_json(&json, true).unwrap(), bare);
        let null = json.replacen('{', "{\"prompt\":null,", 1);
        assert_eq!(edge_from_json(&null, true).unwrap(), bare);
        assert_eq!(serde_json::from_str::<Edge>(&null).unwrap(), bare);
    }
}
