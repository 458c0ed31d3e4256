//! The generation parameters each fake checks the way its real API does:
//! types, ranges, what needs tools, fields the API does not know.

use serde_json::{Map, Value};

use super::server::Rejection;

fn invalid(message: impl Into<String>) -> Rejection {
    (400, message.into())
}

/// A number within `low..=high`, when present.
fn number_in(
    body: &Map<String, Value>,
    key: &str,
    low: f64,
    high: f64,
    at: &str,
) -> Result<(), Rejection> {
    match body.get(key) {
        None => Ok(()),
        Some(value) => match value.as_f64() {
            Some(n) if n < low => Err(invalid(format!(
                "Invalid '{at}{key}': decimal below minimum value. Expected a value >= {low}, but got {n} instead."
            ))),
            Some(n) if n > high => Err(invalid(format!(
                "Invalid '{at}{key}': decimal above maximum value. Expected a value <= {high}, but got {n} instead."
            ))),
            Some(_) => Ok(()),
            None => Err(invalid(format!(
                "Invalid type for '{at}{key}': expected a decimal, but got {value} instead."
            ))),
        },
    }
}

/// A positive integer (at most `max`), when present.
fn positive_integer(
    body: &Map<String, Value>,
    key: &str,
    max: u64,
    at: &str,
) -> Result<(), Rejection> {
    match body.get(key) {
        None => Ok(()),
        Some(value) => match value.as_u64() {
            Some(n) if (1..=max).contains(&n) => Ok(()),
            _ => Err(invalid(format!(
                "Invalid '{at}{key}': expected an integer from 1 to {max}, but got {value} instead."
            ))),
        },
    }
}

/// An integer (fitting 32 bits when `small`), when present.
fn integer(body: &Map<String, Value>, key: &str, small: bool, at: &str) -> Result<(), Rejection> {
    match body.get(key) {
        None => Ok(()),
        Some(value) => match value.as_i64() {
            Some(n) if !small || i32::try_from(n).is_ok() => Ok(()),
            _ => Err(invalid(format!(
                "Invalid '{at}{key}': expected an integer, but got {value} instead."
            ))),
        },
    }
}

/// An array of at most `max` non-empty strings, when present.
fn strings(
    body: &Map<String, Value>,
    key: &str,
    max: Option<usize>,
    at: &str,
) -> Result<(), Rejection> {
    let Some(value) = body.get(key) else {
        return Ok(());
    };
    let Some(items) = value.as_array() else {
        return Err(invalid(format!(
            "Invalid type for '{at}{key}': expected an array of strings."
        )));
    };
    if items.iter().any(|s| s.as_str().is_none_or(str::is_empty)) {
        return Err(invalid(format!(
            "Invalid '{at}{key}': every item must be a non-empty string."
        )));
    }
    if let Some(max) = max
        && items.len() > max
    {
        return Err(invalid(format!(
            "Invalid '{at}{key}': array too long. Expected an array with maximum length {max}, but got an array with length {} instead.",
            items.len()
        )));
    }
    Ok(())
}

fn tool_names<'a>(tools: impl Iterator<Item = &'a Value>, key: &str) -> Vec<&'a str> {
    tools
        .filter_map(|t| {
            if key.is_empty() {
                t["name"].as_str()
            } else {
                t[key]["name"].as_str()
            }
        })
        .collect()
}

/// Fields of a Chat Completions request that OpenAI documents.
const OPENAI_FIELDS: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "n",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "response_format",
    "user",
    "reasoning_effort",
    "metadata",
    "store",
    "service_tier",
    "modalities",
    "prediction",
    "audio",
    "web_search_options",
    "verbosity",
    "prompt_cache_key",
    "safety_identifier",
];

/// OpenAI Chat Completions. `strict`: OpenAI's own API (unknown fields,
/// at most 4 stop sequences); local servers accept more.
pub(super) fn check_openai(body: &Value, strict: bool) -> Result<(), Rejection> {
    let Some(body) = body.as_object() else {
        return Err(invalid("the body must be a JSON object"));
    };
    if strict && let Some(unknown) = body.keys().find(|k| !OPENAI_FIELDS.contains(&k.as_str())) {
        return Err(invalid(format!(
            "Unrecognized request argument supplied: {unknown}"
        )));
    }
    number_in(body, "temperature", 0.0, 2.0, "")?;
    number_in(body, "top_p", 0.0, 1.0, "")?;
    positive_integer(body, "max_tokens", u64::from(u32::MAX), "")?;
    positive_integer(body, "max_completion_tokens", u64::from(u32::MAX), "")?;
    integer(body, "seed", false, "")?;
    if let Some(Value::String(_)) = body.get("stop") {
    } else {
        strings(body, "stop", strict.then_some(4), "")?;
    }
    let tools = body.get("tools").and_then(Value::as_array);
    let has_tools = tools.is_some_and(|t| !t.is_empty());
    if let Some(parallel) = body.get("parallel_tool_calls") {
        if !parallel.is_boolean() {
            return Err(invalid(
                "Invalid type for 'parallel_tool_calls': expected a boolean.",
            ));
        }
        if !has_tools {
            return Err(invalid(
                "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
            ));
        }
    }
    match body.get("tool_choice") {
        None => Ok(()),
        Some(Value::String(mode)) if ["none", "auto", "required"].contains(&mode.as_str()) => {
            Ok(())
        }
        Some(choice @ Value::Object(_)) if choice["type"] == "function" => {
            let name = choice["function"]["name"].as_str().unwrap_or("");
            let names = tool_names(tools.into_iter().flatten(), "function");
            if names.contains(&name) {
                Ok(())
            } else {
                Err(invalid(format!(
                    "Invalid value for 'tool_choice': function '{name}' is not among the tools."
                )))
            }
        }
        Some(other) => Err(invalid(format!(
            "Invalid value for 'tool_choice': {other} is not one of 'none', 'auto', 'required' or a function."
        ))),
    }
}

