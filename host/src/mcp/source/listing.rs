//! A server's tool list: each tool held to the budgets, named, and kept
//! in the registries the server is attached to.

use std::sync::Arc;

use serde_json::Value;

use super::{Link, Listed, names};
use crate::tools::{RegistryError, ToolRegistry, ToolSpec};

impl Link {
    /// The listed tools that fit the budgets, as registry tools; each one
    /// that does not is skipped with a warning.
    pub(super) fn check_tools(&self, listed: Vec<rmcp::model::Tool>) -> Vec<Listed> {
        let plan = &self.plan;
        let server = &plan.name;
        let skip = |remote: &str, why: String| {
            tracing::warn!(
                "MCP server `{server}`: skipped its tool `{}`: {why}",
                crate::text::untrusted(remote, 128)
            );
        };
        if listed.len() > plan.max_tools {
            tracing::warn!(
                "MCP server `{server}` lists more than {} tools; only the first {} are used (raise `plugins.max_tools` in the host config for more)",
                plan.max_tools,
                plan.max_tools
            );
        }
        let budget = crate::tools::PluginBudget {
            max_description_bytes: plan.max_description_bytes,
            max_schema_bytes: plan.max_schema_bytes,
            ..crate::tools::PluginBudget::default()
        };
        let mut tools: Vec<Listed> = Vec::new();
        for tool in listed.into_iter().take(plan.max_tools) {
            let remote: &str = &tool.name;
            let Some(name) = names::tool_name(&plan.prefix, remote) else {
                skip(
                    remote,
                    format!(
                        "its name, with prefix `{}`, is not a valid tool name (1 to 64 characters)",
                        plan.prefix
                    ),
                );
                continue;
            };
            if tools.iter().any(|t| t.spec.name == name) {
                skip(
                    remote,
                    format!("another of its tools is also named `{name}`"),
                );
                continue;
            }
            // The model reads these: they pass the same redaction as a
            // call's answer.
            let description = plan
                .bounds
                .redact
                .redact(
                    tool.description
                        .as_deref()
                        .or(tool.title.as_deref())
                        .unwrap_or_default(),
                )
                .into_owned();
            let schema = plan
                .bounds
                .redact
                .redact_value(Value::Object((*tool.input_schema).clone()));
            let spec = ToolSpec {
                name,
                description,
                input_schema: schema,
            };
            // The rule a plugin's tools meet too.
            if let Err(why) = crate::tools::check_tool(&spec, &budget) {
                skip(remote, why);
                continue;
            }
            tools.push(Listed {
                spec,
                remote: Arc::from(remote),
            });
        }
        tools
    }

    /// Change `registry` from tools `old` to tools `new`: unregister ours
    /// that went away or changed, register those that are new or changed.
    /// Returns the tools that could not be registered.
    pub(super) fn sync_into(
        self: &Arc<Self>,
        registry: &ToolRegistry,
        old: &[Listed],
        new: &[Listed],
    ) -> Vec<RegistryError> {
        let ours = |name: &str| {
            registry
                .get(name)
                .is_some_and(|tool| tool.origin() == self.origin())
        };
        for gone in old.iter().filter(|o| !new.contains(o)) {
            if ours(&gone.spec.name) {
                registry.unregister(&gone.spec.name);
            }
        }
        let mut errors = Vec::new();
        for added in new {
            if old.contains(added) && ours(&added.spec.name) {
                continue;
            }
            if let Err(e) =
                registry.register_with(Arc::new(self.tool(added)), self.plan.options.clone())
            {
                tracing::warn!(
                    "MCP server `{}`: skipped its tool `{}`: {}",
                    self.plan.name,
                    crate::text::escape_controls(&added.remote),
                    crate::text::escape_controls(&e.to_string())
                );
                errors.push(e);
            }
        }
        errors
    }
}
