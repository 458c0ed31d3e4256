//! Choosing and building a provider from a few settings (what the CLI
//! has). The library never reads the environment: the caller looks the key
//! up in the variables [`ProviderKind::api_key_env`] names.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use super::anthropic::{AnthropicConfig, AnthropicProvider};
use super::gemini::{GeminiConfig, GeminiProvider};
use super::http::{
    ANTHROPIC_BASE_URL, GEMINI_BASE_URL, HttpConfig, OPENAI_BASE_URL, OfficialHost, ResponseLimits,
    official_host,
};
use super::openai::{OpenAiConfig, OpenAiProvider};
use super::replay::ReplayProvider;
use super::responses::{ResponsesConfig, ResponsesProvider};
use super::{LlmError, Provider};

/// Which wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// OpenAI Chat Completions and compatible servers (DeepSeek, vLLM,
    /// Ollama, llama.cpp, LiteLLM).
    OpenAi,
    /// OpenAI Responses (`/v1/responses`), and servers that speak it.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
    /// A recorded conversation ([`ReplayProvider`]).
    Replay,
}

/// Settings for [`ProviderKind::build`]; every field is optional.
#[derive(Clone, Default)]
pub struct ProviderOptions {
    /// The API root; default [`ProviderKind::default_base_url`].
    pub base_url: Option<String>,
    /// The model; default [`ProviderKind::default_model`].
    pub model: Option<String>,
    /// The API key. Required for the providers' own hosts, optional for
    /// any other base URL (local servers).
    pub api_key: Option<String>,
    /// The recording to play ([`ProviderKind::Replay`] only).
    pub replay_file: Option<PathBuf>,
    /// How much of an answer is read at most (default
    /// [`ResponseLimits::default`]).
    pub limits: ResponseLimits,
    /// The model takes no images: every image of a tool result goes as a
    /// text stand-in naming its type and size. Default `false`: images go
    /// as the wire format takes them (and as text stand-ins from the first
    /// answer saying the model takes no image input).
    pub text_only: bool,
}

impl fmt::Debug for ProviderOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderOptions")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("replay_file", &self.replay_file)
            .field("limits", &self.limits)
            .field("text_only", &self.text_only)
            .finish()
    }
}

impl ProviderKind {
    /// Every kind, for listings.
    pub const ALL: [Self; 5] = [
        Self::OpenAi,
        Self::OpenAiResponses,
        Self::Anthropic,
        Self::Gemini,
        Self::Replay,
    ];

    /// The name accepted by [`FromStr`] and shown by `Display`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Replay => "replay",
        }
    }

    /// The environment variables the caller may read for the API key, in
    /// order of preference, for a server at `base_url` (`None`: the
    /// default). Only a provider's own API host gets its variables, matched
    /// exactly, over HTTPS on the default port: `OPENAI_API_KEY` for
    /// `api.openai.com`, `DEEPSEEK_API_KEY` for `api.deepseek.com`,
    /// `ANTHROPIC_API_KEY` for `api.anthropic.com`, `GEMINI_API_KEY` or
    /// `GOOGLE_API_KEY` for `generativelanguage.googleapis.com`. Any other
    /// base URL (a local server, a proxy, a look-alike) gets none: its key
    /// is passed explicitly, or comes from the pair of variables the
    /// official SDKs use together ([`base_url_env`](Self::base_url_env)).
    /// [`ProviderKind::OpenAiResponses`] reads OpenAI's variables, but not
    /// DeepSeek's (DeepSeek does not speak it). [`ProviderKind::Replay`]
    /// needs none.
    pub fn api_key_env(&self, base_url: Option<&str>) -> &'static [&'static str] {
        match (self, base_url.map(official_host)) {
            (Self::Replay, _) => &[],
            (Self::OpenAi | Self::OpenAiResponses, None) => &["OPENAI_API_KEY"],
            (Self::Anthropic, None) => &["ANTHROPIC_API_KEY"],
            (Self::Gemini, None) => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            (_, Some(host)) => match (self, host) {
                (Self::OpenAi | Self::OpenAiResponses, Some(OfficialHost::OpenAi)) => {
                    &["OPENAI_API_KEY"]
                }
                (Self::OpenAi, Some(OfficialHost::DeepSeek)) => &["DEEPSEEK_API_KEY"],
                (Self::Anthropic, Some(OfficialHost::Anthropic)) => &["ANTHROPIC_API_KEY"],
                (Self::Gemini, Some(OfficialHost::Gemini)) => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
                _ => &[],
            },
        }
    }

    /// The variable that, set together with the first of
    /// [`api_key_env`](Self::api_key_env)`(None)`, names another server
    /// for that key, as the official SDKs read them: `OPENAI_BASE_URL`
    /// with `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL` with `ANTHROPIC_API_KEY`.
    /// A caller that reads the pair sends the key to that base URL only.
    pub fn base_url_env(&self) -> Option<(&'static str, &'static str)> {
        match self {
            Self::OpenAi | Self::OpenAiResponses => Some(("OPENAI_BASE_URL", "OPENAI_API_KEY")),
            Self::Anthropic => Some(("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")),
            Self::Gemini | Self::Replay => None,
        }
    }

    /// The provider's own API root, or `None` for replay.
    pub fn default_base_url(&self) -> Option<&'static str> {
        match self {
            Self::OpenAi | Self::OpenAiResponses => Some(OPENAI_BASE_URL),
            Self::Anthropic => Some(ANTHROPIC_BASE_URL),
            Self::Gemini => Some(GEMINI_BASE_URL),
            Self::Replay => None,
        }
    }

    /// A reasonable, inexpensive model for a server at `base_url`. Pass a
    /// model explicitly for anything that matters: names change.
    pub fn default_model(&self, base_url: Option<&str>) -> &'static str {
        match self {
            Self::OpenAi if base_url.map(official_host) == Some(Some(OfficialHost::DeepSeek)) => {
                "deepseek-chat"
            }
            Self::OpenAi => "gpt-4.1-mini",
            Self::OpenAiResponses => "gpt-5-mini",
            Self::Anthropic => "claude-sonnet-4-5",
            Self::Gemini => "gemini-2.5-flash",
            Self::Replay => "replay",
        }
    }

    /// Build a provider of this kind with the documented HTTP defaults.
    ///
    /// # Errors
    ///
    /// [`LlmError::Config`] when a key is needed and missing (the message
    /// names the variables to set), when the replay file is missing or
    /// unreadable, or when a setting is not valid in HTTP.
    pub fn build(&self, options: ProviderOptions) -> Result<Arc<dyn Provider>, LlmError> {
        let Some(default_url) = self.default_base_url() else {
            return replay(options.replay_file);
        };
        let base_url = options.base_url.unwrap_or_else(|| default_url.to_owned());
        let model = options
            .model
            .unwrap_or_else(|| self.default_model(Some(&base_url)).to_owned());
        let official = official_host(&base_url).is_some();
        if options.api_key.is_none() && official {
            let vars = self.api_key_env(Some(&base_url)).join(" or ");
            return Err(LlmError::Config {
                provider: self.as_str().into(),
                message: format!("{base_url} needs an API key; set {vars} or pass one explicitly"),
            });
        }
        let mut http = HttpConfig::new(base_url);
        http.api_key = options.api_key;
        http.limits = options.limits;
        let images = !options.text_only;
        let provider: Arc<dyn Provider> = match self {
            Self::OpenAi => Arc::new(
                OpenAiProvider::new(OpenAiConfig::new(http, model))?.with_image_input(images),
            ),
            Self::OpenAiResponses => Arc::new(
                ResponsesProvider::new(ResponsesConfig::new(http, model))?.with_image_input(images),
            ),
            Self::Anthropic => Arc::new(
                AnthropicProvider::new(AnthropicConfig::new(http, model))?.with_image_input(images),
            ),
            Self::Gemini => Arc::new(
                GeminiProvider::new(GeminiConfig::new(http, model))?.with_image_input(images),
            ),
            Self::Replay => replay(options.replay_file)?,
        };
        Ok(provider)
    }
}

