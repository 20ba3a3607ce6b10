//! Opening an import's input files: the one door every importer's bytes
//! come through, so that a file is read once for both its hash and its
//! parse.
//!
//! An import run inside [`with_reads`] has every file it reads hashed
//! (SHA-256) in the same pass that feeds the importer, counted against a
//! byte budget, and cut short when the caller's cancel test says so; the
//! files read, each with its hash, come back with the result. Outside
//! [`with_reads`] the same functions read plainly (no hash, no budget).
//!
//! - [`open`] gives a [`InputFile`] reader (streamed importers: JSONL rows,
//!   pickles, sidecars). Dropped before its end, it reads the rest into the
//!   hash, so a file an importer stops reading early still counts whole.
//! - [`read_kept`] reads a whole file as text for a look at its contents
//!   (format detection) and keeps that text for the next [`read_text`] of
//!   the same path, which takes it instead of reading the file again.
//! - [`read_prefix`] reads at most a few kilobytes to sniff a format; it is
//!   not an import's read (not hashed, not listed).

use std::cell::RefCell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::error::{CoreError, Result};
use crate::text::DecodedText;

/// One file an import read to its end, hashed in the pass that read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The file, as the importer named it.
    pub path: PathBuf,
    /// SHA-256 of its bytes, lowercase hex (64 characters).
    pub sha256: String,
    /// Its length in bytes.
    pub bytes: u64,
}

/// A test the reads make between pieces: `Some(message)` stops the read with
/// an I/O error carrying that message (a request abandoned by its client).
pub type CancelTest = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What the reads of one import may do.
#[derive(Clone)]
pub struct ReadLimits {
    /// The most bytes all files together may hold; a file that grows past
    /// it while read is refused with a message naming the limit.
    pub max_bytes: u64,
    /// Looked at before each piece (at most [`PIECE_BYTES`] apart).
    pub cancel: Option<CancelTest>,
}

/// The largest piece read between two looks at the cancel test: 64 KiB.
pub const PIECE_BYTES: usize = 64 * 1024;

struct Scope {
    limits: ReadLimits,
    read_so_far: u64,
    files: Vec<FileRead>,
    /// Opens of each path, in order (a file read twice shows twice).
    opened: Vec<PathBuf>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
    /// The text [`read_kept`] read, waiting for the next [`read_text`] of
    /// its path. Emptied when taken and when [`with_reads`] (or
    /// [`forget_kept`]) ends.
    static KEPT: RefCell<Option<(PathBuf, DecodedText)>> = const { RefCell::new(None) };
}

/// What [`with_reads`] gives back besides `f`'s result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// Every file read to its end, in the order they were finished.
    pub files: Vec<FileRead>,
    /// Every file opened for reading, in order (the files of [`Self::files`]
    /// and any read stopped by an error); a path twice means read twice.
    pub opened: Vec<PathBuf>,
}

/// Runs `f` (an import) with its file reads hashed, bounded by `limits` and
/// cancellable; returns its result and the files it read. Nested calls run
/// inside the outer one's scope (their reads are the outer one's).
pub fn with_reads<T>(limits: ReadLimits, f: impl FnOnce() -> T) -> (T, Reads) {
    let outer = SCOPE.with(|s| s.borrow().is_some());
    if outer {
        return (f(), Reads::default());
    }
    SCOPE.with(|s| {
        *s.borrow_mut() = Some(Scope {
            limits,
            read_so_far: 0,
            files: Vec::new(),
            opened: Vec::new(),
        })
    });
    struct End;
    impl Drop for End {
        fn drop(&mut self) {
            SCOPE.with(|s| s.borrow_mut().take());
            forget_kept();
        }
    }
    let end = End;
    let out = f();
    let scope = SCOPE.with(|s| s.borrow_mut().take());
    drop(end);
    let reads = scope
        .map(|s| Reads {
            files: s.files,
            opened: s.opened,
        })
        .unwrap_or_default();
    (out, reads)
}

/// Drops a text [`read_kept`] kept that no reader took.
pub fn forget_kept() {
    KEPT.with(|k| k.borrow_mut().take());
}

/// Calls [`forget_kept`] when dropped: an import holds one for its whole
/// run, so a kept text never outlives it.
pub struct ForgetKept;

impl Drop for ForgetKept {
    fn drop(&mut self) {
        forget_kept();
    }
}

/// A file opened for an import: reading it feeds the scope's hash, budget
/// and cancel test (see the module documentation).
pub struct InputFile {
    path: PathBuf,
    file: std::fs::File,
    hash: Option<Sha256>,
    bytes: u64,
    /// Reached the end (or an error stopped it: then not listed).
    done: bool,
}

