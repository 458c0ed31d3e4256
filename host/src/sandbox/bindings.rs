//! Host bindings for every series of the plugin contract the host speaks:
//! `toolhost:plugin@0.1.0` (`wit/plugin.wit`) and `@0.2.0`
//! (`wit/0.2/plugin.wit`). Generated code stays in the private modules
//! `v1` and `v2`; the rest of the sandbox sees one shape: [`PluginPre`] and
//! [`Plugin`] over either series, [`GuestTool`] for a described tool and
//! [`GuestOutput`] for a call's result, into which a 0.1 answer maps as
//! JSON with no content. What contract 0.3 adds (`wit/0.3/plugin.wit`) is
//! in `offer_calls`: optional exports beside 0.2's `tool`.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::Store;
use wasmtime::component::__internal::{
    CanonicalAbiInfo, InstanceType, InterfaceType, LowerContext,
};
use wasmtime::component::{
    Component, ComponentExportIndex, ComponentType, Func, InstancePre, Lower, TypedFunc,
};

use super::offer_calls::{OfferExports, OfferIndices};
use super::state::StoreState;
use super::working_set::MemorySpan;

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
    v2::Plugin::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    super::offer_calls::link(linker)
}

/// A component linked and checked against its series' world.
#[derive(Clone)]
pub(crate) struct PluginPre {
    pre: InstancePre<StoreState>,
    exports: Indices,
    /// `tool.call`, which the host calls itself (see [`NameProbe`]).
    call: ComponentExportIndex,
    /// The 0.3 interfaces it exports besides `tool`, if any.
    offers: OfferIndices,
}

#[derive(Clone)]
enum Indices {
    V0_1(v1::PluginIndices),
    V0_2(v2::PluginIndices),
}

impl PluginPre {
    /// Checks `pre` against the world of `series`.
    pub(crate) fn new(series: Series, pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        let exports = match series {
            Series::V0_1 => Indices::V0_1(v1::PluginIndices::new(&pre)?),
            Series::V0_2 => Indices::V0_2(v2::PluginIndices::new(&pre)?),
        };
        let component = pre.component();
        let call = component
            .get_export_index(None, series.tool_export())
            .and_then(|tool| component.get_export_index(Some(&tool), "call"))
            .ok_or_else(|| wasmtime::format_err!("the `tool` interface exports no `call`"))?;
        let offers = OfferIndices::new(&pre)?;
        Ok(Self {
            pre,
            exports,
            call,
            offers,
        })
    }

    /// Whether the component exports any of contract 0.3's interfaces.
    pub(crate) fn has_offers(&self) -> bool {
        self.offers.any()
    }

    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Plugin> {
        let instance = self.pre.instantiate_async(&mut *store).await?;
        let exports = match &self.exports {
            Indices::V0_1(i) => Exports::V0_1(i.load(&mut *store, &instance)?),
            Indices::V0_2(i) => Exports::V0_2(i.load(&mut *store, &instance)?),
        };
        let call = instance
            .get_func(&mut *store, self.call)
            .ok_or_else(|| wasmtime::format_err!("the `tool` interface exports no `call`"))?;
        // Checked once here, so that each call can skip the check.
        match exports {
            Exports::V0_1(_) => call
                .typed::<CallParams<'static>, CallResults1>(&*store)
                .map(|_| ())?,
            Exports::V0_2(_) => call
                .typed::<CallParams<'static>, CallResults2>(&*store)
                .map(|_| ())?,
        }
        let offers = if self.offers.any() {
            self.offers.load(&mut *store, &instance)?
        } else {
            OfferExports::default()
        };
        Ok(Plugin {
            exports,
            call,
            offers,
            memory: SeenMemory::default(),
        })
    }
}

/// An instance of a component, of either series.
pub(crate) struct Plugin {
    exports: Exports,
    call: Func,
    /// Its 0.3 exports (none for most plugins).
    offers: OfferExports,
    /// Where the instance's linear memory lies, once a call has written its
    /// arguments into it.
    memory: SeenMemory,
}

