use std::time::Duration;

use super::super::{Completion, CompletionRef, CompletionRequest, PromptArg, PromptMessage};
use super::*;
use crate::tools::{Content, complete_fn};

fn mcp(server: &str) -> ToolOrigin {
    ToolOrigin::Mcp {
        server: server.into(),
    }
}

fn text(
    s: &'static str,
) -> impl Fn(ReadRequest) -> futures::future::Ready<Result<ResourceContents, OfferError>> {
    move |_| futures::future::ready(Ok(ResourceContents::Text(s.into())))
}

/// An upstream-like entry whose read answers `parts`.
fn upstream_resource(uri: &str, owner: &ToolOrigin, parts: Vec<ResourcePart>) -> ResourceEntry {
    let read = read_fn(move |_| futures::future::ready(Ok(parts.clone())));
    ResourceEntry::new(ResourceSpec::new(uri, "r"), owner.clone(), read)
}

#[tokio::test]
async fn native_resources_templates_and_prompts_are_served() {
    let offers = Offers::default();
    assert!(!offers.enabled());
    offers
        .add_resource(
            ResourceSpec::new("memo://a", "a").with_mime_type("text/plain"),
            text("A"),
        )
        .unwrap();
    offers
        .add_template(
            ResourceSpec::new("memo://notes/{day}", "note"),
            |request: ReadRequest| async move {
                Ok(ResourceContents::Blob(
                    request.vars["day"].clone().into_bytes(),
                ))
            },
            None,
        )
        .unwrap();
    assert!(offers.enabled());
    let parts = offers.read("memo://a").await.unwrap();
    assert_eq!(parts[0].contents, ResourceContents::Text("A".into()));
    assert_eq!(parts[0].mime_type.as_deref(), Some("text/plain"));
    let parts = offers.read("memo://notes/monday").await.unwrap();
    assert_eq!(parts[0].uri, "memo://notes/monday");
    assert_eq!(
        parts[0].contents,
        ResourceContents::Blob(b"monday".to_vec())
    );
    let unknown = offers.read("memo://b").await.unwrap_err();
    assert!(matches!(unknown, OfferError::UnknownResource { ref uri } if uri == "memo://b"));

    offers
        .add_prompt(
            PromptSpec::new("greet").with_argument(PromptArg::required("name")),
            |args| async move { Ok(vec![PromptMessage::user(format!("Hi {}", args["name"]))].into()) },
            Some(complete_fn(|request: CompletionRequest| async move {
                let all = ["ann", "bob", "anja"];
                Ok(Completion {
                    values: all
                        .iter()
                        .filter(|n| n.starts_with(&request.value))
                        .map(|n| (*n).to_owned())
                        .collect(),
                    ..Completion::default()
                })
            })),
        )
        .unwrap();
    let missing = offers
        .get_prompt("greet", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(missing, OfferError::MissingArgument { ref argument, .. } if argument == "name")
    );
    let args = BTreeMap::from([("name".to_owned(), "Ann".to_owned())]);
    let reply = offers.get_prompt("greet", args).await.unwrap();
    assert_eq!(
        reply.messages[0].content,
        Content::Text {
            text: "Hi Ann".into()
        }
    );
    let request = CompletionRequest {
        argument: "name".into(),
        value: "an".into(),
        ..CompletionRequest::default()
    };
    let completion = offers
        .complete(&CompletionRef::Prompt("greet".into()), request)
        .await
        .unwrap();
    assert_eq!(completion.values, ["ann", "anja"]);
    assert!(
        offers
            .add_prompt(
                PromptSpec::new("bad name"),
                |_| async { Ok(PromptReply::default()) },
                None
            )
            .is_err()
    );
}

