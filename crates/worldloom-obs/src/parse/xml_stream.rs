//! A streaming reader for the plain XML that dump tools write: elements are
//! handed over one at a time as their tags are read, so no whole-document
//! tree is built.
//!
//! It reads a strict subset of XML, on which `roxmltree` (the document
//! parser of [`super::xml`]) gives exactly the same elements, names and
//! attribute values:
//!
//! - an optional `<?xml version="1.0" …?>` declaration at offset 0;
//! - elements whose names and attribute names are ASCII
//!   (`[A-Za-z_][A-Za-z0-9_.-]*`), without namespaces (no `:`, no name
//!   starting with `xml`), with no attribute given twice;
//! - attribute values without `<` (raw tabs and line feeds become spaces, as
//!   XML's attribute normalisation says; character references are kept as
//!   written);
//! - the five predefined entities and well-formed character references to
//!   characters XML allows, in values and text;
//! - comments without `--` in them;
//! - whitespace (and comments) only, outside the one root element.
//!
//! Anything else (a carriage return anywhere, CDATA, processing
//! instructions, a DTD, an unknown or malformed entity, an unclosed or
//! mismatched tag, a second root, text outside the root…) stops the reader
//! with [`Unsupported`]: the caller then parses the input with the document
//! parser, which gives the errors, positions and repairs of the full
//! grammar. So every input reads the same either way; the reader is only
//! the fast, small path for inputs it fully understands.

use crate::tree::Attribute;

/// Why the streaming reader gave up on an input (see the module's notes);
/// the caller falls back to the document parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsupported(pub(crate) &'static str);

type Step<T> = Result<T, Unsupported>;

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n')
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).copied().is_some_and(is_ws) {
        i += 1;
    }
    i
}

/// Reads a name at `at`; returns it and the offset after it.
fn name_at(text: &str, at: usize) -> Step<(&str, usize)> {
    let b = text.as_bytes();
    let first = b.get(at).copied().unwrap_or(0);
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return Err(Unsupported("a name that is not plain ASCII"));
    }
    let mut end = at + 1;
    while b
        .get(end)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
    {
        end += 1;
    }
    if b.get(end) == Some(&b':') {
        return Err(Unsupported("a namespace prefix"));
    }
    let name = &text[at..end];
    if name.len() >= 3 && name[..3].eq_ignore_ascii_case("xml") {
        return Err(Unsupported("a name reserved by XML"));
    }
    Ok((name, end))
}

