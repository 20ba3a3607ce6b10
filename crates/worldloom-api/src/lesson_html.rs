//! A lesson as one self-contained HTML file, written for teaching offline.
//!
//! Each state of each branch (its initial state, then every turn) is one
//! section, `id="s1"` … `id="sN"`, with the branch and turn, the action, the
//! caption in large type, and the real and shown predicted observations
//! side by side; each section links to the previous and next one and to the
//! contents by `#` anchors. The page shows one section at a time (CSS
//! `:target`; the first when none is targeted), so following the links (or
//! Tab then Enter on them) steps through the lesson.
//!
//! Nothing in the file runs or fetches: no script, no frame, no image, no
//! link other than `#` anchors, inline CSS only, and a
//! Content-Security-Policy of `default-src 'none'` that allows the inline
//! style alone. Observations are untrusted (a predicted page is whatever a
//! model wrote): each is written as escaped source text in a `<pre>`, never
//! as markup, and cut at [`SIDE_MAX_BYTES`] so the file stays bounded.

use std::fmt::Write as _;

/// The most bytes of one observation written into the file; the rest is
/// left out with a line that says how much.
pub const SIDE_MAX_BYTES: usize = 256 * 1024;

/// What the file shows.
pub(crate) struct LessonDoc<'a> {
    /// The lesson's title.
    pub title: &'a str,
    /// Its branches, in order.
    pub branches: Vec<DocBranch<'a>>,
}

/// One branch of a [`LessonDoc`].
pub(crate) struct DocBranch<'a> {
    /// Trajectory and branch name.
    pub heading: String,
    /// The task instruction.
    pub goal: Option<&'a str>,
    /// Its states: the initial state (turn 0), then one per turn.
    pub steps: Vec<DocStep<'a>>,
}

/// One state of a [`DocBranch`].
pub(crate) struct DocStep<'a> {
    /// 0 for the initial state, else the turn that reaches it.
    pub turn: u32,
    /// The action of that turn (none for the initial state).
    pub action: Option<&'a str>,
    /// The recorded observation.
    pub real: Option<&'a str>,
    /// The shown prediction: what it is (`predicted by copy`, `authored`)
    /// and its text.
    pub predicted: Option<(String, &'a str)>,
    /// The caption (the state's note).
    pub caption: Option<&'a str>,
}

/// The built file.
pub(crate) struct LessonHtml {
    /// The HTML.
    pub html: String,
    /// Sections (states) in it.
    pub sections: u32,
}

/// Escapes text for element content and attribute values.
fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// `text` escaped.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape(&mut out, text);
    out
}

