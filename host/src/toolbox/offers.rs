//! The program's own resources, templates and prompts, added through the
//! builder (or later, at any time, through
//! [`ToolRegistry::offers`](crate::tools::ToolRegistry::offers)).

use crate::tools::{OfferError, Offers, ToolRegistry};

use super::ToolboxBuilder;

/// One addition, run on the registry's offers once it is built.
pub(super) type Add = Box<dyn FnOnce(&Offers) -> Result<(), OfferError> + Send>;

impl ToolboxBuilder {
    /// Add the program's own resources, resource templates and prompts:
    /// `add` is given the registry's [`Offers`] when the toolbox is built,
    /// before any `[[mcp]]` server's are attached (the program's own
    /// entries take their URIs and names first). An error is logged and
    /// leaves out what `add` had not added yet.
    ///
    /// ```
    /// use toolhost::config::HostConfig;
    /// use toolhost::toolbox::Toolbox;
    /// use toolhost::tools::{ResourceContents, ResourceSpec};
    ///
    /// let builder = Toolbox::builder(HostConfig::default()).offers(|offers| {
    ///     offers.add_resource(ResourceSpec::new("memo://today", "today"), |_| async {
    ///         Ok(ResourceContents::Text("Buy milk.".into()))
    ///     })
    /// });
    /// ```
    pub fn offers(
        mut self,
        add: impl FnOnce(&Offers) -> Result<(), OfferError> + Send + 'static,
    ) -> Self {
        self.offers.push(Box::new(add));
        self
    }
}

/// Run the builder's additions on `registry`.
pub(super) fn add(registry: &ToolRegistry, adds: Vec<Add>) {
    for add in adds {
        if let Err(e) = add(registry.offers()) {
            tracing::warn!(
                "a resource or prompt of the program's was not added: {}",
                crate::text::escape_controls(&e.to_string())
            );
        }
    }
}