/// Whether XML allows `c` (production `Char`).
fn is_xml_char(c: char) -> bool {
    matches!(c as u32, 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// Reads the reference starting at `s[0] == '&'`; returns the character and
/// the length of the reference.
fn reference(s: &str) -> Step<(char, usize)> {
    let bad = Unsupported("an entity that is not predefined, or a malformed reference");
    let semi = s
        .as_bytes()
        .iter()
        .take(16)
        .position(|&c| c == b';')
        .ok_or(bad)?;
    let body = &s[1..semi];
    let c = match body {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "apos" => '\'',
        "quot" => '"',
        _ => {
            let (digits, radix) = if let Some(h) = body.strip_prefix("#x") {
                (h, 16)
            } else if let Some(d) = body.strip_prefix('#') {
                (d, 10)
            } else {
                return Err(bad);
            };
            let ok = !digits.is_empty()
                && digits.bytes().all(|c| {
                    if radix == 16 {
                        c.is_ascii_hexdigit()
                    } else {
                        c.is_ascii_digit()
                    }
                });
            ok.then(|| u32::from_str_radix(digits, radix).ok())
                .flatten()
                .and_then(char::from_u32)
                .filter(|&c| is_xml_char(c))
                .ok_or(bad)?
        }
    };
    Ok((c, semi + 1))
}

/// Checks a run of character data (its value is not needed).
fn check_text(run: &str) -> Step<()> {
    if run.contains("]]>") {
        return Err(Unsupported("`]]>` in text"));
    }
    let mut rest = run;
    while let Some(i) = rest.find('&') {
        let (_, len) = reference(&rest[i..])?;
        rest = &rest[i + len..];
    }
    Ok(())
}

/// The value of an attribute written as `raw` (between its quotes).
fn attribute_value(raw: &str) -> Step<String> {
    if raw.contains('<') {
        return Err(Unsupported("`<` in an attribute value"));
    }
    if !raw.bytes().any(|c| matches!(c, b'&' | b'\t' | b'\n')) {
        return Ok(raw.to_string());
    }
    let mut value = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find(['&', '\t', '\n']) {
        value.push_str(&rest[..i]);
        if rest.as_bytes()[i] == b'&' {
            let (c, len) = reference(&rest[i..])?;
            value.push(c);
            rest = &rest[i + len..];
        } else {
            value.push(' ');
            rest = &rest[i + 1..];
        }
    }
    value.push_str(rest);
    Ok(value)
}

/// Reads an XML declaration at offset 0; returns the offset after it.
fn declaration(text: &str) -> Step<usize> {
    let bad = Unsupported("an XML declaration of an unusual form");
    let b = text.as_bytes();
    let mut i = "<?xml".len();
    let mut expected: &[&str] = &["version", "encoding", "standalone"];
    loop {
        let j = skip_ws(b, i);
        if text[j..].starts_with("?>") {
            return if expected.first() == Some(&"version") {
                Err(bad)
            } else {
                Ok(j + 2)
            };
        }
        if j == i {
            return Err(bad);
        }
        let (name, k) = name_at(text, j).map_err(|_| bad)?;
        let pos = expected.iter().position(|e| *e == name).ok_or(bad)?;
        if name != "version" && expected.first() == Some(&"version") {
            return Err(bad);
        }
        expected = &expected[pos + 1..];
        let k = skip_ws(b, k);
        if b.get(k) != Some(&b'=') {
            return Err(bad);
        }
        let k = skip_ws(b, k + 1);
        let quote = *b.get(k).ok_or(bad)?;
        if quote != b'"' && quote != b'\'' {
            return Err(bad);
        }
        let close = b[k + 1..]
            .iter()
            .position(|&c| c == quote)
            .map(|p| k + 1 + p)
            .ok_or(bad)?;
        let value = &text[k + 1..close];
        let fine = match name {
            "version" => value == "1.0",
            "encoding" => {
                value
                    .bytes()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                    && value
                        .bytes()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
            }
            _ => value == "yes" || value == "no",
        };
        if !fine {
            return Err(bad);
        }
        i = close + 1;
    }
}

/// What [`read_elements`] hands over, in document order.
#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// An element's start tag, at the offset of its `<`.
    Start {
        at: usize,
        name: &'a str,
        attributes: Vec<Attribute>,
    },
    /// The innermost open element closed; `at` is the offset after its
    /// closing `>` (right after its start for an empty element).
    End { at: usize },
}

/// Reads `text`, handing each element's [`Event::Start`] and [`Event::End`]
/// to `emit`.
///
/// # Errors
/// [`Unsupported`] for anything outside the subset in the module's notes;
/// the callbacks may have been called for a part of the document.
pub(crate) fn read_elements(
    text: &str,
    mut emit: impl FnMut(Event<'_>),
) -> Result<(), Unsupported> {
    let b = text.as_bytes();
    if b.contains(&b'\r') {
        return Err(Unsupported("a carriage return"));
    }
    let mut pos = if text.starts_with("<?xml") {
        declaration(text)?
    } else {
        0
    };
    let mut open: Vec<&str> = Vec::new();
    let mut seen_root = false;
    loop {
        let next = b[pos..].iter().position(|&c| c == b'<').map(|i| pos + i);
        let run = &text[pos..next.unwrap_or(b.len())];
        if open.is_empty() {
            if !run.bytes().all(is_ws) {
                return Err(Unsupported("text outside the root element"));
            }
        } else {
            check_text(run)?;
        }
        let Some(lt) = next else { break };
        let rest = &b[lt..];
        if rest.starts_with(b"<!--") {
            let close = text[lt + 4..]
                .find("-->")
                .map(|i| lt + 4 + i)
                .ok_or(Unsupported("an unclosed comment"))?;
            let body = &text[lt + 4..close];
            if body.contains("--") || body.ends_with('-') {
                return Err(Unsupported("`--` in a comment"));
            }
            pos = close + 3;
        } else if rest.starts_with(b"</") {
            let (name, after) = name_at(text, lt + 2)?;
            let after = skip_ws(b, after);
            if b.get(after) != Some(&b'>') {
                return Err(Unsupported("a malformed end tag"));
            }
            if open.pop() != Some(name) {
                return Err(Unsupported("an end tag that does not match"));
            }
            emit(Event::End { at: after + 1 });
            pos = after + 1;
        } else if matches!(rest.get(1), Some(b'!' | b'?')) {
            return Err(Unsupported("CDATA, a DTD or a processing instruction"));
        } else {
            if open.is_empty() && seen_root {
                return Err(Unsupported("a second root element"));
            }
            let (name, mut p) = name_at(text, lt + 1)?;
            let mut attributes: Vec<Attribute> = Vec::new();
            let empty = loop {
                let q = skip_ws(b, p);
                match b.get(q) {
                    Some(b'>') => {
                        p = q + 1;
                        break false;
                    }
                    Some(b'/') if b.get(q + 1) == Some(&b'>') => {
                        p = q + 2;
                        break true;
                    }
                    Some(_) if q > p => {
                        let (an, r) = name_at(text, q)?;
                        let r = skip_ws(b, r);
                        if b.get(r) != Some(&b'=') {
                            return Err(Unsupported("an attribute without `=`"));
                        }
                        let r = skip_ws(b, r + 1);
                        let quote = b.get(r).copied().unwrap_or(0);
                        if quote != b'"' && quote != b'\'' {
                            return Err(Unsupported("an unquoted attribute value"));
                        }
                        let close = b[r + 1..]
                            .iter()
                            .position(|&c| c == quote)
                            .map(|i| r + 1 + i)
                            .ok_or(Unsupported("an unclosed attribute value"))?;
                        let value = attribute_value(&text[r + 1..close])?;
                        if attributes.iter().any(|a| a.name == an) {
                            return Err(Unsupported("an attribute given twice"));
                        }
                        attributes.push(Attribute {
                            name: an.to_string(),
                            value,
                        });
                        p = close + 1;
                    }
                    _ => return Err(Unsupported("a malformed start tag")),
                }
            };
            seen_root = true;
            emit(Event::Start {
                at: lt,
                name,
                attributes,
            });
            if empty {
                emit(Event::End { at: p });
            } else {
                open.push(name);
            }
            pos = p;
        }
    }
    if !open.is_empty() {
        return Err(Unsupported("an unclosed element"));
    }
    if !seen_root {
        return Err(Unsupported("no root element"));
    }
    Ok(())
}