const STYLE: &str = "
body{font:20px/1.45 system-ui,sans-serif;margin:0;color:#1d2433;background:#fff}
.page{display:none;padding:24px 32px;min-height:100vh;box-sizing:border-box}
.page:target,body:not(:has(.page:target)) #s1{display:block}
h1{font-size:30px;margin:0 0 8px}h2{font-size:22px;margin:0 0 4px}
.muted{color:#667085}.goal{margin:0 0 8px;color:#475467}
.action{font:18px/1.4 ui-monospace,monospace;background:#f2f4f7;border-radius:4px;padding:2px 8px;white-space:pre-wrap;word-break:break-word}
.caption{font-size:30px;line-height:1.35;margin:14px 0;padding:10px 16px;border-left:6px solid #2f6fde;background:#f6f8fc;white-space:pre-wrap}
.caption.none{font-size:20px;color:#667085;border-left-color:#d0d5dd;background:none}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.side h3{font-size:18px;margin:0 0 4px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f7f9;border:1px solid #d9dde3;border-radius:4px;padding:8px;max-height:60vh;overflow:auto;font-size:15px;margin:0}
nav.steps{display:flex;gap:24px;margin:16px 0;font-size:22px}
nav.steps a{padding:4px 10px;border-radius:4px}
a:focus{outline:3px solid #2f6fde;outline-offset:2px}
ol.contents li{margin:4px 0}
";

/// One observation as escaped text, cut at [`SIDE_MAX_BYTES`].
fn side(out: &mut String, title: &str, text: Option<&str>) {
    let _ = write!(out, "<div class=\"side\"><h3>{}</h3>", esc(title));
    match text {
        None => out.push_str("<p class=\"muted\">(none)</p>"),
        Some(text) => {
            let mut cut = text.len().min(SIDE_MAX_BYTES);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str("<pre>");
            escape(out, &text[..cut]);
            out.push_str("</pre>");
            if cut < text.len() {
                let _ = write!(
                    out,
                    "<p class=\"muted\">(cut here: {} more bytes are in the workspace)</p>",
                    text.len() - cut
                );
            }
        }
    }
    out.push_str("</div>");
}

/// The file for `doc`.
pub(crate) fn build(doc: &LessonDoc) -> LessonHtml {
    let total: usize = doc.branches.iter().map(|b| b.steps.len()).sum();
    let mut contents = String::new();
    let mut body = String::new();
    let mut n = 0usize;
    for (bi, branch) in doc.branches.iter().enumerate() {
        let turns = branch.steps.len().saturating_sub(1);
        let _ = write!(
            contents,
            "<li>{}<ol>",
            esc(&format!("Branch {} — {}", bi + 1, branch.heading))
        );
        for step in &branch.steps {
            n += 1;
            let label = if step.turn == 0 {
                "initial state".to_owned()
            } else {
                format!("turn {} / {turns}", step.turn)
            };
            let _ = write!(
                contents,
                "<li><a href=\"#s{n}\">{}</a>{}</li>",
                esc(&label),
                step.caption
                    .map(|c| format!(" — {}", esc(first_line(c))))
                    .unwrap_or_default()
            );
            let _ = write!(
                body,
                "<section class=\"page step\" id=\"s{n}\" aria-label=\"Step {n} of {total}\">\
                 <p class=\"muted\">{} · step {n} of {total} · branch {} of {}</p><h2>{}</h2>",
                esc(doc.title),
                bi + 1,
                doc.branches.len(),
                esc(&format!("{} — {label}", branch.heading)),
            );
            if let Some(goal) = branch.goal {
                let _ = write!(body, "<p class=\"goal\">Goal: {}</p>", esc(goal));
            }
            if let Some(action) = step.action {
                let _ = write!(
                    body,
                    "<p>Action: <span class=\"action\">{}</span></p>",
                    esc(action)
                );
            }
            match step.caption {
                Some(c) => {
                    let _ = write!(body, "<p class=\"caption\">{}</p>", esc(c));
                }
                None => body.push_str("<p class=\"caption none\">(no caption)</p>"),
            }
            body.push_str("<nav class=\"steps\" aria-label=\"Steps\">");
            if n > 1 {
                let _ = write!(body, "<a href=\"#s{}\" rel=\"prev\">← Previous</a>", n - 1);
            }
            body.push_str("<a href=\"#contents\">Contents</a>");
            if n < total {
                let _ = write!(body, "<a href=\"#s{}\" rel=\"next\">Next →</a>", n + 1);
            }
            body.push_str("</nav><div class=\"sides\">");
            side(&mut body, "Real observation", step.real);
            let (kind, predicted) = match &step.predicted {
                Some((kind, text)) => (format!("Predicted observation ({kind})"), Some(*text)),
                None => ("Predicted observation".to_owned(), None),
            };
            side(&mut body, &kind, predicted);
            body.push_str("</div></section>\n");
        }
        contents.push_str("</ol></li>");
    }
    let title = esc(doc.title);
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
<meta name=\"referrer\" content=\"no-referrer\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{title}</title><style>{STYLE}</style></head>\n<body>\n{body}\
<nav class=\"page\" id=\"contents\" aria-label=\"Contents\"><h1>{title}</h1>\
<p class=\"muted\">Worldloom lesson · {total} steps · observations shown as source text</p>\
<ol class=\"contents\">{contents}</ol></nav>\n</body></html>\n"
    );
    LessonHtml {
        html,
        sections: total as u32,
    }
}

/// The first line of `text`, at most 120 characters.
fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(120) {
        Some((i, _)) => &line[..i],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step<'a>(turn: u32, caption: Option<&'a str>, predicted: &'a str) -> DocStep<'a> {
        DocStep {
            turn,
            action: (turn > 0).then_some("click('12')"),
            real: Some("<p>real</p>"),
            predicted: Some(("predicted by copy".into(), predicted)),
            caption,
        }
    }

    const HOSTILE: &str = "<script>fetch('https://evil.example/x')</script>\
<img src=\"https://evil.example/i.png\" onerror=\"alert(1)\"><iframe src=\"javascript:alert(2)\"></iframe>\
<a href=\"https://evil.example\">x</a><link rel=stylesheet href=//evil.example/s.css>";

    fn doc<'a>() -> LessonDoc<'a> {
        LessonDoc {
            title: "Checkout <demo>",
            branches: vec![
                DocBranch {
                    heading: "shop · recorded".into(),
                    goal: Some("Buy a \"thing\""),
                    steps: vec![step(0, Some("Start"), ""), step(1, None, HOSTILE)],
                },
                DocBranch {
                    heading: "shop · branch at turn 1".into(),
                    goal: None,
                    steps: vec![
                        step(0, None, ""),
                        step(1, Some("Caption </p><script>x</script>"), "ok"),
                    ],
                },
            ],
        }
    }

    /// Every `href="…"` / `src="…"` value of `html`.
    fn urls(html: &str) -> Vec<String> {
        let mut out = Vec::new();
        for attr in ["href=\"", "src=\""] {
            let mut rest = html;
            while let Some(i) = rest.find(attr) {
                rest = &rest[i + attr.len()..];
                let end = rest.find('"').unwrap_or(rest.len());
                out.push(rest[..end].to_owned());
            }
        }
        out
    }

    #[test]
    fn every_state_is_a_section_linked_by_anchors_only() {
        let built = build(&doc());
        let html = &built.html;
        assert_eq!(built.sections, 4);
        for n in 1..=4 {
            assert!(html.contains(&format!("id=\"s{n}\"")), "section {n}");
        }
        assert!(!html.contains("id=\"s5\""));
        // Previous / next chain: 1 → 2 → 3 → 4, and back.
        assert!(html.contains("<a href=\"#s2\" rel=\"next\">"));
        assert!(html.contains("<a href=\"#s4\" rel=\"next\">"));
        assert!(html.contains("<a href=\"#s3\" rel=\"prev\">"));
        assert!(!html.contains("href=\"#s0\""));
        assert!(!html.contains("href=\"#s5\""));
        let links = urls(html);
        assert!(links.len() >= 10, "{links:?}");
        assert!(links.iter().all(|u| u.starts_with('#')), "{links:?}");
        assert!(!html.to_ascii_lowercase().contains("<script"));
        assert!(!html.contains("<iframe") && !html.contains("<img") && !html.contains("<link"));
        assert!(html.contains("default-src 'none'"));
    }

    #[test]
    fn captions_and_hostile_text_are_escaped() {
        let html = build(&doc()).html;
        assert!(html.contains("<p class=\"caption\">Start</p>"));
        assert!(html.contains("Caption &lt;/p&gt;&lt;script&gt;x&lt;/script&gt;"));
        assert!(
            html.contains("&lt;script&gt;fetch(&#39;https://evil.example/x&#39;)&lt;/script&gt;")
        );
        assert!(html.contains("onerror=&quot;alert(1)&quot;"));
        assert!(html.contains("<title>Checkout &lt;demo&gt;</title>"));
        assert!(html.contains("Goal: Buy a &quot;thing&quot;"));
        assert!(html.contains("<p class=\"caption none\">(no caption)</p>"));
        // The contents list the first line of each caption.
        assert!(html.contains("<a href=\"#s1\">initial state</a> — Start</li>"));
    }

    #[test]
    fn long_observations_are_cut_on_a_character_boundary() {
        let long = "é".repeat(SIDE_MAX_BYTES); // two bytes each
        let doc = LessonDoc {
            title: "t",
            branches: vec![DocBranch {
                heading: "h".into(),
                goal: None,
                steps: vec![step(0, None, &long)],
            }],
        };
        let html = build(&doc).html;
        assert!(html.len() < 2 * SIDE_MAX_BYTES, "{}", html.len());
        assert!(html.contains(&format!("(cut here: {} more bytes", SIDE_MAX_BYTES)));
    }
}
