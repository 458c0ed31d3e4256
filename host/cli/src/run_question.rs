//! A tool's questions in `toolhost run`: asked on the terminal, one prompt
//! per field, choices listed; without a terminal no one is asked and the
//! tool gets `unavailable`.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use serde_json::{Map, Number, Value, json};
use toolhost::text::untrusted;
use toolhost::tools::{Answer, Question, QuestionSink, check_answer};

/// How much of a question's message is shown.
const SHOWN_MESSAGE_BYTES: usize = 1000;
/// How much of a field's title, description or choice is shown.
const SHOWN_TEXT_BYTES: usize = 200;
/// Tries per field before the question counts as cancelled.
const TRIES: usize = 3;

/// One prompt on the terminal at a time: calls of one round run at once.
static TERMINAL: Mutex<()> = Mutex::new(());

/// Who answers the tools' questions: the person at the terminal, when
/// there is one (stdin and stderr both a terminal); none otherwise.
pub fn terminal_answerer() -> Option<QuestionSink> {
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    interactive.then(|| {
        QuestionSink::new(|question: Question| async move {
            // Reading the terminal blocks: not on a runtime thread.
            tokio::task::spawn_blocking(move || ask(&question))
                .await
                .unwrap_or(Answer::Cancel)
        })
    })
}

/// What one line typed at a field's prompt means.
enum Typed {
    Value(Value),
    Skip,
    Decline,
    Cancel,
}

fn ask(question: &Question) -> Answer {
    let _terminal = TERMINAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "toolhost: the tool `{}` asks: {}\n  \
         (one answer per field; an empty line keeps the default or skips an optional field; \
         !d declines, !c or end of input cancels)",
        untrusted(&question.tool, SHOWN_TEXT_BYTES),
        untrusted(&question.message, SHOWN_MESSAGE_BYTES),
    );
    drop(err);
    let mut fields = Map::new();
    for (name, field) in question.fields() {
        let required = question.requires(name);
        let one = json!({"type": "object", "properties": {name: field}});
        let one = one.as_object().cloned().unwrap_or_default();
        let mut tries = 0;
        loop {
            show(name, field, required);
            match typed(field, required, read_line()) {
                Typed::Decline => return Answer::Decline,
                Typed::Cancel => return Answer::Cancel,
                Typed::Skip => break,
                Typed::Value(value) => {
                    let mut answer = Map::new();
                    answer.insert(name.to_owned(), value.clone());
                    match check_answer(&one, &Value::Object(answer)) {
                        Ok(()) => {
                            fields.insert(name.to_owned(), value);
                            break;
                        }
                        Err(e) => eprintln!("  that does not fit: {e}"),
                    }
                }
            }
            tries += 1;
            if tries >= TRIES {
                eprintln!("  no answer after {TRIES} tries: the question is cancelled");
                return Answer::Cancel;
            }
        }
    }
    Answer::Accept(fields)
}

fn read_line() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
    }
}

/// The choices of a field, as (value, label): `enum` (with `enumNames`),
/// `oneOf`, or an array's `items`.
fn choices(field: &Map<String, Value>) -> Vec<(String, String)> {
    let titled = |list: &Value| -> Vec<(String, String)> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c.get("const")?.as_str()?.to_owned(),
                    c.get("title")?.as_str()?.to_owned(),
                ))
            })
            .collect()
    };
    let plain = |values: &Value, names: Option<&Value>| -> Vec<(String, String)> {
        let names: Vec<&str> = names
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .enumerate()
            .map(|(i, v)| (v.to_owned(), names.get(i).copied().unwrap_or(v).to_owned()))
            .collect()
    };
    if let Some(values) = field.get("enum") {
        return plain(values, field.get("enumNames"));
    }
    if let Some(list) = field.get("oneOf") {
        return titled(list);
    }
    match field.get("items") {
        Some(items) if items.get("anyOf").is_some() => titled(&items["anyOf"]),
        Some(items) => items
            .get("enum")
            .map(|v| plain(v, None))
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

fn show(name: &str, field: &Map<String, Value>, required: bool) {
    let text = |key: &str| {
        field
            .get(key)
            .and_then(Value::as_str)
            .map(|t| untrusted(t, SHOWN_TEXT_BYTES))
    };
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "  {}",
        text("title").unwrap_or_else(|| untrusted(name, SHOWN_TEXT_BYTES))
    );
    if let Some(description) = text("description") {
        let _ = write!(err, " ({description})");
    }
    let ty = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let choices = choices(field);
    if choices.is_empty() {
        let _ = write!(err, " [{ty}]");
    } else {
        let _ = writeln!(err);
        for (i, (_, label)) in choices.iter().enumerate() {
            let _ = writeln!(err, "    {}) {}", i + 1, untrusted(label, SHOWN_TEXT_BYTES));
        }
        let _ = write!(
            err,
            "    {}",
            if ty == "array" {
                "numbers, separated by commas"
            } else {
                "a number"
            }
        );
    }
    if let Some(default) = field.get("default") {
        let _ = write!(
            err,
            " [default {}]",
            untrusted(&default.to_string(), SHOWN_TEXT_BYTES)
        );
    }
    let _ = write!(
        err,
        "{} answer: ",
        if required { " (required)" } else { "" }
    );
    let _ = err.flush();
}

/// What `line` (none: end of input) means for `field`.
fn typed(field: &Map<String, Value>, required: bool, line: Option<String>) -> Typed {
    let Some(line) = line else {
        return Typed::Cancel;
    };
    let line = line.trim();
    match line {
        "!d" => return Typed::Decline,
        "!c" => return Typed::Cancel,
        "" => {
            return match field.get("default") {
                Some(default) => Typed::Value(default.clone()),
                // A required field without a default: ask again.
                None if required => Typed::Value(Value::Null),
                None => Typed::Skip,
            };
        }
        _ => {}
    }
    let choices = choices(field);
    let pick = |word: &str| -> Value {
        let word = word.trim();
        word.parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| choices.get(i))
            .map_or_else(
                || Value::String(word.to_owned()),
                |(v, _)| Value::String(v.clone()),
            )
    };
    let value = match field.get("type").and_then(Value::as_str) {
        Some("array") => Value::Array(
            line.split(',')
                .filter(|w| !w.trim().is_empty())
                .map(&pick)
                .collect(),
        ),
        Some("string") if !choices.is_empty() => pick(line),
        Some("integer") => line
            .parse::<i64>()
            .map_or_else(|_| Value::String(line.to_owned()), Value::from),
        Some("number") => line
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or_else(|| Value::String(line.to_owned()), Value::Number),
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => Value::String(line.to_owned()),
        },
        _ => Value::String(line.to_owned()),
    };
    Typed::Value(value)
}
