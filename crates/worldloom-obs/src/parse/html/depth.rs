//! HTML parsing with a cap on element nesting depth.
//!
//! The HTML tree builder (html5ever, as the WHATWG algorithm says) looks
//! through its stack of open elements for many start tags: every `<div>`,
//! `<p>`, `<ul>`, heading and other block element checks whether a `<p>` is
//! open "in button scope", which walks the whole stack when there is none.
//! A page of N nested `<div>`s therefore costs O(N²) (40,000 of them: 5.7 s),
//! while N nested `<span>`s cost O(N).
//!
//! [`parse_document_capped`] sits between the tokenizer and the tree builder
//! and keeps the stack at most [`MAX_HTML_DEPTH`] elements deep below
//! `<body>`: a start tag that would open an element deeper is dropped, with
//! its end tag, and its text goes to the deepest element kept. Browsers do
//! the same (Blink's parser attaches elements deeper than 512 to the
//! 512th). The depth is followed by a model of the stack: end tags close the
//! nearest open element of their name, and the usual implied end tags are
//! applied (`<p>` closed by a block element, `<li>`, `<dd>`/`<dt>`,
//! `<option>`, table rows and cells, headings, `<a>`, `<button>`, ruby
//! annotations), each looking at most [`SCAN_LIMIT`] elements down the stack,
//! so every token costs O(1) and a document O(its length).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts, TreeSink};
use html5ever::{LocalName, TokenizerResult};
use scraper::{Html, HtmlTreeSink};

/// How many elements the tree keeps nested below `<body>` (or `<head>`);
/// deeper start tags are dropped with a [`super::WarningKind::NestingLimit`]
/// warning. The same bound as Blink's HTML parser.
pub const MAX_HTML_DEPTH: usize = 512;

/// How far down the stack an implied end tag looks for the element it
/// closes (`<li>` for the `<li>` before it, a cell for the next cell).
pub const SCAN_LIMIT: usize = 64;

/// Elements that never have content (no end tag, never on the stack).
const VOID: [&str; 19] = [
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img",
    "input", "keygen", "link", "meta", "param", "source", "track", "wbr",
];

/// Start tags that close an open `<p>` (in button scope).
const CLOSES_P: [&str; 38] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "listing",
    "form",
    "table",
    "xmp",
    "li",
    "dd",
];

/// The default scope's boundaries plus `button` (where a `<p>` stops being
/// "in button scope").
const BUTTON_SCOPE: [&str; 10] = [
    "applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button",
];

/// "Special" elements that stop the search for an open `<li>`, `<dd>` or
/// `<dt>` (all of HTML's special elements but `address`, `div` and `p`).
const LIST_ITEM_STOP: [&str; 40] = [
    "applet",
    "aside",
    "article",
    "blockquote",
    "body",
    "button",
    "caption",
    "center",
    "details",
    "dialog",
    "dir",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hgroup",
    "html",
    "iframe",
    "main",
    "marquee",
    "menu",
    "nav",
    "object",
    "ol",
    "pre",
    "section",
    "select",
    "summary",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "ul",
];

/// Elements the model does not count: the document's own `html`, `head`,
/// `body` and `frameset` (the tree builder never opens a second one).
const DOCUMENT: [&str; 4] = ["html", "head", "body", "frameset"];

/// What a capped parse gives besides the document.
#[derive(Debug, Default)]
pub(crate) struct DepthReport {
    /// Start tags dropped for being too deep.
    pub(crate) dropped: usize,
    /// 1-based line of the first dropped start tag.
    pub(crate) first_line: Option<u64>,
    /// Every start tag seen, in order, and whether it reached the tree;
    /// lets the source-span search step over dropped tags.
    pub(crate) starts: Vec<(LocalName, bool)>,
}

type Builder = TreeBuilder<ego_tree::NodeId, HtmlTreeSink>;

/// The tokenizer's sink: forwards tokens to the tree builder, dropping the
/// start and end tags of elements deeper than [`MAX_HTML_DEPTH`].
struct DepthCap {
    builder: Builder,
    /// The model of the stack of open elements: name and whether the tree
    /// builder got it (entries at index `MAX_HTML_DEPTH` and up did not).
    open: RefCell<Vec<LocalName>>,
    /// How many entries of each name `open` holds.
    counts: RefCell<HashMap<LocalName, usize>>,
    /// Open `svg`/`math` elements (self-closing tags count there).
    foreign: Cell<usize>,
    /// Inside a dropped element whose content is text (`<script>`,
    /// `<style>`, `<textarea>`, …): its text is dropped with it.
    in_dropped_text: Cell<bool>,
    report: RefCell<DepthReport>,
}

