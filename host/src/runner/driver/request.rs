//! What each model request offers: the run's generation parameters as
//! `on_request` leaves them, and the tools (base and dynamic) with the
//! registry name each offered name routes to.

use super::*;

impl Driver {
    /// The run's generation parameters as `on_request` leaves them for
    /// this request.
    pub(in crate::runner) fn request_params(
        &self,
        final_answer: bool,
        tools: &[ToolSpec],
    ) -> GenerationParams {
        let mut params = self.config.generation.clone();
        if let Some(on_request) = &self.callbacks.on_request {
            let info = RequestInfo {
                number: self.requests,
                final_answer,
                messages: self.conversation.messages(),
                tools,
            };
            on_request(&info, &mut params);
        }
        if final_answer {
            // The loop will not run a call of this answer: a required or
            // named tool would make the provider insist on one.
            params.tool_choice = ToolChoice::None;
            params.parallel_tool_calls = None;
        }
        params
    }

    /// The base tools plus the dynamic ones, with decorated descriptions,
    /// and for each offered name the registry name its calls go to (a
    /// selection may name `name@version`; the model sees only `name`).
    pub(in crate::runner) fn offered_specs(
        &self,
        tools: &ToolSet,
    ) -> (Vec<ToolSpec>, BTreeMap<String, String>) {
        let mut routes = BTreeMap::new();
        let mut specs = Vec::new();
        let mut add = |key: &str, decorate: Option<&crate::runner::DynamicTools>| {
            let Some(tool) = tools.get(key) else {
                return;
            };
            let mut spec = tool.spec().clone();
            if routes.contains_key(&spec.name) {
                return;
            }
            routes.insert(spec.name.clone(), key.to_owned());
            if let Some(dynamic) = decorate {
                spec.description = dynamic.decorate(&spec.name, &spec.description);
            }
            specs.push(spec);
        };
        match &self.config.tools {
            ToolSelection::All => {
                for spec in tools.specs() {
                    add(&spec.name, None);
                }
            }
            ToolSelection::Named(names) => {
                for name in names {
                    add(name, None);
                }
            }
            ToolSelection::None => {}
        }
        if let Some(dynamic) = &self.config.dynamic_tools {
            for name in &dynamic.tool_ids {
                add(name, Some(dynamic));
            }
        }
        (specs, routes)
    }
}
