//! toolhost plugin `scratchpad`: a counter and named notes that persist for
//! the length of one session.
//!
//! The manifest says `stateful = true`, so the host gives each session (one
//! conversation) its own instance and reuses it for every call in that
//! session. The statics below therefore live exactly as long as the session:
//! a second conversation starts from zero and never sees the first one's
//! notes. Without `stateful = true` every call would start from zero.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{NoInput, ToolError};

/// Most notes one session may keep.
pub const MAX_NOTES: usize = 100;
/// Longest note value, in bytes.
pub const MAX_NOTE_BYTES: usize = 4096;

// A plugin instance is single-threaded; the Mutex only makes the statics
// `Sync`, it is never contended.
static COUNTER: Mutex<i64> = Mutex::new(0);
static NOTES: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic traps the whole instance, so a poisoned lock is never observed
    // by a later call; recover rather than panic again.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Input of `scratchpad_increment`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IncrementInput {
    /// How much to add (may be negative). Default: 1.
    #[serde(default = "one")]
    pub by: i64,
}

fn one() -> i64 {
    1
}

/// The counter after a change.
#[derive(Debug, Serialize)]
pub struct Counter {
    /// The counter's value in this session.
    pub value: i64,
}

/// Input of `scratchpad_put`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutInput {
    /// The note's name.
    pub key: String,
    /// The note's text (at most 4096 bytes).
    pub value: String,
}

/// Input of `scratchpad_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetInput {
    /// The note's name.
    pub key: String,
}

/// One note, or its absence.
#[derive(Debug, Serialize)]
pub struct Note {
    /// The note's name.
    pub key: String,
    /// Its text, or `null` when there is no note of that name.
    pub value: Option<String>,
}

/// All notes of the session.
#[derive(Debug, Serialize)]
pub struct Notes {
    /// Name to text, sorted by name.
    pub notes: BTreeMap<String, String>,
}

/// Adds `by` to the session's counter.
///
/// # Errors
///
/// `invalid_input` when the counter would overflow.
pub fn increment(input: IncrementInput) -> Result<Counter, ToolError> {
    let mut counter = lock(&COUNTER);
    *counter = counter.checked_add(input.by).ok_or_else(|| {
        ToolError::invalid_input(format!("adding {} would overflow the counter", input.by))
    })?;
    Ok(Counter { value: *counter })
}

/// Stores a note, replacing any note of the same name.
///
/// # Errors
///
/// `invalid_input` for an empty key, a value over [`MAX_NOTE_BYTES`], or a
/// new key when [`MAX_NOTES`] notes exist.
pub fn put(input: PutInput) -> Result<Note, ToolError> {
    if input.key.is_empty() {
        return Err(ToolError::invalid_input("`key` must not be empty"));
    }
    if input.value.len() > MAX_NOTE_BYTES {
        return Err(ToolError::invalid_input(format!(
            "the note is {} bytes; the limit is {MAX_NOTE_BYTES}",
            input.value.len()
        )));
    }
    let mut notes = lock(&NOTES);
    if notes.len() >= MAX_NOTES && !notes.contains_key(&input.key) {
        return Err(ToolError::invalid_input(format!(
            "the scratchpad holds {MAX_NOTES} notes already; overwrite one instead"
        )));
    }
    notes.insert(input.key.clone(), input.value.clone());
    Ok(Note {
        key: input.key,
        value: Some(input.value),
    })
}

/// Reads a note.
///
/// # Errors
///
/// None: a missing note is `value: null`.
pub fn get(input: GetInput) -> Result<Note, ToolError> {
    let value = lock(&NOTES).get(&input.key).cloned();
    Ok(Note {
        key: input.key,
        value,
    })
}

/// Lists every note of the session.
///
/// # Errors
///
/// None.
pub fn list(_: NoInput) -> Result<Notes, ToolError> {
    Ok(Notes {
        notes: lock(&NOTES).clone(),
    })
}

toolhost_guest::export_tools! {
    scratchpad_increment: "Add to this conversation's counter (default +1) and return its new value." => increment,
    scratchpad_put: "Save a named note for the rest of this conversation." => put,
    scratchpad_get: "Read a named note saved earlier in this conversation (null if none)." => get,
    scratchpad_list: "List every note saved in this conversation." => list,
}

#[cfg(test)]
mod tests {
    use super::*;

    // The statics are shared by the tests of this binary, so one test covers
    // the whole life of a "session".
    #[test]
    fn state_persists_across_calls_of_one_instance() {
        assert_eq!(increment(IncrementInput { by: 1 }).unwrap().value, 1);
        assert_eq!(increment(IncrementInput { by: 41 }).unwrap().value, 42);
        assert!(increment(IncrementInput { by: i64::MAX }).is_err());

        put(PutInput {
            key: "a".into(),
            value: "1".into(),
        })
        .unwrap();
        assert_eq!(
            get(GetInput { key: "a".into() }).unwrap().value.as_deref(),
            Some("1")
        );
        assert_eq!(get(GetInput { key: "b".into() }).unwrap().value, None);
        assert_eq!(list(NoInput {}).unwrap().notes.len(), 1);

        let big = PutInput {
            key: "big".into(),
            value: "x".repeat(MAX_NOTE_BYTES + 1),
        };
        assert!(put(big).is_err());
        for i in 0..MAX_NOTES - 1 {
            put(PutInput {
                key: format!("k{i}"),
                value: String::new(),
            })
            .unwrap();
        }
        let over = PutInput {
            key: "one-too-many".into(),
            value: String::new(),
        };
        assert!(put(over).is_err());
    }
}