impl DepthCap {
    fn push(&self, name: &LocalName) {
        self.open.borrow_mut().push(name.clone());
        *self.counts.borrow_mut().entry(name.clone()).or_insert(0) += 1;
        if matches!(&**name, "svg" | "math") {
            self.foreign.set(self.foreign.get() + 1);
        }
    }

    /// Pops entries down to index `len`.
    fn truncate(&self, len: usize) {
        let mut open = self.open.borrow_mut();
        let mut counts = self.counts.borrow_mut();
        while open.len() > len {
            let Some(name) = open.pop() else { break };
            if let Some(c) = counts.get_mut(&name) {
                *c = c.saturating_sub(1);
            }
            if matches!(&*name, "svg" | "math") {
                self.foreign.set(self.foreign.get().saturating_sub(1));
            }
        }
    }

    /// Index of the topmost open element named in `targets`, looking at
    /// most [`SCAN_LIMIT`] entries down and stopping at one in `stops`.
    fn find(&self, targets: &[&str], stops: &[&str]) -> Option<usize> {
        let counts = self.counts.borrow();
        if !targets
            .iter()
            .any(|t| counts.get(&LocalName::from(*t)).is_some_and(|c| *c > 0))
        {
            return None;
        }
        let open = self.open.borrow();
        for (i, name) in open.iter().enumerate().rev().take(SCAN_LIMIT) {
            if targets.contains(&&**name) {
                return Some(i);
            }
            if stops.contains(&&**name) {
                return None;
            }
        }
        None
    }

    fn close(&self, targets: &[&str], stops: &[&str]) {
        if let Some(i) = self.find(targets, stops) {
            self.truncate(i);
        }
    }

    fn pop_top(&self) {
        let len = self.open.borrow().len();
        self.truncate(len.saturating_sub(1));
    }

    fn top_is(&self, names: &[&str]) -> bool {
        self.open
            .borrow()
            .last()
            .is_some_and(|n| names.contains(&&**n))
    }

    /// The end tags a start tag implies, applied to the model.
    fn implied_end_tags(&self, name: &str) {
        if CLOSES_P.contains(&name) || name == "dt" || name == "plaintext" || name == "hr" {
            self.close(&["p"], &BUTTON_SCOPE);
        }
        match name {
            "li" => self.close(&["li"], &LIST_ITEM_STOP),
            "dd" | "dt" => self.close(&["dd", "dt"], &LIST_ITEM_STOP),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
                if self.top_is(&["h1", "h2", "h3", "h4", "h5", "h6"]) =>
            {
                self.pop_top();
            }
            "option" if self.top_is(&["option"]) => self.pop_top(),
            "optgroup" => {
                self.close(&["option"], &["select", "optgroup"]);
                self.close(&["optgroup"], &["select"]);
            }
            "select" => self.close(&["select"], &BUTTON_SCOPE),
            "button" => self.close(&["button"], &BUTTON_SCOPE[..9]),
            "a" | "nobr" => self.close(&[name], &BUTTON_SCOPE[..9]),
            "td" | "th" => self.close(&["td", "th"], &["tr", "table", "template", "html"]),
            "tr" => self.close(&["tr"], &["table", "template", "html"]),
            "tbody" | "thead" | "tfoot" => {
                self.close(&["tbody", "thead", "tfoot"], &["table", "template", "html"])
            }
            "caption" | "colgroup" => self.close(&["caption", "colgroup"], &["table", "html"]),
            "rb" | "rtc" => self.close(&["rb", "rt", "rp", "rtc"], &["ruby", "html"]),
            "rt" | "rp" => self.close(&["rb", "rt", "rp"], &["ruby", "rtc", "html"]),
            _ => {}
        }
    }

