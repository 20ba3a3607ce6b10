//! Tests of parsing whole outputs.

use super::*;

#[test]
fn ok_with_reasoning() {
    let p = parse_model_output(
        "<think>a</think>\n<predicted_observation>\nX\n</predicted_observation>",
    );
    assert_eq!(p.status, OutputStatus::Ok);
    assert_eq!(p.observation.as_deref(), Some("X"));
    assert_eq!(p.reasoning, "a");
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

#[test]
fn lone_closing_think() {
    let p = parse_model_output(
        "plan the page\n</think>\n\n<predicted_observation>[1] button 'OK'</predicted_observation>",
    );
    assert_eq!(p.status, OutputStatus::Ok);
    assert_eq!(p.observation.as_deref(), Some("[1] button 'OK'"));
    assert_eq!(p.reasoning, "plan the page");
}

#[test]
fn nested_think_hides_drafts() {
    let raw = "<think>outer <think>inner</think> draft <predicted_observation>DRAFT</predicted_observation></think><predicted_observation>FINAL</predicted_observation>";
    let p = parse_model_output(raw);
    assert_eq!(p.observation.as_deref(), Some("FINAL"));
    assert!(p.reasoning.contains("DRAFT"));
    assert_eq!(p.status, OutputStatus::Ok);
}

#[test]
fn last_block_wins_and_marker_is_stripped() {
    let raw = "<predicted_observation>first</predicted_observation> then <predicted_observation>**Environment Observation:**\nsecond</predicted_observation>";
    let p = parse_model_output(raw);
    assert_eq!(p.observation.as_deref(), Some("second"));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("2 <predicted_observation> blocks"))
    );
}

#[test]
fn unclosed_block_is_truncated() {
    let p = parse_model_output("</think><predicted_observation><hierarchy><node text='a'/>");
    assert_eq!(p.status, OutputStatus::Truncated);
    assert_eq!(
        p.observation.as_deref(),
        Some("<hierarchy><node text='a'/>")
    );
}

#[test]
fn tag_like_text_inside_observation_is_content() {
    let raw = "<predicted_observation><div><think>literal</think></div>\n<PREDICTED_OBSERVATION> x</predicted_observation>";
    let p = parse_model_output(raw);
    assert_eq!(
        p.observation.as_deref(),
        Some("<div><think>literal</think></div>\n<PREDICTED_OBSERVATION> x")
    );
    assert_eq!(p.reasoning, "");
}

#[test]
fn cut_off_inside_think_is_no_observation() {
    let p = parse_model_output("<think>The click opens the cart. <predicted_observation>draft");
    assert_eq!(p.status, OutputStatus::NoObservation);
    assert_eq!(p.observation, None);
    assert!(p.reasoning.starts_with("The click opens the cart."));
    assert!(p.warnings.iter().any(|w| w.contains("never closed")));
}

#[test]
fn untagged_answer_is_no_observation() {
    let p = parse_model_output("The page now shows the cart.");
    assert_eq!(p.status, OutputStatus::NoObservation);
    assert_eq!(p.observation, None);
}

#[test]
fn empty_and_whitespace() {
    assert_eq!(parse_model_output("").status, OutputStatus::Empty);
    assert_eq!(parse_model_output(" \n\t").status, OutputStatus::Empty);
    assert_eq!(
        parse_model_output("<think></think>").status,
        OutputStatus::Empty
    );
}

#[test]
fn reasoning_only_openai_answer_is_no_observation_never_a_match() {
    let p = parse_openai_message(
        Some(""),
        Some("thinking... <predicted_observation>X</predicted_observation>"),
    );
    assert_eq!(p.status, OutputStatus::NoObservation);
    assert_eq!(p.observation, None);
    assert!(p.reasoning.contains("thinking"));
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("all text is in reasoning_content"))
    );
    let p = parse_openai_message(None, Some("r"));
    assert_eq!(p.status, OutputStatus::NoObservation);
    // Nothing at all, reasoning included, stays empty.
    assert_eq!(
        parse_openai_message(Some(""), Some(" \n")).status,
        OutputStatus::Empty
    );
    assert_eq!(parse_openai_message(None, None).status, OutputStatus::Empty);
}

