//! Host bindings for every series of the plugin contract the host speaks:
//! `toolhost:plugin@0.1.0` (`wit/plugin.wit`) and `@0.2.0`
//! (`wit/0.2/plugin.wit`). Generated code stays in the private modules
//! `v1` and `v2`; the rest of the sandbox sees one shape: [`PluginPre`] and
//! [`Plugin`] over either series, [`GuestTool`] for a described tool and
//! [`GuestOutput`] for a call's result, into which a 0.1 answer maps as
//! JSON with no content.

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre};

use super::state::StoreState;

mod v1 {
    wasmtime::component::bindgen!({
        path: "../wit/plugin.wit",
        world: "plugin",
        exports: { default: async },
    });
}

mod v2 {
    wasmtime::component::bindgen!({
        path: "../wit/0.2/plugin.wit",
        world: "plugin",
        imports: { "toolhost:plugin/user.ask": async },
        exports: { default: async },
    });
}

// `self::` because the generated `toolhost` modules share their name with
// this crate, which doctests see as an extern crate.
pub(crate) use self::v1::toolhost::plugin::host::{Host as HostImports, Level};
pub(crate) use self::v1::toolhost::plugin::types::Host as TypesHost;
pub(crate) use self::v2::toolhost::plugin::host::{Host as HostImports2, Level as Level2};
pub(crate) use self::v2::toolhost::plugin::progress::Host as ProgressHost;
pub(crate) use self::v2::toolhost::plugin::types::Host as TypesHost2;
pub(crate) use self::v2::toolhost::plugin::user::{
    Answer as WitAnswer, AskError as WitAskError, Host as UserHost,
};

/// The contract series a component speaks, read from its exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Series {
    V0_1,
    V0_2,
}

impl Series {
    /// The name of the `tool` interface a component of this series exports.
    pub(crate) fn tool_export(self) -> &'static str {
        match self {
            Self::V0_1 => "toolhost:plugin/tool@0.1.0",
            Self::V0_2 => "toolhost:plugin/tool@0.2.0",
        }
    }

    /// The series `component` exports `tool` of, newest first; `None` when
    /// it exports none the host speaks.
    pub(crate) fn of(component: &Component) -> Option<Self> {
        [Self::V0_2, Self::V0_1]
            .into_iter()
            .find(|s| component.get_export_index(None, s.tool_export()).is_some())
    }
}

/// Link both series' host imports; a component imports only the interfaces
/// it uses.
pub(crate) fn link(linker: &mut wasmtime::component::Linker<StoreState>) -> wasmtime::Result<()> {
    use wasmtime::component::HasSelf;
    v1::Plugin::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    v2::Plugin::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
}

/// A component linked and checked against its series' world.
pub(crate) enum PluginPre {
    V0_1(v1::PluginPre<StoreState>),
    V0_2(v2::PluginPre<StoreState>),
}

impl Clone for PluginPre {
    fn clone(&self) -> Self {
        match self {
            Self::V0_1(p) => Self::V0_1(p.clone()),
            Self::V0_2(p) => Self::V0_2(p.clone()),
        }
    }
}

impl PluginPre {
    /// Checks `pre` against the world of `series`.
    pub(crate) fn new(series: Series, pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        Ok(match series {
            Series::V0_1 => Self::V0_1(v1::PluginPre::new(pre)?),
            Series::V0_2 => Self::V0_2(v2::PluginPre::new(pre)?),
        })
    }

    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Plugin> {
        Ok(match self {
            Self::V0_1(p) => Plugin::V0_1(p.instantiate_async(store).await?),
            Self::V0_2(p) => Plugin::V0_2(p.instantiate_async(store).await?),
        })
    }
}

/// An instance of a component, of either series.
pub(crate) enum Plugin {
    V0_1(v1::Plugin),
    V0_2(v2::Plugin),
}

/// MCP's tool annotations, as a plugin declared them (0.2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GuestAnnotations {
    pub(crate) title: Option<String>,
    pub(crate) read_only: Option<bool>,
    pub(crate) destructive: Option<bool>,
    pub(crate) idempotent: Option<bool>,
    pub(crate) open_world: Option<bool>,
}

/// One tool as a plugin described it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GuestTool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: String,
    pub(crate) output_schema: Option<String>,
    pub(crate) annotations: GuestAnnotations,
    pub(crate) meta: Option<String>,
}

