//! What every `toolhost new` scaffold offers besides its tool (contract
//! 0.3), loaded through the library from the project's `dist/`:
//! - a resource `S://about` (Markdown, naming the plugin);
//! - a template `S://greeting/{name}`, read as the manifest's greeting;
//! - a prompt `NAME_welcome` with a required `name`, one user message;
//! - completions of that `name` from Ada, Alan and Grace, by prefix;
//!
//! where NAME is the project's name and S that name with `_` as `-`, the
//! URI scheme the host attributes to the plugin.

use std::collections::BTreeMap;
use std::path::Path;

use toolhost::config::HostConfig;
use toolhost::plugin::PluginHost;
use toolhost::tools::{CompletionRef, CompletionRequest, Content, ResourceContents};
use toolhost_tests::mcp::test_cache_dir;

/// Check the samples above in the plugin built into `dist`; `greeting` is
/// the manifest's greeting as the build left it.
pub(super) fn samples_work(name: &str, dist: &Path, greeting: &str) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(check(name, dist, greeting));
}

async fn check(name: &str, dist: &Path, greeting: &str) {
    let host = PluginHost::new(HostConfig::default().cache_dir(test_cache_dir()))
        .expect("the sandbox starts");
    let report = host.load_dir(dist).await.expect("the directory lists");
    let errors: Vec<String> = report.errors.iter().map(|e| format!("{e:#}")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let registry = report.registry().expect("the tools register");
    let offers = registry.offers();
    let scheme = name.replace('_', "-");

    let about = format!("{scheme}://about");
    let resources = offers.resources();
    let listed = resources.iter().find(|e| e.spec.uri == about);
    let listed = listed.unwrap_or_else(|| panic!("no {about} in {resources:?}"));
    assert_eq!(listed.spec.mime_type.as_deref(), Some("text/markdown"));
    let parts = offers.read(&about).await.expect("the about resource reads");
    assert!(text_of(&parts).contains(name), "{parts:?}");

    let template = format!("{scheme}://greeting/{{name}}");
    let templates = offers.templates();
    assert!(
        templates.iter().any(|e| e.spec.uri == template),
        "no {template} in {templates:?}"
    );
    let parts = offers
        .read(&format!("{scheme}://greeting/Ada"))
        .await
        .expect("the template reads");
    assert_eq!(text_of(&parts), format!("{greeting}, Ada!"), "{parts:?}");

    let prompt = format!("{name}_welcome");
    let args = BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
    let reply = offers
        .get_prompt(&prompt, args)
        .await
        .expect("the prompt renders");
    assert_eq!(reply.messages.len(), 1, "{reply:?}");
    match &reply.messages[0].content {
        Content::Text { text } => assert!(text.contains("Ada"), "{text}"),
        other => panic!("a text message, not {other:?}"),
    }
    let missing = offers.get_prompt(&prompt, BTreeMap::new()).await;
    assert!(missing.is_err(), "a prompt without its required `name`");

    let reference = CompletionRef::Prompt(prompt);
    let complete = |value: &str| CompletionRequest {
        argument: "name".to_owned(),
        value: value.to_owned(),
        context: BTreeMap::new(),
    };
    let values = offers
        .complete(&reference, complete("A"))
        .await
        .expect("completes")
        .values;
    assert_eq!(values, ["Ada", "Alan"]);
    let values = offers
        .complete(&reference, complete("G"))
        .await
        .expect("completes")
        .values;
    assert_eq!(values, ["Grace"]);
}

/// The text of a read's parts, joined.
fn text_of(parts: &[toolhost::tools::ResourcePart]) -> String {
    parts
        .iter()
        .map(|p| match &p.contents {
            ResourceContents::Text(t) => t.as_str(),
            ResourceContents::Blob(_) => "",
        })
        .collect()
}
