//! Running one call: a store with its budgets, on an instance made inline
//! or taken from the spares ([`spares`]); a failure named by its type
//! ([`classify`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::OwnedSemaphorePermit;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::{GuestContent, GuestOutput, GuestTool, Plugin, PluginPre, WitToolError};
use super::capture::StderrCapture;
use super::http::{self, HttpState};
use super::state::{CallSinks, StoreState};
use super::working_set::WorkingSet;
use super::{LimitHit, Limits, Permissions, PluginIdentity, Sandbox};
use crate::tools::{ToolError, ToolErrorKind};

mod classify;
mod offer;
mod spares;

use classify::{MAX_ERROR_MESSAGE, classify, from_wit, timeout_error};
use spares::Spares;

/// A component linked and ready to instantiate under fixed limits and
/// permissions. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Guest {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    sandbox: Sandbox,
    pre: PluginPre,
    identity: Arc<PluginIdentity>,
    limits: Limits,
    permissions: Permissions,
    spares: Spares,
    /// Instance slots one instance of this component takes.
    slots: u32,
    /// What its calls write, to keep it mapped across instances.
    working_set: WorkingSet,
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

impl Drop for Inner {
    fn drop(&mut self) {
        // Its spares go with it.
        self.sandbox.count_spares(-(self.spares.ready() as isize));
    }
}

impl std::ops::Deref for Guest {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}

impl Guest {
    pub(super) fn new(
        sandbox: Sandbox,
        pre: PluginPre,
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
                spares: Spares::new(spares),
                slots,
                working_set: WorkingSet::default(),
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
        self.inner.spares.ready()
    }
}

impl Inner {
    /// Before `live` is dropped: leave the pages its call touched mapped
    /// for the next instance of the component in its pool slot (see
    /// `working_set`).
    fn keep_working_set(&self, live: &Live) {
        if let Some(span) = live.plugin.memory() {
            // SAFETY: the span is this instance's memory, noted by its call;
            // `live` keeps the store alive, and borrowed, idle.
            unsafe { self.working_set.keep(span) };
        }
    }

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
        let deadline = Instant::now() + super::limits::call_timeout(&self.limits);
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
        let watchdog = &self.sandbox.inner.watchdog;
        let mut armed = watchdog.arm(deadline);
        // The epoch stops a guest that computes; this stops one that waits
        // on the host (a sleep, a blocking read). A call that can ask the
        // user has a deadline that moves while it waits for the answer.
        let outcome = match store.data_mut().deadline_moves() {
            None => tokio::time::timeout_at(deadline.into(), f(store))
                .await
                .ok(),
            Some(moves) => {
                until_moving(deadline, moves, f(store), |moved| {
                    armed = watchdog.arm(moved);
                })
                .await
            }
        };
        drop(armed);
        // What the call used, for the registry's metrics and span.
        let fuel_left = store.get_fuel().unwrap_or(0);
        crate::telemetry::note_usage(
            self.limits.fuel.saturating_sub(fuel_left),
            store.data().limiter.used(),
        );
        match outcome {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(classify(e, &self.limits, store)),
            None => Err(timeout_error(&self.limits)),
        }
    }

    /// The plugin's tool list, from a fresh instance.
    pub(crate) async fn describe(&self) -> Result<Vec<GuestTool>, ToolError> {
        // Bound in this order, dropped in reverse: the store before its slot.
        let _slot = self.slot(Slot::Wait).await?;
        let mut store = self.new_store()?;
        self.bounded(&mut store, async |store| {
            let plugin = self.pre.instantiate_async(&mut *store).await?;
            plugin.call_describe(&mut *store).await
        })
        .await
    }

    /// One call on a fresh instance made inline, dropped afterwards.
    async fn call_inline(
        &self,
        name: &str,
        input: &str,
        sinks: &CallSinks,
    ) -> Result<GuestOutput, ToolError> {
        let _slot = self.slot(Slot::Wait).await?;
        let mut store = self.new_store()?;
        store.data_mut().attach(sinks, name);
        let result = self
            .bounded(&mut store, async |store| {
                let plugin = self.instantiate_timed(store).await?;
                plugin.call_call(&mut *store, name, input).await
            })
            .await;
        let refusal = store.data_mut().http.take_refusal();
        http::explain(self.finish(result), refusal)
    }

    /// An instance in `store`, its making timed for the spares (which wait
    /// for instances that are slow to make).
    async fn instantiate_timed(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Plugin> {
        let start = Instant::now();
        let plugin = self.pre.instantiate_async(store).await?;
        self.spares.timed(start.elapsed());
        Ok(plugin)
    }

    /// A new instance, made now.
    async fn instantiate_now(&self, how: Slot) -> Result<Live, ToolError> {
        let slot = self.slot(how).await?;
        let mut store = self.new_store()?;
        let plugin = self
            .bounded(&mut store, async |store| {
                self.instantiate_timed(store).await
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
        sinks: &CallSinks,
    ) -> Result<GuestOutput, ToolError> {
        live.store.data_mut().attach(sinks, name);
        let plugin = &live.plugin;
        let result = self
            .bounded(&mut live.store, async |store| {
                plugin.call_call(&mut *store, name, input).await
            })
            .await;
        live.store.data_mut().attach(&CallSinks::default(), name);
        let refusal = live.store.data_mut().http.take_refusal();
        http::explain(self.finish(result), refusal)
    }

    fn finish(
        &self,
        result: Result<Result<GuestOutput, WitToolError>, ToolError>,
    ) -> Result<GuestOutput, ToolError> {
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

    /// The output cap holds for everything a result carries: its JSON and
    /// every content part's bytes, together.
    fn check_output(&self, output: GuestOutput) -> Result<GuestOutput, ToolError> {
        let size = output.json.as_ref().map_or(0, String::len)
            + output.content.iter().map(GuestContent::size).sum::<usize>();
        if size as u64 > self.limits.output_bytes {
            return Err(ToolError::new(
                ToolErrorKind::OutputTooLarge,
                format!(
                    "the tool returned {size} bytes; the cap is {} bytes. Ask for less (a filter, a page, a summary, a smaller image)",
                    self.limits.output_bytes
                ),
            ));
        }
        Ok(output)
    }
}

/// `call`, or `None` once its deadline passes; the deadline starts at
/// `deadline` and goes where `moves` says, each move passed to `rearm`.
async fn until_moving<T>(
    mut deadline: Instant,
    mut moves: tokio::sync::watch::Receiver<Instant>,
    call: impl Future<Output = T>,
    mut rearm: impl FnMut(Instant),
) -> Option<T> {
    let mut call = std::pin::pin!(call);
    loop {
        tokio::select! {
            biased;
            out = &mut call => return Some(out),
            Ok(()) = moves.changed() => {
                deadline = *moves.borrow_and_update();
                rearm(deadline);
            }
            () = tokio::time::sleep_until(deadline.into()) => return None,
        }
    }
}
