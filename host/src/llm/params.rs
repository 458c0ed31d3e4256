//! [`GenerationParams`]: how the model samples and whether it may call
//! tools, the same for every provider; each wire format maps them to its
//! own fields and refuses, before sending, what its API cannot take.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tools::ToolSpec;

/// Whether, and which, tools the model may call in a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (every provider's default).
    #[default]
    Auto,
    /// The model must answer in text. Tools are still declared, because
    /// providers reject a history with tool calls but no tool definitions.
    None,
    /// The model must call at least one tool (OpenAI `"required"`,
    /// Anthropic `{"type": "any"}`, Gemini mode `ANY`).
    Required,
    /// The model must call this tool, which must be offered in the request.
    Tool(String),
}

impl ToolChoice {
    /// `auto`, `none`, `required`, or the tool's name: what the CLI's
    /// `--tool-choice` takes.
    pub fn parse(text: &str) -> Self {
        match text {
            "auto" => Self::Auto,
            "none" => Self::None,
            "required" => Self::Required,
            name => Self::Tool(name.to_owned()),
        }
    }
}

/// Generation parameters of a request, provider-neutral. Every field is
/// optional: unset means "the provider's default" (nothing is sent), except
/// Anthropic's `max_tokens`, which the API requires
/// ([`AnthropicConfig::max_tokens`](super::AnthropicConfig) is sent then).
///
/// How each wire format spells them:
///
/// | field | OpenAI chat | OpenAI Responses | Anthropic | Gemini |
/// | --- | --- | --- | --- | --- |
/// | `temperature` | `temperature` (0–2) | `temperature` (0–2) | `temperature` (0–1) | `generationConfig.temperature` (0–2) |
/// | `top_p` | `top_p` | `top_p` | `top_p` | `generationConfig.topP` |
/// | `max_output_tokens` | `max_completion_tokens` on api.openai.com, `max_tokens` elsewhere | `max_output_tokens` | `max_tokens` | `generationConfig.maxOutputTokens` |
/// | `stop` | `stop` (at most 4 on api.openai.com) | refused: the API has none | `stop_sequences` | `generationConfig.stopSequences` (at most 5) |
/// | `seed` | `seed` | refused: the API has none | refused: the API has none | `generationConfig.seed` (32-bit) |
/// | `tool_choice` | `tool_choice` | `tool_choice` (`{type:"function", name}` for one tool) | `tool_choice.type` `auto`/`none`/`any`/`tool` | `toolConfig.functionCallingConfig.mode` (+ `allowedFunctionNames`) |
/// | `parallel_tool_calls` | `parallel_tool_calls` | `parallel_tool_calls` | `tool_choice.disable_parallel_tool_use` | `true` only: the API has no switch |
///
/// `extra` is merged into the request body last, for what has no field
/// here (`reasoning_effort`, Anthropic's `thinking`, Gemini's
/// `generationConfig.topK`, a local server's `min_p`). Objects merge key by
/// key, so `{"generationConfig": {"topK": 40}}` adds to what the typed
/// fields set. A key that both `extra` and the request already set to a
/// value that is not an object on both sides is a conflict, refused with
/// [`ParamError`]: `extra` never silently replaces a typed parameter, the
/// messages or the tools, and is never silently dropped.
///
/// # Examples
///
/// ```
/// use toolhost::llm::{GenerationParams, ToolChoice};
///
/// let params = GenerationParams {
///     temperature: Some(0.0),
///     max_output_tokens: Some(512),
///     tool_choice: ToolChoice::Required,
///     ..GenerationParams::default()
/// };
/// assert!(params.extra.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerationParams {
    /// Sampling temperature; 0 is (nearly) deterministic.
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass to sample from, 0 to 1.
    pub top_p: Option<f64>,
    /// The most tokens the model may generate in one answer (at least 1).
    pub max_output_tokens: Option<u32>,
    /// Sequences that end generation when produced; empty sends none.
    pub stop: Vec<String>,
    /// A seed for reproducible sampling, where the provider has one.
    pub seed: Option<i64>,
    /// Whether, and which, tools the model may call (default `Auto`).
    pub tool_choice: ToolChoice,
    /// Whether one answer may hold several tool calls; `None` sends
    /// nothing (the provider's default, which is `true` everywhere).
    pub parallel_tool_calls: Option<bool>,
    /// Provider-specific fields merged into the request body (see the rule
    /// above).
    pub extra: Map<String, Value>,
}

