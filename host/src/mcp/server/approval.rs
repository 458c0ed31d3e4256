//! Approval over MCP: a call of a tool that needs approval (the server's
//! [`ApprovalPolicy`], or the tool's own `needs_approval`) asks the
//! client's user through elicitation, and runs only on accept.
//!
//! - 2025-11-25 (sessions): the server sends `elicitation/create` and
//!   waits for the answer.
//! - 2026-07-28 (sessionless): the call is answered with an
//!   `input_required` result whose input request is the elicitation; the
//!   client asks its user and calls again with the answer in
//!   `inputResponses` under [`APPROVAL_INPUT_KEY`].
//!
//! Decline and cancel answer `isError` naming the policy. A client that did
//! not declare the elicitation capability (form mode) is never asked, and
//! its call never runs silently: it is refused with a message saying why.

use std::collections::BTreeMap;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientResult, ContentBlock, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationSchema, InputRequest, InputRequiredResult,
    InputResponses, JsonObject, ProtocolVersion, Request, ServerRequest,
};
use rmcp::service::RequestContext;

use crate::text::{clip, escape_controls};

/// The key of the approval's elicitation among a call's input requests
/// (2026-07-28), and of its answer among the retried call's input
/// responses.
pub const APPROVAL_INPUT_KEY: &str = "toolhost.dev/approval";

/// How much of the arguments the user is shown.
const SHOWN_ARGUMENT_BYTES: usize = 1000;

/// What the gate decided about a call.
pub(super) enum Gate {
    /// Run it; 2026-07-28: with the client's accept, for a later round of
    /// the call to carry on in its `requestState` (a call that asks
    /// questions takes several).
    Run(Option<serde_json::Value>),
    /// Answer with this instead of running it.
    Answer(CallToolResponse),
}

/// What identifies a call for its approval and its questions' answers: a
/// SHA-256 of who asked (`by`: the principal's
/// [`owner_key`](super::auth::Principal::owner_key), when the server
/// verifies tokens), the tool's name and its arguments (object keys sorted, so
/// that a client that orders them differently in a later round is not
/// asked again). A 2026-07-28 server keeps nothing between rounds, so the
/// call a user was shown travels in `requestState`, and a round whose
/// arguments differ from it is asked again: an accept or an answer is never
/// taken for arguments the user did not see, nor for another principal: a
/// `requestState` one principal was given is no approval for another, who
/// is asked again.
pub(super) fn digest(by: Option<&str>, tool: &str, arguments: &JsonObject) -> String {
    use sha2::{Digest as _, Sha256};
    let mut text = String::new();
    for (key, value) in [
        ("by", by.into()),
        ("tool", tool.into()),
        ("arguments", serde_json::Value::Object(arguments.clone())),
    ] {
        text.push_str(key);
        text.push(':');
        crate::json::write_canonical(&value, &mut text);
        text.push('\n');
    }
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// Ask the client's user whether the call of `tool` with `arguments` may
/// run; 2026-07-28: unless the user answered already, in this round's
/// `inputResponses` or an earlier round's (carried on in `requestState`).
pub(super) async fn ask(
    context: &RequestContext<RoleServer>,
    input_responses: Option<&InputResponses>,
    request_state: Option<&str>,
    tool: &str,
    arguments: &JsonObject,
    call: &str,
) -> Gate {
    let form = context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        // A capability that names neither mode is form mode (2025-06-18).
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    if !form {
        return refuse(format!(
            "permission_denied: tool `{tool}` needs approval (this server's approval policy) and \
             this MCP client did not declare the elicitation capability (form mode), so its user \
             cannot be asked; the call was not run. Use a client that supports elicitation, or \
             ask the server's operator whether `{tool}` must need approval"
        ));
    }
    let params = elicitation(tool, arguments);
    let modern = context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    if modern {
        answered(input_responses, request_state, tool, call, params)
    } else {
        asked(context, tool, params).await
    }
}

/// The elicitation that asks the user about the call of `tool` with
/// `arguments` (clipped to [`SHOWN_ARGUMENT_BYTES`]).
fn elicitation(tool: &str, arguments: &JsonObject) -> ElicitRequestParams {
    let arguments = serde_json::Value::Object(arguments.clone()).to_string();
    let shown = clip(&arguments, SHOWN_ARGUMENT_BYTES);
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "The model wants to call the tool `{}` with the arguments {}{}. Allow this call?",
            escape_controls(tool),
            escape_controls(&shown),
            if shown.len() < arguments.len() {
                " (clipped)"
            } else {
                ""
            }
        ),
        requested_schema: ElicitationSchema::new(BTreeMap::new()),
    }
}