    /// Decides whether a tag token reaches the tree builder.
    fn admit(&self, kind: TagKind, name: &LocalName, self_closing: bool, line: u64) -> bool {
        let n: &str = name;
        if DOCUMENT.contains(&n) {
            return true;
        }
        match kind {
            TagKind::StartTag => {
                self.implied_end_tags(n);
                let depth = self.open.borrow().len();
                let keep = depth < MAX_HTML_DEPTH;
                let leaf = VOID.contains(&n)
                    || (self_closing && (self.foreign.get() > 0 || matches!(n, "svg" | "math")));
                if !leaf {
                    self.push(name);
                }
                let mut report = self.report.borrow_mut();
                report.starts.push((name.clone(), keep));
                if !keep {
                    report.dropped += 1;
                    report.first_line.get_or_insert(line);
                }
                keep
            }
            TagKind::EndTag => {
                if n == "br" {
                    return self.open.borrow().len() < MAX_HTML_DEPTH;
                }
                if self.counts.borrow().get(name).copied().unwrap_or(0) == 0 {
                    // Nothing of that name is open: the tree builder ignores
                    // it (or, for `</p>`, makes an empty `<p>`).
                    return n != "p" || self.open.borrow().len() < MAX_HTML_DEPTH;
                }
                let index = self.open.borrow().iter().rposition(|o| o == name);
                match index {
                    Some(i) => {
                        self.truncate(i);
                        i < MAX_HTML_DEPTH
                    }
                    None => true,
                }
            }
        }
    }
}

/// How the tokenizer reads the content of an element whose content is
/// text, as the tree builder would tell it (in HTML content only).
fn text_content(name: &str) -> Option<TokenSinkResult<ego_tree::NodeId>> {
    match name {
        "script" => Some(TokenSinkResult::RawData(RawKind::ScriptData)),
        "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
            Some(TokenSinkResult::RawData(RawKind::Rawtext))
        }
        "textarea" | "title" => Some(TokenSinkResult::RawData(RawKind::Rcdata)),
        "plaintext" => Some(TokenSinkResult::Plaintext),
        _ => None,
    }
}

