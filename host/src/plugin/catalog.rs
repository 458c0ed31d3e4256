//! The tools a component described, remembered in the compile cache.
//!
//! Asking a component for its tools means making an instance and calling
//! `describe`, which is most of what a warm load costs once the compiled
//! code is cached. The answer only depends on the component and on what its
//! manifest gives it (config values, environment, directories, limits), so it
//! is kept as a cache note keyed on all of those: a changed component,
//! manifest, operator grant or host version asks the component again.
//!
//! The WIT contract says `describe` must not depend on anything else (files,
//! clocks, randomness); `docs/wit.md` spells it out for plugin authors.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::loaded::{ComponentInterface, ToolExtras};
use crate::sandbox::{Limits, Permissions, Sandbox};
use crate::tools::ToolSpec;

/// The cache note's name.
const NOTE: &str = "tools";

/// What `describe` may depend on besides the component itself.
///
/// Environment values are part of the key (a plugin may describe itself
/// differently with another value) but only as this hash: the note holds
/// no value, and `Permissions` serializes variable names alone.
#[derive(Serialize)]
struct Inputs<'a> {
    config: &'a BTreeMap<String, String>,
    limits: &'a Limits,
    permissions: &'a Permissions,
    env_values: Vec<&'a str>,
}

#[derive(Serialize, Deserialize)]
struct Note {
    /// BLAKE3 of the [`Inputs`], hex.
    inputs: String,
    tools: Vec<ToolSpec>,
    /// What each tool declared besides its spec (contract 0.2), by index;
    /// absent in notes of 0.1 components.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    extras: Vec<ToolExtras>,
    /// Instance slots one instance takes (see `Sandbox::prepare`): what
    /// finding a tool's owner without loading the plugin needs to know
    /// whether it would load under this host's `max_instances`.
    slots: u32,
    /// The component's imports and exports: with them, a plugin loads
    /// without its compiled code (see `lazy`). Absent in older notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    interface: Option<ComponentInterface>,
}

/// What a note holds for a plugin to load without its compiled code.
pub(super) struct Remembered {
    pub(super) tools: Vec<ToolSpec>,
    pub(super) extras: Vec<ToolExtras>,
    pub(super) slots: u32,
    pub(super) interface: ComponentInterface,
}

/// A fingerprint of what a plugin's `describe` sees; `None` if it cannot be
/// taken (a granted path that is not UTF-8), in which case nothing is cached.
pub(super) fn inputs_key(
    config: &BTreeMap<String, String>,
    limits: &Limits,
    permissions: &Permissions,
) -> Option<String> {
    let inputs = Inputs {
        config,
        limits,
        permissions,
        env_values: permissions.env.iter().map(|v| v.value()).collect(),
    };
    let bytes = serde_json::to_vec(&inputs).ok()?;
    Some(blake3::hash(&bytes).to_hex().to_string())
}

/// The tools remembered for this component and these inputs, if any.
/// A remembered list gets the same checks as a fresh `describe` answer
/// ([`check_tools`](super::check_tools)): a note is plugin-supplied data too.
/// The last item says whether the note holds everything a load without
/// the compiled code needs ([`recall_all`]).
pub(super) fn recall(
    sandbox: &Sandbox,
    digest: &blake3::Hash,
    key: &str,
    budget: &crate::tools::PluginBudget,
) -> Option<(Vec<ToolSpec>, Vec<ToolExtras>, bool)> {
    read(sandbox, digest, key, budget)
        .map(|note| (note.tools, note.extras, note.interface.is_some()))
}

/// Everything remembered for this component and these inputs, if the note
/// has it all (notes from before interfaces were kept do not).
pub(super) fn recall_all(
    sandbox: &Sandbox,
    digest: &blake3::Hash,
    key: &str,
    budget: &crate::tools::PluginBudget,
) -> Option<Remembered> {
    let note = read(sandbox, digest, key, budget)?;
    Some(Remembered {
        tools: note.tools,
        extras: note.extras,
        slots: note.slots,
        interface: note.interface?,
    })
}

/// As [`recall`], with the instance slots one instance takes.
pub(super) fn recall_with_slots(
    sandbox: &Sandbox,
    digest: &blake3::Hash,
    key: &str,
    budget: &crate::tools::PluginBudget,
) -> Option<(Vec<ToolSpec>, u32)> {
    let note = read(sandbox, digest, key, budget)?;
    Some((note.tools, note.slots))
}

fn read(
    sandbox: &Sandbox,
    digest: &blake3::Hash,
    key: &str,
    budget: &crate::tools::PluginBudget,
) -> Option<Note> {
    let bytes = sandbox.cached_note(digest, NOTE)?;
    let note: Note = serde_json::from_slice(&bytes).ok()?;
    if note.inputs != key || crate::tools::check_tools(&note.tools, budget).is_err() {
        return None;
    }
    // A note is plugin-supplied data: its extras get the budget checks a
    // fresh answer gets, and belong one to each tool (or are absent). Its
    // schemas compile where every tool's do, in the registry, which
    // refuses one that does not (as it does an input schema); compiling
    // them here too would cost a warm load most of its time.
    if !note.extras.is_empty() && note.extras.len() != note.tools.len() {
        return None;
    }
    for extra in &note.extras {
        let schema_ok = extra.output_schema.as_ref().is_none_or(|s| {
            s.to_string().len() <= budget.max_schema_bytes
                && crate::tools::check_schema(s, &crate::tools::SchemaBudget::default()).is_ok()
        });
        if !schema_ok {
            return None;
        }
    }
    Some(note)
}

/// Remember what `describe` returned (already checked by the caller), how
/// many instance slots one instance takes, and the component's interface.
pub(super) fn remember(
    sandbox: &Sandbox,
    digest: &blake3::Hash,
    key: String,
    described: (&[ToolSpec], &[ToolExtras]),
    slots: u32,
    interface: &ComponentInterface,
) {
    let (tools, extras) = described;
    // 0.1 components (every extra empty) keep the notes they had.
    let extras = if extras.iter().all(|e| e == &ToolExtras::default()) {
        Vec::new()
    } else {
        extras.to_vec()
    };
    let note = Note {
        inputs: key,
        tools: tools.to_vec(),
        extras,
        slots,
        interface: Some(interface.clone()),
    };
    if let Ok(bytes) = serde_json::to_vec(&note) {
        sandbox.keep_note(digest, NOTE, &bytes);
    }
}