#[tokio::test]
async fn budgets_refuse_hostile_sources_with_clear_errors() {
    let offers = Offers::default();
    offers.set_budget(OfferBudget {
        max_entries: 3,
        max_read_bytes: 10,
        max_completions: 2,
        timeout: Duration::from_millis(50),
        ..OfferBudget::default()
    });
    let up = mcp("up");
    let part = |uri: &str, n: usize| ResourcePart {
        uri: uri.into(),
        mime_type: None,
        contents: ResourceContents::Blob(vec![0; n]),
    };
    let many: Vec<_> = (0..5)
        .map(|i| upstream_resource(&format!("demo://r/{i}"), &up, vec![part("demo://r", 1)]))
        .collect();
    let mut resources = many;
    resources.push(upstream_resource("file:///etc/passwd", &up, vec![]));
    let errors = offers.replace_owned(&up, (resources, vec![], vec![]), None);
    assert!(
        errors
            .iter()
            .any(|e| e.to_string().contains("listing 6 resources")),
        "{errors:?}"
    );
    assert_eq!(offers.resources().len(), 3);

    let big = upstream_resource("demo://big", &up, vec![part("demo://big", 11)]);
    let empty = upstream_resource("demo://empty", &up, vec![]);
    let escape = upstream_resource("demo://esc", &up, vec![part("file:///etc/passwd", 1)]);
    let slow = ResourceEntry::new(
        ResourceSpec::new("demo://slow", "slow"),
        up.clone(),
        read_fn(|_| std::future::pending()),
    );
    let errors = offers.replace_owned(&up, (vec![big, empty, escape], vec![], vec![]), None);
    assert!(errors.is_empty(), "{errors:?}");
    let err = offers.read("demo://big").await.unwrap_err().to_string();
    assert!(
        err.contains("11 bytes") && err.contains("10 bytes"),
        "{err}"
    );
    let err = offers.read("demo://empty").await.unwrap_err().to_string();
    assert!(err.contains("no contents"), "{err}");
    let err = offers.read("demo://esc").await.unwrap_err().to_string();
    assert!(err.contains("file:"), "{err}");
    offers.replace_owned(&up, (vec![slow], vec![], vec![]), None);
    let err = offers.read("demo://slow").await.unwrap_err();
    assert!(matches!(err, OfferError::Timeout { .. }), "{err}");
    assert!(offers.read("demo://a/../../etc").await.is_err());

    // Completions are cut to the budget, and one that never ends times out.
    let template = TemplateEntry::new(
        ResourceSpec::new("demo://t/{x}", "t"),
        up.clone(),
        read_fn(|_| std::future::pending()),
        Some(complete_fn(|_| async {
            Ok(Completion {
                values: (0..500).map(|i| i.to_string()).collect(),
                ..Completion::default()
            })
        })),
    )
    .unwrap();
    let endless = TemplateEntry::new(
        ResourceSpec::new("demo://e/{x}", "e"),
        up.clone(),
        read_fn(|_| std::future::pending()),
        Some(complete_fn(|_| std::future::pending())),
    )
    .unwrap();
    offers.replace_owned(&up, (vec![], vec![template, endless], vec![]), None);
    let cut = offers
        .complete(
            &CompletionRef::Template("demo://t/{x}".into()),
            CompletionRequest::default(),
        )
        .await
        .unwrap();
    assert_eq!((cut.values.len(), cut.has_more), (2, true));
    let never = offers
        .complete(
            &CompletionRef::Template("demo://e/{x}".into()),
            CompletionRequest::default(),
        )
        .await;
    assert!(matches!(never, Err(OfferError::Timeout { .. })));
}

#[tokio::test]
async fn owners_rank_as_for_tools_and_changes_are_announced() {
    let offers = Offers::default();
    let mut resources = offers.resource_changes();
    let mut prompts = offers.prompt_changes();
    let up = mcp("up");
    let part = ResourcePart {
        uri: "demo://x".into(),
        mime_type: None,
        contents: ResourceContents::Text("upstream".into()),
    };
    let prompt = PromptEntry::new(
        PromptSpec::new("up_hello"),
        up.clone(),
        get_fn(|_| async { Ok(PromptReply::default()) }),
        None,
    );
    let errors = offers.replace_owned(
        &up,
        (
            vec![upstream_resource("demo://x", &up, vec![part])],
            vec![],
            vec![prompt],
        ),
        None,
    );
    assert!(errors.is_empty());
    assert!(resources.has_changed().unwrap() && prompts.has_changed().unwrap());
    resources.borrow_and_update();
    prompts.borrow_and_update();
    // The program's own resource takes the URI from the upstream's.
    offers
        .add_resource(ResourceSpec::new("demo://x", "mine"), text("native"))
        .unwrap();
    assert!(resources.has_changed().unwrap());
    assert!(!prompts.has_changed().unwrap());
    let parts = offers.read("demo://x").await.unwrap();
    assert_eq!(parts[0].contents, ResourceContents::Text("native".into()));
    // ... and the upstream cannot take it back.
    let part = ResourcePart {
        uri: "demo://x".into(),
        mime_type: None,
        contents: ResourceContents::Text("upstream".into()),
    };
    let errors = offers.replace_owned(
        &up,
        (
            vec![upstream_resource("demo://x", &up, vec![part])],
            vec![],
            vec![],
        ),
        None,
    );
    assert!(
        matches!(&errors[..], [OfferError::Taken { .. }]),
        "{errors:?}"
    );
    assert_eq!(
        offers.prompts().len(),
        0,
        "the upstream's new listing has no prompt"
    );
    // Updates reach a subscriber of the feed.
    let mut updates = offers.updates();
    offers.resource_updated("demo://x");
    assert_eq!(updates.recv().await.unwrap(), "demo://x");
    assert!(offers.remove("demo://x"));
}