/// Opens `path` for an import's read.
///
/// # Errors
/// [`CoreError::Io`] naming `path` when it cannot be opened.
pub fn open(path: &Path) -> Result<InputFile> {
    let file = std::fs::File::open(path).map_err(|source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let scoped = SCOPE.with(|s| {
        s.borrow_mut().as_mut().map(|scope| {
            scope.opened.push(path.to_path_buf());
        })
    });
    Ok(InputFile {
        path: path.to_path_buf(),
        file,
        hash: scoped.map(|()| Sha256::new()),
        bytes: 0,
        done: false,
    })
}

impl InputFile {
    /// Checks the scope's cancel test and budget for `n` more bytes.
    fn charge(&mut self, n: usize) -> std::io::Result<()> {
        if self.hash.is_none() {
            return Ok(());
        }
        SCOPE.with(|s| {
            let mut s = s.borrow_mut();
            let Some(scope) = s.as_mut() else {
                return Ok(());
            };
            scope.read_so_far += n as u64;
            if scope.read_so_far > scope.limits.max_bytes {
                return Err(std::io::Error::other(format!(
                    "grew past the import limit of {} bytes while it was read",
                    scope.limits.max_bytes
                )));
            }
            Ok(())
        })
    }

    fn cancelled(&self) -> Option<String> {
        // Plain reads (outside a scope) have no cancel test.
        self.hash.as_ref()?;
        SCOPE
            .with(|s| {
                s.borrow()
                    .as_ref()
                    .and_then(|scope| scope.limits.cancel.clone())
            })
            .and_then(|test| test())
    }

    fn finish(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        let Some(hash) = self.hash.take() else {
            return;
        };
        let read = FileRead {
            path: self.path.clone(),
            sha256: hex(&hash.finalize()),
            bytes: self.bytes,
        };
        SCOPE.with(|s| {
            if let Some(scope) = s.borrow_mut().as_mut() {
                scope.files.push(read);
            }
        });
    }
}

impl Read for InputFile {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(message) = self.cancelled() {
            self.done = true;
            return Err(std::io::Error::other(message));
        }
        let want = buf.len().min(PIECE_BYTES);
        let n = match self.file.read(&mut buf[..want]) {
            Ok(n) => n,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.done = true;
                }
                return Err(e);
            }
        };
        if n == 0 {
            self.finish();
            return Ok(0);
        }
        if let Err(e) = self.charge(n) {
            self.done = true;
            return Err(e);
        }
        self.bytes += n as u64;
        if let Some(h) = self.hash.as_mut() {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

impl Drop for InputFile {
    /// A file left before its end is read on into the hash (the rest of
    /// the same single pass), so the listed hash is the whole file's.
    fn drop(&mut self) {
        if self.done || self.hash.is_none() {
            return;
        }
        let mut buf = vec![0u8; PIECE_BYTES];
        loop {
            match self.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

/// Reads `path` whole (through [`open`]) and decodes it as text
/// ([`crate::text::decode_utf8_lossy`]); takes the text [`read_kept`] kept
/// for this path instead, when there is one.
///
/// # Errors
/// [`CoreError::Io`] naming `path` when it cannot be read (or the read was
/// cancelled or went over the budget: the message says which).
pub fn read_text(path: &Path) -> Result<DecodedText> {
    if let Some(kept) = KEPT.with(|k| {
        let mut k = k.borrow_mut();
        match k.as_ref() {
            Some((p, _)) if p == path => k.take().map(|(_, text)| text),
            _ => None,
        }
    }) {
        return Ok(kept);
    }
    let mut file = open(path)?;
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0).saturating_add(1));
    file.read_to_end(&mut bytes)
        .map_err(|source| CoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    drop(file);
    // Valid UTF-8 keeps the bytes' buffer (no second copy of a large file).
    Ok(match String::from_utf8(bytes) {
        Ok(text) => DecodedText {
            text,
            warning: None,
        },
        Err(e) => crate::text::decode_utf8_lossy(path, e.as_bytes()),
    })
}

/// Reads `path` as text ([`read_text`]), pushing the decoding warning (if
/// any) onto `warnings`.
///
/// # Errors
/// As [`read_text`].
pub fn read_text_into(path: &Path, warnings: &mut Vec<crate::ImportWarning>) -> Result<String> {
    let decoded = read_text(path)?;
    warnings.extend(decoded.warning);
    Ok(decoded.text)
}

/// A whole file's text read for a look at its contents, handed on to the
/// next [`read_text`] of the same path when dropped (so detecting a format
/// and importing the file read it once).
pub struct Kept {
    path: PathBuf,
    kept: Option<DecodedText>,
}

impl std::ops::Deref for Kept {
    type Target = DecodedText;
    fn deref(&self) -> &DecodedText {
        self.kept.as_ref().expect("kept until dropped")
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Some(text) = self.kept.take() {
            let path = std::mem::take(&mut self.path);
            KEPT.with(|k| *k.borrow_mut() = Some((path, text)));
        }
    }
}

/// Reads `path` whole as text ([`read_text`]) and keeps it for the next
/// reader of the same path (see [`Kept`]).
///
/// # Errors
/// As [`read_text`].
pub fn read_kept(path: &Path) -> Result<Kept> {
    let text = read_text(path)?;
    Ok(Kept {
        path: path.to_path_buf(),
        kept: Some(text),
    })
}

/// At most `n` bytes from the start of `path`, to sniff its format. Not an
/// import's read: not hashed, not listed, not charged.
///
/// # Errors
/// [`CoreError::Io`] naming `path` when it cannot be read.
pub fn read_prefix(path: &Path, n: usize) -> Result<Vec<u8>> {
    let io = |source| CoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut out = Vec::with_capacity(n.min(1 << 20));
    file.take(n as u64).read_to_end(&mut out).map_err(io)?;
    Ok(out)
}

/// SHA-256 of `bytes`, lowercase hex: the hash [`FileRead::sha256`] holds.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    use std::fmt::Write;
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_bytes: u64) -> ReadLimits {
        ReadLimits {
            max_bytes,
            cancel: None,
        }
    }

    #[test]
    fn a_file_read_in_a_scope_is_listed_with_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "hello").unwrap();
        let (text, reads) = with_reads(limits(1 << 20), || read_text(&p).unwrap().text);
        assert_eq!(text, "hello");
        assert_eq!(
            reads.files,
            vec![FileRead {
                path: p.clone(),
                sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824".into(),
                bytes: 5,
            }]
        );
        assert_eq!(reads.opened, vec![p]);
    }

    #[test]
    fn a_kept_text_is_taken_by_the_next_read_of_its_path_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "{\"x\": 1}").unwrap();
        let (text, reads) = with_reads(limits(1 << 20), || {
            let head = read_kept(&p).unwrap();
            assert!(head.text.starts_with('{'));
            drop(head);
            read_text(&p).unwrap().text
        });
        assert_eq!(text, "{\"x\": 1}");
        assert_eq!(reads.opened.len(), 1, "{reads:?}");
        assert_eq!(reads.files[0].bytes, 8);
    }

    #[test]
    fn a_reader_dropped_early_still_hashes_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.bin");
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let ((), reads) = with_reads(limits(1 << 20), || {
            let mut f = open(&p).unwrap();
            let mut first = [0u8; 10];
            f.read_exact(&mut first).unwrap();
        });
        assert_eq!(reads.files.len(), 1);
        assert_eq!(reads.files[0].sha256, sha256_hex(&bytes));
        assert_eq!(reads.files[0].bytes, 200_000);
    }

    #[test]
    fn the_budget_and_the_cancel_test_stop_a_read_with_their_message() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.txt");
        std::fs::write(&p, vec![b'x'; 300_000]).unwrap();
        let (err, reads) = with_reads(limits(100_000), || read_text(&p).unwrap_err());
        assert_eq!(
            err.to_string(),
            format!(
                "{}: grew past the import limit of 100000 bytes while it was read",
                p.display()
            )
        );
        assert!(reads.files.is_empty());
        let cancel: CancelTest = Arc::new(|| Some("stopped by the caller".to_owned()));
        let (err, _) = with_reads(
            ReadLimits {
                max_bytes: u64::MAX,
                cancel: Some(cancel),
            },
            || read_text(&p).unwrap_err(),
        );
        assert_eq!(
            err.to_string(),
            format!("{}: stopped by the caller", p.display())
        );
    }

    #[test]
    fn outside_a_scope_reads_are_plain_and_a_prefix_is_not_listed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.txt");
        std::fs::write(&p, "abcdef").unwrap();
        assert_eq!(read_text(&p).unwrap().text, "abcdef");
        let (prefix, reads) = with_reads(limits(1 << 20), || read_prefix(&p, 3).unwrap());
        assert_eq!(prefix, b"abc");
        assert_eq!(reads, Reads::default());
    }
}
