//! Running one call: a store with its budgets, then the error kind by type.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::{Plugin, PluginPre, WitToolError};
use super::state::{STDIO_CAPTURE, StoreState};
use super::{LimitHit, Limits, Permissions, PluginIdentity, Sandbox};
use crate::tools::{ToolError, ToolErrorKind};

pub(crate) use super::bindings::exports::toolhost::plugin::tool::ToolInfo as WitToolInfo;

/// A component linked and ready to instantiate under fixed limits and
/// permissions.
pub(crate) struct Guest {
    sandbox: Sandbox,
    pre: PluginPre<StoreState>,
    identity: Arc<PluginIdentity>,
    pub(crate) limits: Limits,
    pub(crate) permissions: Permissions,
}

/// An instance kept alive between calls (stateful plugins).
pub(crate) struct Live {
    store: Store<StoreState>,
    plugin: Plugin,
}

impl Guest {
    pub(super) fn new(
        sandbox: Sandbox,
        pre: PluginPre<StoreState>,
        identity: Arc<PluginIdentity>,
        limits: Limits,
        permissions: Permissions,
    ) -> Self {
        Self {
            sandbox,
            pre,
            identity,
            limits,
            permissions,
        }
    }

    fn new_store(&self) -> Result<Store<StoreState>, ToolError> {
        let stderr = MemoryOutputPipe::new(STDIO_CAPTURE);
        let mut wasi = WasiCtxBuilder::new();
        // stdout is discarded (the builder's default); stderr is kept
        // because a Rust panic message lands there.
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (key, value) in &self.permissions.env {
            wasi.env(key, value);
        }
        for dir in &self.permissions.dirs {
            let perms = if dir.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            wasi.preopened_dir(&dir.host, &dir.guest, perms)
                .map_err(|e| {
                    ToolError::new(
                        ToolErrorKind::PluginLoad,
                        format!(
                            "could not open granted directory {}: {e:#}",
                            dir.host.display()
                        ),
                    )
                })?;
        }
        let state = StoreState::new(
            wasi.build(),
            self.limits.memory_bytes,
            Arc::clone(&self.identity),
            stderr,
        );
        let mut store = Store::new(self.sandbox.engine(), state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_callback(|cx| {
            if Instant::now() >= cx.data().deadline {
                Err(wasmtime::Error::new(LimitHit::Deadline))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Ok(store)
    }

    /// Arm fuel, epoch deadline and the store's own budgets for one call.
    fn start_call(&self, store: &mut Store<StoreState>) -> Result<Instant, ToolError> {
        let deadline = Instant::now() + self.limits.timeout;
        store.data_mut().start_call(deadline);
        store
            .set_fuel(self.limits.fuel)
            .map_err(|e| ToolError::new(ToolErrorKind::Trap, format!("{e:#}")))?;
        // Set before instantiating too: with epochs on, a store whose
        // deadline is unset traps on entry.
        store.set_epoch_deadline(1);
        Ok(deadline)
    }

    /// Run `f` on `store` under this guest's limits.
    async fn bounded<T>(
        &self,
        store: &mut Store<StoreState>,
        f: impl AsyncFnOnce(&mut Store<StoreState>) -> wasmtime::Result<T>,
    ) -> Result<T, ToolError> {
        let deadline = self.start_call(store)?;
        let _armed = self.sandbox.inner.watchdog.arm(deadline);
        // The epoch stops a guest that computes; this stops one that waits
        // on the host (a sleep, a blocking read).
        let outcome = tokio::time::timeout_at(deadline.into(), f(store)).await;
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(classify(e, &self.limits, store)),
            Err(_) => Err(timeout_error(&self.limits)),
        }
    }

    /// The plugin's tool list, from a fresh instance.
    pub(crate) async fn describe(&self) -> Result<Vec<WitToolInfo>, ToolError> {
        let mut store = self.new_store()?;
        self.bounded(&mut store, async |store| {
            let plugin = self.pre.instantiate_async(&mut *store).await?;
            plugin
                .toolhost_plugin_tool()
                .call_describe(&mut *store)
                .await
        })
        .await
    }

    /// One call on a fresh instance that is dropped afterwards.
    pub(crate) async fn call_fresh(&self, name: &str, input: &str) -> Result<String, ToolError> {
        let mut store = self.new_store()?;
        let result = self
            .bounded(&mut store, async |store| {
                let plugin = self.pre.instantiate_async(&mut *store).await?;
                plugin
                    .toolhost_plugin_tool()
                    .call_call(&mut *store, name, input)
                    .await
            })
            .await;
        self.finish(result)
    }

    /// A new instance to keep for a session.
    pub(crate) async fn instantiate(&self) -> Result<Live, ToolError> {
        let mut store = self.new_store()?;
        let plugin = self
            .bounded(&mut store, async |store| {
                self.pre.instantiate_async(&mut *store).await
            })
            .await?;
        Ok(Live { store, plugin })
    }

    /// One call on a kept instance.
    ///
    /// # Errors
    ///
    /// As [`call_fresh`](Self::call_fresh). After an error of any kind
    /// other than the tool's own, the instance must be dropped: a trap or a
    /// cut-off call can leave it half-way through.
    pub(crate) async fn call_live(
        &self,
        live: &mut Live,
        name: &str,
        input: &str,
    ) -> Result<String, ToolError> {
        let plugin = &live.plugin;
        let result = self
            .bounded(&mut live.store, async |store| {
                plugin
                    .toolhost_plugin_tool()
                    .call_call(&mut *store, name, input)
                    .await
            })
            .await;
        self.finish(result)
    }

    fn finish(
        &self,
        result: Result<Result<String, WitToolError>, ToolError>,
    ) -> Result<String, ToolError> {
        let output = result?.map_err(from_wit)?;
        if output.len() as u64 > self.limits.output_bytes {
            return Err(ToolError::new(
                ToolErrorKind::OutputTooLarge,
                format!(
                    "the tool returned {} bytes; the cap is {} bytes. Ask for less (a filter, a page, a summary)",
                    output.len(),
                    self.limits.output_bytes
                ),
            ));
        }
        Ok(output)
    }
}

fn timeout_error(limits: &Limits) -> ToolError {
    ToolError::new(
        ToolErrorKind::Timeout,
        format!(
            "the call did not finish within its {} ms deadline",
            limits.timeout.as_millis()
        ),
    )
}

fn from_wit(e: WitToolError) -> ToolError {
    match e {
        WitToolError::InvalidInput(m) => ToolError::new(ToolErrorKind::InvalidInput, m),
        WitToolError::Failed(m) => ToolError::new(ToolErrorKind::ToolFailed, m),
        WitToolError::Denied(m) => ToolError::new(ToolErrorKind::PermissionDenied, m),
        WitToolError::UnknownTool(m) => ToolError::new(ToolErrorKind::UnknownTool, m),
    }
}

/// Name a host-side failure by its type: our own limit hooks first, then
/// wasmtime's trap codes; anything else is a trap with its message.
fn classify(e: wasmtime::Error, limits: &Limits, store: &Store<StoreState>) -> ToolError {
    if let Some(hit) = e.downcast_ref::<LimitHit>() {
        return match hit {
            LimitHit::Memory { .. } => ToolError::new(ToolErrorKind::MemoryLimit, hit.to_string()),
            LimitHit::Deadline => timeout_error(limits),
        };
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return ToolError::new(
            ToolErrorKind::Trap,
            format!(
                "the plugin exited (status {}) instead of returning a result",
                exit.0
            ),
        );
    }
    if let Some(trap) = e.downcast_ref::<Trap>() {
        return match trap {
            Trap::OutOfFuel => ToolError::new(
                ToolErrorKind::OutOfFuel,
                format!(
                    "the call used up its fuel budget of {} units (a CPU limit); it may loop forever or need a bigger `fuel` limit",
                    limits.fuel
                ),
            ),
            Trap::Interrupt => timeout_error(limits),
            Trap::StackOverflow => ToolError::new(
                ToolErrorKind::Trap,
                "the plugin overflowed its stack (unbounded recursion?)",
            ),
            Trap::UnreachableCodeReached => {
                let detail = stderr_tail(store);
                ToolError::new(
                    ToolErrorKind::Trap,
                    if detail.is_empty() {
                        "the plugin panicked or aborted".to_owned()
                    } else {
                        format!("the plugin panicked or aborted: {detail}")
                    },
                )
            }
            other => ToolError::new(ToolErrorKind::Trap, format!("the plugin trapped: {other}")),
        };
    }
    ToolError::new(ToolErrorKind::Trap, format!("the plugin failed: {e:#}"))
}

/// The last lines the guest wrote to stderr, where Rust puts a panic message.
fn stderr_tail(store: &Store<StoreState>) -> String {
    let bytes = store.data().stderr.contents();
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim();
    let start = text.len().saturating_sub(500);
    let mut start = start;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].replace('\n', " | ")
}
