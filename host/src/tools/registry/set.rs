//! [`ToolSet`]: one consistent snapshot of the registry, and how names
//! resolve in it (a call on it is in `call.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::super::options::ExecOptions;
use super::super::schema::InputBudget;
use super::super::search::ToolIndex;
use super::super::{SessionId, Tool, ToolSpec};
use super::observe::Observability;

pub(super) struct Entry {
    pub(super) tool: Arc<dyn Tool>,
    /// The tool's schemas, compiled.
    pub(super) validators: Arc<Validators>,
    pub(super) options: ExecOptions,
    /// The tool's series in the registry's metrics, looked up at its first
    /// counted call.
    pub(super) metrics: std::sync::OnceLock<crate::telemetry::ToolMetrics>,
}

/// A tool's schemas, compiled: at registration, or at its first call for
/// a tool whose schemas were checked before ([`Tool::schemas_checked`]).
#[derive(Default)]
pub(super) struct Validators {
    input: OnceLock<Result<jsonschema::Validator, String>>,
    /// `None`: the tool declares no output schema.
    output: OnceLock<Result<Option<jsonschema::Validator>, String>>,
}

impl Validators {
    /// Compiled now: the errors are the registry's to report.
    pub(super) fn compiled(
        input: jsonschema::Validator,
        output: Option<jsonschema::Validator>,
    ) -> Self {
        Self {
            input: OnceLock::from(Ok(input)),
            output: OnceLock::from(Ok(output)),
        }
    }

    /// The input schema's validator (`tool`'s, compiled now if it is not
    /// yet).
    pub(super) fn input(&self, tool: &dyn Tool) -> Result<&jsonschema::Validator, String> {
        self.input
            .get_or_init(|| {
                jsonschema::validator_for(&tool.spec().input_schema).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The output schema's validator, if `tool` declares one.
    pub(super) fn output(&self, tool: &dyn Tool) -> Result<Option<&jsonschema::Validator>, String> {
        self.output
            .get_or_init(|| {
                tool.output_schema()
                    .map(|schema| jsonschema::validator_for(schema).map_err(|e| e.to_string()))
                    .transpose()
            })
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }
}

/// One consistent view of a [`ToolRegistry`](super::ToolRegistry): the tools as they were when
/// [`ToolRegistry::snapshot`](super::ToolRegistry::snapshot) was taken. Registering or unregistering later
/// changes the registry, never a snapshot, so a model request and the
/// calls of its answer see the same set, and a call in flight finishes on
/// the tool it started with.
///
/// Names: `calc` is the tool of that name, or, where several versions are
/// registered, the one registered last (still present); `calc@1.0.0` is that
/// exact version. Listings ([`specs`](Self::specs), [`tools`](Self::tools))
/// show one tool per name, the one its plain name resolves to: models only
/// ever see plain names (providers do not accept `@` in a tool name).
pub struct ToolSet {
    /// Every version of each name, in registration order; the last one is
    /// what the plain name resolves to.
    pub(super) tools: BTreeMap<String, Vec<Arc<Entry>>>,
    pub(super) input_budget: InputBudget,
    pub(super) observe: Observability,
    /// The search index of [`specs`](Self::specs), built at the first
    /// [`index`](Self::index).
    pub(super) index: OnceLock<Arc<ToolIndex>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSet")
            .field("tools", &self.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolSet {
    pub(super) fn empty(input_budget: InputBudget, observe: Observability) -> Self {
        Self {
            tools: BTreeMap::new(),
            input_budget,
            observe,
            index: OnceLock::new(),
        }
    }

    /// The entry `name` (or `name@version`) resolves to, and its index among
    /// the versions of its name.
    pub(super) fn resolve(&self, name: &str) -> Option<(&str, usize, &Arc<Entry>)> {
        let (plain, version) = match name.split_once('@') {
            Some((plain, version)) => (plain, Some(version)),
            None => (name, None),
        };
        let (key, versions) = self.tools.get_key_value(plain)?;
        let index = match version {
            None => versions.len().checked_sub(1)?,
            Some(v) => versions.iter().position(|e| e.tool.version() == Some(v))?,
        };
        Some((key.as_str(), index, &versions[index]))
    }

    /// The tool `name` (or `name@version`) resolves to.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.resolve(name).map(|(_, _, e)| &e.tool)
    }

    /// The [`ExecOptions`] of the tool `name` (or `name@version`) resolves
    /// to, as registered (before a run's or a call's overrides).
    pub fn options(&self, name: &str) -> Option<&ExecOptions> {
        self.resolve(name).map(|(_, _, e)| &e.options)
    }

    /// Whether a call of `name` (or `name@version`) needs a person's
    /// approval: `policy` names it, or its tool asks for it
    /// (`needs_approval` in its [`ExecOptions`], under `overrides`). The
    /// one rule the loop and the MCP server both apply.
    pub fn needs_approval(
        &self,
        name: &str,
        policy: &crate::approval::ApprovalPolicy,
        overrides: &super::super::ExecOverrides,
    ) -> bool {
        policy.requires(name)
            || self.options(name).is_some_and(|o| {
                // What `o.with(overrides).needs_approval` says, without
                // copying the rest of the options (every call asks).
                overrides.needs_approval.unwrap_or(o.needs_approval)
            })
    }

    /// Whether `name` (or `name@version`) resolves to a tool.
    pub fn contains(&self, name: &str) -> bool {
        self.resolve(name).is_some()
    }

    /// One tool per name (the one the plain name resolves to), sorted by
    /// name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools
            .values()
            .filter_map(|v| v.last())
            .map(|e| &e.tool)
    }

    /// The spec of each of [`tools`](Self::tools).
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools().map(|t| t.spec())
    }

    /// Every registered tool as it is addressed: `name` for a tool without
    /// a version, `name@version` for one with, sorted by name then in
    /// registration order.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.tools.values().flatten().map(|e| {
            let name = &e.tool.spec().name;
            match e.tool.version() {
                Some(v) => format!("{name}@{v}"),
                None => name.clone(),
            }
        })
    }

    /// How many names there are (versions of one name count once).
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// A search index of [`specs`](Self::specs), built at the first call
    /// and kept with this snapshot: a registry change makes a new snapshot,
    /// and so a fresh index.
    pub fn index(&self) -> Arc<ToolIndex> {
        Arc::clone(
            self.index
                .get_or_init(|| Arc::new(ToolIndex::new(self.specs()))),
        )
    }

    /// Tell every tool of this snapshot that `session` is over, so stateful
    /// tools free its instance.
    pub fn end_session(&self, session: &SessionId) {
        for entry in self.tools.values().flatten() {
            entry.tool.end_session(session);
        }
    }
}
