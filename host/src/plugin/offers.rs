//! What a plugin offers besides tools (contract 0.3): its resources,
//! templates and prompts, listed when it loads, and read, rendered and
//! completed by calls into it, each a call under its limits. They go into a
//! registry's [`Offers`](crate::tools::Offers) with the plugin as owner,
//! beside the program's and the `[[mcp]]` servers'.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::PluginError;
use super::loaded::Plugin;
use crate::sandbox::{Guest, GuestOfferError, OfferAnswer, OfferCall, OfferLists};
use crate::text;
use crate::tools::{
    Completion, CompletionRef, CompletionRequest, OfferError, PromptEntry, PromptReply,
    ReadRequest, ResourceEntry, ResourcePart, TemplateEntry, ToolOrigin, ToolRegistry, complete_fn,
    get_fn, read_fn,
};

/// The URI schemes a plugin's resources may have: its name (`_` as `-`),
/// lower case (always first: its own scheme, also its `ui://` authority),
/// and those its manifest names.
pub(super) fn schemes(name: &str, declared: &[String]) -> Vec<String> {
    let own = name.replace('_', "-").to_ascii_lowercase();
    std::iter::once(own)
        .chain(declared.iter().map(|s| s.to_ascii_lowercase()))
        .collect()
}

/// Whether a component of this interface exports any of contract 0.3's
/// interfaces (so that its lists come from calls into it).
pub(super) fn exported(interface: &super::ComponentInterface) -> bool {
    use crate::sandbox::{COMPLETIONS, PROMPTS, RESOURCES};
    interface
        .exports
        .iter()
        .any(|e| [RESOURCES, PROMPTS, COMPLETIONS].contains(&e.as_str()))
}

/// Ask the plugin for its lists (when it exports any of 0.3's interfaces),
/// and check that every URI is under one of its `schemes`, or `ui://`
/// under its own authority (`schemes[0]`).
pub(super) async fn list(
    guest: &Guest,
    path: &Path,
    schemes: &[String],
) -> Result<Option<OfferLists>, PluginError> {
    if !guest.has_offers() {
        return Ok(None);
    }
    let bad = |message: String| PluginError::Describe {
        path: path.to_owned(),
        message,
    };
    let lists = match guest.call_offer(OfferCall::Lists).await {
        Ok(Ok(OfferAnswer::Lists(lists))) => lists,
        Ok(Ok(_)) => return Err(bad("listing its offers answered something else".into())),
        Ok(Err(e)) => return Err(bad(format!("listing its offers failed: {e}"))),
        Err(e) => {
            return Err(bad(format!(
                "listing its resources and prompts failed: {e}"
            )));
        }
    };
    let uris = lists.resources.iter().map(|r| &r.uri);
    for uri in uris.chain(lists.templates.iter().map(|t| &t.uri)) {
        // `ui://` (MCP Apps) is every plugin's, each under its own
        // authority only (`apps`), whatever `resource_schemes` say.
        if super::apps::is_ui(uri) {
            match super::apps::ui_uri_refused(uri, &schemes[0]) {
                Some(why) => return Err(bad(format!("resource {why}"))),
                None => continue,
            }
        }
        let scheme = uri.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        if !scheme.is_some_and(|s| schemes.contains(&s)) {
            return Err(bad(format!(
                "resource `{}` is not under a scheme of this plugin's ({}); use one of them, or add its scheme to `resource_schemes` in the manifest",
                text::untrusted(uri, 256),
                schemes.join(", ")
            )));
        }
    }
    Ok(Some(lists))
}

/// A plugin file's offers in `registry` follow its tools: those of the
/// version that served `old` leave, those of `new` (if any) come. Hot
/// reload's one step for them.
pub(super) fn swap(
    registry: &ToolRegistry,
    old: &[Arc<dyn crate::tools::Tool>],
    new: Option<&Arc<Plugin>>,
) {
    let old_owner = old.first().map(|tool| tool.origin());
    if let Some(owner) = old_owner
        && new.is_none_or(|plugin| plugin.origin() != owner)
    {
        clear(registry, &owner);
    }
    if let Some(plugin) = new {
        for error in plugin.offers_into(registry) {
            tracing::warn!(plugin = %plugin.name, "an offer of the plugin was refused: {error}");
        }
    }
}

/// Take `owner`'s offers out of `registry`; quiet (no feed, no change)
/// for the many plugins that never offered anything.
fn clear(registry: &ToolRegistry, owner: &ToolOrigin) {
    let offers = registry.offers();
    let mine = |o: &ToolOrigin| o == owner;
    let had = offers.resources().iter().any(|e| mine(&e.owner))
        || offers.templates().iter().any(|e| mine(&e.owner))
        || offers.prompts().iter().any(|e| mine(&e.owner));
    if had {
        offers.replace_owned(owner, Default::default(), None);
    }
}

