//! The chart's interactive view, an MCP App (`io.modelcontextprotocol/ui`):
//! one resource, `ui://chart/view.html`, a self-contained HTML page (no
//! external URLs) that draws a `chart_draw` call's data as SVG and lets a
//! person hover values and hide series. The manifest's `[ui]` makes it the
//! tool's view; the host serves the page exactly as read here.

use toolhost_guest::offers::{
    Arguments, OfferError, Offers, Resource, ResourceContents, ResourcePart,
};

/// The view's URI: `ui://` under the plugin's own name.
pub const VIEW_URI: &str = "ui://chart/view.html";

/// The MIME type of an MCP App's HTML.
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The page.
pub const VIEW_HTML: &str = include_str!("view.html");

/// What the plugin offers besides its tool: the view.
#[derive(Debug)]
pub struct View;

impl Offers for View {
    fn resources() -> Vec<Resource> {
        vec![
            Resource::new(VIEW_URI, "chart view")
                .description("An interactive view of a chart_draw call's data (MCP Apps).")
                .mime_type(APP_MIME_TYPE),
        ]
    }

    fn read(uri: &str, _vars: &Arguments) -> Result<Vec<ResourcePart>, OfferError> {
        if uri != VIEW_URI {
            return Err(OfferError::not_found(uri));
        }
        Ok(vec![ResourcePart {
            uri: VIEW_URI.to_owned(),
            mime_type: Some(APP_MIME_TYPE.to_owned()),
            contents: ResourceContents::Text(VIEW_HTML.to_owned()),
        }])
    }
}
