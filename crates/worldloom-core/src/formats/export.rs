//! Writing trajectories in an output format: the one list of export formats
//! (the studio's `export` and curricula, `worldloom export`) and the one
//! function that writes each.

use serde::{Deserialize, Serialize};

use super::{awb, sft};
use crate::error::Result;
use crate::native::TrajectoryFile;
use crate::prompt::PromptOptions;
use crate::trajectory::Trajectory;

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// The native Worldloom JSON file (`worldloom-trajectory`).
    Native,
    /// AgentWorldBench JSONL, one row per turn (readable by the official
    /// evaluation script).
    Agentworldbench,
    /// Supervised fine-tuning chat JSONL: `{"messages": [...]}` per turn.
    Sft,
}

/// What [`ExportFormat::export`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The file's text.
    pub text: String,
    /// Records written: trajectories (native) or JSONL rows.
    pub records: usize,
    /// A file name ending for it: `.worldloom.json`, `.awb.jsonl` or
    /// `.sft.jsonl`.
    pub extension: &'static str,
}

impl ExportFormat {
    /// Every format, in the order `worldloom export` lists them.
    pub const ALL: [ExportFormat; 3] = [
        ExportFormat::Agentworldbench,
        ExportFormat::Sft,
        ExportFormat::Native,
    ];

    /// The snake_case name (as in JSON and on the command line).
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Native => "native",
            ExportFormat::Agentworldbench => "agentworldbench",
            ExportFormat::Sft => "sft",
        }
    }

    /// What [`Exported::records`] counts: `trajectories` or `rows`.
    pub fn record_unit(self) -> &'static str {
        match self {
            ExportFormat::Native => "trajectories",
            ExportFormat::Agentworldbench | ExportFormat::Sft => "rows",
        }
    }

    /// Writes `trajectories` in this format (SFT prompts with the default
    /// [`PromptOptions`]).
    ///
    /// # Errors
    /// The SFT exporter's, for a turn whose prompt cannot be built.
    pub fn export(self, trajectories: &[Trajectory]) -> Result<Exported> {
        let (text, extension) = match self {
            ExportFormat::Native => (
                TrajectoryFile::new(trajectories.to_vec()).to_json_string(),
                ".worldloom.json",
            ),
            ExportFormat::Agentworldbench => (awb::export(trajectories), ".awb.jsonl"),
            ExportFormat::Sft => (
                sft::export(trajectories, &PromptOptions::default())?,
                ".sft.jsonl",
            ),
        };
        let records = match self {
            ExportFormat::Native => trajectories.len(),
            ExportFormat::Agentworldbench | ExportFormat::Sft => text.lines().count(),
        };
        Ok(Exported {
            text,
            records,
            extension,
        })
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        let name = s.trim().to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == name)
            .ok_or_else(|| {
                format!("unknown export format `{s}` (expected agentworldbench, sft or native)")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for f in ExportFormat::ALL {
            assert_eq!(f.as_str().parse::<ExportFormat>(), Ok(f));
            assert_eq!(
                serde_json::to_value(f).ok(),
                Some(serde_json::Value::from(f.as_str()))
            );
        }
        assert_eq!("SFT".parse::<ExportFormat>(), Ok(ExportFormat::Sft));
        assert!("jsonl".parse::<ExportFormat>().is_err());
    }

    #[test]
    fn nothing_exports_to_no_rows_or_an_empty_native_file() {
        let rows = ExportFormat::Agentworldbench.export(&[]).expect("awb");
        assert_eq!((rows.records, rows.extension), (0, ".awb.jsonl"));
        let native = ExportFormat::Native.export(&[]).expect("native");
        assert_eq!(native.records, 0);
        assert!(
            native.text.contains("worldloom-trajectory"),
            "{}",
            native.text
        );
    }
}
