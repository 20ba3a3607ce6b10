//! Domains, observation representations and chat messages: the vocabulary
//! every other Worldloom crate shares.

use serde::{Deserialize, Serialize};

/// The seven environment domains of Qwen-AgentWorld / AgentWorldBench
/// (technical report arXiv 2606.24597, section "Domains").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum Domain {
    /// Model Context Protocol tool servers.
    Mcp,
    /// Web search engines.
    Search,
    /// A shell terminal.
    Terminal,
    /// Software-engineering repositories (edit, run tests).
    Swe,
    /// Web browsers (HTML pages, BrowserGym accessibility trees).
    Web,
    /// Desktop operating systems (accessibility trees).
    Os,
    /// Android devices (uiautomator XML dumps).
    Android,
}

impl Domain {
    /// Every domain, in a stable order.
    pub const ALL: [Domain; 7] = [
        Domain::Mcp,
        Domain::Search,
        Domain::Terminal,
        Domain::Swe,
        Domain::Web,
        Domain::Os,
        Domain::Android,
    ];

    /// The lowercase name used in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Domain::Mcp => "mcp",
            Domain::Search => "search",
            Domain::Terminal => "terminal",
            Domain::Swe => "swe",
            Domain::Web => "web",
            Domain::Os => "os",
            Domain::Android => "android",
        }
    }

    /// Whether observations in this domain are GUI states (trees) rather than text.
    pub fn is_gui(self) -> bool {
        matches!(self, Domain::Web | Domain::Os | Domain::Android)
    }
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Domain {
    type Err = String;

    /// Parses a domain name case-insensitively. AgentWorldBench `task` values
    /// such as `agentworld/web` name the domain in their last `/` part.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let last = s
            .rsplit('/')
            .next()
            .unwrap_or(s)
            .trim()
            .to_ascii_lowercase();
        Domain::ALL
            .into_iter()
            .find(|d| d.as_str() == last)
            .ok_or_else(|| format!("unknown domain `{s}` (expected one of mcp, search, terminal, swe, web, os, android)"))
    }
}

/// How an observation's text is to be read. The default is [`Representation::Text`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum Representation {
    /// An HTML document (full page or BrowserGym `pruned_html`).
    Html,
    /// BrowserGym accessibility-tree text (`[bid] role 'name', prop` lines).
    Axtree,
    /// OS accessibility tree as XML in the OSWorld AT-SPI style.
    OsXml,
    /// OS accessibility tree as OSWorld's linearized table
    /// (`tag name text class description position size`).
    OsTable,
    /// Android uiautomator XML dump.
    AndroidXml,
    /// A JSON document (MCP tool results and similar).
    Json,
    /// Plain text (terminal output, search results, SWE tool output).
    #[default]
    Text,
}

impl Representation {
    /// Every representation, in a stable order.
    pub const ALL: [Representation; 7] = [
        Representation::Html,
        Representation::Axtree,
        Representation::OsXml,
        Representation::OsTable,
        Representation::AndroidXml,
        Representation::Json,
        Representation::Text,
    ];

    /// The kebab-case name used in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Representation::Html => "html",
            Representation::Axtree => "axtree",
            Representation::OsXml => "os-xml",
            Representation::OsTable => "os-table",
            Representation::AndroidXml => "android-xml",
            Representation::Json => "json",
            Representation::Text => "text",
        }
    }

    /// Whether the observation parses into a UI tree (see `worldloom-obs`).
    pub fn is_tree(self) -> bool {
        !matches!(self, Representation::Json | Representation::Text)
    }
}

impl std::fmt::Display for Representation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Representation {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase();
        Representation::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                format!("unknown representation `{s}` (expected one of html, axtree, os-xml, os-table, android-xml, json, text)")
            })
    }
}

/// The speaker of a chat message (OpenAI chat-completions roles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// The system prompt.
    System,
    /// The agent side: an action (and, in AgentWorldBench, the turn prompt).
    User,
    /// The world model side: an observation.
    Assistant,
}

/// One chat message, as sent to a world model (OpenAI chat-completions shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ChatMessage {
    /// Who speaks.
    pub role: ChatRole,
    /// The message text, exactly as sent.
    pub content: String,
}

impl ChatMessage {
    /// A message with the given role and content.
    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_from_task_uses_last_part() {
        assert_eq!("agentworld/web".parse::<Domain>(), Ok(Domain::Web));
        assert_eq!("Android".parse::<Domain>(), Ok(Domain::Android));
        assert!("browser".parse::<Domain>().is_err());
    }

    #[test]
    fn representation_names_round_trip() {
        for r in Representation::ALL {
            assert_eq!(r.as_str().parse::<Representation>(), Ok(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
    }
}
