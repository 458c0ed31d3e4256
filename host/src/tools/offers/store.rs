//! [`Offers`]: the resources, templates and prompts a registry holds, by
//! owner, with their change feeds and the budgets on what they return.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::{broadcast, watch};

use super::{
    CompleteFn, OfferBudget, OfferError, PromptEntry, PromptReply, PromptSpec, ReadRequest,
    ResourceContents, ResourceEntry, ResourcePart, ResourceSpec, SubscribeFn, TemplateEntry,
    TemplateSpec, ToolOrigin, get_fn, read_fn,
};

/// How many `resources/updated` URIs a slow reader may fall behind by
/// before it misses some.
const UPDATES: usize = 256;

/// The resources, resource templates and prompts of a registry, each with
/// its owner, and their change feeds. Every method takes `&self`: it is
/// shared with the registry and changed at any time, a reader taking a
/// consistent listing each time.
///
/// Where two owners offer one URI (or template, or prompt name), the
/// order of tools decides: the program's own (native) entries, then
/// plugins, REST, MCP servers by name; a stronger owner's entry displaces
/// a weaker one's, a weaker one's is refused ([`OfferError::Taken`]).
///
/// # Examples
///
/// ```
/// use toolhost::tools::{PromptArg, PromptMessage, PromptSpec, ResourceContents, ResourceSpec, ToolRegistry};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// let offers = registry.offers();
/// offers.add_resource(ResourceSpec::new("memo://today", "today").with_mime_type("text/plain"), |_| async {
///     Ok(ResourceContents::Text("Buy milk.".into()))
/// })?;
/// offers.add_prompt(PromptSpec::new("greet").with_argument(PromptArg::required("name")), |args| async move {
///     Ok(vec![PromptMessage::user(format!("Say hello to {}.", args["name"]))].into())
/// }, None)?;
/// let parts = offers.read("memo://today").await?;
/// assert_eq!(parts[0].contents, ResourceContents::Text("Buy milk.".into()));
/// assert!(offers.get_prompt("greet", Default::default()).await.is_err());
/// # Ok::<_, toolhost::tools::OfferError>(())
/// # }).unwrap();
/// ```
pub struct Offers {
    current: RwLock<Arc<OfferSet>>,
    budget: RwLock<OfferBudget>,
    enabled: AtomicBool,
    resources_changed: watch::Sender<u64>,
    prompts_changed: watch::Sender<u64>,
    updated: broadcast::Sender<String>,
}

/// One consistent view of the offers.
#[derive(Clone, Default)]
struct OfferSet {
    resources: BTreeMap<String, ResourceEntry>,
    templates: BTreeMap<String, TemplateEntry>,
    prompts: BTreeMap<String, PromptEntry>,
    /// Sources that take subscriptions themselves, by owner.
    subscribe: BTreeMap<String, SubscribeFn>,
}

impl Default for Offers {
    fn default() -> Self {
        Self {
            current: RwLock::default(),
            budget: RwLock::default(),
            enabled: AtomicBool::new(false),
            resources_changed: watch::Sender::new(0),
            prompts_changed: watch::Sender::new(0),
            updated: broadcast::Sender::new(UPDATES),
        }
    }
}