impl GenerationParams {
    /// Set one provider-specific field of [`extra`](Self::extra). A dotted
    /// `path` sets a field inside an object: `generationConfig.topK` adds
    /// `{"generationConfig": {"topK": value}}`.
    ///
    /// # Errors
    ///
    /// [`ParamError`] when the path has an empty part, or `extra` already
    /// sets that field.
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use toolhost::llm::GenerationParams;
    ///
    /// let mut params = GenerationParams::default();
    /// params.set_extra("reasoning_effort", json!("low"))?;
    /// params.set_extra("generationConfig.topK", json!(40))?;
    /// assert!(params.set_extra("reasoning_effort", json!("high")).is_err());
    /// # Ok::<(), toolhost::llm::ParamError>(())
    /// ```
    pub fn set_extra(&mut self, path: &str, value: Value) -> Result<(), ParamError> {
        if path.split('.').any(str::is_empty) {
            return Err(ParamError::new(
                format!("extra.{path}"),
                "a field name is empty; write KEY or OUTER.INNER",
            ));
        }
        let mut nested = value;
        for key in path.rsplit('.') {
            let mut object = Map::new();
            object.insert(key.to_owned(), nested);
            nested = Value::Object(object);
        }
        let Value::Object(nested) = nested else {
            return Ok(());
        };
        merge_into(&mut self.extra, &nested, "extra")
    }
}

/// A generation parameter the provider cannot take, found before sending.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{parameter}: {message}")]
pub struct ParamError {
    /// The neutral name of the parameter (`temperature`, `extra.top_k`).
    pub parameter: String,
    /// What is wrong with it and what to do.
    pub message: String,
}

impl ParamError {
    pub(super) fn new(parameter: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            parameter: parameter.into(),
            message: message.into(),
        }
    }
}

/// How a wire format's API takes a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedRange {
    /// Not at all.
    Unsupported,
    /// A 64-bit integer.
    I64,
    /// A 32-bit integer.
    I32,
}

/// What a wire format's API accepts, for [`GenerationParams::check`].
#[derive(Debug, Clone, Copy)]
pub struct ParamRules {
    /// The API's name in messages, e.g. "Anthropic Messages".
    pub api: &'static str,
    /// The highest temperature (the lowest is 0 everywhere).
    pub max_temperature: f64,
    /// The most stop sequences, where the API documents a limit.
    pub max_stop: Option<usize>,
    /// How it takes a seed.
    pub seed: SeedRange,
    /// Whether `parallel_tool_calls: false` can be said.
    pub serial_tool_calls: bool,
}

impl GenerationParams {
    /// Check the values against `rules`, for a request offering `tools`.
    pub(super) fn check(&self, rules: &ParamRules, tools: &[ToolSpec]) -> Result<(), ParamError> {
        self.check_sampling(rules)?;
        self.check_stop(rules)?;
        self.check_seed(rules)?;
        self.check_tool_use(rules, tools)
    }

    /// Temperature, `top_p` and the answer's length are in range.
    fn check_sampling(&self, rules: &ParamRules) -> Result<(), ParamError> {
        if let Some(t) = self.temperature
            && !(0.0..=rules.max_temperature).contains(&t)
        {
            return Err(ParamError::new(
                "temperature",
                format!(
                    "{t} is outside what {} takes (0 to {}); pass a value in that range",
                    rules.api, rules.max_temperature
                ),
            ));
        }
        if let Some(p) = self.top_p
            && !(0.0..=1.0).contains(&p)
        {
            return Err(ParamError::new(
                "top_p",
                format!("{p} is not a probability; pass a value from 0 to 1"),
            ));
        }
        if self.max_output_tokens == Some(0) {
            return Err(ParamError::new(
                "max_output_tokens",
                "0 leaves no room for an answer; pass at least 1, or leave it unset",
            ));
        }
        Ok(())
    }

    /// The stop sequences are not empty, and as many as the API takes.
    fn check_stop(&self, rules: &ParamRules) -> Result<(), ParamError> {
        let api = rules.api;
        if self.stop.iter().any(String::is_empty) {
            return Err(ParamError::new(
                "stop",
                "an empty stop sequence would end every answer at once; remove it",
            ));
        }
        if rules.max_stop == Some(0) && !self.stop.is_empty() {
            return Err(ParamError::new(
                "stop",
                format!("{api} has no stop sequences; leave them unset for this provider"),
            ));
        }
        if let Some(max) = rules.max_stop
            && self.stop.len() > max
        {
            return Err(ParamError::new(
                "stop",
                format!(
                    "{} stop sequences, but {api} takes at most {max}; pass fewer",
                    self.stop.len()
                ),
            ));
        }
        Ok(())
    }

    /// A seed is one the API takes.
    fn check_seed(&self, rules: &ParamRules) -> Result<(), ParamError> {
        let api = rules.api;
        let Some(seed) = self.seed else {
            return Ok(());
        };
        match rules.seed {
            SeedRange::Unsupported => Err(ParamError::new(
                "seed",
                format!("{api} has no seed; leave it unset for this provider"),
            )),
            SeedRange::I32 if i32::try_from(seed).is_err() => Err(ParamError::new(
                "seed",
                format!("{seed} does not fit the 32-bit seed {api} takes; pass a smaller one"),
            )),
            SeedRange::I32 | SeedRange::I64 => Ok(()),
        }
    }

