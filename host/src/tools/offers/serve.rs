//! What [`Offers`] answers: reads, prompts and completions, each within
//! its budget, and a source's whole list replaced at once.

use std::collections::BTreeMap;
use std::future::Future;

use super::super::{
    Completion, CompletionRef, CompletionRequest, OfferError, PromptEntry, PromptReply,
    ResourceEntry, ResourcePart, SubscribeFn, TemplateEntry, ToolOrigin,
};
use super::{Offers, label, place};
use crate::tools::Content;

/// Run `work` within `budget`'s timeout.
async fn timed<T>(
    timeout: std::time::Duration,
    what: impl FnOnce() -> String,
    work: impl Future<Output = Result<T, OfferError>>,
) -> Result<T, OfferError> {
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| {
            Err(OfferError::Timeout {
                what: what(),
                ms: timeout.as_millis(),
            })
        })
}

impl Offers {
    /// Read `uri`: the listed resource with that URI, else the first
    /// template (by URI template) that matches it.
    ///
    /// # Errors
    ///
    /// [`OfferError::UnknownResource`] when nothing has it; an invalid
    /// URI; the source failed, took longer than the budget, returned
    /// nothing, more bytes than the budget, or a part with an invalid URI.
    pub async fn read(&self, uri: &str) -> Result<Vec<ResourcePart>, OfferError> {
        let budget = self.budget();
        budget.check_uri(uri, None)?;
        let set = self.set();
        let (read, owner, vars) = if let Some(entry) = set.resources.get(uri) {
            (entry.read.clone(), entry.owner.clone(), BTreeMap::new())
        } else {
            set.templates
                .values()
                .find_map(|e| Some((e.read.clone(), e.owner.clone(), e.template.matches(uri)?)))
                .ok_or_else(|| OfferError::UnknownResource {
                    uri: crate::text::untrusted(uri, 256),
                })?
        };
        drop(set);
        let request = super::super::ReadRequest {
            uri: uri.to_owned(),
            vars,
        };
        let what = || {
            format!(
                "reading `{}` from {}",
                crate::text::untrusted(uri, 256),
                label(&owner)
            )
        };
        let parts = timed(budget.timeout, what, read(request)).await?;
        if parts.is_empty() {
            return Err(OfferError::Failed(format!(
                "{} returned no contents",
                what()
            )));
        }
        let bytes: usize = parts.iter().map(ResourcePart::size).sum();
        if bytes > budget.max_read_bytes {
            return Err(OfferError::OverBudget {
                what: format!("{}: {bytes} bytes", what()),
                limit: format!("{} bytes a read", budget.max_read_bytes),
            });
        }
        for part in &parts {
            budget.check_uri(&part.uri, Some(&owner))?;
        }
        Ok(parts)
    }

    /// The prompt `name` rendered with `args`.
    ///
    /// # Errors
    ///
    /// Unknown prompt, a required argument missing, the source failed or
    /// went over a budget (time, bytes).
    pub async fn get_prompt(
        &self,
        name: &str,
        args: BTreeMap<String, String>,
    ) -> Result<PromptReply, OfferError> {
        let budget = self.budget();
        let entry =
            self.set()
                .prompts
                .get(name)
                .cloned()
                .ok_or_else(|| OfferError::UnknownPrompt {
                    name: crate::text::untrusted(name, 80),
                })?;
        if let Some(missing) = entry
            .spec
            .arguments
            .iter()
            .find(|a| a.required && !args.contains_key(&a.name))
        {
            return Err(OfferError::MissingArgument {
                prompt: name.to_owned(),
                argument: missing.name.clone(),
            });
        }
        let what = || format!("prompt `{name}` of {}", label(&entry.owner));
        let reply = timed(budget.timeout, what, (entry.get)(args)).await?;
        let bytes: usize = reply.messages.iter().map(|m| m.content.size()).sum();
        if bytes > budget.max_prompt_bytes {
            return Err(OfferError::OverBudget {
                what: format!("{}: {bytes} bytes of messages", what()),
                limit: format!("{} bytes a prompt", budget.max_prompt_bytes),
            });
        }
        for message in &reply.messages {
            if let Content::Resource { uri, .. } = &message.content {
                budget.check_uri(uri, Some(&entry.owner))?;
            }
        }
        Ok(reply)
    }

