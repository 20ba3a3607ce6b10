//! Screenshots of states: what is known of an image file without decoding it.
//!
//! A state ([`crate::Node`]) may carry one [`Screenshot`]: its media type,
//! its size in pixels read from the image header (PNG `IHDR`, JPEG `SOFn`),
//! its byte length, the SHA-256 of its bytes and, while it has not reached a
//! workspace, the file that holds them. Nothing here decodes pixels: the
//! header is read, the rest of the file is only hashed.
//!
//! [`attach`] is the one place a screenshot enters the model: every importer
//! that sees a screenshot file calls it with the state's slot and the path, and a
//! file that is missing, not a PNG or JPEG, or over [`MAX_SCREENSHOT_BYTES`]
//! gives an [`ImportWarning`] naming it, never an error: the state is
//! imported without a screenshot.
//!
//! In native files the bytes live beside the JSON, in a sidecar folder of
//! files named by their hash ([`sidecar_dir`], [`crate::native::write_screenshots`]); a
//! screenshot's `file` is then relative to the native file's folder
//! (`docs/formats.md`, "Screenshots").

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ImportWarning;

/// The largest screenshot kept, in bytes: 16 MiB. A larger file is refused
/// with a warning and its state is kept without a screenshot.
pub const MAX_SCREENSHOT_BYTES: u64 = 16 << 20;

/// The largest width or height accepted from a header, in pixels (a header
/// claiming more is refused as corrupt).
pub const MAX_SCREENSHOT_SIDE_PX: u32 = 1 << 16;

/// An image format a screenshot may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ImageType {
    /// PNG (`image/png`).
    #[default]
    #[serde(rename = "image/png")]
    Png,
    /// JPEG (`image/jpeg`).
    #[serde(rename = "image/jpeg")]
    Jpeg,
}

impl ImageType {
    /// The media type (`image/png`, `image/jpeg`), as sent in `Content-Type`.
    pub fn media_type(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
        }
    }

    /// The file name ending for it (`.png`, `.jpg`).
    pub fn extension(self) -> &'static str {
        match self {
            ImageType::Png => ".png",
            ImageType::Jpeg => ".jpg",
        }
    }

    /// The type named by a media type, if it is one of these.
    pub fn from_media_type(s: &str) -> Option<Self> {
        match s {
            "image/png" => Some(ImageType::Png),
            "image/jpeg" => Some(ImageType::Jpeg),
            _ => None,
        }
    }
}

/// A state's screenshot: a reference to an image's bytes, never the pixels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Screenshot {
    /// The image format, as a media type.
    #[serde(default)]
    pub media_type: ImageType,
    /// Width in pixels, from the image header.
    #[serde(default)]
    pub width_px: u32,
    /// Height in pixels, from the image header.
    #[serde(default)]
    pub height_px: u32,
    /// The file's length in bytes.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub byte_length: u64,
    /// The SHA-256 of the bytes, lowercase hex: the key a workspace stores
    /// them under.
    #[serde(default)]
    pub sha256: String,
    /// Where the bytes are while the screenshot is on its way into a
    /// workspace: a path (relative to a native file's folder in a native
    /// file). `None` once the bytes are in a workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub file: Option<String>,
    /// The bytes themselves, when the source held the image inline (a
    /// `data:` URL in a WebArena render) rather than as a file: checked
    /// against `byte_length` and `sha256` when made ([`from_bytes`]). Never
    /// written to JSON (a native file keeps the bytes in its sidecar
    /// folder) nor sent to the interface.
    #[serde(skip)]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub inline: Option<InlineBytes>,
}

/// An image's bytes held in memory ([`Screenshot::inline`]); shared, not
/// copied, when the screenshot is cloned. Printed as its length only.
#[derive(Clone, PartialEq, Eq)]
pub struct InlineBytes(pub Arc<[u8]>);

impl std::fmt::Debug for InlineBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InlineBytes({} bytes)", self.0.len())
    }
}

/// What an image header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageHeader {
    /// The format.
    pub media_type: ImageType,
    /// Width in pixels.
    pub width_px: u32,
    /// Height in pixels.
    pub height_px: u32,
}

