//! Observations: what an environment showed (or what a model predicted it
//! would show) at one state.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::domain::Representation;

/// The marker AgentWorldBench puts in front of every ground-truth observation
/// (`response[]` strings start with it; see the AgentWorldBench README).
pub const AWB_RESPONSE_MARKER: &str = "**Environment Observation:**";

/// One environment state as text, kept exactly as recorded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Observation {
    /// How [`Observation::text`] is to be read.
    pub representation: Representation,
    /// The exact original text (an accessibility tree, an XML dump, terminal
    /// output…). Empty for a failed capture; see [`Observation::error`].
    pub text: String,
    /// The exact prefix that preceded `text` in the source, e.g.
    /// `"**Environment Observation:**\n"` in AgentWorldBench `response[]`
    /// strings. `prefix + text` is the original string.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// Other views of the same state (an AgentLab step has `axtree_txt` as the
    /// main text and `pruned_html` and `dom_txt` as views).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub views: Vec<ObservationView>,
    /// Facts about the state that are not part of its text.
    #[serde(default, skip_serializing_if = "ObservationMeta::is_empty")]
    pub metadata: ObservationMeta,
    /// Set when this step is an error rather than a state: the action failed
    /// (BrowserGym `last_action_error`) or the capture failed (an Android dump
    /// reading `ERROR: could not get idle state.`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StepError>,
}

impl Observation {
    /// An observation with the given representation and text and nothing else.
    pub fn new(representation: Representation, text: impl Into<String>) -> Self {
        Self {
            representation,
            text: text.into(),
            ..Self::default()
        }
    }

    /// The original string: [`Observation::prefix`] followed by the text.
    pub fn original(&self) -> String {
        format!("{}{}", self.prefix, self.text)
    }

    /// The observation as an AgentWorldBench `response` string: the original
    /// string when it carries a prefix, else `**Environment Observation:**\n`
    /// followed by the text.
    pub fn as_awb_response(&self) -> String {
        if self.prefix.is_empty() {
            format!("{AWB_RESPONSE_MARKER}\n{}", self.text)
        } else {
            self.original()
        }
    }

    /// The view with the given representation: the main text when it matches,
    /// else the first matching entry of [`Observation::views`].
    pub fn view(&self, representation: Representation) -> Option<&str> {
        if self.representation == representation {
            return Some(&self.text);
        }
        self.views
            .iter()
            .find(|v| v.representation == representation)
            .map(|v| v.text.as_str())
    }

    /// Every representation available: the main one, then the views'.
    pub fn representations(&self) -> Vec<Representation> {
        let mut out = vec![self.representation];
        for v in &self.views {
            if !out.contains(&v.representation) {
                out.push(v.representation);
            }
        }
        out
    }

    /// Whether this is an error step with no state text.
    pub fn is_error_step(&self) -> bool {
        self.error.is_some() && self.text.trim().is_empty()
    }
}

/// Another rendering of the same state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservationView {
    /// The source's name for the view (`pruned_html`, `dom_txt`, `step_03.tsv`).
    pub name: String,
    /// How the text is to be read.
    pub representation: Representation,
    /// The exact original text.
    pub text: String,
}

/// Facts about a state beside its text. Fields a source has but this struct
/// does not name go to [`ObservationMeta::extra`] unchanged.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ObservationMeta {
    /// The page URL (web).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The page or window title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// BrowserGym `focused_element_bid`: the `bid` of the focused element.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focused_bid: Option<String>,
    /// The screen size, where the source gives one (OS, Android).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<ScreenSize>,
    /// The Android package in the foreground.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// Every other field of the source, unchanged.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl ObservationMeta {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// A screen size in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ScreenSize {
    /// Width in pixels.
    pub width_px: u32,
    /// Height in pixels.
    pub height_px: u32,
}

/// Why a step holds an error instead of (or beside) a state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepError {
    /// What failed.
    pub kind: StepErrorKind,
    /// The source's message, exactly (`Frame has been detached.`).
    pub message: String,
}

/// The kind of a [`StepError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepErrorKind {
    /// The action that led here failed (BrowserGym `last_action_error`).
    Action,
    /// The state could not be captured (a failed uiautomator dump).
    Capture,
}
