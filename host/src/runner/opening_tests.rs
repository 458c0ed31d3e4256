//! A prompt's messages and a resource's content as the loop's messages.

use std::collections::BTreeMap;

use super::*;
use crate::tools::{PromptArg, PromptSpec, ResourceSpec, ToolRegistry};

fn image(n: usize) -> Content {
    Content::Image {
        media_type: "image/png".into(),
        data: vec![7; n],
    }
}

fn said(role: PromptRole, content: Content) -> PromptMessage {
    PromptMessage { role, content }
}

#[test]
fn each_kind_of_prompt_message_becomes_the_message_a_model_can_take() {
    let reply = PromptReply::from(vec![
        PromptMessage::user("Look at this."),
        said(PromptRole::User, image(12)),
        said(
            PromptRole::User,
            Content::Resource {
                uri: "memo://today".into(),
                media_type: Some("text/plain".into()),
                contents: ResourceContents::Text("Buy milk.".into()),
            },
        ),
        said(
            PromptRole::User,
            Content::Resource {
                uri: "memo://photo".into(),
                media_type: Some("image/png".into()),
                contents: ResourceContents::Blob(vec![1, 2, 3]),
            },
        ),
        said(
            PromptRole::User,
            Content::Resource {
                uri: "memo://zip".into(),
                media_type: Some("application/zip".into()),
                contents: ResourceContents::Blob(vec![0; 40]),
            },
        ),
        said(
            PromptRole::Assistant,
            Content::Text {
                text: "I see.".into(),
            },
        ),
        said(PromptRole::Assistant, image(2_000)),
    ]);
    let messages = messages_of_prompt(&reply);
    assert_eq!(messages.len(), 7);
    assert_eq!(messages[0], Message::user("Look at this."));
    assert_eq!(messages[1], Message::user_with_parts("", vec![image(12)]));
    assert_eq!(
        messages[2],
        Message::user("Resource `memo://today` (text/plain):\nBuy milk.")
    );
    assert_eq!(
        messages[3],
        Message::user_with_parts(
            "Resource `memo://photo` (image/png):",
            vec![Content::Image {
                media_type: "image/png".into(),
                data: vec![1, 2, 3]
            }]
        )
    );
    assert_eq!(
        messages[4],
        Message::user(
            "[Resource `memo://zip`: application/zip of 40 bytes, not shown: a model cannot read it]"
        )
    );
    let Message::Assistant(said) = &messages[5] else {
        panic!("{:?}", messages[5]);
    };
    assert_eq!(said.content, "I see.");
    let Message::Assistant(said) = &messages[6] else {
        panic!("{:?}", messages[6]);
    };
    assert_eq!(
        said.content,
        "[image/png, 2 KB, not shown: the model's own turn takes text only]"
    );
}

#[test]
fn a_resource_s_text_and_images_make_one_message_and_other_bytes_are_refused() {
    let text = ResourcePart {
        uri: "memo://a".into(),
        mime_type: None,
        contents: ResourceContents::Text("alpha".into()),
    };
    let picture = ResourcePart {
        uri: "memo://a/pic".into(),
        mime_type: Some("image/jpeg".into()),
        contents: ResourceContents::Blob(vec![9; 4]),
    };
    let message = message_of_resource(&[text.clone(), picture]).unwrap();
    assert_eq!(
        message,
        Message::user_with_parts(
            "Resource `memo://a`:\nalpha\n\nResource `memo://a/pic` (image/jpeg):",
            vec![Content::Image {
                media_type: "image/jpeg".into(),
                data: vec![9; 4]
            }]
        )
    );
    let blob = ResourcePart {
        uri: "memo://a/bin".into(),
        mime_type: None,
        contents: ResourceContents::Blob(vec![0; 5]),
    };
    let error = message_of_resource(&[text, blob]).unwrap_err();
    assert_eq!(
        error,
        OpeningError::NotAttachable {
            uri: "memo://a/bin".into(),
            what: "binary data of 5 bytes".into()
        }
    );
    assert!(error.to_string().contains("--out FILE"), "{error}");
    let text_bytes = ResourcePart {
        uri: "memo://a/notes".into(),
        mime_type: Some("text/plain".into()),
        contents: ResourceContents::Blob(b"beta".to_vec()),
    };
    assert_eq!(
        message_of_resource(&[text_bytes]).unwrap(),
        Message::user("Resource `memo://a/notes` (text/plain):\nbeta"),
        "bytes of a text type that are UTF-8 go as text"
    );
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    let offers = registry.offers();
    offers
        .add_prompt(
            PromptSpec::new("greet")
                .with_argument(PromptArg::required("name"))
                .with_argument(PromptArg::optional("tone")),
            |args| async move {
                Ok(vec![PromptMessage::user(format!("Say hi to {}.", args["name"]))].into())
            },
            None,
        )
        .unwrap();
    offers
        .add_resource(
            ResourceSpec::new("memo://today", "today").with_mime_type("text/plain"),
            |_| async { Ok(ResourceContents::Text("Buy milk.".into())) },
        )
        .unwrap();
    registry
}

fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_prompt_opens_a_run_and_bad_names_and_arguments_say_what_to_do() {
    let registry = registry();
    let offers = registry.offers();
    let messages = prompt_messages(offers, "greet", args(&[("name", "Ada")]))
        .await
        .unwrap();
    assert_eq!(messages, vec![Message::user("Say hi to Ada.")]);

    let unknown = prompt_messages(offers, "gret", args(&[]))
        .await
        .unwrap_err();
    assert!(matches!(unknown, OpeningError::UnknownPrompt { .. }));
    assert_eq!(
        unknown.to_string(),
        "no prompt is named `gret`; the prompts are: greet (`toolhost prompt` lists them)"
    );

    let missing = prompt_messages(offers, "greet", args(&[("tone", "warm")]))
        .await
        .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "prompt `greet` needs argument `name`: give it as name=VALUE \
         (its arguments: name (required), tone)"
    );

    let typo = prompt_messages(offers, "greet", args(&[("name", "Ada"), ("nmae", "x")]))
        .await
        .unwrap_err();
    assert!(
        matches!(&typo, OpeningError::UnknownArgument { argument, .. } if argument == "nmae"),
        "{typo}"
    );
}

#[tokio::test]
async fn a_resource_is_attached_by_uri_and_an_unknown_uri_says_how_to_list_them() {
    let registry = registry();
    let offers = registry.offers();
    let message = attach_resource(offers, "memo://today").await.unwrap();
    assert_eq!(
        message,
        Message::user("Resource `memo://today` (text/plain):\nBuy milk.")
    );
    let error = attach_resource(offers, "memo://tomorrow")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OpeningError::UnknownResource { uri } if uri == "memo://tomorrow"),
        "{error}"
    );
    assert!(error.to_string().contains("toolhost resources"), "{error}");
}
