//! MCP Apps (the `io.modelcontextprotocol/ui` extension) from a plugin: a
//! tool's interactive view is one of the plugin's own resources, an HTML
//! page it returns when read. The manifest's `[ui]` table names, per tool,
//! the `ui://` resource to show (`chart_draw = "ui://chart/view.html"`);
//! the load checks it here, and `serve` lists the tool with the `_meta`
//! the extension specifies (`mcp::server`). Contract 0.2's records stay as
//! they are: the declaration is data beside the component, the same for
//! every guest language.
//!
//! Who owns a `ui://` URI: its authority is the plugin's own scheme (its
//! name, `_` as `-`, lower case), so `ui://chart/...` is the chart
//! plugin's and no other plugin may list it, declare it or serve it
//! ([`ui_uri_refused`], applied to every resource and template a plugin
//! lists, whatever its `resource_schemes` say).

use std::collections::BTreeMap;

use crate::sandbox::OfferLists;
use crate::text;
use crate::tools::ToolSpec;

/// The URI scheme of MCP Apps' UI resources.
pub const UI_SCHEME: &str = "ui";

/// The MIME type of an MCP App's HTML (`RESOURCE_MIME_TYPE` in
/// `@modelcontextprotocol/ext-apps`).
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// Whether `uri` is a `ui://` URI (its scheme compared without case).
pub(super) fn is_ui(uri: &str) -> bool {
    uri.split_once(':')
        .is_some_and(|(scheme, _)| scheme.eq_ignore_ascii_case(UI_SCHEME))
}

/// Why the plugin whose own scheme is `own` may not list (or declare) the
/// `ui://` URI `uri`, or `None` when it may: its authority must be `own`,
/// followed by a path.
pub(super) fn ui_uri_refused(uri: &str, own: &str) -> Option<String> {
    let rest = uri.split_once("://").map(|(_, rest)| rest);
    let authority = rest.map(|rest| rest.split_once('/').map_or(rest, |(a, _)| a));
    let path = rest.and_then(|rest| rest.split_once('/')).map(|(_, p)| p);
    if authority.is_some_and(|a| a.eq_ignore_ascii_case(own)) && path.is_some_and(|p| !p.is_empty())
    {
        return None;
    }
    Some(format!(
        "`{}` is not under this plugin's own authority: a UI resource's URI must start with \
         `ui://{own}/` (the plugin's name, `_` as `-`), followed by a path",
        text::untrusted(uri, 256)
    ))
}

