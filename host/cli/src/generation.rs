//! `toolhost run`'s generation flags (`--temperature`, `--max-tokens`,
//! `--tool-choice`, `--param KEY=JSON`, ...): parsed here, checked and
//! mapped to each provider by the library.

use clap::Args;
use serde_json::Value;
use toolhost::llm::{GenerationParams, ToolChoice};

use super::UsageError;

/// How the model generates, for every request of the run. Unset flags send
/// nothing: the provider's defaults apply (for Anthropic, 4096 max tokens).
#[derive(Debug, Clone, Default, Args)]
pub struct GenerationArgs {
    /// Sampling temperature (0 to 2; Anthropic 0 to 1). 0 helps small
    /// local models call tools reliably.
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass to sample from (0 to 1).
    #[arg(long, value_name = "P")]
    pub top_p: Option<f64>,
    /// The most tokens of one answer (OpenAI max_completion_tokens,
    /// max_tokens on other servers; Anthropic max_tokens, default 4096;
    /// Gemini maxOutputTokens).
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Whether the model may call tools: auto, none, required, or the name
    /// of a tool it must call. The final answer of
    /// --on-max-iterations final-answer is always asked without tools.
    #[arg(long, value_name = "auto|none|required|NAME", value_parser = parse_tool_choice)]
    pub tool_choice: Option<ToolChoice>,
    /// Ask for at most one tool call per answer (OpenAI
    /// parallel_tool_calls false, Anthropic disable_parallel_tool_use;
    /// Gemini has no such switch and refuses it).
    #[arg(long)]
    pub no_parallel_tool_calls: bool,
    /// A seed for reproducible sampling (OpenAI, Gemini; Anthropic has none).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// A sequence that ends generation; repeat for several.
    #[arg(long = "stop", value_name = "TEXT")]
    pub stop: Vec<String>,
    /// A provider-specific request field, KEY=JSON, merged into the body
    /// (`--param reasoning_effort='"low"'`, `--param
    /// generationConfig.topK=40`); a dotted KEY sets a field inside an
    /// object. A field the flags above (or the request itself) already set
    /// is refused. Repeat for several.
    #[arg(long = "param", value_name = "KEY=JSON", value_parser = parse_param)]
    pub params: Vec<(String, Value)>,
}

impl GenerationArgs {
    /// The parameters the flags describe.
    ///
    /// # Errors
    ///
    /// A `--param` whose field is given twice.
    pub fn params(&self) -> Result<GenerationParams, UsageError> {
        let mut params = GenerationParams {
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: self.max_tokens,
            stop: self.stop.clone(),
            seed: self.seed,
            tool_choice: self.tool_choice.clone().unwrap_or_default(),
            parallel_tool_calls: self.no_parallel_tool_calls.then_some(false),
            ..GenerationParams::default()
        };
        for (key, value) in &self.params {
            params
                .set_extra(key, value.clone())
                .map_err(|e| UsageError(anyhow::Error::new(e).context(format!("--param {key}"))))?;
        }
        Ok(params)
    }
}

fn parse_tool_choice(text: &str) -> Result<ToolChoice, String> {
    if text.trim().is_empty() {
        return Err("give auto, none, required, or a tool name".into());
    }
    Ok(ToolChoice::parse(text.trim()))
}

fn parse_param(text: &str) -> Result<(String, Value), String> {
    let Some((key, json)) = text.split_once('=') else {
        return Err("expected KEY=JSON, e.g. top_k=40 or reasoning_effort='\"low\"'".into());
    };
    let value = serde_json::from_str(json).map_err(|e| {
        format!("the value of {key} is not JSON ({e}); quote a string as '\"text\"'")
    })?;
    Ok((key.trim().to_owned(), value))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn params_parse_as_json_and_nest_by_dots() {
        assert_eq!(
            parse_param("generationConfig.topK=40"),
            Ok(("generationConfig.topK".to_owned(), json!(40)))
        );
        assert!(parse_param("reasoning_effort=low").is_err());
        assert!(parse_param("no_equals").is_err());
        let args = GenerationArgs {
            params: vec![("a.b".into(), json!(1)), ("a.c".into(), json!("x"))],
            tool_choice: Some(ToolChoice::parse("add")),
            ..GenerationArgs::default()
        };
        let params = args.params().expect("valid");
        assert_eq!(json!(params.extra), json!({"a": {"b": 1, "c": "x"}}));
        assert_eq!(params.tool_choice, ToolChoice::Tool("add".into()));
        let twice = GenerationArgs {
            params: vec![("a".into(), json!(1)), ("a".into(), json!(2))],
            ..GenerationArgs::default()
        };
        assert!(twice.params().is_err());
    }
}