impl TokenSink for DepthCap {
    type Handle = ego_tree::NodeId;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Self::Handle> {
        match &token {
            Token::TagToken(tag) => {
                if self.in_dropped_text.get() {
                    // Only the element's own end tag ends its text.
                    self.in_dropped_text.set(false);
                }
                let foreign = self.foreign.get() > 0;
                if !self.admit(tag.kind, &tag.name, tag.self_closing, line_number) {
                    if tag.kind == TagKind::StartTag
                        && !foreign
                        && let Some(result) = text_content(&tag.name)
                    {
                        self.in_dropped_text.set(true);
                        return result;
                    }
                    return TokenSinkResult::Continue;
                }
            }
            Token::CharacterTokens(_) | Token::NullCharacterToken if self.in_dropped_text.get() => {
                return TokenSinkResult::Continue;
            }
            _ => {}
        }
        self.builder.process_token(token, line_number)
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// Parses a whole HTML document as `scraper::Html::parse_document` does
/// (same tokenizer and tree-builder options), keeping elements at most
/// [`MAX_HTML_DEPTH`] deep. Linear in the input's length.
pub(crate) fn parse_document_capped(input: &str) -> (Html, DepthReport) {
    let builder = TreeBuilder::new(
        HtmlTreeSink::new(Html::new_document()),
        TreeBuilderOpts::default(),
    );
    let tokenizer = Tokenizer::new(
        DepthCap {
            builder,
            open: RefCell::new(Vec::new()),
            counts: RefCell::new(HashMap::new()),
            foreign: Cell::new(0),
            in_dropped_text: Cell::new(false),
            report: RefCell::new(DepthReport::default()),
        },
        TokenizerOpts::default(),
    );
    let queue = BufferQueue::default();
    queue.push_back(StrTendril::from(input));
    // A `</script>` pauses the tokenizer (for a script to run); nothing runs
    // here, so it resumes at once.
    while let TokenizerResult::Script(_) = tokenizer.feed(&queue) {}
    tokenizer.end();
    let report = tokenizer.sink.report.take();
    (tokenizer.sink.builder.sink.finish(), report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{WarningKind, parse_html};

    fn nested(tag: &str, levels: usize, inner: &str) -> String {
        let mut s = String::from("<html><body>");
        s.push_str(&format!("<{tag}>").repeat(levels));
        s.push_str(inner);
        s.push_str(&format!("</{tag}>").repeat(levels));
        s.push_str("</body></html>");
        s
    }

    #[test]
    fn deep_nesting_is_capped_with_one_warning() {
        for tag in ["div", "span", "section", "b"] {
            let p = parse_html(&nested(tag, 100_000, "bottom"));
            // #document, html, head, body, then MAX_HTML_DEPTH elements.
            assert_eq!(p.tree.len(), 4 + MAX_HTML_DEPTH, "{tag}");
            assert_eq!(p.tree.max_depth() as usize, 2 + MAX_HTML_DEPTH, "{tag}");
            let deepest = &p.tree.nodes[p.tree.len() - 1];
            assert_eq!(
                (deepest.role.as_str(), deepest.name.as_str()),
                (tag, "bottom")
            );
            assert_eq!(p.warnings.len(), 1, "{tag}: {:?}", p.warnings);
            let w = &p.warnings[0];
            assert_eq!(w.kind, WarningKind::NestingLimit);
            assert_eq!((w.line, w.byte), (1, 0));
            assert!(
                w.message
                    .contains(&format!("{} deeper start tag(s)", 100_000 - MAX_HTML_DEPTH)),
                "{}",
                w.message
            );
        }
    }

    #[test]
    fn nesting_up_to_the_cap_is_kept_whole() {
        let p = parse_html(&nested("div", MAX_HTML_DEPTH, "x"));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(p.tree.len(), 4 + MAX_HTML_DEPTH);
        let p = parse_html(&nested("div", MAX_HTML_DEPTH + 1, "x"));
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.tree.len(), 4 + MAX_HTML_DEPTH);
    }

    #[test]
    fn implied_end_tags_do_not_count_as_depth() {
        // Thousands of elements whose end tags are implied stay siblings:
        // nothing is dropped.
        let mut page = String::from("<body><ul>");
        page.push_str(&"<li>item".repeat(2_000));
        page.push_str("</ul>");
        page.push_str(&"<p>para".repeat(2_000));
        page.push_str("<dl>");
        page.push_str(&"<dt>term<dd>def".repeat(1_000));
        page.push_str("</dl><table>");
        page.push_str(&"<tr><td>a<td>b".repeat(1_000));
        page.push_str("</table><select>");
        page.push_str(&"<option>o".repeat(1_000));
        page.push_str("</select>");
        page.push_str(&"<h2>h<h3>k".repeat(1_000));
        page.push_str(&"<a href=x>link".repeat(1_000));
        let p = parse_html(&page);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let count = |role: &str| p.tree.iter().filter(|n| n.role == role).count();
        assert_eq!(count("li"), 2_000);
        assert_eq!(count("p"), 2_000);
        assert_eq!((count("dt"), count("dd")), (1_000, 1_000));
        assert_eq!((count("tr"), count("td")), (1_000, 2_000));
        assert_eq!(count("option"), 1_000);
        assert_eq!((count("h2"), count("h3")), (1_000, 1_000));
        assert_eq!(count("a"), 1_000);
        assert!(p.tree.max_depth() < 10, "{}", p.tree.max_depth());
    }

    #[test]
    fn content_after_a_too_deep_region_keeps_its_place_and_span() {
        let mut page = String::from("<body><div id=\"outer\">");
        page.push_str(&"<div>".repeat(MAX_HTML_DEPTH + 100));
        // A dropped script's text is dropped with it, and its `</div>`s
        // stay text.
        page.push_str("deep<script>let s = '</div></div>';</script>");
        page.push_str(&"</div>".repeat(MAX_HTML_DEPTH + 100));
        let after_at = page.len();
        page.push_str("<p id=\"after\">after</p></div><p id=\"last\">last</p>");
        let p = parse_html(&page);
        assert_eq!(p.warnings.len(), 1);
        let node = |key: &str| {
            p.tree
                .iter()
                .find(|n| n.key.as_deref() == Some(key))
                .unwrap_or_else(|| panic!("no node {key}"))
        };
        let outer = node("outer");
        let after = node("after");
        assert_eq!(after.parent, Some(outer.id));
        assert_eq!(after.name, "after");
        assert_eq!(after.span.map(|s| s.start_byte), Some(after_at));
        assert_eq!(node("last").parent, outer.parent);
        // The deepest kept div holds the text of the dropped ones.
        let deep = p.tree.iter().find(|n| n.name == "deep").expect("deep text");
        assert_eq!(deep.depth as usize, 2 + MAX_HTML_DEPTH);
    }
}