/// Check the manifest's `[ui]` table against what the plugin has: each key
/// one of its `tools`, each URI a `ui://` resource under its own authority
/// (`own`) that it lists with the Apps MIME type. Answers the table as
/// loaded, or what to fix.
pub(super) fn check(
    declared: &BTreeMap<String, String>,
    own: &str,
    tools: &[ToolSpec],
    offers: Option<&OfferLists>,
) -> Result<BTreeMap<String, String>, String> {
    for (tool, uri) in declared {
        let shown = text::untrusted(tool, 64);
        if !tools.iter().any(|t| &t.name == tool) {
            return Err(format!(
                "[ui] names tool `{shown}`, which this plugin does not export; name one of its tools ({})",
                tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !is_ui(uri) {
            return Err(format!(
                "[ui] {shown} = `{}`: a UI resource's URI must have the `ui` scheme (`ui://{own}/...`)",
                text::untrusted(uri, 256)
            ));
        }
        if let Some(why) = ui_uri_refused(uri, own) {
            return Err(format!("[ui] {shown}: {why}"));
        }
        let listed = offers
            .into_iter()
            .flat_map(|lists| &lists.resources)
            .find(|spec| &spec.uri == uri);
        let Some(spec) = listed else {
            return Err(format!(
                "[ui] {shown} = `{}`: the plugin lists no such resource; list it among its \
                 resources (contract 0.3's `resources` interface) or fix the URI",
                text::untrusted(uri, 256)
            ));
        };
        if spec.mime_type.as_deref() != Some(APP_MIME_TYPE) {
            return Err(format!(
                "[ui] {shown} = `{}`: the resource's MIME type is {}; an MCP App's must be `{APP_MIME_TYPE}`",
                text::untrusted(uri, 256),
                spec.mime_type
                    .as_deref()
                    .map_or("not given".to_owned(), |m| format!(
                        "`{}`",
                        text::untrusted(m, 128)
                    ))
            ));
        }
    }
    Ok(declared.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ResourceSpec;

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "chart_draw".into(),
            description: "draws".into(),
            input_schema: serde_json::json!({"type": "object"}),
        }]
    }

    fn lists(uri: &str, mime: Option<&str>) -> OfferLists {
        let mut spec = ResourceSpec::new(uri, "view");
        spec.mime_type = mime.map(str::to_owned);
        OfferLists {
            resources: vec![spec],
            ..OfferLists::default()
        }
    }

    fn declared(tool: &str, uri: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(tool.to_owned(), uri.to_owned())])
    }

    const VIEW: &str = "ui://chart/view.html";

    #[test]
    fn a_listed_app_resource_of_its_own_is_accepted() {
        let offers = lists(VIEW, Some(APP_MIME_TYPE));
        let ui = declared("chart_draw", VIEW);
        assert_eq!(check(&ui, "chart", &tools(), Some(&offers)), Ok(ui));
    }

    #[test]
    fn a_ui_uri_the_plugin_does_not_list_is_refused() {
        let offers = lists("ui://chart/other.html", Some(APP_MIME_TYPE));
        for offers in [Some(&offers), None] {
            let e = check(&declared("chart_draw", VIEW), "chart", &tools(), offers).unwrap_err();
            assert!(e.contains("lists no such resource"), "{e}");
            assert!(e.contains(VIEW), "{e}");
        }
    }

    #[test]
    fn another_plugins_authority_is_refused() {
        let uri = "ui://weather/view.html";
        let offers = lists(uri, Some(APP_MIME_TYPE));
        let e = check(
            &declared("chart_draw", uri),
            "chart",
            &tools(),
            Some(&offers),
        )
        .unwrap_err();
        assert!(e.contains("must start with `ui://chart/`"), "{e}");
        // The same rule for what it lists, and no path is no resource.
        assert!(ui_uri_refused(uri, "chart").is_some());
        assert!(ui_uri_refused("ui://chart", "chart").is_some());
        assert!(ui_uri_refused("ui://chart/", "chart").is_some());
        assert!(ui_uri_refused("ui://chart.evil/x", "chart").is_some());
        assert_eq!(ui_uri_refused("UI://Chart/x.html", "chart"), None);
    }

    #[test]
    fn a_uri_of_another_scheme_is_refused() {
        let uri = "chart://view.html";
        let offers = lists(uri, Some(APP_MIME_TYPE));
        let e = check(
            &declared("chart_draw", uri),
            "chart",
            &tools(),
            Some(&offers),
        )
        .unwrap_err();
        assert!(e.contains("must have the `ui` scheme"), "{e}");
    }

    #[test]
    fn an_unknown_tool_or_another_mime_type_is_refused() {
        let offers = lists(VIEW, Some(APP_MIME_TYPE));
        let e = check(&declared("chart", VIEW), "chart", &tools(), Some(&offers)).unwrap_err();
        assert!(
            e.contains("does not export") && e.contains("chart_draw"),
            "{e}"
        );
        let offers = lists(VIEW, Some("text/html"));
        let e = check(
            &declared("chart_draw", VIEW),
            "chart",
            &tools(),
            Some(&offers),
        )
        .unwrap_err();
        assert!(
            e.contains("`text/html`") && e.contains(APP_MIME_TYPE),
            "{e}"
        );
    }
}
