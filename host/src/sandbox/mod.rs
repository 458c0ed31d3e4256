//! The sandbox: one WebAssembly engine, per-call limits, deny-by-default WASI.
//!
//! Every call runs in its own store with a fuel budget, a wall-clock
//! deadline (epoch interruption driven by a watchdog thread), a cap on
//! linear memory and a cap on output bytes. Hitting any of them ends the
//! call with a [`ToolError`] of the matching kind; it never crashes the host
//! or blocks a thread past the deadline.
//!
//! Stores get a WASI context that grants nothing unless the plugin's
//! [`Permissions`] say so: no preopened directories, no environment, no
//! sockets, stdin closed, stdout discarded, the tail of each call's stderr
//! kept for its error message, at most a bounded number of open files, and
//! never a FIFO, socket or device (see `files`). The
//! WASI interfaces are *linked* (Rust and Python guests import them even if
//! unused), which is not the same as granting them. `wasi:http` is linked
//! for every plugin too, and lets a request out only within the plugin's
//! [`HttpGrant`], checked in the host (see `http`).
//!
//! What an embedder sees here is the per-call budget ([`Limits`]), the
//! grants ([`Permissions`]) and the errors. The engine, its instance pool
//! and the compile cache stay inside; they are used through
//! [`PluginHost`](crate::plugin::PluginHost).

mod ask;
mod bindings;
mod cache;
mod call;
mod capture;
mod files;
mod grants;
mod http;
mod imports;
mod limits;
mod offer_calls;
mod spec;
mod stamps;
mod state;
mod watchdog;
mod working_set;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub(crate) use bindings::{GuestAnnotations, GuestContent, GuestOutput, GuestTool};
pub use cache::CacheStatus;
pub(crate) use call::{Guest, Live};
pub use grants::{DirGrant, EnvVar, Permissions};
pub use http::HttpGrant;
pub use limits::{LimitError, Limits, OverCeiling};
pub(crate) use offer_calls::{
    COMPLETIONS, GuestOfferError, OfferAnswer, OfferCall, OfferLists, PROMPTS, RESOURCES,
};
pub use spec::LimitsSpec;
pub(crate) use stamps::FileStamp;
pub(crate) use state::CallSinks;

use crate::tools::ToolError;
use state::StoreState;

/// How a fresh instance's linear memory gets its initial contents.
///
/// Either way every instance starts from the same bytes and sees no other
/// instance's writes; the choice moves work between instantiation and the
/// call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryInit {
    /// Map the component's memory image copy-on-write: instantiation is
    /// cheap and untouched pages are shared between instances, but the call
    /// pays a page fault for each page it first touches. Best for saturated
    /// hosts, many live sessions, and hosts without spare instances.
    #[default]
    Cow,
    /// Copy the memory image into each instance's own memory when it is
    /// made: instantiation costs more and each instance holds a private
    /// copy (the component's initialized data: ~10 MB for CPython), but the
    /// call then takes almost no page faults. With spare instances that
    /// copy is made off the call's path, so calls paced by model turns get
    /// faster (a CPython call by more than half).
    Copy,
}

/// Engine-wide settings; per-plugin budgets are [`Limits`]. Embedders set
/// these through `HostConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SandboxConfig {
    /// Where compiled components are cached. `None` compiles every time.
    pub cache_dir: Option<PathBuf>,
    /// How long a plugin file goes unwritten before the cache trusts its
    /// stamp (`HostConfig::cache_stamp_settle_ms`).
    pub cache_stamp_settle: std::time::Duration,
    /// Instance slots in the pooling allocator: the most calls running at
    /// once plus live stateful sessions and spare instances. An instance
    /// whose component defines more than 2 memories or 4 tables takes
    /// several slots. Default 1000.
    pub max_instances: u32,
    /// The largest memory cap any plugin may have (the pool's slot size).
    pub max_memory_bytes: u64,
    /// How fresh instances get their initial memory.
    pub memory_init: MemoryInit,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            cache_dir: None,
            cache_stamp_settle: std::time::Duration::from_secs(2),
            max_instances: 1000,
            max_memory_bytes: Limits::default_ceiling().memory_bytes,
            memory_init: MemoryInit::default(),
        }
    }
}

