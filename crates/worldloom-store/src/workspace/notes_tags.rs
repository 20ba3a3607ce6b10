//! Notes (versioned text on a trajectory or a state) and tags (on a
//! trajectory or a branch leaf).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use worldloom_core::NodeId;

use super::{ChangeId, TrajectoryKey, Workspace, check_live_node, tx_err};
use crate::error::{Result, StoreError};

/// A note's id (`notes.id` of its first version).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct NoteId(pub i64);

/// A note on a trajectory or one of its nodes (current version).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// The note's id (that of its first version).
    pub id: NoteId,
    /// The trajectory.
    pub trajectory: TrajectoryKey,
    /// The node, when the note is about one state.
    pub node: Option<NodeId>,
    /// The current text.
    pub text: String,
    /// When the current version was written (UTC).
    pub updated_at: String,
}

/// A tag set on a trajectory or on one node (a branch is tagged at its leaf).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagRecord {
    /// The trajectory.
    pub trajectory: TrajectoryKey,
    /// The node, when the tag is on a branch or state.
    pub node: Option<NodeId>,
    /// The tag text.
    pub tag: String,
}

impl Workspace {
    /// Adds a note on a trajectory (or one of its nodes) as one change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown trajectory or node.
    pub fn add_note(
        &mut self,
        key: TrajectoryKey,
        node: Option<NodeId>,
        text: &str,
    ) -> Result<NoteId> {
        let summary = format!("note on trajectory {}", key.0);
        let path = self.path.clone();
        self.with_change("add_note", Some(key), &summary, |tx, change| {
            // A note on the trajectory needs its root to be live.
            check_live_node(tx, &path, key, node.unwrap_or(NodeId(0)))?;
            tx.execute(
                "INSERT INTO notes (trajectory_id, node_id, text, change_id) VALUES (?1, ?2, ?3, ?4)",
                params![key.0, node.map(|n| n.0), text, change.0],
            )
            .map_err(tx_err(&path, "adding a note"))?;
            Ok(NoteId(tx.last_insert_rowid()))
        })
    }

    /// Replaces a note's text by adding a new version (an empty text removes
    /// the note from [`Workspace::notes`]). One change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown note.
    pub fn edit_note(&mut self, note: NoteId, text: &str) -> Result<ChangeId> {
        let head: Option<(i64, Option<u32>)> = self
            .conn
            .query_row(
                "SELECT n.trajectory_id, n.node_id FROM notes n JOIN changes c ON c.id = n.change_id
                 WHERE n.id = ?1 AND n.supersedes IS NULL AND c.state = 'applied'",
                params![note.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(self.sql_err("reading a note"))?;
        let Some((trajectory, node)) = head else {
            return Err(StoreError::NotFound(format!("no note {}", note.0)));
        };
        let path = self.path.clone();
        self.with_change("edit_note", Some(TrajectoryKey(trajectory)), &format!("edit note {}", note.0), |tx, change| {
            tx.execute(
                "INSERT INTO notes (trajectory_id, node_id, text, supersedes, change_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![trajectory, node, text, note.0, change.0],
            )
            .map_err(tx_err(&path, "editing a note"))?;
            Ok(change)
        })
    }

    /// The current notes of a trajectory, oldest first (removed notes left
    /// out).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn notes(&self, key: TrajectoryKey) -> Result<Vec<Note>> {
        let rows = self.query_all(
            "SELECT coalesce(n.supersedes, n.id) AS note, n.node_id, n.text, n.created_at FROM notes n
             JOIN changes c ON c.id = n.change_id
             WHERE n.trajectory_id = ?1 AND c.state = 'applied' ORDER BY n.id",
            params![key.0],
            "reading notes",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<u32>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            },
        )?;
        // The newest version of each note wins.
        let current: BTreeMap<i64, Note> = rows
            .into_iter()
            .map(|(id, node, text, updated_at)| {
                let note = Note {
                    id: NoteId(id),
                    trajectory: key,
                    node: node.map(NodeId),
                    text,
                    updated_at,
                };
                (id, note)
            })
            .collect();
        Ok(current
            .into_values()
            .filter(|n| !n.text.is_empty())
            .collect())
    }

    /// Sets (`present = true`) or clears a tag on a trajectory or node. One
    /// change.
    ///
    /// # Errors
    /// [`StoreError::NotFound`] for an unknown trajectory or node;
    /// [`StoreError::Invalid`] for an empty tag.
    pub fn set_tag(
        &mut self,
        key: TrajectoryKey,
        node: Option<NodeId>,
        tag: &str,
        present: bool,
    ) -> Result<ChangeId> {
        let tag = tag.trim();
        if tag.is_empty() {
            return Err(StoreError::Invalid("a tag must not be empty".into()));
        }
        let summary = format!("{} tag `{tag}`", if present { "set" } else { "clear" });
        let path = self.path.clone();
        self.with_change("set_tag", Some(key), &summary, |tx, change| {
            check_live_node(tx, &path, key, node.unwrap_or(NodeId(0)))?;
            tx.execute(
                "INSERT INTO tags (trajectory_id, node_id, tag, present, change_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![key.0, node.map(|n| n.0), tag, present, change.0],
            )
            .map_err(tx_err(&path, "setting a tag"))?;
            Ok(change)
        })
    }

