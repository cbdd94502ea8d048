//! Both wire clients against the scripted provider: streamed text, one and
//! parallel tool calls with arguments split mid-token, usage, retries of
//! busy answers honouring `Retry-After`, refused keys and unknown models
//! with their hints, cut and malformed streams, selection from the
//! environment, and tool calls written as text.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use nexo_client::secret::Secret;
use nexo_hint::Hinted;
use nexo_host::error::ProviderError;
use nexo_host::provider::{
    Event, Message, Provider, ProviderConfig, ProviderKind, Request, RetryPolicy, Settings,
    StopReason, ToolDefinition, select, tool_calls_in_text,
};
use nexo_scripted_llm::{Call, Script, ScriptedLlm, Turn};
use serde_json::json;

const KEY: &str = "sk-test-9f3a71";
const KINDS: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::OpenAi];

async fn start(turns: Vec<Turn>) -> ScriptedLlm {
    match ScriptedLlm::start(Script::new(turns)).await {
        Ok(server) => server,
        Err(error) => panic!("cannot start the scripted provider: {error}"),
    }
}

fn base(server: &ScriptedLlm, kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Anthropic => server.url().to_owned(),
        ProviderKind::OpenAi => format!("{}/v1", server.url()),
    }
}

fn provider(server: &ScriptedLlm, kind: ProviderKind) -> Provider {
    let config = ProviderConfig {
        kind,
        model: "scripted-model".to_owned(),
        base_url: base(server, kind),
        api_key: Some(Secret::new(KEY)),
        retry: RetryPolicy {
            max_tries: 3,
            first_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(5),
        },
    };
    match Provider::new(config) {
        Ok(provider) => provider,
        Err(error) => panic!("cannot build the provider: {error}"),
    }
}

fn tools() -> Vec<ToolDefinition> {
    ["utils__echo", "utils__time"]
        .into_iter()
        .map(|name| ToolDefinition {
            name: name.to_owned(),
            description: format!("the {name} tool"),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        })
        .collect()
}

/// Streams one answer; gives its events and the answer (or the error).
async fn ask(
    provider: &Provider,
) -> (
    Vec<Event>,
    Result<nexo_host::provider::Answer, ProviderError>,
) {
    let messages = [Message::user("hello")];
    let tools = tools();
    let request = Request {
        system: Some("be brief"),
        messages: &messages,
        tools: &tools,
        max_tokens: 256,
    };
    let mut reply = match provider.stream(&request).await {
        Ok(reply) => reply,
        Err(error) => return (Vec::new(), Err(error)),
    };
    let mut events = Vec::new();
    loop {
        match reply.next().await {
            Ok(Some(event)) => events.push(event),
            Ok(None) => break,
            Err(error) => return (events, Err(error)),
        }
    }
    (events, reply.finish().await)
}

fn failure(
    result: Result<nexo_host::provider::Answer, ProviderError>,
    case: &str,
) -> ProviderError {
    match result {
        Ok(answer) => panic!("{case}: expected an error, got {answer:?}"),
        Err(error) => error,
    }
}

