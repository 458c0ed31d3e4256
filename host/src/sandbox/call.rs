//! Running one call: a store with its budgets, then the error kind by type.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::{Plugin, PluginPre, WitToolError};
use super::capture::StderrCapture;
use super::http::{self, HttpState};
use super::state::StoreState;
use super::{LimitHit, Limits, Permissions, PluginIdentity, Sandbox};
use crate::tools::{ToolError, ToolErrorKind};

pub(crate) use super::bindings::exports::toolhost::plugin::tool::ToolInfo as WitToolInfo;

/// A component linked and ready to instantiate under fixed limits and
/// permissions. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Guest {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    sandbox: Sandbox,
    pre: PluginPre<StoreState>,
    identity: Arc<PluginIdentity>,
    limits: Limits,
    permissions: Permissions,
    spares: Spares,
    /// Instance slots one instance of this component takes.
    slots: u32,
}

/// Fresh instances made ahead of time, off the caller's path.
///
/// Instantiating is most of what a fresh-instance call costs, and dropping
/// the used instance (resetting its memory for the pool) most of the rest.
/// Both are work no caller has to wait for: a background task keeps up to
/// `target` never-used instances ready and drops used ones. Each instance
/// still serves exactly one call, so no state can leak between calls.
struct Spares {
    target: usize,
    ready: Mutex<Vec<Live>>,
    /// Used instances waiting to be dropped by the background task.
    retired: Mutex<Vec<Live>>,
    /// Whether the background task is running (at most one per guest).
    working: AtomicBool,
    /// Set when making a spare failed: the next calls instantiate inline and
    /// report the error; a successful inline instantiation clears it.
    failing: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The locks guard plain lists; a panic elsewhere leaves them consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An instance kept alive between calls (stateful plugins).
pub(crate) struct Live {
    // Fields drop in order: the store (and its pool slot) before the permit
    // that lets another store take the slot.
    store: Store<StoreState>,
    plugin: Plugin,
    _slot: OwnedSemaphorePermit,
}

/// How a new store gets its instance slot.
#[derive(Clone, Copy)]
enum Slot {
    /// Wait for one, up to the call's own deadline.
    Wait,
    /// Only if one is free now (spares are made with what is left over).
    IfFree,
}

/// Most used instances waiting for the background task; past this the
/// caller drops its own, so the list (and the slots it holds) stays bounded
/// however far the task falls behind.
const MAX_RETIRED: usize = 8;

impl std::ops::Deref for Guest {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}

impl Guest {
    pub(super) fn new(
        sandbox: Sandbox,
        pre: PluginPre<StoreState>,
        identity: Arc<PluginIdentity>,
        limits: Limits,
        permissions: Permissions,
        spares: usize,
        slots: u32,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                sandbox,
                pre,
                identity,
                limits,
                permissions,
                spares: Spares {
                    target: spares,
                    ready: Mutex::new(Vec::with_capacity(spares)),
                    retired: Mutex::new(Vec::new()),
                    working: AtomicBool::new(false),
                    failing: AtomicBool::new(false),
                },
                slots,
            }),
        }
    }

    /// Effective limits per call.
    pub(crate) fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Effective grants.
    pub(crate) fn permissions(&self) -> &Permissions {
        &self.inner.permissions
    }

    /// Instance slots one instance of this component takes.
    pub(crate) fn slots(&self) -> u32 {
        self.inner.slots
    }

    /// How many never-used instances are ready right now.
    pub(crate) fn spares_ready(&self) -> usize {
        lock(&self.inner.spares.ready).len()
    }
}

impl Inner {
    /// The instance slots for a new store (as many as one instance of this
    /// component takes): waited for, bounded by the call's deadline, or
    /// taken only if free.
    async fn slot(&self, how: Slot) -> Result<OwnedSemaphorePermit, ToolError> {
        let slots = Arc::clone(&self.sandbox.inner.slots);
        let busy = || {
            ToolError::new(
                ToolErrorKind::Busy,
                format!(
                    "every instance slot of this host was in use for {} ms (calls running, sessions and spare instances); try again, or raise `max_instances` in the host config",
                    self.limits.timeout.as_millis()
                ),
            )
        };
        let n = self.slots;
        match how {
            Slot::IfFree => slots.try_acquire_many_owned(n).map_err(|_| busy()),
            Slot::Wait => match slots.clone().try_acquire_many_owned(n) {
                Ok(permit) => Ok(permit),
                Err(_) => tokio::time::timeout(self.limits.timeout, slots.acquire_many_owned(n))
                    .await
                    .map_err(|_| busy())?
                    .map_err(|_| busy()),
            },
        }
    }