/// Reads the header of a PNG (signature and `IHDR`, the first 24 bytes) or
/// a JPEG (markers up to the first `SOFn` frame header, skipping the other
/// segments without keeping them) from `reader`. Reads no pixel data.
///
/// # Errors
/// A message saying what is wrong: not a PNG or JPEG, a header cut short,
/// a size of zero or over [`MAX_SCREENSHOT_SIDE_PX`].
pub fn read_header(reader: impl Read) -> std::result::Result<ImageHeader, String> {
    let mut r = reader;
    let mut magic = [0u8; 2];
    r.read_exact(&mut magic)
        .map_err(|_| "empty or shorter than an image header".to_owned())?;
    let header = match magic {
        [0x89, b'P'] => png_header(&mut r)?,
        [0xFF, 0xD8] => jpeg_header(&mut r)?,
        _ => return Err("not a PNG or JPEG image".into()),
    };
    for (what, v) in [("width", header.width_px), ("height", header.height_px)] {
        if v == 0 || v > MAX_SCREENSHOT_SIDE_PX {
            return Err(format!(
                "image {what} {v} px is not between 1 and {MAX_SCREENSHOT_SIDE_PX}"
            ));
        }
    }
    Ok(header)
}

fn png_header(r: &mut impl Read) -> std::result::Result<ImageHeader, String> {
    // The signature's other 6 bytes, the IHDR length and type, width, height.
    let mut b = [0u8; 22];
    r.read_exact(&mut b)
        .map_err(|_| "a PNG cut short before its IHDR header".to_owned())?;
    if b[..6] != *b"NG\r\n\x1a\n" {
        return Err("not a PNG image (bad signature)".into());
    }
    if &b[10..14] != b"IHDR" {
        return Err("a PNG whose first chunk is not IHDR".into());
    }
    let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    Ok(ImageHeader {
        media_type: ImageType::Png,
        width_px: be(14),
        height_px: be(18),
    })
}

fn jpeg_header(r: &mut impl Read) -> std::result::Result<ImageHeader, String> {
    fn cut<E>(_: E) -> String {
        "a JPEG cut short before its frame header (SOF)".to_owned()
    }
    let mut byte = [0u8; 1];
    loop {
        // Find the next marker: 0xFF, any fill 0xFF bytes, then its code.
        r.read_exact(&mut byte).map_err(cut)?;
        if byte[0] != 0xFF {
            return Err("a JPEG with data where a marker was expected".into());
        }
        let mut code = 0xFF;
        while code == 0xFF {
            r.read_exact(&mut byte).map_err(cut)?;
            code = byte[0];
        }
        match code {
            0x01 | 0xD0..=0xD7 => continue,
            0xD9 | 0xDA => return Err("a JPEG without a frame header (SOF)".into()),
            _ => {}
        }
        let mut len = [0u8; 2];
        r.read_exact(&mut len).map_err(cut)?;
        let len = u16::from_be_bytes(len);
        if len < 2 {
            return Err(format!("a JPEG segment of length {len}"));
        }
        let is_sof = matches!(code, 0xC0..=0xCF) && !matches!(code, 0xC4 | 0xC8 | 0xCC);
        if is_sof {
            let mut f = [0u8; 5];
            r.read_exact(&mut f).map_err(cut)?;
            return Ok(ImageHeader {
                media_type: ImageType::Jpeg,
                height_px: u32::from(u16::from_be_bytes([f[1], f[2]])),
                width_px: u32::from(u16::from_be_bytes([f[3], f[4]])),
            });
        }
        let skipped = std::io::copy(&mut r.take(u64::from(len) - 2), &mut std::io::sink())
            .map_err(|e| e.to_string())?;
        if skipped != u64::from(len) - 2 {
            return Err(cut(()));
        }
    }
}

/// Reads what a [`Screenshot`] holds from the file at `path`: the header
/// (validated), the length and the SHA-256 of the bytes (streamed, never
/// held whole). `file` is set to `path`.
///
/// # Errors
/// A message naming the file: it cannot be read, is over
/// [`MAX_SCREENSHOT_BYTES`], or is not a PNG or JPEG (see [`read_header`]).
pub fn probe(path: &Path) -> std::result::Result<Screenshot, String> {
    let name = path.display();
    let io = |e: std::io::Error| format!("{name}: {e}");
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(format!("{name}: not a file"));
    }
    let byte_length = meta.len();
    if byte_length > MAX_SCREENSHOT_BYTES {
        return Err(format!(
            "{name}: {byte_length} bytes, over the screenshot limit of {MAX_SCREENSHOT_BYTES} bytes (16 MiB)"
        ));
    }
    let header = read_header(std::io::BufReader::new(&file)).map_err(|e| format!("{name}: {e}"))?;
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_SCREENSHOT_BYTES {
            return Err(format!(
                "{name}: grew past the screenshot limit of {MAX_SCREENSHOT_BYTES} bytes while read"
            ));
        }
        hasher.update(&buf[..n]);
    }
    Ok(Screenshot {
        media_type: header.media_type,
        width_px: header.width_px,
        height_px: header.height_px,
        byte_length: total,
        sha256: hex(&hasher.finalize()),
        file: Some(path.display().to_string()),
        inline: None,
    })
}

