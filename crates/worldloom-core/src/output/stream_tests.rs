//! The stream parser against the whole-text parser, output by output and split at every byte.

use super::*;

/// Outputs covering each rule, with the prompt-opened flag.
const OUTPUTS: &[(&str, bool)] = &[
    (
        "<think>a</think>\n<predicted_observation>\nX\n</predicted_observation>",
        false,
    ),
    (
        "plan the page\n</think>\n\n<predicted_observation>[1] button 'OK'</predicted_observation>",
        false,
    ),
    (
        "plan the page\n</think>\n\n<predicted_observation>[1] button 'OK'</predicted_observation>",
        true,
    ),
    (
        "<think>outer <think>inner</think> draft <predicted_observation>DRAFT</predicted_observation></think><predicted_observation>FINAL</predicted_observation>",
        false,
    ),
    (
        "<predicted_observation>first</predicted_observation> then <predicted_observation>**Environment Observation:**\nsecond</predicted_observation>",
        false,
    ),
    (
        "</think><predicted_observation><hierarchy><node text='a'/>",
        false,
    ),
    (
        "<predicted_observation><div><think>literal</think></div>\n<PREDICTED_OBSERVATION> x</predicted_observation>",
        false,
    ),
    (
        "<think>The click opens the cart. <predicted_observation>draft",
        false,
    ),
    ("The page now shows the cart.", false),
    ("The page now shows the cart.", true),
    (" \n\t", false),
    ("<think></think>", false),
    (
        "思考</think><predicted_observation>语言 °F  \n</predicted_observation>trailing",
        true,
    ),
    (
        "<THINK>r</Think>\n\n<Predicted_Observation>\n**Environment Observation:**  a < b </p\n</predicted_observation>",
        false,
    ),
    ("cut off while thinking </thi", true),
    ("", true),
];

fn parse(chunks: &[&str], starts_in_reasoning: bool) -> (OutputDelta, ModelOutput) {
    let mut parser = OutputParser::new(starts_in_reasoning);
    let mut all = OutputDelta::default();
    for chunk in chunks {
        all.extend(parser.push(chunk));
    }
    all.extend(parser.flush());
    (all, parser.finish_output())
}

fn char_bounds(text: &str) -> Vec<usize> {
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect()
}

#[test]
fn every_chunking_gives_the_whole_text_result() {
    for &(text, opened) in OUTPUTS {
        let (whole_delta, whole) = parse(&[text], opened);
        // two chunks, split anywhere
        for i in char_bounds(text) {
            let (delta, out) = parse(&[&text[..i], &text[i..]], opened);
            assert_eq!(out, whole, "{text:?} split at {i}");
            assert_eq!(delta, whole_delta, "{text:?} split at {i}");
        }
        // one character at a time
        let bounds = char_bounds(text);
        let chars: Vec<&str> = bounds.windows(2).map(|w| &text[w[0]..w[1]]).collect();
        let (delta, out) = parse(&chars, opened);
        assert_eq!(out, whole, "{text:?} char by char");
        assert_eq!(delta, whole_delta, "{text:?} char by char");
    }
}

#[test]
fn deltas_match_the_parse_for_single_block_outputs() {
    for &(text, opened) in OUTPUTS {
        let (delta, out) = parse(&[text], opened);
        let parsed = &out.parsed;
        if !text.to_ascii_lowercase().contains("observation> then")
            && !text.contains("DRAFT")
            && !text.starts_with("</think><pred")
        {
            assert_eq!(
                delta.observation,
                parsed.observation.clone().unwrap_or_default(),
                "{text:?}"
            );
            assert_eq!(delta.reasoning.trim(), parsed.reasoning, "{text:?}");
        }
        assert_eq!(
            delta.observation_closed,
            parsed.status == OutputStatus::Ok,
            "{text:?}"
        );
        if !text.contains("DRAFT") {
            assert_eq!(delta.answer, out.answer, "{text:?}");
        }
    }
}

#[test]
fn deltas_stream_without_partial_tags() {
    let mut p = OutputParser::new(true);
    assert_eq!(p.push("plan </th").reasoning, "plan ");
    let d = p.push("ink>\n<predicted_observation>\n**Environment");
    assert_eq!((d.reasoning.as_str(), d.observation.as_str()), ("", ""));
    let d = p.push(" Observation:**\nls\n  ");
    assert_eq!(d.observation, "ls");
    let d = p.push("a.txt </predicted_obs");
    assert_eq!(d.observation, "\n  a.txt");
    assert!(!d.observation_closed);
    let d = p.push("ervation>tail");
    assert_eq!(d.observation, "");
    assert!(d.observation_closed);
    let out = p.finish_output();
    assert_eq!(out.parsed.observation.as_deref(), Some("ls\n  a.txt"));
    assert_eq!(out.parsed.reasoning, "plan");
    assert_eq!(
        out.answer,
        "<predicted_observation>\n**Environment Observation:**\nls\n  a.txt </predicted_observation>tail"
    );
}

/// (reasoning, answer) of `chunks` pushed one by one, the prompt not
/// having opened the think block (the OpenAI client's case).
fn split_all(chunks: &[&str]) -> (String, String) {
    let (delta, out) = parse(chunks, false);
    assert_eq!(delta.answer, out.answer, "{chunks:?}");
    (delta.reasoning, delta.answer)
}