fn replay(path: Option<PathBuf>) -> Result<Arc<dyn Provider>, LlmError> {
    let Some(path) = path else {
        return Err(LlmError::Config {
            provider: "replay".into(),
            message: "no recording given; pass the JSON file of assistant turns to play".into(),
        });
    };
    Ok(Arc::new(ReplayProvider::from_file(path)?))
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not one of [`ProviderKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?}; use openai, openai-responses, anthropic, gemini or replay")]
pub struct UnknownProvider(pub String);

impl FromStr for ProviderKind {
    type Err = UnknownProvider;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "openai" => Ok(Self::OpenAi),
            "openai-responses" | "responses" => Ok(Self::OpenAiResponses),
            "anthropic" => Ok(Self::Anthropic),
            "gemini" | "google" => Ok(Self::Gemini),
            "replay" => Ok(Self::Replay),
            _ => Err(UnknownProvider(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_keys_follow_the_host() {
        for kind in ProviderKind::ALL {
            assert_eq!(kind.as_str().parse::<ProviderKind>(), Ok(kind));
        }
        assert!("azure".parse::<ProviderKind>().is_err());
        assert_eq!(
            ProviderKind::OpenAi.api_key_env(Some("https://api.deepseek.com")),
            ["DEEPSEEK_API_KEY"]
        );
        assert_eq!(ProviderKind::OpenAi.api_key_env(None), ["OPENAI_API_KEY"]);
        assert_eq!(
            ProviderKind::OpenAi.api_key_env(Some("https://api.openai.com/v1/")),
            ["OPENAI_API_KEY"]
        );
        for elsewhere in [
            "https://deepseek.evil.example/v1",
            "https://api.deepseek.com.evil.example",
            "https://api.openai.com.evil.example/v1",
            "http://api.openai.com/v1",
            "https://api.openai.com:8443/v1",
            "https://user@api.openai.com/v1",
            "http://127.0.0.1:8080/v1",
            "not a url",
        ] {
            assert!(
                ProviderKind::OpenAi.api_key_env(Some(elsewhere)).is_empty(),
                "{elsewhere}"
            );
        }
        assert!(
            ProviderKind::Anthropic
                .api_key_env(Some("https://api.openai.com/v1"))
                .is_empty()
        );
    }

    #[test]
    fn official_hosts_need_a_key_local_servers_do_not() {
        let err = ProviderKind::Anthropic
            .build(ProviderOptions::default())
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("ANTHROPIC_API_KEY")));
        let local = ProviderKind::OpenAi.build(ProviderOptions {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..ProviderOptions::default()
        });
        assert!(local.is_ok());
        let err = ProviderKind::OpenAiResponses
            .build(ProviderOptions::default())
            .err()
            .map(|e| e.to_string());
        assert!(
            err.is_some_and(|e| e.contains("OPENAI_API_KEY")),
            "the Responses API is OpenAI's"
        );
        assert!(
            ProviderKind::OpenAiResponses
                .api_key_env(Some("https://api.deepseek.com"))
                .is_empty(),
            "DeepSeek's key never goes to a Responses client"
        );
    }
}