/// The output cut off inside reasoning, as each path receives it: inline
/// with the think block opened by the output, inline with the block
/// opened by the prompt (a local engine), and apart from an empty answer
/// (an OpenAI-compatible server with a reasoning parser).
fn cut_inside_reasoning() -> Vec<ModelOutput> {
    let reasoning = "The click opens the cart. <predicted_observation>draft";
    let mut inline = OutputParser::new(false);
    inline.push(&format!("<think>{reasoning}"));
    let mut prompt_opened = OutputParser::new(true);
    prompt_opened.push(reasoning);
    let mut apart = OutputParser::new(false);
    apart.push_reasoning(reasoning);
    apart.push("");
    vec![
        inline.finish_output(),
        prompt_opened.finish_output(),
        apart.finish_output(),
    ]
}

#[test]
fn output_cut_inside_reasoning_gets_one_status_however_it_arrives() {
    for output in cut_inside_reasoning() {
        let p = &output.parsed;
        assert_eq!(p.status, OutputStatus::NoObservation, "{output:?}");
        assert_eq!(p.observation, None);
        assert!(p.reasoning.starts_with("The click opens the cart."));
        assert_eq!(output.answer, "");
        for stop in [
            None,
            Some(StopReason::EndOfTurn),
            Some(StopReason::StopString),
            Some(StopReason::Cancelled),
        ] {
            assert_eq!(output_status(p, stop), OutputStatus::NoObservation);
        }
    }
}

#[test]
fn the_token_limit_makes_output_without_an_observation_truncated() {
    for mut output in cut_inside_reasoning() {
        output.settle(Some(StopReason::MaxTokens));
        let p = &output.parsed;
        assert_eq!(p.status, OutputStatus::Truncated, "{output:?}");
        // The reasoning is kept and never taken as the observation.
        assert_eq!(p.observation, None);
        assert!(p.reasoning.starts_with("The click opens the cart."));
        assert!(p.warnings.iter().any(|w| w.contains("token limit")));
        // Deciding again changes nothing, whatever is known now.
        let before = output.clone();
        output.settle(Some(StopReason::MaxTokens));
        output.settle(None);
        assert_eq!(output, before);
    }
    // Text outside blocks cut at the limit is truncated too.
    let mut p = parse_model_output("The page now shows the ca");
    p.settle(Some(StopReason::MaxTokens));
    assert_eq!((p.status, p.observation), (OutputStatus::Truncated, None));
    // An open block is truncated with its content, whatever the reason.
    let open = parse_model_output("</think><predicted_observation><hierarchy>");
    for stop in [
        None,
        Some(StopReason::MaxTokens),
        Some(StopReason::EndOfTurn),
    ] {
        assert_eq!(output_status(&open, stop), OutputStatus::Truncated);
    }
    assert_eq!(open.observation.as_deref(), Some("<hierarchy>"));
    // A closed block is ok even when generation went on to the limit.
    let closed = parse_model_output("<predicted_observation>X</predicted_observation> and on");
    assert_eq!(
        output_status(&closed, Some(StopReason::MaxTokens)),
        OutputStatus::Ok
    );
    // Nothing generated stays empty.
    let mut empty = parse_model_output("");
    empty.settle(Some(StopReason::MaxTokens));
    assert_eq!(empty.status, OutputStatus::Empty);
    assert!(empty.warnings.is_empty());
}

#[test]
fn stop_reasons_read_finish_reasons_and_keep_their_names() {
    assert_eq!(
        StopReason::from_finish_reason("length", false),
        StopReason::MaxTokens
    );
    assert_eq!(
        StopReason::from_finish_reason("stop", false),
        StopReason::EndOfTurn
    );
    assert_eq!(
        StopReason::from_finish_reason("stop", true),
        StopReason::StopString
    );
    assert_eq!(
        StopReason::from_finish_reason("tool_calls", false),
        StopReason::EndOfTurn
    );
    for (reason, name) in [
        (StopReason::EndOfTurn, "end_of_turn"),
        (StopReason::StopString, "stop_string"),
        (StopReason::ObservationClosed, "observation_closed"),
        (StopReason::MaxTokens, "max_tokens"),
        (StopReason::Cancelled, "cancelled"),
    ] {
        assert_eq!(
            serde_json::to_value(reason).expect("json"),
            serde_json::json!(name)
        );
        assert_eq!(reason.as_str(), name);
        assert_eq!(name.parse::<StopReason>(), Ok(reason));
    }
    assert_eq!("length".parse::<StopReason>(), Ok(StopReason::MaxTokens));
    let err = "later".parse::<StopReason>().expect_err("unknown");
    assert!(err.contains("unknown stop reason `later`"), "{err}");
}

#[test]
fn non_ascii_around_tags() {
    let p =
        parse_model_output("思考</think><predicted_observation>语言 °F</predicted_observation>");
    assert_eq!(p.observation.as_deref(), Some("语言 °F"));
    assert_eq!(p.reasoning, "思考");
}