/// One part of a result besides its JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GuestContent {
    Text(String),
    Image {
        media_type: String,
        data: Vec<u8>,
    },
    Audio {
        media_type: String,
        data: Vec<u8>,
    },
    Resource {
        uri: String,
        media_type: Option<String>,
        text: Option<String>,
        blob: Option<Vec<u8>>,
    },
}

impl GuestContent {
    /// The bytes this part carries, for the output cap.
    pub(crate) fn size(&self) -> usize {
        match self {
            Self::Text(t) => t.len(),
            Self::Image { media_type, data } | Self::Audio { media_type, data } => {
                media_type.len() + data.len()
            }
            Self::Resource {
                uri,
                media_type,
                text,
                blob,
            } => {
                uri.len()
                    + media_type.as_ref().map_or(0, String::len)
                    + text.as_ref().map_or(0, String::len)
                    + blob.as_ref().map_or(0, Vec::len)
            }
        }
    }
}

/// A call's successful result.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct GuestOutput {
    pub(crate) json: Option<String>,
    pub(crate) content: Vec<GuestContent>,
}

/// The tool's own error, the same four kinds in every series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WitToolError {
    InvalidInput(String),
    Failed(String),
    Denied(String),
    UnknownTool(String),
}

impl Plugin {
    pub(crate) async fn call_describe(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<GuestTool>> {
        Ok(match self {
            Self::V0_1(p) => p
                .toolhost_plugin_tool()
                .call_describe(store)
                .await?
                .into_iter()
                .map(|t| GuestTool {
                    name: t.name,
                    description: t.description,
                    input_schema: t.input_schema,
                    output_schema: None,
                    annotations: GuestAnnotations::default(),
                    meta: None,
                })
                .collect(),
            Self::V0_2(p) => p
                .toolhost_plugin_tool()
                .call_describe(store)
                .await?
                .into_iter()
                .map(|t| GuestTool {
                    name: t.name,
                    description: t.description,
                    input_schema: t.input_schema,
                    output_schema: t.output_schema,
                    annotations: GuestAnnotations {
                        title: t.annotations.title,
                        read_only: t.annotations.read_only,
                        destructive: t.annotations.destructive,
                        idempotent: t.annotations.idempotent,
                        open_world: t.annotations.open_world,
                    },
                    meta: t.meta,
                })
                .collect(),
        })
    }

    pub(crate) async fn call_call(
        &self,
        store: &mut Store<StoreState>,
        name: &str,
        input: &str,
    ) -> wasmtime::Result<Result<GuestOutput, WitToolError>> {
        Ok(match self {
            Self::V0_1(p) => {
                use self::v1::exports::toolhost::plugin::tool::ToolError as E;
                p.toolhost_plugin_tool()
                    .call_call(store, name, input)
                    .await?
                    .map(|json| GuestOutput {
                        json: Some(json),
                        content: Vec::new(),
                    })
                    .map_err(|e| match e {
                        E::InvalidInput(m) => WitToolError::InvalidInput(m),
                        E::Failed(m) => WitToolError::Failed(m),
                        E::Denied(m) => WitToolError::Denied(m),
                        E::UnknownTool(m) => WitToolError::UnknownTool(m),
                    })
            }
            Self::V0_2(p) => {
                use self::v2::exports::toolhost::plugin::tool::ToolError as E;
                use self::v2::toolhost::plugin::types::{Content as C, ResourceContents as R};
                p.toolhost_plugin_tool()
                    .call_call(store, name, input)
                    .await?
                    .map(|out| GuestOutput {
                        json: out.json,
                        content: out
                            .content
                            .into_iter()
                            .map(|part| match part {
                                C::Text(t) => GuestContent::Text(t),
                                C::Image(m) => GuestContent::Image {
                                    media_type: m.media_type,
                                    data: m.data,
                                },
                                C::Audio(m) => GuestContent::Audio {
                                    media_type: m.media_type,
                                    data: m.data,
                                },
                                C::Resource(r) => {
                                    let (text, blob) = match r.contents {
                                        R::Text(t) => (Some(t), None),
                                        R::Blob(b) => (None, Some(b)),
                                    };
                                    GuestContent::Resource {
                                        uri: r.uri,
                                        media_type: r.media_type,
                                        text,
                                        blob,
                                    }
                                }
                            })
                            .collect(),
                    })
                    .map_err(|e| match e {
                        E::InvalidInput(m) => WitToolError::InvalidInput(m),
                        E::Failed(m) => WitToolError::Failed(m),
                        E::Denied(m) => WitToolError::Denied(m),
                        E::UnknownTool(m) => WitToolError::UnknownTool(m),
                    })
            }
        })
    }
}