#[test]
fn think_tags_split_across_chunks() {
    let (r, c) = split_all(&[
        "<th",
        "ink>plan ",
        "it</th",
        "ink>\n\n<predicted_observation>x</predicted_observation>",
    ]);
    assert_eq!(r, "plan it");
    // line breaks right after the think block are not answer
    assert_eq!(c, "<predicted_observation>x</predicted_observation>");
}

#[test]
fn closing_tag_only_means_reasoning_before_it() {
    let (r, c) = split_all(&[
        "the cursor ",
        "moves</think>",
        "<predicted_observation>ok</predicted_observation>",
    ]);
    assert_eq!(r, "the cursor moves");
    assert_eq!(c, "<predicted_observation>ok</predicted_observation>");
}

#[test]
fn no_tags_is_all_answer() {
    let (r, c) = split_all(&["<pre", "dicted_observation>a</predicted_observation>"]);
    assert_eq!(r, "");
    assert_eq!(c, "<predicted_observation>a</predicted_observation>");
    let (r, c) = split_all(&["plain text"]);
    assert_eq!((r.as_str(), c.as_str()), ("", "plain text"));
}

#[test]
fn unclosed_think_is_reasoning() {
    let (r, c) = split_all(&["<think>still going </"]);
    assert_eq!(r, "still going </");
    assert_eq!(c, "");
}

#[test]
fn push_to_close_stops_after_the_block() {
    let mut p = OutputParser::new(false);
    let mut delta = OutputDelta::default();
    for chunk in ["\n<th", "ink>", "abc</th", "ink>\n", "\n<predicted_"] {
        let (d, taken) = p.push_to_close(chunk);
        assert_eq!(taken, chunk.len());
        delta.extend(d);
    }
    let chunk = "observation>x</predicted_observation>more";
    let (d, taken) = p.push_to_close(chunk);
    delta.extend(d);
    assert_eq!(&chunk[..taken], "observation>x</predicted_observation>");
    assert_eq!(delta.reasoning, "abc");
    assert_eq!(delta.observation, "x");
    assert_eq!(
        delta.answer,
        "<predicted_observation>x</predicted_observation>"
    );
    assert!(delta.observation_closed);
    // a draft inside reasoning does not count
    let mut p = OutputParser::new(true);
    let (d, taken) = p.push_to_close("<predicted_observation>d</predicted_observation> r");
    assert_eq!((d.observation_closed, taken), (false, 50));
}

#[test]
fn undecided_text_waits_for_a_lone_close() {
    let mut p = OutputParser::new(false);
    assert!(p.push("the cursor ").is_empty());
    let d = p.push("moves</think><predicted_observation>ok");
    assert_eq!(d.reasoning, "the cursor moves");
    assert_eq!(d.observation, "ok");
}

#[test]
fn answers_and_prompt_opened_reasoning() {
    let (_, out) = parse(&["cut off"], true);
    assert_eq!(out.parsed.status, OutputStatus::NoObservation);
    assert_eq!(out.parsed.reasoning, "cut off");
    assert_eq!(out.answer, "");
    assert!(
        out.parsed
            .warnings
            .iter()
            .any(|w| w.contains("never closed"))
    );
    let (_, out) = parse(&["cut off"], false);
    assert_eq!(out.parsed.reasoning, "");
    assert_eq!(out.answer, "cut off");
    // line breaks are dropped after a think block only
    let (delta, out) = parse(&["\n\n<predicted_observation>x"], false);
    assert_eq!(out.answer, "\n\n<predicted_observation>x");
    assert_eq!(delta.answer, out.answer);
    let (_, out) = parse(
        &["r</think>\n\n<predicted_observation>x</predicted_observation>"],
        true,
    );
    assert_eq!(
        out.answer,
        "<predicted_observation>x</predicted_observation>"
    );
    assert_eq!(
        out.raw,
        "r</think>\n\n<predicted_observation>x</predicted_observation>"
    );
    assert_eq!(out.reasoning_content, None);
}

#[test]
fn separate_reasoning_comes_first() {
    let mut p = OutputParser::new(false);
    assert_eq!(p.push_reasoning("the file ").reasoning, "the file ");
    p.push_reasoning("is created");
    p.push("<think>inline</think><predicted_observation>ok</predicted_observation>");
    let out = p.finish_output();
    assert_eq!(out.parsed.reasoning, "the file is created\n\ninline");
    assert_eq!(
        out.reasoning_content.as_deref(),
        Some("the file is created")
    );
    assert_eq!(out.parsed.status, OutputStatus::Ok);
}

#[test]
fn observation_shares_cut_tokens_that_straddle_a_tag() {
    let texts = [
        "an error. ",
        "</think>\n",
        "<predicted_",
        "observation>\n<p>",
        "a</p>\n",
        "</predicted_observation>",
    ];
    let shares = observation_shares(&texts).expect("a block");
    assert_eq!(shares, vec!["", "", "", "<p>", "a</p>", ""]);
    assert_eq!(observation_shares(&["<div>", "x"]), None);
    assert_eq!(
        observation_shares(&["<predicted_observation>\n", "<div>", "x"]),
        Some(vec!["".to_owned(), "<div>".to_owned(), "x".to_owned()])
    );
}

#[test]
fn helpers() {
    assert_eq!(
        format_observation("a.txt"),
        "<predicted_observation>\na.txt\n</predicted_observation>"
    );
    assert_eq!(
        parse_model_output(&format_observation(" x "))
            .observation
            .as_deref(),
        Some("x")
    );
    assert!(opens_reasoning("<|im_start|>assistant\n<think>\n"));
    assert!(!opens_reasoning(
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    ));
    assert!(!opens_reasoning("<|im_start|>assistant\n"));
}