enum Exports {
    V0_1(v1::Plugin),
    V0_2(v2::Plugin),
}

type CallParams<'a> = (NameProbe<'a>, &'a str);
type CallResults1 = (Result<String, self::v1::exports::toolhost::plugin::tool::ToolError>,);
type CallResults2 = (
    Result<
        self::v2::toolhost::plugin::types::ToolOutput,
        self::v2::exports::toolhost::plugin::tool::ToolError,
    >,
);

/// The base and length of an instance's linear memory, noted by
/// [`NameProbe`].
#[derive(Debug, Default)]
struct SeenMemory {
    base: AtomicUsize,
    len: AtomicUsize,
}

/// A call's `name` argument, lowered as the `string` it is, that notes on
/// the way where the instance's linear memory lies: the one place
/// wasmtime's API shows a component instance's memory to the host (see
/// `working_set`). Relies on the canonical ABI's `Lower` trait, public but
/// outside wasmtime's stability promise: the workspace pins wasmtime.
struct NameProbe<'a> {
    name: &'a str,
    seen: &'a SeenMemory,
}

impl NameProbe<'_> {
    fn note<T>(&self, cx: &mut LowerContext<'_, T>) {
        let memory = cx.as_slice_mut();
        self.seen
            .base
            .store(memory.as_mut_ptr() as usize, Ordering::Relaxed);
        self.seen.len.store(memory.len(), Ordering::Relaxed);
    }
}

// SAFETY: every item is `str`'s own, so the probe lowers exactly as a
// `string`.
unsafe impl ComponentType for NameProbe<'_> {
    type Lower = <str as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <str as ComponentType>::ABI;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <str as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: as for `ComponentType`: `str` does the lowering; the probe only
// reads where the memory is.
unsafe impl Lower for NameProbe<'_> {
    fn linear_lower_to_flat<T>(
        &self,
        cx: &mut LowerContext<'_, T>,
        ty: InterfaceType,
        dst: &mut MaybeUninit<Self::Lower>,
    ) -> wasmtime::Result<()> {
        self.note(cx);
        self.name.linear_lower_to_flat(cx, ty, dst)
    }

    fn linear_lower_to_memory<T>(
        &self,
        cx: &mut LowerContext<'_, T>,
        ty: InterfaceType,
        offset: usize,
    ) -> wasmtime::Result<()> {
        self.note(cx);
        self.name.linear_lower_to_memory(cx, ty, offset)
    }
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
    /// Its contract 0.3 exports.
    pub(crate) fn offers(&self) -> &OfferExports {
        &self.offers
    }

    /// Where this instance's linear memory lies, once a call has been made
    /// on it.
    pub(crate) fn memory(&self) -> Option<MemorySpan> {
        let base = self.memory.base.load(Ordering::Relaxed);
        let len = self.memory.len.load(Ordering::Relaxed);
        (base != 0 && len != 0).then_some(MemorySpan { base, len })
    }

    pub(crate) async fn call_describe(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<Vec<GuestTool>> {
        Ok(match &self.exports {
            Exports::V0_1(p) => p
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
            Exports::V0_2(p) => p
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
        let name = NameProbe {
            name,
            seen: &self.memory,
        };
        Ok(match &self.exports {
            Exports::V0_1(_) => {
                use self::v1::exports::toolhost::plugin::tool::ToolError as E;
                // SAFETY: the type was checked when the instance was made.
                let call =
                    unsafe { TypedFunc::<CallParams<'_>, CallResults1>::new_unchecked(self.call) };
                call.call_async(store, (name, input))
                    .await?
                    .0
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
            Exports::V0_2(_) => {
                use self::v2::exports::toolhost::plugin::tool::ToolError as E;
                use self::v2::toolhost::plugin::types::{Content as C, ResourceContents as R};
                // SAFETY: the type was checked when the instance was made.
                let call =
                    unsafe { TypedFunc::<CallParams<'_>, CallResults2>::new_unchecked(self.call) };
                call.call_async(store, (name, input))
                    .await?
                    .0
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
