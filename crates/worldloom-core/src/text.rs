//! Reading input files as text: the one place every importer reads bytes.
//!
//! Real trajectory files are not always valid UTF-8: Android dumps may hold a
//! lone UTF-16 surrogate written as raw CESU-8 bytes (`ED A0 BD`), and saved
//! web pages may be Latin-1. Such files still import: each invalid sequence
//! becomes U+FFFD (the Unicode replacement character, as in
//! `String::from_utf8_lossy`) and the import reports one warning naming the
//! file and the byte offset of the first invalid sequence.

use std::path::Path;

use crate::error::{CoreError, ImportWarning, Result};

/// A file's text after lossy UTF-8 decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedText {
    /// The text; invalid sequences replaced by U+FFFD.
    pub text: String,
    /// One warning when any byte sequence was invalid, else `None`.
    pub warning: Option<ImportWarning>,
}

/// Decodes `bytes` read from `path` (used only for the warning) as UTF-8,
/// replacing invalid sequences with U+FFFD. A leading UTF-8 byte-order mark is
/// kept (it is part of the original text).
pub fn decode_utf8_lossy(path: &Path, bytes: &[u8]) -> DecodedText {
    match std::str::from_utf8(bytes) {
        Ok(text) => DecodedText {
            text: text.to_owned(),
            warning: None,
        },
        Err(first) => {
            let offset = first.valid_up_to();
            let invalid_count = count_invalid_sequences(bytes);
            let text = String::from_utf8_lossy(bytes).into_owned();
            let warning = ImportWarning {
                path: path.display().to_string(),
                line: Some(1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count()),
                byte_offset: Some(offset as u64),
                message: format!(
                    "not valid UTF-8: {invalid_count} invalid byte sequence(s) replaced by U+FFFD, the first at byte offset {offset}"
                ),
            };
            DecodedText {
                text,
                warning: Some(warning),
            }
        }
    }
}

/// Reads `path` as text with [`decode_utf8_lossy`].
///
/// # Errors
/// [`CoreError::Io`] when the file cannot be read.
pub fn read_text(path: &Path) -> Result<DecodedText> {
    let bytes = std::fs::read(path).map_err(|source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(decode_utf8_lossy(path, &bytes))
}

/// Reads `path` as text, pushing the decoding warning (if any) onto `warnings`.
///
/// # Errors
/// [`CoreError::Io`] when the file cannot be read.
pub fn read_text_into(path: &Path, warnings: &mut Vec<ImportWarning>) -> Result<String> {
    let decoded = read_text(path)?;
    warnings.extend(decoded.warning);
    Ok(decoded.text)
}

fn count_invalid_sequences(mut bytes: &[u8]) -> usize {
    let mut count = 0;
    loop {
        match std::str::from_utf8(bytes) {
            Ok(_) => return count,
            Err(err) => {
                count += 1;
                let skip =
                    err.valid_up_to() + err.error_len().unwrap_or(bytes.len() - err.valid_up_to());
                bytes = &bytes[skip..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cesu_surrogate_becomes_replacement_with_one_warning() {
        let bytes = b"<node text=\"a\xED\xA0\xBDb\"/>\n<node text=\"\xED\xA0\xBD\"/>";
        let decoded = decode_utf8_lossy(Path::new("dump.xml"), bytes);
        assert!(decoded.text.starts_with("<node text=\"a\u{FFFD}"));
        let warning = decoded.warning.expect("a warning");
        assert_eq!(warning.byte_offset, Some(13));
        assert_eq!(warning.line, Some(1));
        assert_eq!(warning.path, "dump.xml");
        assert!(
            warning.message.contains("byte offset 13"),
            "{}",
            warning.message
        );
    }

    #[test]
    fn latin1_text_decodes_lossily() {
        let bytes = b"caf\xE9 cr\xE8me";
        let decoded = decode_utf8_lossy(Path::new("page.html"), bytes);
        assert_eq!(decoded.text, "caf\u{FFFD} cr\u{FFFD}me");
        let warning = decoded.warning.expect("a warning");
        assert_eq!(warning.byte_offset, Some(3));
        assert!(
            warning.message.starts_with("not valid UTF-8: 2 invalid"),
            "{}",
            warning.message
        );
    }

    #[test]
    fn valid_utf8_has_no_warning() {
        let decoded = decode_utf8_lossy(Path::new("x"), "语言 °F".as_bytes());
        assert_eq!(decoded.text, "语言 °F");
        assert!(decoded.warning.is_none());
    }
}