/// Why the sandbox could not be set up or a component not compiled: the
/// error of `PluginHost::new`, and the cause in a plugin's load error.
///
/// `{}` says what failed; wasmtime's own error is the [`source`]
/// (walk the chain, or downcast it). `{:#}` adds the chain, the way
/// `anyhow` and wasmtime print errors, for a one-line report.
///
/// [`source`]: std::error::Error::source
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// A setting of the host config is out of range.
    Config(String),
    /// The compile cache directory is not safe to load native code from.
    UnsafeCache(String),
    /// The engine rejected the configuration.
    Engine(#[source] wasmtime::Error),
    /// The watchdog thread could not start.
    Watchdog(#[source] std::io::Error),
    /// The bytes are not a loadable component.
    Compile(#[source] wasmtime::Error),
    /// The component does not implement the `toolhost:plugin` world.
    World(#[source] wasmtime::Error),
}

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config(message) => return write!(f, "invalid host config: {message}"),
            Self::UnsafeCache(message) => return f.write_str(message),
            Self::Engine(_) => f.write_str("could not configure the WebAssembly engine")?,
            Self::Watchdog(_) => f.write_str("could not start the deadline watchdog thread")?,
            Self::Compile(_) => {
                f.write_str("not a WebAssembly component this host can load")?;
            }
            Self::World(_) => f.write_str(
                "the component does not fit the toolhost:plugin world it exports (0.1.0: wit/plugin.wit, 0.2.0: wit/0.2/plugin.wit)",
            )?,
        }
        if f.alternate() {
            let mut source = std::error::Error::source(self);
            while let Some(cause) = source {
                write!(f, ": {cause}")?;
                source = cause.source();
            }
        }
        Ok(())
    }
}

/// What one instance slot of the pool holds. A component that defines more
/// memories or tables per instance takes more than one slot per instance
/// ([`slots_per_instance`]), so the slot permits account for the pool
/// exactly and a call never meets a full pool while holding its permits.
const MEMORIES_PER_SLOT: u32 = 2;
const TABLES_PER_SLOT: u32 = 4;
/// Core instances are only counted (no memory is reserved for them), so the
/// pool allows many per slot rather than weighing components by them, which
/// wasmtime does not report.
const CORE_INSTANCES_PER_SLOT: u32 = 32;

/// How many instance slots one instance of `component` takes.
fn slots_per_instance(component: &Component) -> u32 {
    component.resources_required().map_or(1, |needs| {
        needs
            .num_memories
            .div_ceil(MEMORIES_PER_SLOT)
            .max(needs.num_tables.div_ceil(TABLES_PER_SLOT))
            .max(1)
    })
}

/// The name and manifest values a plugin's host imports answer with.
#[derive(Debug)]
pub(crate) struct PluginIdentity {
    pub(crate) name: String,
    pub(crate) config: BTreeMap<String, String>,
}

/// A limit a call ran into, raised from our own hooks so the kind is known
/// by type.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LimitHit {
    #[error("the plugin tried to use {asked} bytes of memory; its cap is {cap}")]
    Memory { cap: u64, asked: u64 },
    #[error("the call ran past its deadline")]
    Deadline,
}