/// A failed 0.3 call as the registry's error, naming the plugin.
fn failed(plugin: &str, what: &str, e: &dyn std::fmt::Display) -> OfferError {
    OfferError::Failed(format!(
        "plugin `{plugin}`: {what}: {}",
        text::untrusted(&e.to_string(), 1024)
    ))
}

impl Plugin {
    /// Who owns its tools and offers in a registry.
    pub(crate) fn origin(&self) -> ToolOrigin {
        ToolOrigin::Plugin {
            plugin: self.name.clone(),
            path: self.path.clone(),
        }
    }

    /// Whether it offers resources, templates or prompts (contract 0.3).
    pub fn has_offers(&self) -> bool {
        self.offers.is_some()
    }

    /// Make `call`, its kind of answer picked out by `pick`.
    async fn offer<T>(
        &self,
        call: OfferCall,
        pick: impl FnOnce(OfferAnswer) -> Option<T>,
    ) -> Result<T, OfferError> {
        let what = call.label();
        let guest = self
            .guest
            .get()
            .await
            .map_err(|e| failed(&self.name, what, &e))?;
        match guest.call_offer(call).await {
            Ok(Ok(answer)) => pick(answer).ok_or_else(|| failed(&self.name, what, &"no answer")),
            Ok(Err(GuestOfferError::NotFound(m))) => {
                Err(failed(&self.name, what, &format!("not found: {m}")))
            }
            Ok(Err(e)) => Err(failed(&self.name, what, &e)),
            Err(e) => Err(failed(&self.name, what, &e)),
        }
    }

    async fn read(&self, request: ReadRequest) -> Result<Vec<ResourcePart>, OfferError> {
        let call = OfferCall::Read {
            uri: request.uri,
            vars: request.vars,
        };
        self.offer(call, |a| match a {
            OfferAnswer::Read(parts) => Some(parts),
            _ => None,
        })
        .await
    }

    async fn get(
        &self,
        name: String,
        arguments: BTreeMap<String, String>,
    ) -> Result<PromptReply, OfferError> {
        self.offer(OfferCall::Get { name, arguments }, |a| match a {
            OfferAnswer::Get(reply) => Some(reply),
            _ => None,
        })
        .await
    }

    async fn complete(
        &self,
        target: CompletionRef,
        request: CompletionRequest,
    ) -> Result<Completion, OfferError> {
        let call = OfferCall::Complete {
            target,
            argument: request.argument,
            value: request.value,
            context: request.context,
        };
        self.offer(call, |a| match a {
            OfferAnswer::Complete(c) => Some(c),
            _ => None,
        })
        .await
    }

    /// Put what it offers into `registry`'s offers, in place of what this
    /// plugin file offered there before (nothing, for a plugin without
    /// offers). Entries over the registry's budget, or taken by a stronger
    /// owner, are left out; the errors say which.
    pub fn offers_into(self: &Arc<Self>, registry: &ToolRegistry) -> Vec<OfferError> {
        let owner = self.origin();
        let offers = registry.offers();
        let Some(lists) = &self.offers else {
            clear(registry, &owner);
            return Vec::new();
        };
        offers.enable();
        let read = {
            let plugin = Arc::clone(self);
            read_fn(move |request| {
                let plugin = Arc::clone(&plugin);
                async move { plugin.read(request).await }
            })
        };
        let completes = |target: CompletionRef| {
            let plugin = Arc::clone(self);
            complete_fn(move |request| {
                let (plugin, target) = (Arc::clone(&plugin), target.clone());
                async move { plugin.complete(target, request).await }
            })
        };
        let complete = self
            .interface
            .exports
            .iter()
            .any(|e| e == crate::sandbox::COMPLETIONS);
        let resources = lists
            .resources
            .iter()
            .map(|spec| ResourceEntry::new(spec.clone(), owner.clone(), read.clone()))
            .collect();
        let mut errors = Vec::new();
        let templates = lists
            .templates
            .iter()
            .filter_map(|spec| {
                let completion =
                    complete.then(|| completes(CompletionRef::Template(spec.uri.clone())));
                TemplateEntry::new(spec.clone(), owner.clone(), read.clone(), completion)
                    .map_err(|e| errors.push(e))
                    .ok()
            })
            .collect();
        let prompts = lists
            .prompts
            .iter()
            .map(|spec| {
                let plugin = Arc::clone(self);
                let name = spec.name.clone();
                let get = get_fn(move |arguments| {
                    let (plugin, name) = (Arc::clone(&plugin), name.clone());
                    async move { plugin.get(name, arguments).await }
                });
                let completion =
                    complete.then(|| completes(CompletionRef::Prompt(spec.name.clone())));
                PromptEntry::new(spec.clone(), owner.clone(), get, completion)
            })
            .collect();
        errors.extend(offers.replace_owned(&owner, (resources, templates, prompts), None));
        errors
    }
}
