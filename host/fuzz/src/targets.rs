//! The fuzz targets: one function per decoder of untrusted input, each
//! given the fuzzer's bytes. They use the library's public API only (the
//! decoders without a public door of their own through
//! `toolhost::fuzzing`), never panic on any input, and assert what must
//! hold of what a decoder accepts: it re-encodes to itself where the API
//! writes it back, and stays within its caps.
//!
//! The same file is compiled into the test suite (`tests/all/fuzz.rs`),
//! which replays `host/fuzz/corpus/NAME/` and `host/fuzz/regressions/NAME/`
//! through [`TARGETS`] on every run.

use std::sync::OnceLock;

use serde_json::Value;
use toolhost::fuzzing;
use toolhost::llm::{
    AnthropicConfig, AnthropicProvider, ChatResponse, GeminiConfig, GeminiProvider, HttpConfig,
    LlmError, OpenAiConfig, OpenAiProvider, ReplayProvider, ResponseLimits, ResponsesConfig,
    ResponsesProvider,
};
use toolhost::runner::Transcript;
use toolhost::tools::{
    PluginBudget, SchemaBudget, check_answer, check_question_schema, check_schema,
    is_valid_tool_name,
};

/// A target: it takes whatever bytes the fuzzer makes.
pub type Target = fn(&[u8]);

/// Every target by name (the name of its binary, and of its folders under
/// `corpus/` and `regressions/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("manifest", manifest),
    ("describe", describe),
    ("question", question),
    ("mcp_frames", mcp_frames),
    ("mcp_result", mcp_result),
    ("request_state", request_state),
    ("sse", sse),
    ("openai", openai),
    ("anthropic", anthropic),
    ("gemini", gemini),
    ("responses", responses),
    ("oci_manifest", oci_manifest),
    ("transcript", transcript),
    ("replay", replay),
];

/// A plugin's sidecar manifest (`NAME.toml`), as a plugin load reads it.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(manifest) = toml::from_str::<toolhost::plugin::Manifest>(text) {
        // What it grants is what it says: a second read agrees.
        assert_eq!(
            toml::from_str::<toolhost::plugin::Manifest>(text).ok(),
            Some(manifest)
        );
    }
}

/// A plugin's `describe()` answer: its tools' names, descriptions, input
/// and output schemas, annotations and metadata (a JSON list of the WIT
/// records).
pub fn describe(data: &[u8]) {
    let budget = PluginBudget {
        max_tools: 8,
        max_description_bytes: 512,
        max_schema_bytes: 8 << 10,
        ..PluginBudget::default()
    };
    let Some(Ok(specs)) = fuzzing::describe(data, &budget) else {
        return;
    };
    assert!(!specs.is_empty() && specs.len() <= budget.max_tools);
    let mut names = std::collections::HashSet::new();
    for spec in &specs {
        assert!(is_valid_tool_name(&spec.name), "{:?}", spec.name);
        assert!(names.insert(spec.name.as_str()), "{} twice", spec.name);
        assert!(spec.description.len() <= budget.max_description_bytes);
        assert!(serde_json::to_vec(&spec.input_schema).unwrap().len() <= budget.max_schema_bytes);
        assert!(check_schema(&spec.input_schema, &SchemaBudget::default()).is_ok());
    }
}

/// A tool's question schema (from a plugin) and a person's answer (from
/// an MCP client), as `[schema, answer]`, or a schema alone.
pub fn question(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let (schema, answer) = match value {
        Value::Array(mut pair) if pair.len() == 2 => {
            let answer = pair.pop().unwrap_or_default();
            (pair.pop().unwrap_or_default(), answer)
        }
        schema => (schema, Value::Null),
    };
    let Ok(checked) = check_question_schema(&schema) else {
        return;
    };
    // What goes out is a schema the host accepts, and goes out unchanged.
    let again = check_question_schema(&Value::Object(checked.clone()));
    assert_eq!(again.as_ref().ok(), Some(&checked), "{schema}");
    let fields = checked
        .get("properties")
        .and_then(Value::as_object)
        .map_or(0, |p| p.len());
    assert!(fields <= toolhost::tools::MAX_QUESTION_FIELDS);
    let _ = check_answer(&checked, &answer);
}

