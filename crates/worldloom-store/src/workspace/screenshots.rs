//! Screenshots of states: their bytes kept once per SHA-256 in the
//! `screenshots` table (content-addressed, never decoded), and which one a
//! state shows as `node_screenshots` rows (the newest live row wins; a
//! `NULL` hash clears it), written with the state's import or as a change
//! of its own ([`Workspace::set_screenshot`]).
//!
//! A screenshot whose bytes cannot be read (its file gone, changed since
//! it was probed, or over [`MAX_SCREENSHOT_BYTES`]) is left out: the state
//! is stored without one and the workspace goes on.

use rusqlite::{OptionalExtension, Transaction, params};
use worldloom_core::screenshot::{MAX_SCREENSHOT_BYTES, Screenshot, bytes_of};
use worldloom_core::{ImageType, NodeId};

use super::{ChangeId, TrajectoryKey, Workspace, check_live_node, tx_err};
use crate::error::{Result, StoreError};

/// A screenshot's bytes as stored, with their media type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenshotBytes {
    /// The image format.
    pub media_type: ImageType,
    /// The file's bytes, exactly as imported.
    pub bytes: Vec<u8>,
}

/// Stores the bytes of `shot` from its `file` (checked against its length
/// and hash) once per hash; `Ok(false)` when there is no file or it does
/// not hold those bytes (and no stored copy exists either).
fn insert_bytes(tx: &Transaction<'_>, shot: &Screenshot) -> rusqlite::Result<bool> {
    let stored: bool = tx
        .prepare_cached("SELECT 1 FROM screenshots WHERE sha256 = ?1")?
        .exists(params![shot.sha256])?;
    if stored {
        return Ok(true);
    }
    let Some(bytes) = bytes_of(shot) else {
        return Ok(false);
    };
    tx.prepare_cached(
        "INSERT INTO screenshots (sha256, media_type, width_px, height_px, byte_length, bytes)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        shot.sha256,
        shot.media_type.media_type(),
        shot.width_px,
        shot.height_px,
        shot.byte_length as i64,
        bytes
    ])?;
    Ok(true)
}

/// The `node_screenshots` row giving `node` of trajectory `key` the
/// screenshot `shot` (stored first, see [`insert_bytes`]), as part of
/// `change`; nothing when its bytes are not to be had. Returns whether the
/// row was written.
pub(super) fn insert_node_screenshot(
    tx: &Transaction<'_>,
    key: i64,
    node: NodeId,
    shot: &Screenshot,
    change: ChangeId,
) -> rusqlite::Result<bool> {
    if !insert_bytes(tx, shot)? {
        return Ok(false);
    }
    tx.prepare_cached(
        "INSERT INTO node_screenshots (trajectory_id, node_id, sha256, change_id) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![key, node.0, shot.sha256, change.0])?;
    Ok(true)
}

/// A stored screenshot's metadata from a row of `screenshots` (columns
/// sha256, media_type, width_px, height_px, byte_length from `first`).
fn screenshot_of(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Screenshot> {
    let media: String = r.get(first + 1)?;
    Ok(Screenshot {
        sha256: r.get(first)?,
        media_type: ImageType::from_media_type(&media).unwrap_or_default(),
        width_px: r.get(first + 2)?,
        height_px: r.get(first + 3)?,
        byte_length: r.get::<_, i64>(first + 4)? as u64,
        file: None,
        inline: None,
    })
}

impl Workspace {
    /// Gives `node` the screenshot `shot` as one change (undo takes it
    /// away); its bytes are read from `shot.file` (see
    /// [`worldloom_core::screenshot::probe`]) unless the workspace already
    /// holds them.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown or undone node;
    /// [`StoreError::Invalid`] naming the file when its bytes cannot be
    /// read or are not those `shot` describes.
    pub fn set_screenshot(
        &mut self,
        key: TrajectoryKey,
        node: NodeId,
        shot: &Screenshot,
    ) -> Result<ChangeId> {
        let summary = format!("screenshot of node {}", node.0);
        let path = self.path.clone();
        self.with_change("set_screenshot", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node)?;
            let written = insert_node_screenshot(tx, key.0, node, shot, change)
                .map_err(tx_err(&path, "storing a screenshot"))?;
            if !written {
                return Err(StoreError::Invalid(format!(
                    "{}: cannot be read as the screenshot it was probed as (a PNG or JPEG of at most {MAX_SCREENSHOT_BYTES} bytes)",
                    shot.file.as_deref().unwrap_or("(no file)")
                )));
            }
            Ok(change)
        })
    }

    /// The screenshot `node` of trajectory `key` shows (metadata only;
    /// `file` is `None`), or `None`.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn node_screenshot(&self, key: TrajectoryKey, node: NodeId) -> Result<Option<Screenshot>> {
        self.conn
            .query_row(
                "SELECT s.sha256, s.media_type, s.width_px, s.height_px, s.byte_length
                 FROM node_screenshots n JOIN changes c ON c.id = n.change_id
                 LEFT JOIN screenshots s ON s.sha256 = n.sha256
                 WHERE n.trajectory_id = ?1 AND n.node_id = ?2 AND c.state = 'applied'
                 ORDER BY n.id DESC LIMIT 1",
                params![key.0, node.0],
                |r| match r.get::<_, Option<String>>(0)? {
                    Some(_) => screenshot_of(r, 0).map(Some),
                    None => Ok(None),
                },
            )
            .optional()
            .map(Option::flatten)
            .map_err(self.sql_err(format!("reading the screenshot of node {}", node.0)))
    }

    /// The screenshot of every state of trajectory `key` that has one, by
    /// state (metadata only).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn screenshots_of(&self, key: TrajectoryKey) -> Result<Vec<(NodeId, Screenshot)>> {
        let rows = self.query_all(
            "SELECT n.node_id, s.sha256, s.media_type, s.width_px, s.height_px, s.byte_length
             FROM node_screenshots n JOIN changes c ON c.id = n.change_id
             LEFT JOIN screenshots s ON s.sha256 = n.sha256
             WHERE n.trajectory_id = ?1 AND c.state = 'applied'
             ORDER BY n.node_id, n.id",
            params![key.0],
            "reading screenshots",
            |r| {
                let shot = match r.get::<_, Option<String>>(1)? {
                    Some(_) => Some(screenshot_of(r, 1)?),
                    None => None,
                };
                Ok((NodeId(r.get(0)?), shot))
            },
        )?;
        // The newest live row of each state wins (rows come oldest first).
        let mut out: Vec<(NodeId, Option<Screenshot>)> = Vec::new();
        for (node, shot) in rows {
            match out.last_mut() {
                Some(last) if last.0 == node => last.1 = shot,
                _ => out.push((node, shot)),
            }
        }
        Ok(out
            .into_iter()
            .filter_map(|(n, s)| s.map(|s| (n, s)))
            .collect())
    }

    /// The bytes stored under `sha256` (lowercase hex), as imported; never
    /// decoded. `None` when the workspace holds none.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn screenshot_bytes(&self, sha256: &str) -> Result<Option<ScreenshotBytes>> {
        let row: Option<(String, Vec<u8>)> = self
            .conn
            .query_row(
                "SELECT media_type, bytes FROM screenshots WHERE sha256 = ?1",
                params![sha256],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(self.sql_err(format!("reading screenshot {sha256}")))?;
        // Stored within the limit at import, so bounded here too.
        let Some((media, bytes)) = row else {
            return Ok(None);
        };
        Ok(Some(ScreenshotBytes {
            media_type: ImageType::from_media_type(&media).unwrap_or_default(),
            bytes,
        }))
    }
}
