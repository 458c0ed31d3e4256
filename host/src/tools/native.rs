//! Tools written as Rust functions.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{CallContext, Tool, ToolError, ToolOutput, ToolSpec};

type Handler = dyn Fn(Value) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// A tool backed by an async Rust function, for tools that need no sandbox.
///
/// The function answers JSON (a [`Value`]) or, for images, audio and other
/// content parts, a whole [`ToolOutput`]: anything that is
/// `Into<ToolOutput>`.
pub struct NativeTool {
    spec: ToolSpec,
    version: Option<String>,
    handler: Arc<Handler>,
}

impl std::fmt::Debug for NativeTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeTool")
            .field("spec", &self.spec)
            .field("version", &self.version)
            .finish()
    }
}

impl NativeTool {
    /// A tool from a function over raw JSON values, with a hand-written
    /// schema. The function answers a JSON [`Value`] or a [`ToolOutput`].
    ///
    /// # Examples
    ///
    /// ```
    /// use serde_json::json;
    /// use toolhost::tools::{Content, NativeTool, ToolOutput};
    ///
    /// let echo = NativeTool::new("echo", "Returns its input.", json!({"type": "object"}), |input| {
    ///     async move { Ok(input) }
    /// });
    /// let dot = NativeTool::new("dot", "Draws a dot.", json!({"type": "object"}), |_| async move {
    ///     let png = vec![0x89, b'P', b'N', b'G'];
    ///     Ok(ToolOutput {
    ///         structured: None,
    ///         content: vec![Content::Image { media_type: "image/png".into(), data: png }],
    ///     })
    /// });
    /// ```
    pub fn new<F, Fut, O>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        f: F,
    ) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Into<ToolOutput>,
    {
        Self {
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                input_schema,
            },
            version: None,
            handler: Arc::new(move |input| f(input).map(|r| r.map(Into::into)).boxed()),
        }
    }

    /// The same tool with a version (see [`Tool::version`]).
    #[must_use]
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// A tool from a typed function; the schema comes from `I`.
    ///
    /// # Examples
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use toolhost::tools::{NativeTool, ToolError};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Add { a: f64, b: f64 }
    ///
    /// let tool = NativeTool::typed("add", "Adds two numbers.", |x: Add| async move {
    ///     Ok::<_, ToolError>(x.a + x.b)
    /// });
    /// ```
    pub fn typed<I, O, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        I: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        O: Serialize + 'static,
        F: Fn(I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    {
        let schema = serde_json::to_value(schemars::schema_for!(I))
            .expect("a derived JSON Schema always serializes");
        let f = Arc::new(f);
        Self::new(name, description, schema, move |input| {
            let f = Arc::clone(&f);
            async move {
                let input: I = serde_json::from_value(input)
                    .map_err(|e| ToolError::invalid_input(e.to_string()))?;
                let output = f(input).await?;
                serde_json::to_value(output)
                    .map_err(|e| ToolError::failed(format!("output is not JSON: {e}")))
            }
        })
    }
}

impl Tool for NativeTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    fn call(
        &self,
        input: Value,
        _cx: &CallContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        (self.handler)(input)
    }
}