/// What a [`Screenshot`] holds for an image given as bytes (decoded from a
/// `data:` URL): the header (validated), the length and the SHA-256; the
/// bytes are kept in [`Screenshot::inline`] and `file` is `None`.
///
/// # Errors
/// A message saying what is wrong: over [`MAX_SCREENSHOT_BYTES`], or not a
/// PNG or JPEG (see [`read_header`]).
pub fn from_bytes(bytes: Vec<u8>) -> std::result::Result<Screenshot, String> {
    let byte_length = bytes.len() as u64;
    if byte_length > MAX_SCREENSHOT_BYTES {
        return Err(format!(
            "{byte_length} bytes, over the screenshot limit of {MAX_SCREENSHOT_BYTES} bytes (16 MiB)"
        ));
    }
    let header = read_header(&bytes[..])?;
    Ok(Screenshot {
        media_type: header.media_type,
        width_px: header.width_px,
        height_px: header.height_px,
        byte_length,
        sha256: sha256_hex(&bytes),
        file: None,
        inline: Some(InlineBytes(bytes.into())),
    })
}

/// The SHA-256 of `bytes`, lowercase hex (the key of [`Screenshot::sha256`]).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    digest.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Gives a state the screenshot in the file at `path`: the one call an
/// importer makes for a screenshot it sees, with the state's slot
/// (`&mut node.screenshot`). A file that cannot be used (missing, not a PNG
/// or JPEG, over [`MAX_SCREENSHOT_BYTES`]) leaves the slot as it was and adds
/// a warning naming the file; returns whether the screenshot was attached.
pub fn attach(
    slot: &mut Option<Screenshot>,
    path: &Path,
    warnings: &mut Vec<ImportWarning>,
) -> bool {
    keep(slot, probe(path), path, None, warnings)
}

/// Puts a probed screenshot in `slot`, or adds the warning that names
/// `source` (and `line`) and says why it was not kept; returns whether it
/// was kept.
fn keep(
    slot: &mut Option<Screenshot>,
    probed: std::result::Result<Screenshot, String>,
    source: &Path,
    line: Option<usize>,
    warnings: &mut Vec<ImportWarning>,
) -> bool {
    match probed {
        Ok(shot) => {
            *slot = Some(shot);
            true
        }
        Err(message) => {
            warnings.push(ImportWarning {
                path: source.display().to_string(),
                line,
                byte_offset: None,
                message: format!("screenshot not kept: {message}"),
            });
            false
        }
    }
}

/// Gives a state the image of a `data:` URL's base64 `payload` (RFC 2397;
/// white space inside it is skipped), found in `source` at 1-based `line`:
/// decoded, checked as [`from_bytes`] does and kept inline. A payload that
/// does not decode, is over [`MAX_SCREENSHOT_BYTES`] once decoded, or is
/// not a PNG or JPEG leaves the slot as it was and adds a warning naming
/// the file and line; returns whether the screenshot was attached.
pub fn attach_data_url(
    slot: &mut Option<Screenshot>,
    source: &Path,
    line: Option<usize>,
    payload: &str,
    warnings: &mut Vec<ImportWarning>,
) -> bool {
    use base64::Engine as _;
    // Four base64 characters carry three bytes: a longer payload is over the limit.
    let limit = MAX_SCREENSHOT_BYTES.div_ceil(3) * 4;
    let decoded = if payload.len() as u64 > limit + 1024 {
        Err(format!(
            "an inline image of {} base64 characters, over the screenshot limit of {MAX_SCREENSHOT_BYTES} bytes (16 MiB)",
            payload.len()
        ))
    } else {
        let compact: String = payload
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        base64::engine::general_purpose::STANDARD
            .decode(compact.as_bytes())
            .map_err(|e| format!("an inline image that is not base64: {e}"))
            .and_then(from_bytes)
    };
    keep(slot, decoded, source, line, warnings)
}

/// The sidecar folder of a native file: `<file name without .json>.screenshots`
/// beside it (`a.worldloom.json` → `a.worldloom.screenshots/`).
pub fn sidecar_dir(native_file: &Path) -> PathBuf {
    let name = native_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    native_file.with_file_name(format!("{stem}.screenshots"))
}