/// 2026-07-28: what the user's answer about `call` decides, from this
/// round's `inputResponses` or an earlier round's accept (an accept runs
/// the call with the answer as given, for later rounds to carry on); with
/// no answer yet, an `input_required` result asking with `params`.
fn answered(
    input_responses: Option<&InputResponses>,
    request_state: Option<&str>,
    tool: &str,
    call: &str,
    params: ElicitRequestParams,
) -> Gate {
    let state = super::question::RequestState::parse(request_state).unwrap_or_default();
    // An answer counts only for the call the user was shown: this
    // round's (the state names it), or an earlier round's accept of it.
    let answer = if state.call.as_deref() == Some(call) {
        input_responses
            .and_then(|r| r.get(APPROVAL_INPUT_KEY))
            .cloned()
            .or(state.approval)
    } else {
        None
    };
    let Some(answer) = answer else {
        // The first round, or arguments other than those asked about:
        // ask, and have the next round say which call was asked about.
        let requests = BTreeMap::from([(
            APPROVAL_INPUT_KEY.to_owned(),
            InputRequest::Elicitation(Request::new(params)),
        )]);
        let mut result = InputRequiredResult::from_input_requests(requests);
        let mut state = super::question::RequestState {
            call: Some(call.to_owned()),
            ..Default::default()
        };
        result.request_state = Some(state.encode());
        return Gate::Answer(result.into());
    };
    match serde_json::from_value::<ElicitResult>(answer.clone()) {
        Ok(result) => decided(result.action, Some(answer), tool),
        Err(e) => refuse(format!(
            "permission_denied: the answer to the approval of `{tool}` \
             (`inputResponses` key `{APPROVAL_INPUT_KEY}`) is not an elicitation result \
             ({e}); the call was not run"
        )),
    }
}

/// 2025-11-25: send the client `elicitation/create` with `params`, wait
/// for the user's answer and say what it decides; a refusal when the call
/// is cancelled meanwhile or the client cannot answer.
async fn asked(
    context: &RequestContext<RoleServer>,
    tool: &str,
    params: ElicitRequestParams,
) -> Gate {
    let asked = context
        .peer
        .send_request(ServerRequest::ElicitRequest(Request::new(params)));
    let answer = tokio::select! {
        answer = asked => answer,
        () = context.ct.cancelled() => {
            return refuse(format!("permission_denied: the call of `{tool}` was cancelled while its approval was asked"));
        }
    };
    match answer {
        Ok(ClientResult::ElicitResult(result)) => decided(result.action, None, tool),
        Ok(_) => refuse(format!(
            "permission_denied: the client answered the approval of `{tool}` with \
             something other than an elicitation result; the call was not run"
        )),
        Err(e) => refuse(format!(
            "permission_denied: the client could not ask its user to approve `{tool}` \
             ({e}); the call was not run"
        )),
    }
}

/// What the user's `action` decides about the call of `tool`: run it
/// (with the answer `given`, 2026-07-28) on accept, else a refusal saying
/// which.
fn decided(action: ElicitationAction, given: Option<serde_json::Value>, tool: &str) -> Gate {
    match action {
        ElicitationAction::Accept => Gate::Run(given),
        ElicitationAction::Decline => refuse(format!(
            "permission_denied: the MCP client's user declined this call of `{tool}`, which \
             needs approval under this server's approval policy; do not call it again unless \
             the user asks"
        )),
        // Cancel, and any answer a later revision adds: not an accept.
        _ => refuse(format!(
            "permission_denied: the MCP client's user cancelled the approval of this call of \
             `{tool}`, which needs approval under this server's approval policy; it was not run"
        )),
    }
}

/// A refusal: the call is answered `isError` with `message`, not run.
fn refuse(message: String) -> Gate {
    Gate::Answer(CallToolResult::error(vec![ContentBlock::text(message)]).into())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: serde_json::Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn an_approval_is_for_one_tool_and_its_arguments_in_any_key_order() {
        let call = digest(
            None,
            "pay",
            &object(json!({"to": "ada", "amount": {"eur": 5, "cents": 0}})),
        );
        let reordered = digest(
            None,
            "pay",
            &object(json!({"amount": {"cents": 0, "eur": 5}, "to": "ada"})),
        );
        assert_eq!(call, reordered);
        for other in [
            digest(
                None,
                "pay",
                &object(json!({"to": "eve", "amount": {"eur": 5, "cents": 0}})),
            ),
            digest(
                None,
                "pay",
                &object(json!({"to": "ada", "amount": {"eur": 500, "cents": 0}})),
            ),
            digest(None, "pay", &object(json!({"to": "ada"}))),
            digest(
                None,
                "refund",
                &object(json!({"to": "ada", "amount": {"eur": 5, "cents": 0}})),
            ),
        ] {
            assert_ne!(call, other);
        }
        // Another principal's call, or one made without a principal, is
        // another call.
        let arguments = object(json!({"to": "ada", "amount": {"eur": 5, "cents": 0}}));
        let alice = digest(Some("5:alicec1"), "pay", &arguments);
        assert_ne!(alice, digest(Some("3:bobc1"), "pay", &arguments));
        assert_ne!(alice, call);
        assert_eq!(alice, digest(Some("5:alicec1"), "pay", &arguments));
        // A key or value that spells another's structure is still another call.
        assert_ne!(
            digest(None, "t", &object(json!({"a": "1,\"b\":2"}))),
            digest(None, "t", &object(json!({"a": "1", "b": 2})))
        );
    }
}