    fn new_store(&self) -> Result<Store<StoreState>, ToolError> {
        let stderr = StderrCapture::default();
        let mut wasi = WasiCtxBuilder::new();
        // stdout is discarded (the builder's default); the tail of each
        // call's stderr is kept because a Rust panic message lands there.
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for var in &self.permissions.env {
            wasi.env(var.name(), var.value());
        }
        for dir in &self.permissions.dirs {
            let perms = if dir.writable {
                FsPerms::ReadWrite
            } else {
                FsPerms::ReadOnly
            };
            let cannot_open = |e: &dyn std::fmt::Display| {
                ToolError::new(
                    ToolErrorKind::PluginLoad,
                    format!(
                        "could not open granted directory {}: {e}",
                        dir.host.display()
                    ),
                )
            };
            let path = dir.preopen_path().map_err(|e| cannot_open(&e))?;
            wasi.preopened_dir(&path, &dir.guest, perms)
                .map_err(|e| cannot_open(&format!("{e:#}")))?;
        }
        let http = HttpState::new(
            Arc::clone(&self.identity),
            self.permissions.http.clone(),
            &self.limits,
        );
        let state = StoreState::new(
            wasi.build(),
            self.limits.memory_bytes,
            Arc::clone(&self.identity),
            stderr,
            http,
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
        // Bound in this order, dropped in reverse: the store before its slot.
        let _slot = self.slot(Slot::Wait).await?;
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

    /// One call on a fresh instance made inline, dropped afterwards.
    async fn call_inline(&self, name: &str, input: &str) -> Result<String, ToolError> {
        let _slot = self.slot(Slot::Wait).await?;
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
        let refusal = store.data_mut().http.take_refusal();
        http::explain(self.finish(result), refusal)
    }

    /// A new instance, made now.
    async fn instantiate_now(&self, how: Slot) -> Result<Live, ToolError> {
        let slot = self.slot(how).await?;
        let mut store = self.new_store()?;
        let plugin = self
            .bounded(&mut store, async |store| {
                self.pre.instantiate_async(&mut *store).await
            })
            .await?;
        Ok(Live {
            store,
            plugin,
            _slot: slot,
        })
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
        let refusal = live.store.data_mut().http.take_refusal();
        http::explain(self.finish(result), refusal)
    }

    fn finish(
        &self,
        result: Result<Result<String, WitToolError>, ToolError>,
    ) -> Result<String, ToolError> {
        let cap = self.error_message_cap();
        self.check_output(result?.map_err(|e| from_wit(e, cap))?)
    }

    /// Most bytes of a tool's own error message that reach the caller: the
    /// output cap, and never more than [`MAX_ERROR_MESSAGE`].
    fn error_message_cap(&self) -> usize {
        usize::try_from(self.limits.output_bytes)
            .unwrap_or(usize::MAX)
            .min(MAX_ERROR_MESSAGE)
    }

    fn check_output(&self, output: String) -> Result<String, ToolError> {
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

impl Guest {
    /// One call on a fresh instance that serves no other call: a spare made
    /// ahead of time when there is one, else one made now.
    pub(crate) async fn call_fresh(&self, name: &str, input: &str) -> Result<String, ToolError> {
        let Some(mut live) = self.take_spare() else {
            let result = self.call_inline(name, input).await;
            self.after_inline(&result);
            return result;
        };
        let result = self.call_live(&mut live, name, input).await;
        self.retire(live);
        result
    }

    /// A fresh instance to keep for a session.
    pub(crate) async fn instantiate(&self) -> Result<Live, ToolError> {
        if let Some(live) = self.take_spare() {
            self.replenish();
            return Ok(live);
        }
        let result = self.instantiate_now(Slot::Wait).await;
        self.after_inline(&result);
        result
    }

    /// Hand a used instance to the background task. The task is woken only
    /// when the pool has run dry (or too many used instances wait): a
    /// wake-up is a futex call and a context switch, a few µs a call should
    /// not pay each time.
    fn retire(&self, live: Live) {
        let waiting = {
            let mut retired = lock(&self.spares.retired);
            if retired.len() >= MAX_RETIRED {
                Err(live)
            } else {
                retired.push(live);
                Ok(retired.len())
            }
        };
        let waiting = match waiting {
            Ok(waiting) => waiting,
            Err(live) => {
                // The task is behind: drop it here (outside the lock), so
                // its slot is free for the next call at once.
                drop(live);
                self.replenish();
                return;
            }
        };
        if waiting >= self.spares.target || lock(&self.spares.ready).is_empty() {
            self.replenish();
        }
    }

    fn take_spare(&self) -> Option<Live> {
        if self.spares.target == 0 {
            return None;
        }
        let live = lock(&self.spares.ready).pop();
        if live.is_none() {
            // Fill the pool while this call instantiates inline. A call that
            // got a spare asks for a new one after it is done instead: waking
            // the task costs a few µs the call should not wait for.
            self.replenish();
        }
        live
    }

    /// After an inline instantiation: if it worked, spares may be made again.
    fn after_inline<T>(&self, result: &Result<T, ToolError>) {
        let instantiated = result
            .as_ref()
            .map_or_else(|e| e.kind.leaves_instance_intact(), |_| true);
        if instantiated && self.spares.failing.swap(false, Ordering::Relaxed) {
            self.replenish();
        }
    }

    /// Start the background task unless it runs already or has nothing to do.
    fn replenish(&self) {
        if self.spares.target == 0 || self.spares.failing.load(Ordering::Relaxed) {
            return;
        }
        if self.spares.working.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.spares.working.store(false, Ordering::Release);
            return;
        };
        let guest = self.clone();
        runtime.spawn(async move { guest.maintain().await });
    }

    /// Drop used instances and make spares until there are `target`.
    async fn maintain(&self) {
        loop {
            loop {
                // Drop first: a used instance holds a slot a call may be
                // waiting for, and under sustained load a task that refills
                // first never gets to the drops.
                let retired = std::mem::take(&mut *lock(&self.spares.retired));
                if !retired.is_empty() {
                    drop(retired);
                    continue;
                }
                if self.spares.failing.load(Ordering::Relaxed)
                    || lock(&self.spares.ready).len() >= self.spares.target
                {
                    break;
                }
                // Spares only take slots that are free: they must never be
                // why a call waits.
                match self.instantiate_now(Slot::IfFree).await {
                    Ok(live) => lock(&self.spares.ready).push(live),
                    Err(e) if e.kind == ToolErrorKind::Busy => break,
                    Err(e) => {
                        tracing::debug!(plugin = %self.identity.name, error = %e, "could not make a spare instance; instantiating per call");
                        self.spares.failing.store(true, Ordering::Relaxed);
                    }
                }
            }
            self.spares.working.store(false, Ordering::Release);
            // A call may have retired or taken an instance after the last
            // look and before the flag was cleared: look once more.
            let more = !lock(&self.spares.retired).is_empty();
            if !more || self.spares.working.swap(true, Ordering::AcqRel) {
                return;
            }
        }
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

/// Most bytes of a tool's own error message kept, whatever its output cap.
pub(crate) const MAX_ERROR_MESSAGE: usize = 8 << 10;

/// The tool's own error, its message cut to `cap` bytes: an error is output
/// the caller (and the model) reads, and is held to a budget like output.
fn from_wit(e: WitToolError, cap: usize) -> ToolError {
    let (kind, message) = match e {
        WitToolError::InvalidInput(m) => (ToolErrorKind::InvalidInput, m),
        WitToolError::Failed(m) => (ToolErrorKind::ToolFailed, m),
        WitToolError::Denied(m) => (ToolErrorKind::PermissionDenied, m),
        WitToolError::UnknownTool(m) => (ToolErrorKind::UnknownTool, m),
    };
    ToolError::new(kind, cut_message(message, cap))
}

fn cut_message(mut message: String, cap: usize) -> String {
    if message.len() <= cap {
        return message;
    }
    let total = message.len();
    let mut end = cap;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message.truncate(end);
    message.push_str(&format!(
        "... [error message cut: the plugin sent {total} bytes, at most {cap} are kept]"
    ));
    message
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
    if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
        .is_some()
    {
        // Not the guest's fault, and not a trap: the pool had no room.
        return ToolError::new(
            ToolErrorKind::Busy,
            format!("{e}; try again, or raise `max_instances` in the host config"),
        );
    }
    if let Some(exit) = e.downcast_ref::<wasmtime_wasi::I32Exit>() {
        let detail = guest_stderr(store);
        let sep = if detail.is_empty() { "" } else { ": " };
        return ToolError::new(
            ToolErrorKind::Trap,
            format!(
                "the plugin exited (status {}) instead of returning a result{sep}{detail}",
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
                let detail = guest_stderr(store);
                ToolError::new(
                    ToolErrorKind::Trap,
                    if detail.is_empty() {
                        "the plugin panicked or aborted (it wrote nothing to stderr)".to_owned()
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

/// What the guest wrote to stderr during this call: a panic's message and
/// location (Rust's and the Go SDK's `panicked at FILE:LINE: MESSAGE`).
fn guest_stderr(store: &Store<StoreState>) -> String {
    crate::text::stderr_summary(&store.data().stderr.contents(), 500)
}