impl std::fmt::Debug for Offers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.set();
        f.debug_struct("Offers")
            .field("resources", &set.resources.keys().collect::<Vec<_>>())
            .field("templates", &set.templates.keys().collect::<Vec<_>>())
            .field("prompts", &set.prompts.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The order of owners: smaller is stronger (as for tools).
fn rank(owner: &ToolOrigin) -> (u8, String) {
    match owner {
        ToolOrigin::Native => (0, String::new()),
        ToolOrigin::Plugin { path, .. } => (1, path.to_string_lossy().into_owned()),
        ToolOrigin::Rest { url, .. } => (2, url.clone()),
        ToolOrigin::Mcp { server } => (3, server.clone()),
    }
}

fn label(owner: &ToolOrigin) -> String {
    match owner {
        ToolOrigin::Native => "the program".to_owned(),
        ToolOrigin::Plugin { plugin, .. } => format!("plugin `{plugin}`"),
        ToolOrigin::Rest { url, .. } => format!("REST tool `{url}`"),
        ToolOrigin::Mcp { server } => format!("MCP server `{server}`"),
    }
}

/// Put `entry` under `key` unless a stronger owner has it; `what` names
/// it in the error.
fn place<E>(
    map: &mut BTreeMap<String, E>,
    key: String,
    entry: E,
    owner: impl Fn(&E) -> &ToolOrigin,
    what: impl FnOnce() -> String,
) -> Result<(), OfferError> {
    if let Some(held) = map.get(&key)
        && rank(owner(held)) < rank(owner(&entry))
    {
        return Err(OfferError::Taken {
            what: what(),
            owner: label(owner(held)),
        });
    }
    map.insert(key, entry);
    Ok(())
}

impl Offers {
    fn set(&self) -> Arc<OfferSet> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Change the set with `change`, and tell the feeds what changed.
    fn update<T>(&self, change: impl FnOnce(&mut OfferSet) -> T) -> T {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let mut next = OfferSet::clone(&current);
        let value = change(&mut next);
        type Listed<'a> = Vec<(&'a ResourceSpec, &'a ToolOrigin)>;
        fn specs(s: &OfferSet) -> (Listed<'_>, Listed<'_>) {
            let r = s.resources.values().map(|e| (&e.spec, &e.owner)).collect();
            let t = s.templates.values().map(|e| (&e.spec, &e.owner)).collect();
            (r, t)
        }
        let prompts = |s: &OfferSet| {
            s.prompts
                .values()
                .map(|e| (e.spec.clone(), e.owner.clone()))
                .collect::<Vec<_>>()
        };
        let resources_changed = specs(&current) != specs(&next);
        let prompts_changed = prompts(&current) != prompts(&next);
        *current = Arc::new(next);
        self.enabled.store(true, Ordering::Relaxed);
        if resources_changed {
            self.resources_changed.send_modify(|g| *g += 1);
        }
        if prompts_changed {
            self.prompts_changed.send_modify(|g| *g += 1);
        }
        value
    }

    /// Whether this registry may offer resources and prompts: once any
    /// was added, or a source that may have some was attached
    /// ([`enable`](Self::enable)). The MCP server declares the
    /// capabilities only then.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Say that this registry may offer resources and prompts (an MCP
    /// server does when attached, before it lists any).
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Relaxed);
    }

    /// The budgets now.
    pub fn budget(&self) -> OfferBudget {
        self.budget
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Other budgets, for what is added and served from now on.
    pub fn set_budget(&self, budget: OfferBudget) {
        *self.budget.write().unwrap_or_else(PoisonError::into_inner) = budget;
    }

    /// A receiver of the resource list's generation: bumped when a
    /// resource or template is added, changed or removed.
    pub fn resource_changes(&self) -> watch::Receiver<u64> {
        self.resources_changed.subscribe()
    }

    /// A receiver of the prompt list's generation.
    pub fn prompt_changes(&self) -> watch::Receiver<u64> {
        self.prompts_changed.subscribe()
    }

    /// The URIs of resources whose content changed, as their sources say
    /// ([`resource_updated`](Self::resource_updated)).
    pub fn updates(&self) -> broadcast::Receiver<String> {
        self.updated.subscribe()
    }

    /// Tell subscribers that the resource `uri` changed.
    pub fn resource_updated(&self, uri: &str) {
        let _ = self.updated.send(uri.to_owned());
    }

    /// The resources, by URI.
    pub fn resources(&self) -> Vec<ResourceEntry> {
        self.set().resources.values().cloned().collect()
    }

    /// The resource templates, by URI template.
    pub fn templates(&self) -> Vec<TemplateEntry> {
        self.set().templates.values().cloned().collect()
    }

    /// The prompts, by name.
    pub fn prompts(&self) -> Vec<PromptEntry> {
        self.set().prompts.values().cloned().collect()
    }

    /// Add the program's own resource, read by `read` (text or bytes; the
    /// spec's MIME type goes with it). An entry of the program's with the
    /// same URI is replaced.
    ///
    /// # Errors
    ///
    /// The URI or a text breaks the [`OfferBudget`], or the program has
    /// [`max_entries`](OfferBudget::max_entries) resources already.
    pub fn add_resource<F, Fut>(&self, spec: ResourceSpec, read: F) -> Result<(), OfferError>
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContents, OfferError>> + Send + 'static,
    {
        let entry = ResourceEntry::new(spec.clone(), ToolOrigin::Native, native_read(&spec, read));
        self.check_resource(&entry.spec, &entry.owner)?;
        self.native_insert(|set| {
            let key = entry.spec.uri.clone();
            place(&mut set.resources, key, entry, |e| &e.owner, String::new)
        })
    }

    /// Add the program's own resource template, read by `read` (given the
    /// URI and its variables), its variables completed by `complete`.
    ///
    /// # Errors
    ///
    /// As [`add_resource`](Self::add_resource), or the template is not
    /// RFC 6570 level 1.
    pub fn add_template<F, Fut>(
        &self,
        spec: TemplateSpec,
        read: F,
        complete: Option<CompleteFn>,
    ) -> Result<(), OfferError>
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContents, OfferError>> + Send + 'static,
    {
        let read = native_read(&spec, read);
        let entry = TemplateEntry::new(spec, ToolOrigin::Native, read, complete)?;
        self.check_resource(&entry.spec, &entry.owner)?;
        self.native_insert(|set| {
            let key = entry.spec.uri.clone();
            place(&mut set.templates, key, entry, |e| &e.owner, String::new)
        })
    }

    /// Add the program's own prompt, rendered by `get` from its
    /// arguments, which `complete` completes.
    ///
    /// # Errors
    ///
    /// The name is not a valid tool name, a text breaks the budget, or
    /// the program has [`max_entries`](OfferBudget::max_entries) prompts.
    pub fn add_prompt<F, Fut>(
        &self,
        spec: PromptSpec,
        get: F,
        complete: Option<CompleteFn>,
    ) -> Result<(), OfferError>
    where
        F: Fn(BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptReply, OfferError>> + Send + 'static,
    {
        let entry = PromptEntry::new(spec, ToolOrigin::Native, get_fn(get), complete);
        self.check_prompt(&entry.spec)?;
        self.native_insert(|set| {
            let key = entry.spec.name.clone();
            place(&mut set.prompts, key, entry, |e| &e.owner, String::new)
        })
    }

    /// Insert for the program, within its count budget.
    fn native_insert(
        &self,
        insert: impl FnOnce(&mut OfferSet) -> Result<(), OfferError>,
    ) -> Result<(), OfferError> {
        let max = self.budget().max_entries;
        self.update(|set| {
            let mut next = set.clone();
            insert(&mut next)?;
            let native = |owner: &ToolOrigin| *owner == ToolOrigin::Native;
            let counts = [
                next.resources.values().filter(|e| native(&e.owner)).count(),
                next.templates.values().filter(|e| native(&e.owner)).count(),
                next.prompts.values().filter(|e| native(&e.owner)).count(),
            ];
            if counts.iter().any(|n| *n > max) {
                return Err(OfferError::OverBudget {
                    what: "the program's resources, templates or prompts".into(),
                    limit: format!("{max} of each"),
                });
            }
            *set = next;
            Ok(())
        })
    }

    /// Remove the resource `uri`, the template `uri`, or the prompt
    /// `uri` (a name), whoever owns it; whether one was there.
    pub fn remove(&self, uri_or_name: &str) -> bool {
        self.update(|set| {
            set.resources.remove(uri_or_name).is_some()
                | set.templates.remove(uri_or_name).is_some()
                | set.prompts.remove(uri_or_name).is_some()
        })
    }

    fn check_resource(&self, spec: &ResourceSpec, owner: &ToolOrigin) -> Result<(), OfferError> {
        let budget = self.budget();
        budget.check_uri(&spec.uri, Some(owner))?;
        budget.check_text("a name", &spec.name)?;
        for text in [&spec.description, &spec.mime_type].into_iter().flatten() {
            budget.check_text("a description or MIME type", text)?;
        }
        Ok(())
    }

    fn check_prompt(&self, spec: &PromptSpec) -> Result<(), OfferError> {
        if !crate::tools::is_valid_tool_name(&spec.name) {
            return Err(OfferError::Invalid {
                what: format!("prompt name `{}`", crate::text::untrusted(&spec.name, 80)),
                why: "use 1 to 64 characters of a-z A-Z 0-9 _ -".into(),
            });
        }
        let budget = self.budget();
        if let Some(description) = &spec.description {
            budget.check_text("a prompt's description", description)?;
        }
        if spec.arguments.len() > 64 {
            return Err(OfferError::OverBudget {
                what: format!(
                    "prompt `{}`'s {} arguments",
                    spec.name,
                    spec.arguments.len()
                ),
                limit: "64 arguments".into(),
            });
        }
        for arg in &spec.arguments {
            budget.check_text("an argument's name", &arg.name)?;
            if let Some(description) = &arg.description {
                budget.check_text("an argument's description", description)?;
            }
        }
        Ok(())
    }
}

/// A native read function made a [`ReadFn`](super::ReadFn): one part,
/// the URI read, the spec's MIME type.
fn native_read<F, Fut>(spec: &ResourceSpec, read: F) -> super::ReadFn
where
    F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceContents, OfferError>> + Send + 'static,
{
    let mime_type = spec.mime_type.clone();
    let read = Arc::new(read);
    read_fn(move |request: ReadRequest| {
        let (read, mime_type) = (Arc::clone(&read), mime_type.clone());
        async move {
            let uri = request.uri.clone();
            let contents = read(request).await?;
            Ok(vec![ResourcePart {
                uri,
                mime_type,
                contents,
            }])
        }
    })
}

#[path = "serve.rs"]
mod serve;

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