/// The WebAssembly engine and everything shared by all plugins. Cheap to
/// clone. Crate-internal: embedders reach it through `PluginHost`.
#[derive(Clone)]
pub(crate) struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    linker: Linker<StoreState>,
    cache: cache::CompileCache,
    watchdog: watchdog::Watchdog,
    /// One permit per instance slot of the pool (`max_instances`): a store
    /// is made only with a permit, held until the store is dropped, so a
    /// call waits for a slot instead of failing when the pool is full.
    slots: Arc<tokio::sync::Semaphore>,
    max_instances: u32,
    /// Spare instances ready across every plugin (for metrics).
    spares: std::sync::atomic::AtomicIsize,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Set up the engine: pooling allocator, fuel, epochs, compile cache,
    /// the WASI and `toolhost:plugin/host` imports, and the deadline thread.
    ///
    /// # Errors
    ///
    /// The engine rejects the configuration (for instance, too many instance
    /// slots for the address space) or the watchdog thread cannot start.
    pub fn new(config: &SandboxConfig) -> Result<Self, SandboxError> {
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(config.max_instances)
            .total_core_instances(config.max_instances.saturating_mul(CORE_INSTANCES_PER_SLOT))
            .total_memories(config.max_instances.saturating_mul(MEMORIES_PER_SLOT))
            .total_tables(config.max_instances.saturating_mul(TABLES_PER_SLOT))
            .total_stacks(config.max_instances)
            .max_memory_size(usize::try_from(config.max_memory_bytes).unwrap_or(usize::MAX))
            // A store's memories and tables go back to the pool when the
            // store drops, before its slot permits do: the permits are what
            // callers wait on, so a caller holding them must find the pool
            // room. Batched decommits would park freed slots in a queue that
            // another thread may be flushing at that moment, and the
            // allocation would fail with the permits in hand. Spare
            // instances keep the (now unbatched) decommits off the call path.
            .decommit_batch_size(1)
            // A fresh instance per call mostly pays page faults on the pages
            // the call touches. With PAGEMAP_SCAN (Linux 6.7+) wasmtime finds
            // the pages a call dirtied and resets just those with memset, up
            // to this budget, so they stay mapped for the next instance
            // (`working_set` makes sure they fit).
            .pagemap_scan(wasmtime::Enabled::Auto)
            .linear_memory_keep_resident(working_set::KEEP_RESIDENT)
            .table_keep_resident(64 << 10);
        let mut wasm = Config::new();
        wasm.consume_fuel(true)
            .epoch_interruption(true)
            .memory_init_cow(config.memory_init == MemoryInit::Cow)
            .wasm_component_model(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&wasm).map_err(SandboxError::Engine)?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(SandboxError::Engine)?;
        // wasi:http for every plugin; only a plugin's grant lets a request
        // out (see `http`).
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(SandboxError::Engine)?;
        // Guests open regular files and directories only, a bounded number.
        files::link(&mut linker).map_err(SandboxError::Engine)?;
        bindings::link(&mut linker).map_err(SandboxError::Engine)?;

        let cache =
            cache::CompileCache::open(&engine, config.cache_dir.clone(), config.cache_stamp_settle)
                .map_err(SandboxError::UnsafeCache)?;
        let watchdog = watchdog::Watchdog::start(engine.clone()).map_err(SandboxError::Watchdog)?;
        Ok(Self {
            inner: Arc::new(Inner {
                engine,
                linker,
                cache,
                watchdog,
                slots: Arc::new(tokio::sync::Semaphore::new(config.max_instances as usize)),
                max_instances: config.max_instances,
                spares: std::sync::atomic::AtomicIsize::new(0),
            }),
        })
    }

    /// The digest that names a component in the cache.
    pub(crate) fn digest(wasm: &[u8]) -> blake3::Hash {
        blake3::hash(wasm)
    }

    /// Where the cache entry for a component with `digest` is (whether or
    /// not it exists yet). `None` when caching is off.
    pub(crate) fn cache_entry(&self, digest: &blake3::Hash) -> Option<PathBuf> {
        self.inner.cache.entry_path(digest)
    }

    /// Compile `wasm` (or load it from the cache). Blocking and CPU-heavy
    /// for big components: call it off the async executor.
    ///
    /// # Errors
    ///
    /// The bytes are not a valid component.
    pub(crate) fn compile(
        &self,
        wasm: &[u8],
        digest: &blake3::Hash,
    ) -> Result<(Component, CacheStatus), SandboxError> {
        self.inner
            .cache
            .load(&self.inner.engine, wasm, digest)
            .map_err(SandboxError::Compile)
    }

    /// The component with `digest` if the compile cache holds a usable
    /// entry for it; `None` otherwise (then [`compile`](Self::compile)
    /// says why and rebuilds it).
    pub(crate) fn cached(&self, digest: &blake3::Hash) -> Option<Component> {
        self.inner.cache.hit(&self.inner.engine, digest)
    }

    /// Whether the compile cache holds an entry for `digest` that looks
    /// whole (its trailer checked, not its code: see
    /// [`cached`](Self::cached) for that).
    pub(crate) fn has_cached(&self, digest: &blake3::Hash) -> bool {
        self.inner.cache.looks_whole(digest)
    }

    /// The digest of the component file at `path` as `stamp` found it, if
    /// the cache remembers it (see `stamps`).
    pub(crate) fn known_digest(
        &self,
        path: &std::path::Path,
        stamp: &FileStamp,
    ) -> Option<blake3::Hash> {
        self.inner.cache.known_digest(path, stamp)
    }

    /// Remember that the component file at `path`, as `stamp` (taken before
    /// it was read) found it, has `digest`.
    pub(crate) fn remember_digest(
        &self,
        path: &std::path::Path,
        stamp: &FileStamp,
        digest: &blake3::Hash,
    ) {
        self.inner.cache.remember_digest(path, stamp, digest);
    }

    /// The note called `name` that the compile cache keeps for the
    /// component with `digest`; `None` if there is none, it is damaged, or
    /// caching is off.
    pub(crate) fn cached_note(&self, digest: &blake3::Hash, name: &str) -> Option<Vec<u8>> {
        self.inner.cache.read_note(digest, name)
    }

    /// Keep `payload` as the note called `name` for the component with
    /// `digest` (nothing happens when caching is off).
    pub(crate) fn keep_note(&self, digest: &blake3::Hash, name: &str, payload: &[u8]) {
        self.inner.cache.write_note(digest, name, payload);
    }

    /// The engine, for inspecting component types.
    /// Spare instances ready now, across every plugin.
    pub(crate) fn spares_ready(&self) -> usize {
        usize::try_from(self.inner.spares.load(std::sync::atomic::Ordering::Relaxed)).unwrap_or(0)
    }

    pub(crate) fn count_spares(&self, change: isize) {
        self.inner
            .spares
            .fetch_add(change, std::sync::atomic::Ordering::Relaxed);
    }

    /// Instance slots held now (calls running, sessions, spares).
    pub(crate) fn slots_in_use(&self) -> usize {
        (self.inner.max_instances as usize).saturating_sub(self.inner.slots.available_permits())
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Link `component` against the host and check it implements the world.
    /// `spares` fresh instances are kept ready once calls start (see
    /// `HostConfig::spare_instances`).
    pub(crate) fn prepare(
        &self,
        component: &Component,
        identity: Arc<PluginIdentity>,
        limits: Limits,
        permissions: Permissions,
        spares: usize,
    ) -> Result<Guest, SandboxError> {
        let pre = self
            .inner
            .linker
            .instantiate_pre(component)
            .map_err(SandboxError::World)?;
        let series = bindings::Series::of(component).ok_or_else(|| {
            SandboxError::World(wasmtime::Error::msg(
                "the component exports no `toolhost:plugin/tool` interface this host speaks (0.1.0 or 0.2.0)",
            ))
        })?;
        let pre = bindings::PluginPre::new(series, pre).map_err(SandboxError::World)?;
        let slots = slots_per_instance(component);
        if slots > self.inner.max_instances {
            return Err(SandboxError::Config(format!(
                "one instance of this component takes {slots} instance slots (its memories and tables), more than `max_instances` = {}; raise `max_instances`",
                self.inner.max_instances
            )));
        }
        Ok(Guest::new(
            self.clone(),
            pre,
            identity,
            limits,
            permissions,
            spares,
            slots,
        ))
    }
}

/// Turn a sandbox error met while preparing a call into the tool error a
/// caller sees.
impl From<SandboxError> for ToolError {
    fn from(e: SandboxError) -> Self {
        // A tool error is one line of text: the chain goes in it.
        ToolError::new(crate::tools::ToolErrorKind::PluginLoad, format!("{e:#}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compile_error_keeps_wasmtime_s_error_as_its_source() {
        let sandbox = Sandbox::new(&SandboxConfig {
            max_instances: 4,
            ..SandboxConfig::default()
        })
        .unwrap();
        let junk = b"not wasm at all";
        let Err(e) = sandbox.compile(junk, &Sandbox::digest(junk)) else {
            panic!("junk compiled")
        };
        assert!(matches!(e, SandboxError::Compile(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "not a WebAssembly component this host can load"
        );
        let cause = std::error::Error::source(&e).expect("wasmtime's error is kept");
        let full = format!("{e:#}");
        assert!(full.starts_with("not a WebAssembly component this host can load: "));
        assert!(full.contains(&cause.to_string()), "{full}");
        assert!(full.len() > e.to_string().len() + 2, "{full}");
        let tool: ToolError = e.into();
        assert_eq!(tool.message, full, "the tool error carries the chain");
    }
}
