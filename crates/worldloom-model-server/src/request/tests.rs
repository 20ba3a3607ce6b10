//! Reading request bodies: fields to parameters, refusals naming the field.

use super::*;

#[test]
fn request_fields_map_to_params() {
    let body = br#"{"model": "m", "messages": [{"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, {"role": "user", "content": "x"}],
        "max_tokens": 7, "temperature": 0, "top_k": -1, "stop": "END", "stream": true, "stream_options": {"include_usage": true},
        "chat_template_kwargs": {"enable_thinking": false}}"#;
    let r = parse_request(body, "m", &GenerationParams::default()).unwrap();
    assert_eq!(
        r.messages,
        vec![
            ChatMessage::new(ChatRole::System, "ab"),
            ChatMessage::new(ChatRole::User, "x")
        ]
    );
    assert_eq!(r.params.max_new_tokens, 7);
    assert_eq!(r.params.temperature, 0.0);
    assert_eq!(r.params.top_k, 0);
    assert_eq!(r.params.top_p, GenerationParams::default().top_p);
    assert_eq!(r.params.stop, vec!["END".to_owned()]);
    assert!(!r.params.enable_thinking);
    assert!(r.stream && r.include_usage);
}

#[test]
fn bad_requests_name_the_field() {
    let e = parse_request(b"{oops", "m", &GenerationParams::default()).unwrap_err();
    assert_eq!(
        (e.status, e.param.as_deref()),
        (StatusCode::BAD_REQUEST, Some("body"))
    );
    let e = parse_request(
        br#"{"model": "other", "messages": [{"role": "user", "content": "x"}]}"#,
        "m",
        &GenerationParams::default(),
    )
    .unwrap_err();
    assert_eq!(e.status, StatusCode::NOT_FOUND);
    assert!(
        e.message.contains("`other` does not exist"),
        "{}",
        e.message
    );
    let e = parse_request(
        br#"{"model": "m", "messages": [{"role": "tool", "content": "x"}]}"#,
        "m",
        &GenerationParams::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("messages[0].role"), "{}", e.message);
    let e = parse_request(
        br#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "top_p": 2}"#,
        "m",
        &GenerationParams::default(),
    )
    .unwrap_err();
    assert_eq!(e.param.as_deref(), Some("top_p"));
    let e = parse_request(
        br#"{"model": "m", "messages": []}"#,
        "m",
        &GenerationParams::default(),
    )
    .unwrap_err();
    assert_eq!(e.param.as_deref(), Some("messages"));
}

fn refusal(body: &str) -> ApiError {
    parse_request(body.as_bytes(), "m", &GenerationParams::default()).unwrap_err()
}

#[test]
fn unsupported_fields_are_refused_by_name() {
    let chat = r#""model": "m", "messages": [{"role": "user", "content": "x"}]"#;
    for (extra, param) in [
        (
            r#""response_format": {"type": "json_object"}"#,
            "response_format",
        ),
        (r#""tools": [{"type": "function"}]"#, "tools"),
        (r#""tool_choice": "auto""#, "tool_choice"),
        (r#""functions": []"#, "functions"),
        (r#""frobnicate": 1"#, "frobnicate"),
        (
            r#""stream_options": {"continuous_usage_stats": true}"#,
            "stream_options.continuous_usage_stats",
        ),
        (
            r#""chat_template_kwargs": {"foo": 1}"#,
            "chat_template_kwargs.foo",
        ),
        (r#""top_logprobs": 3"#, "top_logprobs"),
        (r#""logprobs": true, "top_logprobs": 21"#, "top_logprobs"),
        (r#""n": 0"#, "n"),
        (r#""min_p": 1.5"#, "min_p"),
        (r#""presence_penalty": 3"#, "presence_penalty"),
        (r#""repetition_penalty": 0"#, "repetition_penalty"),
        (r#""stop_token_ids": ["a"]"#, "stop_token_ids"),
    ] {
        let e = refusal(&format!("{{{chat}, {extra}}}"));
        assert_eq!(
            (e.status, e.param.as_deref()),
            (StatusCode::BAD_REQUEST, Some(param)),
            "{extra}: {}",
            e.message
        );
    }
    // Nulls and the defaults of unsupported features pass.
    let ok = format!(
        r#"{{{chat}, "tools": null, "response_format": {{"type": "text"}}, "tool_choice": "none", "user": "u"}}"#
    );
    assert!(parse_request(ok.as_bytes(), "m", &GenerationParams::default()).is_ok());
}

#[test]
fn sampling_fields_map_to_params() {
    let body = br#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "n": 3, "seed": 9,
        "logprobs": true, "top_logprobs": 5, "min_p": 0.1, "presence_penalty": 0.5, "frequency_penalty": -0.5,
        "repetition_penalty": 1.2, "stop_token_ids": [7, 8], "skip_special_tokens": false}"#;
    let r = parse_request(body, "m", &GenerationParams::default()).unwrap();
    assert_eq!((r.n, r.seed, r.max_tokens_given), (3, Some(9), false));
    let p = &r.params;
    assert!(p.logprobs);
    assert_eq!(p.top_logprobs, 5);
    assert_eq!(
        (
            p.min_p,
            p.presence_penalty,
            p.frequency_penalty,
            p.repetition_penalty
        ),
        (0.1, 0.5, -0.5, 1.2)
    );
    assert_eq!(p.stop_token_ids, vec![7, 8]);
    assert!(!p.skip_special_tokens);
    let d = parse_request(
        br#"{"model": "m", "messages": [{"role": "user", "content": "x"}]}"#,
        "m",
        &GenerationParams::default(),
    )
    .unwrap();
    assert!(d.params.skip_special_tokens, "on by default, as in vLLM");
    assert_eq!((d.n, d.seed), (1, None));
    assert_ne!(fresh_seed(), fresh_seed());
}
