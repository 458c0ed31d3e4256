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
    /// Under [`ToolSearch`](crate::runner::ToolSearch), the base tools it
    /// defers are held back but for those the conversation's searches
    /// found, and the search tool comes first.
    pub(in crate::runner) fn offered_specs(
        &self,
        tools: &ToolSet,
    ) -> (Vec<ToolSpec>, BTreeMap<String, String>) {
        let mut routes = BTreeMap::new();
        let mut specs = Vec::new();
        // The provider's own search takes every tool (`deferred` marks
        // those held back).
        let search = (!self.provider_search())
            .then_some(self.config.tool_search.as_ref())
            .flatten();
        let held_back = self.held_back(tools);
        if let Some(search) = search.filter(|_| !held_back.is_empty()) {
            // First: it takes the place of a tool of its name.
            routes.insert(
                search.tool_name.clone(),
                crate::runner::search::ROUTE.to_owned(),
            );
            specs.push(crate::runner::search::spec(search, held_back.len()));
        }
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
        for key in self.base_keys(tools) {
            if !search.is_some_and(|s| s.defers(&key)) {
                add(&key, None);
            }
        }
        if let Some(dynamic) = &self.config.dynamic_tools {
            for name in &dynamic.tool_ids {
                add(name, Some(dynamic));
            }
        }
        if let Some(search) = search {
            for name in crate::runner::search::found(search, self.conversation.messages()) {
                if let Some((key, _)) = held_back.iter().find(|(_, spec)| spec.name == name) {
                    add(key, None);
                }
            }
        }
        (specs, routes)
    }

    /// Whether the run's [`ToolSearch`](crate::runner::ToolSearch) is the
    /// provider's own.
    pub(in crate::runner) fn provider_search(&self) -> bool {
        self.config
            .tool_search
            .as_ref()
            .is_some_and(|s| s.provider_search)
            && self.provider.native_tool_search()
    }

    /// The names of the offered tools the provider's own search holds
    /// back ([`ChatRequest::deferred`](crate::llm::ChatRequest)): none
    /// unless [`provider_search`](Self::provider_search).
    pub(in crate::runner) fn deferred(&self, tools: &ToolSet) -> Vec<String> {
        if !self.provider_search() {
            return Vec::new();
        }
        self.held_back(tools)
            .into_iter()
            .map(|(_, spec)| spec.name.clone())
            .collect()
    }

    /// The registry names of the base tools ([`ToolSelection`]).
    fn base_keys(&self, tools: &ToolSet) -> Vec<String> {
        match &self.config.tools {
            ToolSelection::All => tools.specs().map(|s| s.name.clone()).collect(),
            ToolSelection::Named(names) => names.clone(),
            ToolSelection::None => Vec::new(),
        }
    }

    /// The base tools [`ToolSearch`](crate::runner::ToolSearch) holds back
    /// (none without it), by registry name, with their specs.
    pub(in crate::runner) fn held_back<'t>(
        &self,
        tools: &'t ToolSet,
    ) -> Vec<(String, &'t ToolSpec)> {
        let Some(search) = &self.config.tool_search else {
            return Vec::new();
        };
        self.base_keys(tools)
            .into_iter()
            .filter(|key| search.defers(key))
            .filter_map(|key| {
                let spec = tools.get(&key)?.spec();
                Some((key, spec))
            })
            .collect()
    }
}
