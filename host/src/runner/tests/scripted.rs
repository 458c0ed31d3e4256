//! A provider test double that plays a script and records every request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use crate::llm::{
    AssistantMessage, ChatRequest, ChatResponse, FinishReason, GenerationParams, LlmError, Message,
    Provider, ToolCall, ToolChoice, Usage,
};
use crate::tools::{NativeTool, ToolError, ToolRegistry};

/// The oracle for the tool-call invariant, written apart from the product's
/// `check_messages` (which the driver runs itself, so it cannot be its own
/// judge): it reads the history the way a strict provider documents it.
/// Every assistant message's calls have distinct ids, and the messages right
/// after it, up to the first message that is not a tool result, are exactly
/// one result per call, in any order; a tool result anywhere else is wrong.
pub fn strict_provider_accepts(messages: &[Message]) -> Result<(), String> {
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::Tool(r) => {
                return Err(format!(
                    "messages[{i}]: result {:?} follows no call",
                    r.tool_call_id
                ));
            }
            Message::Assistant(a) => {
                let mut calls: Vec<&str> = a.tool_calls.iter().map(|c| c.id.as_str()).collect();
                calls.sort_unstable();
                if calls.windows(2).any(|w| w[0] == w[1]) {
                    return Err(format!("messages[{i}]: two calls share an id: {calls:?}"));
                }
                let mut results = Vec::new();
                let mut j = i + 1;
                while let Some(Message::Tool(r)) = messages.get(j) {
                    results.push(r.tool_call_id.as_str());
                    j += 1;
                }
                results.sort_unstable();
                if results != calls {
                    return Err(format!(
                        "messages[{i}]: calls {calls:?} are answered by results {results:?}"
                    ));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The oracle judges the same histories as `check_messages`' own tests,
/// by its own reading.
#[test]
fn the_oracle_rejects_what_providers_reject() {
    use crate::llm::fixtures::{invalid_histories, valid_history};
    assert_eq!(strict_provider_accepts(&valid_history()), Ok(()));
    for (bad, _) in invalid_histories() {
        assert!(strict_provider_accepts(&bad).is_err(), "{bad:?}");
    }
}

/// What the scripted provider saw in one request.
#[derive(Debug, Clone)]
pub struct Seen {
    pub messages: Vec<Message>,
    pub tools: Vec<(String, String)>,
    pub tool_choice: ToolChoice,
    pub params: GenerationParams,
}

#[derive(Default)]
pub struct Scripted {
    script: Mutex<VecDeque<Result<AssistantMessage, String>>>,
    pub seen: Mutex<Vec<Seen>>,
    /// Invariant violations in requests (must stay empty).
    pub violations: Mutex<Vec<String>>,
}

impl Scripted {
    pub fn new(script: Vec<Result<AssistantMessage, String>>) -> Arc<Self> {
        Arc::new(Self {
            script: Mutex::new(script.into()),
            ..Self::default()
        })
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn complete<'a>(
        &'a self,
        request: ChatRequest<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        async move {
            if let Err(e) = strict_provider_accepts(request.messages) {
                self.violations.lock().expect("lock").push(e);
            }
            self.seen.lock().expect("lock").push(Seen {
                messages: request.messages.to_vec(),
                tools: request
                    .tools
                    .iter()
                    .map(|t| (t.name.clone(), t.description.clone()))
                    .collect(),
                tool_choice: request.params.tool_choice.clone(),
                params: request.params.clone(),
            });
            let next = self.script.lock().expect("lock").pop_front();
            let message = match next {
                Some(Ok(message)) => message,
                Some(Err(text)) => {
                    return Err(LlmError::Status {
                        provider: "scripted".into(),
                        status: 500,
                        message: text,
                    });
                }
                None => text("script exhausted"),
            };
            let finish_reason = if message.tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            };
            Ok(ChatResponse {
                message,
                finish_reason,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 1,
                },
            })
        }
        .boxed()
    }
}

pub fn text(t: &str) -> AssistantMessage {
    AssistantMessage {
        content: t.to_owned(),
        ..Default::default()
    }
}

pub fn calls(list: &[(&str, &str, &str)]) -> AssistantMessage {
    AssistantMessage {
        tool_calls: list
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                arguments: (*args).to_owned(),
                signature: None,
            })
            .collect(),
        ..Default::default()
    }
}

/// `echo` returns its input; `fail` always fails; `slow` sleeps `ms`
/// milliseconds then returns them; `extra` is meant as a dynamic tool.
pub fn registry() -> Arc<ToolRegistry> {
    let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
    let registry = ToolRegistry::new();
    registry
        .register(NativeTool::new(
            "echo",
            "Echoes.",
            schema.clone(),
            |input| async move { Ok(input) },
        ))
        .expect("echo");
    registry
        .register(NativeTool::new(
            "fail",
            "Fails.",
            schema.clone(),
            |_| async move { Err::<serde_json::Value, _>(ToolError::failed("it broke")) },
        ))
        .expect("fail");
    registry
        .register(NativeTool::new(
            "slow",
            "Sleeps.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
            |input| async move {
                let ms = input["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                Ok(json!(ms))
            },
        ))
        .expect("slow");
    registry
        .register(NativeTool::new("extra", "Extra.", schema, |_| async move {
            Ok(json!("extra"))
        }))
        .expect("extra");
    Arc::new(registry)
}

pub fn block_on<F: std::future::IntoFuture>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f.into_future())
}