    /// What is asked of tool calls can be said to the API, and the tool
    /// choice names what the request offers.
    fn check_tool_use(&self, rules: &ParamRules, tools: &[ToolSpec]) -> Result<(), ParamError> {
        if self.parallel_tool_calls == Some(false) && !rules.serial_tool_calls {
            return Err(ParamError::new(
                "parallel_tool_calls",
                format!(
                    "{} cannot be asked for one tool call per answer; leave it unset \
                     (or cap the calls with max_calls_per_response)",
                    rules.api
                ),
            ));
        }
        match &self.tool_choice {
            ToolChoice::Required if tools.is_empty() => Err(ParamError::new(
                "tool_choice",
                "\"required\" but the request offers no tools; offer some, or use auto",
            )),
            ToolChoice::Tool(name) if !tools.iter().any(|t| &t.name == name) => {
                Err(ParamError::new(
                    "tool_choice",
                    format!(
                        "tool {name:?} is not offered in this request; name one of the offered \
                         tools, or use auto or required"
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Merge `extra` into `body` by the rule on [`GenerationParams`]: objects
/// key by key; anything else set on both sides is a conflict.
pub(super) fn merge_extra(body: &mut Value, extra: &Map<String, Value>) -> Result<(), ParamError> {
    let Value::Object(target) = body else {
        return Err(ParamError::new(
            "extra",
            "this request body is not a JSON object",
        ));
    };
    merge_into(target, extra, "extra")
}

fn merge_into(
    target: &mut Map<String, Value>,
    extra: &Map<String, Value>,
    path: &str,
) -> Result<(), ParamError> {
    for (key, value) in extra {
        let here = format!("{path}.{key}");
        match (target.get_mut(key), value) {
            (None, value) => {
                target.insert(key.clone(), value.clone());
            }
            (Some(Value::Object(inner)), Value::Object(more)) => merge_into(inner, more, &here)?,
            (Some(_), _) => {
                return Err(ParamError::new(
                    here,
                    "this field is already set (by a typed parameter, the messages, the \
                     tools, or another extra field); set it in one place only",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RULES: ParamRules = ParamRules {
        api: "Test API",
        max_temperature: 1.0,
        max_stop: Some(2),
        seed: SeedRange::I32,
        serial_tool_calls: false,
    };

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
        }
    }

    #[test]
    fn values_outside_the_api_are_refused_by_name() {
        let refused = |params: GenerationParams| {
            params
                .check(&RULES, &[spec("add")])
                .err()
                .map(|e| e.parameter)
        };
        let p = GenerationParams::default;
        assert_eq!(refused(p()), None);
        let cases = [
            (
                GenerationParams {
                    temperature: Some(1.5),
                    ..p()
                },
                "temperature",
            ),
            (
                GenerationParams {
                    temperature: Some(-0.1),
                    ..p()
                },
                "temperature",
            ),
            (
                GenerationParams {
                    temperature: Some(f64::NAN),
                    ..p()
                },
                "temperature",
            ),
            (
                GenerationParams {
                    top_p: Some(1.01),
                    ..p()
                },
                "top_p",
            ),
            (
                GenerationParams {
                    max_output_tokens: Some(0),
                    ..p()
                },
                "max_output_tokens",
            ),
            (
                GenerationParams {
                    stop: vec![String::new()],
                    ..p()
                },
                "stop",
            ),
            (
                GenerationParams {
                    stop: vec!["a".into(), "b".into(), "c".into()],
                    ..p()
                },
                "stop",
            ),
            (
                GenerationParams {
                    seed: Some(1 << 40),
                    ..p()
                },
                "seed",
            ),
            (
                GenerationParams {
                    parallel_tool_calls: Some(false),
                    ..p()
                },
                "parallel_tool_calls",
            ),
            (
                GenerationParams {
                    tool_choice: ToolChoice::parse("sub"),
                    ..p()
                },
                "tool_choice",
            ),
        ];
        for (params, name) in cases {
            assert_eq!(refused(params.clone()).as_deref(), Some(name), "{params:?}");
        }
        let fine = GenerationParams {
            temperature: Some(1.0),
            top_p: Some(0.0),
            seed: Some(-5),
            parallel_tool_calls: Some(true),
            tool_choice: ToolChoice::parse("add"),
            ..p()
        };
        assert_eq!(refused(fine), None);
        let required = GenerationParams {
            tool_choice: ToolChoice::Required,
            ..p()
        };
        assert!(required.check(&RULES, &[]).is_err());
    }

    #[test]
    fn extra_merges_objects_and_refuses_conflicts() {
        let mut body = json!({"model": "m", "generationConfig": {"temperature": 0.5}});
        let extra = json!({"generationConfig": {"topK": 40}, "min_p": 0.1});
        merge_extra(&mut body, extra.as_object().expect("object")).expect("merges");
        assert_eq!(
            body,
            json!({"model": "m", "min_p": 0.1, "generationConfig": {"temperature": 0.5, "topK": 40}})
        );
        for clash in [
            json!({"model": "other"}),
            json!({"generationConfig": {"temperature": 1}}),
            json!({"generationConfig": 3}),
        ] {
            let err = merge_extra(&mut body.clone(), clash.as_object().expect("object"))
                .expect_err("conflict");
            assert!(err.parameter.starts_with("extra."), "{err}");
        }
    }
}