/// Top-level fields of a Messages request that Anthropic documents.
const ANTHROPIC_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "system",
    "tools",
    "tool_choice",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "metadata",
    "thinking",
    "service_tier",
    "container",
    "mcp_servers",
];

/// Anthropic Messages.
pub(super) fn check_anthropic(body: &Value) -> Result<(), Rejection> {
    let Some(body) = body.as_object() else {
        return Err(invalid("the body must be a JSON object"));
    };
    if let Some(unknown) = body
        .keys()
        .find(|k| !ANTHROPIC_FIELDS.contains(&k.as_str()))
    {
        return Err(invalid(format!(
            "{unknown}: Extra inputs are not permitted"
        )));
    }
    positive_integer(body, "max_tokens", 128_000, "")?;
    number_in(body, "temperature", 0.0, 1.0, "")?;
    number_in(body, "top_p", 0.0, 1.0, "")?;
    strings(body, "stop_sequences", None, "")?;
    let Some(choice) = body.get("tool_choice") else {
        return Ok(());
    };
    let tools: Vec<&Value> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    if tools.is_empty() {
        return Err(invalid(
            "tool_choice: tool_choice may only be specified while providing tools.",
        ));
    }
    let kind = choice["type"].as_str().unwrap_or("");
    let allowed: &[&str] = match kind {
        "auto" | "any" => &["type", "disable_parallel_tool_use"],
        "tool" => &["type", "name", "disable_parallel_tool_use"],
        "none" => &["type"],
        _ => &[],
    };
    if let Some(extra) = choice
        .as_object()
        .and_then(|c| c.keys().find(|k| !allowed.contains(&k.as_str())))
    {
        return Err(invalid(format!(
            "tool_choice.{kind}.{extra}: Extra inputs are not permitted"
        )));
    }
    if choice
        .get("disable_parallel_tool_use")
        .is_some_and(|d| !d.is_boolean())
    {
        return Err(invalid(
            "tool_choice.disable_parallel_tool_use: Input should be a valid boolean",
        ));
    }
    if kind == "tool" {
        let name = choice["name"].as_str().unwrap_or("");
        if !tool_names(tools.into_iter(), "").contains(&name) {
            return Err(invalid(format!(
                "tool_choice.tool.name: Tool '{name}' not found in provided tools"
            )));
        }
    }
    Ok(())
}

/// Fields of a `generationConfig` that Gemini documents (a subset).
const GEMINI_GENERATION: &[&str] = &[
    "temperature",
    "topP",
    "topK",
    "maxOutputTokens",
    "stopSequences",
    "seed",
    "candidateCount",
    "presencePenalty",
    "frequencyPenalty",
    "responseMimeType",
    "responseSchema",
    "thinkingConfig",
    "responseModalities",
];

/// Top-level fields of a `generateContent` request.
const GEMINI_FIELDS: &[&str] = &[
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
];

fn unknown_name(name: &str, at: &str) -> Rejection {
    invalid(format!(
        "Invalid JSON payload received. Unknown name \"{name}\" at '{at}': Cannot find field."
    ))
}

/// Gemini `generateContent`.
pub(super) fn check_gemini(body: &Value) -> Result<(), Rejection> {
    let Some(body) = body.as_object() else {
        return Err(invalid("the body must be a JSON object"));
    };
    if let Some(unknown) = body.keys().find(|k| !GEMINI_FIELDS.contains(&k.as_str())) {
        return Err(unknown_name(unknown, ""));
    }
    if let Some(config) = body.get("generationConfig") {
        let Some(config) = config.as_object() else {
            return Err(invalid("generation_config must be an object"));
        };
        if let Some(unknown) = config
            .keys()
            .find(|k| !GEMINI_GENERATION.contains(&k.as_str()))
        {
            return Err(unknown_name(unknown, "generation_config"));
        }
        let at = "generation_config.";
        number_in(config, "temperature", 0.0, 2.0, at)?;
        number_in(config, "topP", 0.0, 1.0, at)?;
        positive_integer(config, "maxOutputTokens", u64::from(u32::MAX >> 1), at)?;
        integer(config, "seed", true, at)?;
        strings(config, "stopSequences", Some(5), at)?;
    }
    let Some(tool_config) = body.get("toolConfig") else {
        return Ok(());
    };
    let calling = &tool_config["functionCallingConfig"];
    let mode = calling["mode"].as_str().unwrap_or("");
    if !["AUTO", "ANY", "NONE", "VALIDATED"].contains(&mode) {
        return Err(invalid(format!(
            "Invalid value at 'tool_config.function_calling_config.mode' ({mode:?})"
        )));
    }
    if let Some(names) = calling.get("allowedFunctionNames") {
        if mode != "ANY" && mode != "VALIDATED" {
            return Err(invalid(
                "allowed_function_names should only be set when the Function calling mode is ANY.",
            ));
        }
        let declared: Vec<&str> = body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
            .filter_map(|d| d["name"].as_str())
            .collect();
        for name in names.as_array().into_iter().flatten() {
            let name = name.as_str().unwrap_or("");
            if !declared.contains(&name) {
                return Err(invalid(format!(
                    "allowed_function_names: function {name:?} is not declared in tools."
                )));
            }
        }
    }
    Ok(())
}