#[tokio::test]
async fn streamed_text_and_usage() {
    for kind in KINDS {
        let server = start(vec![Turn::text("Hello there, friend")]).await;
        let (events, answer) = ask(&provider(&server, kind)).await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(error) => panic!("{kind}: {error}"),
        };
        let deltas = events
            .iter()
            .filter(|event| matches!(event, Event::TextDelta(_)))
            .count();
        assert!(deltas > 1, "{kind}: text came in one piece: {events:?}");
        assert_eq!(answer.message.text(), "Hello there, friend", "{kind}");
        assert_eq!(answer.stop, StopReason::EndTurn, "{kind}");
        assert_eq!(
            (answer.usage.input_tokens, answer.usage.output_tokens),
            (12, 7),
            "{kind}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        let sent = &requests[0];
        assert_eq!(sent.body["stream"], json!(true));
        assert_eq!(sent.body["max_tokens"], json!(256));
        match kind {
            ProviderKind::Anthropic => {
                assert_eq!(sent.path, "/v1/messages");
                assert_eq!(sent.header("x-api-key"), Some(KEY));
                assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(sent.body["system"], json!("be brief"));
                assert_eq!(
                    sent.body["tools"][0]["input_schema"]["type"],
                    json!("object")
                );
            }
            ProviderKind::OpenAi => {
                assert_eq!(sent.path, "/v1/chat/completions");
                assert_eq!(
                    sent.header("authorization"),
                    Some(&*format!("Bearer {KEY}"))
                );
                assert_eq!(sent.body["stream_options"]["include_usage"], json!(true));
                assert_eq!(sent.body["messages"][0]["role"], json!("system"));
                assert_eq!(sent.body["tools"][0]["type"], json!("function"));
            }
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn single_and_parallel_tool_calls_are_assembled() {
    let long = "a longer text, so that its JSON is cut mid-token: \"quoted\" ü";
    for kind in KINDS {
        let server = start(vec![
            Turn::tool_calls(vec![Call::new("call_a", "utils__time", json!({}))]),
            Turn::Reply(nexo_scripted_llm::Reply {
                text: "Two calls.".to_owned(),
                tool_calls: vec![
                    Call::new("call_1", "utils__echo", json!({"text": long})),
                    Call::new("call_2", "utils__time", json!({"zone": "Europe/Madrid"})),
                ],
                ..Default::default()
            }),
        ])
        .await;
        let provider = provider(&server, kind);
        let (_, single) = ask(&provider).await;
        let single = match single {
            Ok(answer) => answer,
            Err(error) => panic!("{kind}: {error}"),
        };
        let calls: Vec<_> = single.message.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 1, "{kind}");
        assert_eq!(
            (
                calls[0].id.as_str(),
                calls[0].name.as_str(),
                &calls[0].arguments
            ),
            ("call_a", "utils__time", &json!({}))
        );
        assert_eq!(single.stop, StopReason::ToolUse, "{kind}");

        let (events, parallel) = ask(&provider).await;
        let parallel = match parallel {
            Ok(answer) => answer,
            Err(error) => panic!("{kind}: {error}"),
        };
        assert_eq!(parallel.message.text(), "Two calls.");
        let calls: Vec<_> = parallel.message.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 2, "{kind}");
        assert_eq!(calls[0].id, "call_1");
        assert_eq!(calls[0].arguments, json!({"text": long}), "{kind}");
        assert_eq!(calls[1].id, "call_2");
        assert_eq!(calls[1].arguments, json!({"zone": "Europe/Madrid"}));
        // The argument deltas of each call, joined, are its JSON.
        let mut joined: HashMap<usize, String> = HashMap::new();
        for event in &events {
            if let Event::ToolCallArguments { index, fragment } = event {
                joined.entry(*index).or_default().push_str(fragment);
            }
        }
        let fragments = events
            .iter()
            .filter(|event| matches!(event, Event::ToolCallArguments { index: 0, .. }))
            .count();
        assert!(fragments > 3, "{kind}: arguments not split: {events:?}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&joined[&0]).ok(),
            Some(json!({"text": long}))
        );
        let started: Vec<_> = events
            .iter()
            .filter_map(|event| match event {
                Event::ToolCallStarted { index, name, .. } => Some((*index, name.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(started, [(0, "utils__echo"), (1, "utils__time")], "{kind}");
        server.stop().await;
    }
}

#[tokio::test]
async fn busy_answers_are_retried_honouring_retry_after() {
    for kind in KINDS {
        let server = start(vec![
            Turn::error(429, &[("retry-after", "1")]),
            Turn::text("at last"),
            Turn::error(503, &[]),
            Turn::error(503, &[]),
            Turn::error(503, &[]),
        ])
        .await;
        let provider = provider(&server, kind);
        let began = Instant::now();
        let (_, answer) = ask(&provider).await;
        let waited = began.elapsed();
        match answer {
            Ok(answer) => assert_eq!(answer.message.text(), "at last", "{kind}"),
            Err(error) => panic!("{kind}: {error}"),
        }
        assert!(
            waited >= Duration::from_millis(900),
            "{kind}: Retry-After not honoured ({waited:?})"
        );
        // A bounded number of tries, then an error.
        let busy = failure(ask(&provider).await.1, "busy");
        assert!(
            matches!(
                busy,
                ProviderError::Busy {
                    status: 503,
                    tries: 3,
                    ..
                }
            ),
            "{kind}: {busy:?}"
        );
        assert_eq!(server.requests().len(), 5, "{kind}");
        server.stop().await;
    }
}

#[tokio::test]
async fn overloaded_then_success() {
    for kind in KINDS {
        let server = start(vec![Turn::error(529, &[]), Turn::text("fine now")]).await;
        let (_, answer) = ask(&provider(&server, kind)).await;
        match answer {
            Ok(answer) => assert_eq!(answer.message.text(), "fine now", "{kind}"),
            Err(error) => panic!("{kind}: {error}"),
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn refused_keys_and_unknown_models_say_what_to_do() {
    for kind in KINDS {
        let server = start(vec![Turn::error(401, &[]), Turn::error(404, &[])]).await;
        let provider = provider(&server, kind);
        let refused = failure(ask(&provider).await.1, "401");
        let env = match kind {
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::OpenAi => "OPENAI_API_KEY",
        };
        assert!(matches!(
            refused,
            ProviderError::Unauthorized { status: 401, .. }
        ));
        assert!(
            hint_of(&refused).contains(env),
            "{kind}: {}",
            hint_of(&refused)
        );
        let unknown = failure(ask(&provider).await.1, "404");
        assert!(
            matches!(&unknown, ProviderError::UnknownModel { model, .. } if model == "scripted-model"),
            "{kind}: {unknown:?}"
        );
        assert!(
            hint_of(&unknown).contains("/models"),
            "{kind}: {}",
            hint_of(&unknown)
        );
        for error in [&refused, &unknown] {
            let shown = format!("{error} {error:?} {}", hint_of(error));
            assert!(!shown.contains(KEY), "the key leaked: {shown}");
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn cut_and_malformed_streams_are_errors() {
    for kind in KINDS {
        let server = start(vec![
            Turn::Reply(nexo_scripted_llm::Reply {
                text: "this answer is cut short".to_owned(),
                cut_after: Some(4),
                ..Default::default()
            }),
            Turn::Raw(nexo_scripted_llm::Raw {
                status: 200,
                content_type: "text/event-stream".to_owned(),
                body: "event: message_start\ndata: {\"type\": \"message_start\", oops\n\n"
                    .to_owned(),
            }),
            Turn::Raw(nexo_scripted_llm::Raw {
                status: 200,
                content_type: "application/json".to_owned(),
                body: "{}".to_owned(),
            }),
        ])
        .await;
        let provider = provider(&server, kind);
        let (events, cut) = ask(&provider).await;
        let cut = failure(cut, "cut");
        assert!(
            matches!(cut, ProviderError::Truncated { .. }),
            "{kind}: {cut:?}"
        );
        assert!(!events.iter().any(|event| matches!(event, Event::Stop(_))));
        for case in ["malformed", "not a stream"] {
            let error = failure(ask(&provider).await.1, case);
            assert!(
                matches!(error, ProviderError::Malformed { .. }),
                "{kind} {case}: {error:?}"
            );
        }
        server.stop().await;
    }
}

#[tokio::test]
async fn selection_reads_the_injected_environment() {
    let server = start(vec![]).await;
    let openai_base = format!("{}/v1", server.url());
    let env = |name: &str| (name == "OPENAI_BASE_URL").then(|| openai_base.clone());
    let chosen = match select(&Settings::default(), env).await {
        Ok(provider) => provider,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(chosen.kind(), ProviderKind::OpenAi);
    assert_eq!(chosen.model(), "scripted-model", "the first model listed");

    let anthropic = |name: &str| match name {
        "ANTHROPIC_API_KEY" => Some(KEY.to_owned()),
        "ANTHROPIC_BASE_URL" => Some(server.url().to_owned()),
        _ => None,
    };
    let chosen = match select(&Settings::default(), anthropic).await {
        Ok(provider) => provider,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(
        (chosen.kind(), chosen.base_url()),
        (ProviderKind::Anthropic, server.url())
    );

    // Nothing configured: a local Ollama (here, the scripted provider).
    let host = server.url().to_owned();
    let ollama = |name: &str| (name == "OLLAMA_HOST").then(|| host.clone());
    let chosen = match select(&Settings::default(), ollama).await {
        Ok(provider) => provider,
        Err(error) => panic!("{error}"),
    };
    assert_eq!(chosen.base_url(), format!("{}/v1", server.url()));
    server.stop().await;

    // And nobody home: say how to configure one.
    let nothing = |name: &str| (name == "OLLAMA_HOST").then(|| "127.0.0.1:9".to_owned());
    let error = match select(&Settings::default(), nothing).await {
        Ok(provider) => panic!("chose {provider:?}"),
        Err(error) => error,
    };
    assert!(matches!(error, ProviderError::NotConfigured { .. }));
    assert!(hint_of(&error).contains("ANTHROPIC_API_KEY"));
    assert!(hint_of(&error).contains("ollama pull"));
    let missing = select(
        &Settings {
            kind: Some(ProviderKind::Anthropic),
            ..Settings::default()
        },
        |_: &str| None,
    )
    .await;
    assert!(matches!(missing, Err(ProviderError::MissingKey { .. })));
}

#[tokio::test]
async fn tool_calls_written_as_text_are_recognised_for_known_tools_only() {
    let server = start(vec![
        Turn::text("```json\n{\"name\": \"utils__echo\", \"arguments\": {\"text\": \"hi\"}}\n```"),
        Turn::text("{\"name\": \"shell__exec\", \"arguments\": {\"cmd\": \"ls\"}}"),
    ])
    .await;
    let provider = provider(&server, ProviderKind::OpenAi);
    let known = |name: &str| tools().iter().any(|tool| tool.name == name);
    let answer = match ask(&provider).await.1 {
        Ok(answer) => answer,
        Err(error) => panic!("{error}"),
    };
    let calls = tool_calls_in_text(&answer.message.text(), known);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].name.as_str(), &calls[0].arguments),
        ("utils__echo", &json!({"text": "hi"}))
    );
    let answer = match ask(&provider).await.1 {
        Ok(answer) => answer,
        Err(error) => panic!("{error}"),
    };
    assert!(tool_calls_in_text(&answer.message.text(), known).is_empty());
    server.stop().await;
}

/// An error's hint as the terminal shows it.
fn hint_of(error: &impl Hinted) -> String {
    error.hint().map(|hint| hint.terminal()).unwrap_or_default()
}