/// Reads of a stdio MCP server's `stdout`: a first byte picks the line
/// cap and how the bytes arrive.
pub fn mcp_frames(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let cap = 16 + usize::from(first & 0x3f) * 8;
    let chunks: Vec<Vec<u8>> = rest
        .chunks(1 + usize::from(first >> 6) * 7)
        .map(<[u8]>::to_vec)
        .collect();
    let out = fuzzing::mcp_stdout_lines(chunks, cap);
    // Lines within the cap go through unchanged and in order; every
    // other line is a marked error in place of an over-cap answer.
    let mut kept = rest
        .split_inclusive(|b| *b == b'\n')
        .filter(|line| line.len() <= cap + 1);
    for line in out.split_inclusive(|b| *b == b'\n') {
        if line.len() <= cap + 1 && kept.clone().next() == Some(line) {
            kept.next();
            continue;
        }
        let error: Value = serde_json::from_slice(line).expect("a replacement is JSON");
        let (bytes, limit) = fuzzing::mcp_too_large(&error["error"]).expect("marked too large");
        assert_eq!(limit, cap as u64);
        assert!(bytes > limit);
        assert!(error["id"].is_string() || error["id"].is_number());
    }
    assert_eq!(kept.next(), None, "a line within the cap was lost");
}

/// An MCP server's `tools/call` result, as a tool's output.
pub fn mcp_result(data: &[u8]) {
    let max = 4 << 10;
    let Some(Ok(output)) = fuzzing::mcp_call_result(data, max) else {
        return;
    };
    // Whatever is kept is no more than the server sent.
    assert!(serde_json::to_vec(&output.to_json()).unwrap().len() <= data.len().max(64) * 2);
}

/// The `requestState` an MCP client sends back with a retried call.
pub fn request_state(data: &[u8]) {
    let Ok(state) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(sent) = fuzzing::request_state(state) else {
        return;
    };
    // What `serve` sends on, it reads back as the same state.
    match fuzzing::request_state(&sent) {
        Ok(again) => assert_eq!(again, sent),
        Err(_) => assert!(sent.len() > fuzzing::MAX_REQUEST_STATE, "{sent}"),
    }
}

/// A provider's server-sent event stream: a first byte picks the event
/// cap and the chunk size; every chunking gives the same events.
pub fn sse(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let cap = 8 + usize::from(first & 0x7f) * 4;
    let chunks: Vec<&[u8]> = rest.chunks(1 + usize::from(first >> 7) * 3).collect();
    let whole = fuzzing::sse_events(cap, &[rest]);
    assert_eq!(fuzzing::sse_events(cap, &chunks), whole);
    let bytewise: Vec<&[u8]> = rest.chunks(1).collect();
    assert_eq!(fuzzing::sse_events(cap, &bytewise), whole);
    // The cap counts bytes received; each becomes at most one character
    // (U+FFFD for a byte that is not UTF-8).
    for (_, data) in whole.iter().flatten() {
        let chars = data.chars().count();
        assert!(
            chars < cap,
            "an event of {chars} characters passed a cap of {cap}"
        );
    }
}

/// Small caps, so that inputs reach them.
fn limits() -> ResponseLimits {
    ResponseLimits {
        max_body_bytes: 64 << 10,
        max_event_bytes: 1 << 10,
        max_stream_bytes: 64 << 10,
    }
}

fn http() -> HttpConfig {
    let mut http = HttpConfig::new("http://127.0.0.1:9");
    http.limits = limits();
    http
}

/// A provider's answer body: a first byte says whether it is a stream and
/// how it arrives.
fn answer(data: &[u8], decode: impl FnOnce(Vec<Vec<u8>>, bool) -> Result<ChatResponse, LlmError>) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let stream = first & 1 == 1;
    let chunks = rest
        .chunks(1 + usize::from(first >> 1) * 16)
        .map(<[u8]>::to_vec)
        .collect();
    match decode(chunks, stream) {
        Ok(answer) => {
            // Every call has an id of its own (the loop answers by id).
            let mut ids = std::collections::HashSet::new();
            for call in &answer.message.tool_calls {
                assert!(!call.id.is_empty());
                assert!(ids.insert(call.id.clone()), "{} twice", call.id);
            }
        }
        Err(LlmError::TooLarge { limit, .. }) => {
            // A cap is reached by what was sent, never before.
            assert!(
                rest.len() > limit,
                "{} bytes passed a cap of {limit}",
                rest.len()
            );
        }
        Err(_) => {}
    }
}