    /// Every tag currently set in the workspace, by trajectory then tag.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn tags(&self) -> Result<Vec<TagRecord>> {
        self.tags_where("1", [])
    }

    /// The tags currently set on one trajectory or its nodes (its part of
    /// [`Workspace::tags`], read alone by key).
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn tags_of(&self, key: TrajectoryKey) -> Result<Vec<TagRecord>> {
        self.tags_where("g.trajectory_id = ?1", params![key.0])
    }

    /// The trajectories and nodes currently carrying exactly `tag`, in the
    /// order the tag was last set on each (a tag cleared and set again moves
    /// to the end): the order of a lesson's branches.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn tagged_in_order(&self, tag: &str) -> Result<Vec<TagRecord>> {
        let rows = self.query_all(
            "SELECT g.id, g.trajectory_id, g.node_id, g.present FROM tags g JOIN changes c ON c.id = g.change_id
             JOIN trajectories t ON t.id = g.trajectory_id JOIN changes tc ON tc.id = t.change_id
             WHERE c.state = 'applied' AND tc.state = 'applied' AND g.tag = ?1 ORDER BY g.id",
            params![tag.trim()],
            "reading a tag's places",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<u32>>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            },
        )?;
        // The newest row per place says whether it is set, and since when.
        let mut current: BTreeMap<(i64, Option<u32>), (i64, bool)> = BTreeMap::new();
        for (id, t, n, present) in rows {
            let since = match current.get(&(t, n)) {
                Some((since, true)) if present => *since,
                _ => id,
            };
            current.insert((t, n), (since, present));
        }
        let mut set: Vec<(i64, TagRecord)> = current
            .into_iter()
            .filter(|(_, (_, present))| *present)
            .map(|((t, n), (since, _))| {
                let record = TagRecord {
                    trajectory: TrajectoryKey(t),
                    node: n.map(NodeId),
                    tag: tag.trim().to_owned(),
                };
                (since, record)
            })
            .collect();
        set.sort_by_key(|(since, _)| *since);
        Ok(set.into_iter().map(|(_, r)| r).collect())
    }

    /// The live trajectories of source format `source_format` that never
    /// had `tag` on the trajectory itself: no record of it, set or cleared
    /// (a tag cleared by hand leaves a record, so it is not listed). In
    /// import order. Reads every trajectory of that format: for a check
    /// when a program starts, not for views.
    ///
    /// # Errors
    /// [`StoreError::Sqlite`].
    pub fn never_tagged(&self, source_format: &str, tag: &str) -> Result<Vec<TrajectoryKey>> {
        self.query_all(
            "SELECT t.id FROM trajectories t JOIN changes c ON c.id = t.change_id
             WHERE c.state = 'applied' AND t.source_format = ?1
               AND NOT EXISTS (SELECT 1 FROM tags g JOIN changes gc ON gc.id = g.change_id
                               WHERE g.trajectory_id = t.id AND g.node_id IS NULL AND g.tag = ?2
                                 AND gc.state = 'applied')
             ORDER BY t.id",
            params![source_format, tag.trim()],
            "finding untagged trajectories",
            |r| Ok(TrajectoryKey(r.get(0)?)),
        )
    }

    /// The tags `filter` (an SQL condition on `g`, the `tags` row) selects.
    fn tags_where(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<TagRecord>> {
        let rows = self.query_all(
            &format!("SELECT g.trajectory_id, g.node_id, g.tag, g.present FROM tags g JOIN changes c ON c.id = g.change_id
             JOIN trajectories t ON t.id = g.trajectory_id JOIN changes tc ON tc.id = t.change_id
             WHERE c.state = 'applied' AND tc.state = 'applied' AND {filter} ORDER BY g.id"),
            args,
            "reading tags",
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<u32>>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, bool>(3)?,
                ))
            },
        )?;
        // The newest row per (trajectory, node, tag) says whether it is set.
        let current: BTreeMap<(i64, Option<u32>, String), bool> = rows
            .into_iter()
            .map(|(t, n, tag, present)| ((t, n, tag), present))
            .collect();
        Ok(current
            .into_iter()
            .filter(|(_, present)| *present)
            .map(|((t, n, tag), _)| TagRecord {
                trajectory: TrajectoryKey(t),
                node: n.map(NodeId),
                tag,
            })
            .collect())
    }
}
