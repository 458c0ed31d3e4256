//! Tool call ids as each wire format accepts them.
//!
//! The neutral history keeps every id as it was made (by any provider, or
//! by a transcript written elsewhere). Providers are stricter than each
//! other: Anthropic answers 400 to an id outside `^[a-zA-Z0-9_-]+$`,
//! OpenAI to one longer than 40 characters. So each request maps the ids of
//! its messages into its format's [`IdRules`], once for the whole request
//! ([`WireIds`]), and a call and its result get the same wire id.
//!
//! The mapping is deterministic (the same history gives the same wire ids,
//! request after request) and injective within a request: an id the format
//! accepts stays as it is, and any other becomes its acceptable characters,
//! cut, with a hash of the original id after them; should that collide with
//! another id of the request, the hash is salted until it does not.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use super::Message;

/// What a wire format accepts as a tool call id: 1 to `max_len`
/// characters of `a-z A-Z 0-9 _ -`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdRules {
    /// The longest id accepted, in bytes.
    pub(crate) max_len: usize,
}

impl IdRules {
    /// Anthropic Messages: `^[a-zA-Z0-9_-]+$`, at most 64 characters.
    pub(crate) const ANTHROPIC: Self = Self { max_len: 64 };
    /// OpenAI Chat Completions: at most 40 characters. The API takes other
    /// characters, but servers that speak its format do not all do so.
    pub(crate) const OPENAI: Self = Self { max_len: 40 };
    /// Gemini function call ids: no documented alphabet; kept to the
    /// function-name alphabet and length.
    pub(crate) const GEMINI: Self = Self { max_len: 64 };

    fn accepts(self, id: &str) -> bool {
        !id.is_empty() && id.len() <= self.max_len && id.bytes().all(is_id_byte)
    }
}

fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// Hex digits of the hash put after a changed id.
const HASH_HEX: usize = 10;

/// The wire ids of one request's messages.
#[derive(Debug)]
pub(crate) struct WireIds<'a> {
    changed: BTreeMap<&'a str, String>,
}

impl<'a> WireIds<'a> {
    /// The mapping for `messages` (every call id and result id in them).
    pub(crate) fn new(messages: &'a [Message], rules: IdRules) -> Self {
        let mut all: Vec<&'a str> = Vec::new();
        for message in messages {
            match message {
                Message::Assistant(a) => all.extend(a.tool_calls.iter().map(|c| c.id.as_str())),
                Message::Tool(r) => all.push(r.tool_call_id.as_str()),
                Message::System { .. } | Message::User { .. } => {}
            }
        }
        // Ids the format accepts keep themselves; the others must avoid
        // them and each other.
        let mut taken: BTreeSet<String> = all
            .iter()
            .filter(|id| rules.accepts(id))
            .map(|id| (*id).to_owned())
            .collect();
        let mut changed = BTreeMap::new();
        for id in all {
            if rules.accepts(id) || changed.contains_key(id) {
                continue;
            }
            let mut salt = 0u32;
            let wire = loop {
                let candidate = candidate(id, rules, salt);
                if taken.insert(candidate.clone()) {
                    break candidate;
                }
                salt += 1;
            };
            changed.insert(id, wire);
        }
        Self { changed }
    }

    /// The wire id of `id` (one of the request's ids).
    pub(crate) fn get(&self, id: &'a str) -> Cow<'a, str> {
        match self.changed.get(id) {
            Some(wire) => Cow::Owned(wire.clone()),
            None => Cow::Borrowed(id),
        }
    }
}

/// `id`'s acceptable characters (others made `_`), cut to leave room, then
/// `_` and a hash of `id` (and `salt`, when not 0).
fn candidate(id: &str, rules: IdRules, salt: u32) -> String {
    let mut hasher = Sha256::new();
    hasher.update(id.as_bytes());
    if salt > 0 {
        hasher.update(salt.to_le_bytes());
    }
    let hash = hex::encode(hasher.finalize());
    let room = rules.max_len.saturating_sub(HASH_HEX + 1);
    let mut wire: String = id
        .bytes()
        .map(|b| if is_id_byte(b) { b as char } else { '_' })
        .take(room)
        .collect();
    if wire.is_empty() {
        wire.push_str("id");
        wire.truncate(room);
    }
    wire.push('_');
    wire.push_str(&hash[..HASH_HEX]);
    wire
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::fixtures::call;
    use crate::llm::{AssistantMessage, ToolResult};

    fn history(ids: &[&str]) -> Vec<Message> {
        let mut messages = vec![Message::Assistant(AssistantMessage {
            tool_calls: ids.iter().map(|id| call(id)).collect(),
            ..Default::default()
        })];
        messages.extend(ids.iter().map(|id| {
            Message::Tool(ToolResult {
                tool_call_id: (*id).to_owned(),
                name: "t".into(),
                content: "ok".into(),
                is_error: false,
                parts: Vec::new(),
            })
        }));
        messages
    }

    #[test]
    fn accepted_ids_stay_and_others_become_acceptable_and_distinct() {
        let ids = [
            "toolu_01AbC",
            "call:1/a",
            "call_1_a",
            "call:1_a",
            "toolu_01.x",
            "",
            "é",
            &"x".repeat(80),
        ];
        let messages = history(&ids);
        for rules in [IdRules::ANTHROPIC, IdRules::OPENAI, IdRules::GEMINI] {
            let map = WireIds::new(&messages, rules);
            let wire: Vec<Cow<'_, str>> = ids.iter().map(|id| map.get(id)).collect();
            assert_eq!(wire[0], "toolu_01AbC");
            assert_eq!(wire[2], "call_1_a");
            for (id, w) in ids.iter().zip(&wire) {
                assert!(rules.accepts(w), "{id:?} -> {w:?} under {rules:?}");
            }
            let distinct: BTreeSet<&str> = wire.iter().map(|w| w.as_ref()).collect();
            assert_eq!(distinct.len(), ids.len(), "{wire:?}");
            assert!(wire[1].starts_with("call_1_a_"), "{}", wire[1]);
            // The same history, the same ids.
            let again = WireIds::new(&messages, rules);
            assert!(ids.iter().all(|id| again.get(id) == map.get(id)));
        }
    }

    #[test]
    fn a_collision_with_a_hash_salts_it() {
        let first = candidate("a.b", IdRules::ANTHROPIC, 0);
        let messages = history(&[&first, "a.b"]);
        let map = WireIds::new(&messages, IdRules::ANTHROPIC);
        assert_eq!(map.get(&first), first.as_str());
        assert_ne!(map.get("a.b"), first.as_str());
        assert!(IdRules::ANTHROPIC.accepts(&map.get("a.b")));
    }
}