    /// Completions of `request`'s argument of the prompt or template
    /// `reference`: none when its source completes nothing; at most the
    /// budget's count (more are cut, `has_more` then set).
    ///
    /// # Errors
    ///
    /// The prompt or template is unknown; the source failed or took
    /// longer than the budget.
    pub async fn complete(
        &self,
        reference: &CompletionRef,
        request: CompletionRequest,
    ) -> Result<Completion, OfferError> {
        let budget = self.budget();
        let set = self.set();
        let (complete, owner) = match reference {
            CompletionRef::Prompt(name) => {
                let e = set
                    .prompts
                    .get(name)
                    .ok_or_else(|| OfferError::UnknownPrompt {
                        name: crate::text::untrusted(name, 80),
                    })?;
                (e.complete.clone(), e.owner.clone())
            }
            CompletionRef::Template(uri) => {
                let e = set
                    .templates
                    .get(uri)
                    .ok_or_else(|| OfferError::UnknownResource {
                        uri: crate::text::untrusted(uri, 256),
                    })?;
                (e.complete.clone(), e.owner.clone())
            }
        };
        drop(set);
        let Some(complete) = complete else {
            return Ok(Completion::default());
        };
        let argument = request.argument.clone();
        let what = || format!("completing `{argument}` for {}", label(&owner));
        let mut completion = timed(budget.timeout, what, complete(request)).await?;
        if completion.values.len() > budget.max_completions {
            completion.values.truncate(budget.max_completions);
            completion.has_more = true;
        }
        let cap = budget.max_text_bytes;
        completion.values.retain(|v| v.len() <= cap);
        Ok(completion)
    }

    /// Pass a client's subscription to `uri` (or its end, `on` false) on to
    /// the source that owns it, when that source takes subscriptions.
    ///
    /// # Errors
    ///
    /// Nothing has `uri`, or the source refused.
    pub async fn subscribe(&self, uri: &str, on: bool) -> Result<(), OfferError> {
        self.budget().check_uri(uri, None)?;
        let set = self.set();
        let owner = match set.resources.get(uri) {
            Some(entry) => entry.owner.clone(),
            None => set
                .templates
                .values()
                .find(|e| e.template.matches(uri).is_some())
                .map(|e| e.owner.clone())
                .ok_or_else(|| OfferError::UnknownResource {
                    uri: crate::text::untrusted(uri, 256),
                })?,
        };
        let forward = set.subscribe.get(&label(&owner)).cloned();
        drop(set);
        match forward {
            Some(forward) => forward(uri.to_owned(), on).await,
            None => Ok(()),
        }
    }

    /// Replace everything `owner` offers with these lists (a source's
    /// listing): in one step, a reader sees the old or the new. Each
    /// entry over the budget or taken by a stronger owner is left out;
    /// the errors say which. `subscribe` passes subscriptions to its URIs
    /// on to the source.
    pub fn replace_owned(
        &self,
        owner: &ToolOrigin,
        lists: (Vec<ResourceEntry>, Vec<TemplateEntry>, Vec<PromptEntry>),
        subscribe: Option<SubscribeFn>,
    ) -> Vec<OfferError> {
        let budget = self.budget();
        let (resources, templates, prompts) = lists;
        let mut errors = Vec::new();
        let mut over = |kind: &str, n: usize| {
            if n > budget.max_entries {
                errors.push(OfferError::OverBudget {
                    what: format!("{} listing {n} {kind}", label(owner)),
                    limit: format!("{} {kind}", budget.max_entries),
                });
            }
        };
        over("resources", resources.len());
        over("resource templates", templates.len());
        over("prompts", prompts.len());
        let checked_resources: Vec<_> = resources
            .into_iter()
            .take(budget.max_entries)
            .filter_map(|e| keep(self.check_resource(&e.spec, owner), e, &mut errors))
            .collect();
        let checked_templates: Vec<_> = templates
            .into_iter()
            .take(budget.max_entries)
            .filter_map(|e| keep(self.check_resource(&e.spec, owner), e, &mut errors))
            .collect();
        let checked_prompts: Vec<_> = prompts
            .into_iter()
            .take(budget.max_entries)
            .filter_map(|e| keep(self.check_prompt(&e.spec), e, &mut errors))
            .collect();
        self.update(|set| {
            let mine = |o: &ToolOrigin| o == owner;
            set.resources.retain(|_, e| !mine(&e.owner));
            set.templates.retain(|_, e| !mine(&e.owner));
            set.prompts.retain(|_, e| !mine(&e.owner));
            for e in checked_resources {
                let (key, what) = (e.spec.uri.clone(), format!("resource `{}`", e.spec.uri));
                if let Err(err) = place(&mut set.resources, key, e, |e| &e.owner, || what) {
                    errors.push(err);
                }
            }
            for e in checked_templates {
                let (key, what) = (e.spec.uri.clone(), format!("template `{}`", e.spec.uri));
                if let Err(err) = place(&mut set.templates, key, e, |e| &e.owner, || what) {
                    errors.push(err);
                }
            }
            for e in checked_prompts {
                let (key, what) = (e.spec.name.clone(), format!("prompt `{}`", e.spec.name));
                if let Err(err) = place(&mut set.prompts, key, e, |e| &e.owner, || what) {
                    errors.push(err);
                }
            }
            match subscribe {
                Some(forward) => set.subscribe.insert(label(owner), forward),
                None => set.subscribe.remove(&label(owner)),
            };
        });
        errors
    }
}

/// `entry` when `checked` passed; else its error is noted.
fn keep<E>(checked: Result<(), OfferError>, entry: E, errors: &mut Vec<OfferError>) -> Option<E> {
    match checked {
        Ok(()) => Some(entry),
        Err(e) => {
            errors.push(e);
            None
        }
    }
}