/// OpenAI's chat completions (`/v1/chat/completions`), whole or streamed.
pub fn openai(data: &[u8]) {
    static PROVIDER: OnceLock<OpenAiProvider> = OnceLock::new();
    let provider =
        PROVIDER.get_or_init(|| OpenAiProvider::new(OpenAiConfig::new(http(), "m")).unwrap());
    answer(data, |chunks, stream| {
        fuzzing::block_on(provider.decode_answer(chunks, stream))
    });
}

/// Anthropic's messages (`/v1/messages`), whole or streamed.
pub fn anthropic(data: &[u8]) {
    static PROVIDER: OnceLock<AnthropicProvider> = OnceLock::new();
    let provider =
        PROVIDER.get_or_init(|| AnthropicProvider::new(AnthropicConfig::new(http(), "m")).unwrap());
    answer(data, |chunks, stream| {
        fuzzing::block_on(provider.decode_answer(chunks, stream))
    });
}

/// Gemini's `generateContent`, whole or streamed.
pub fn gemini(data: &[u8]) {
    static PROVIDER: OnceLock<GeminiProvider> = OnceLock::new();
    let provider =
        PROVIDER.get_or_init(|| GeminiProvider::new(GeminiConfig::new(http(), "m")).unwrap());
    answer(data, |chunks, stream| {
        fuzzing::block_on(provider.decode_answer(chunks, stream))
    });
}

/// The Responses API (`/v1/responses`), whole or streamed.
pub fn responses(data: &[u8]) {
    static PROVIDER: OnceLock<ResponsesProvider> = OnceLock::new();
    let provider =
        PROVIDER.get_or_init(|| ResponsesProvider::new(ResponsesConfig::new(http(), "m")).unwrap());
    answer(data, |chunks, stream| {
        fuzzing::block_on(provider.decode_answer(chunks, stream))
    });
}

/// A registry's OCI image manifest, as `pull` reads it.
pub fn oci_manifest(data: &[u8]) {
    let Ok(layers) = fuzzing::oci_manifest(data) else {
        return;
    };
    assert_eq!(layers.component.0, toolhost::oci::WASM_LAYER_MEDIA_TYPE);
    if let Some(manifest) = &layers.manifest {
        assert_eq!(manifest.0, toolhost::oci::MANIFEST_LAYER_MEDIA_TYPE);
    }
    if let Some(signature) = &layers.signature {
        assert_eq!(signature.0, toolhost::oci::SIGNATURE_LAYER_MEDIA_TYPE);
    }
    // A digest `pull` takes reads back as itself.
    for (_, digest, _) in [
        Some(&layers.component),
        layers.manifest.as_ref(),
        layers.signature.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(hex) = digest.strip_prefix("sha256:")
            && let Ok(parsed) = hex.parse::<toolhost::signing::Sha256Digest>()
        {
            assert_eq!(parsed.to_string(), hex.to_ascii_lowercase());
        }
    }
}

/// A saved or paused run (`--transcript`, `--resume`): read as it is, and,
/// since a fuzzer seldom writes a matching digest, also re-sealed first so
/// that its content reaches the checks after the digest.
pub fn transcript(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(read) = Transcript::from_value(value.clone()) {
        round_trip(&read);
    }
    if let Ok(shape) = serde_json::from_value::<Transcript>(value)
        && let Ok(sealed) = shape.to_value()
        && let Ok(read) = Transcript::from_value(sealed)
    {
        round_trip(&read);
    }
}

fn round_trip(read: &Transcript) {
    let written = read
        .to_value()
        .expect("a transcript that was read is written");
    let again = Transcript::from_value(written).expect("a transcript written is read back");
    assert_eq!(&again, read);
}

/// A replay recording (`--replay`, `ReplayProvider::from_json`).
pub fn replay(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ReplayProvider::from_json(text);
}