/// A screenshot's bytes where it has them: held [`Screenshot::inline`], else
/// read from its `file` when that holds exactly the bytes it names (length
/// and hash), within [`MAX_SCREENSHOT_BYTES`]; `None` otherwise.
pub fn bytes_of(shot: &Screenshot) -> Option<Vec<u8>> {
    if let Some(InlineBytes(bytes)) = &shot.inline {
        return Some(bytes.to_vec());
    }
    let path = shot.file.as_ref()?;
    let mut data = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_SCREENSHOT_BYTES + 1)
        .read_to_end(&mut data)
        .ok()?;
    (data.len() as u64 == shot.byte_length && sha256_hex(&data) == shot.sha256).then_some(data)
}

/// A PNG of `width` × `height` pixels all of colour `rgb` (8-bit RGB, no
/// interlace), encoded here: for fixtures and tests, which must not copy
/// image files from elsewhere. Its size in memory is about `width × height
/// × 3` bytes before compression.
pub fn solid_png(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    use std::io::Write;
    fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend(kind);
        out.extend(data);
        out.extend(crc.sum().to_be_bytes());
    }
    let mut row = vec![0u8];
    for _ in 0..width {
        row.extend(rgb);
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    for _ in 0..height {
        // Writing into a Vec cannot fail.
        let _ = z.write_all(&row);
    }
    let idat = z.finish().unwrap_or_default();
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend(width.to_be_bytes());
    ihdr.extend(height.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_size_comes_from_ihdr() {
        let h = read_header(&solid_png(1080, 2400, [0, 0, 0])[..]).expect("header");
        assert_eq!(
            h,
            ImageHeader {
                media_type: ImageType::Png,
                width_px: 1080,
                height_px: 2400
            }
        );
    }

    #[test]
    fn solid_png_is_a_whole_png_of_its_colour() {
        use std::io::Read;
        let png = solid_png(3, 2, [10, 20, 30]);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IEND with its well-known CRC closes the file.
        assert_eq!(&png[png.len() - 12..], b"\0\0\0\0IEND\xae\x42\x60\x82");
        let idat_len = u32::from_be_bytes([png[33], png[34], png[35], png[36]]) as usize;
        assert_eq!(&png[37..41], b"IDAT");
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&png[41..41 + idat_len])
            .read_to_end(&mut raw)
            .expect("zlib");
        assert_eq!(raw, [0, 10, 20, 30, 10, 20, 30, 10, 20, 30].repeat(2));
    }

    #[test]
    fn jpeg_size_comes_from_sof_after_other_segments() {
        // SOI, APP0 (JFIF, 16 bytes), DQT (3 bytes of table), SOF0 640×480.
        let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
        b.extend(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
        b.extend([0xFF, 0xDB, 0x00, 0x05, 0, 1, 2]);
        b.extend([0xFF, 0xFF, 0xC0, 0x00, 0x11, 8, 0x01, 0xE0, 0x02, 0x80, 3]);
        let h = read_header(&b[..]).unwrap();
        assert_eq!(
            (h.media_type, h.width_px, h.height_px),
            (ImageType::Jpeg, 640, 480)
        );
    }

    #[test]
    fn bad_headers_say_what_is_wrong() {
        assert_eq!(
            read_header(&b"<html>"[..]).unwrap_err(),
            "not a PNG or JPEG image"
        );
        assert_eq!(
            read_header(&solid_png(10, 10, [0, 0, 0])[..20]).unwrap_err(),
            "a PNG cut short before its IHDR header"
        );
        assert_eq!(
            read_header(&solid_png(0, 10, [0, 0, 0])[..]).unwrap_err(),
            "image width 0 px is not between 1 and 65536"
        );
        assert_eq!(
            read_header(&[0xFF, 0xD8, 0xFF, 0xDA, 0, 2][..]).unwrap_err(),
            "a JPEG without a frame header (SOF)"
        );
        assert_eq!(
            read_header(&[0xFF, 0xD8, 0xFF, 0xE1, 0x40, 0x00, 1, 2][..]).unwrap_err(),
            "a JPEG cut short before its frame header (SOF)"
        );
        assert_eq!(
            read_header(&b""[..]).unwrap_err(),
            "empty or shorter than an image header"
        );
    }

    #[test]
    fn sidecar_folder_sits_beside_the_native_file() {
        assert_eq!(
            sidecar_dir(Path::new("/x/a.worldloom.json")),
            PathBuf::from("/x/a.worldloom.screenshots")
        );
        assert_eq!(sidecar_dir(Path::new("b")), PathBuf::from("b.screenshots"));
    }
}
