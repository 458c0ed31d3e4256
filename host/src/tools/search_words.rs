//! The word tables of [`ToolIndex`](super::ToolIndex): API synonyms and
//! common English words.

use std::collections::HashMap;

/// Words that name the same action or thing in tool and API descriptions,
/// so that a request in other words still finds its tool (`sum` finds an
/// `arithmetic` tool, `appointment` a calendar `event`). General API
/// vocabulary, not any one catalogue's.
pub(super) const SYNONYMS: &[&[&str]] = &[
    &["delete", "remove", "erase", "discard", "purge"],
    &["create", "make", "add", "new"],
    &["get", "fetch", "retrieve", "show", "read", "view"],
    &["list", "show", "browse", "enumerate"],
    &["update", "change", "edit", "modify", "set"],
    &["search", "find", "lookup", "look"],
    &["cancel", "stop", "abort", "terminate"],
    &["event", "appointment", "meeting"],
    &["schedule", "book", "arrange", "plan"],
    &["inventory", "stock"],
    &["refund", "reimburse", "repay"],
    &["resolve", "fix", "solve", "settle"],
    &["send", "email", "mail", "deliver"],
    &["metric", "measurement", "statistic", "usage"],
    &["image", "picture", "photo", "png"],
    &["chart", "graph", "plot", "diagram"],
    &["convert", "transform"],
    &[
        "arithmetic",
        "calculate",
        "compute",
        "math",
        "sum",
        "evaluate",
    ],
    &["user", "person", "member", "people"],
    &["message", "chat", "msg"],
    &["remind", "reminder"],
    &["directory", "folder"],
    &["error", "exception", "crash", "bug"],
    &["issue", "ticket", "bug"],
    &["deploy", "deployment", "release", "rollout"],
    &["customer", "client"],
    &["payment", "charge", "pay"],
];

/// Each stem of [`SYNONYMS`] → the stems it stands with.
pub(super) fn synonyms() -> &'static HashMap<String, Vec<String>> {
    static MAP: std::sync::OnceLock<HashMap<String, Vec<String>>> = std::sync::OnceLock::new();
    MAP.get_or_init(|| {
        let mut map: HashMap<String, Vec<String>> = HashMap::new();
        for group in SYNONYMS {
            let stems: Vec<String> = group.iter().map(|w| super::stem(w)).collect();
            for a in &stems {
                let others = map.entry(a.clone()).or_default();
                for b in &stems {
                    if a != b && !others.contains(b) {
                        others.push(b.clone());
                    }
                }
            }
        }
        map
    })
}

/// Words too common to tell tools apart.
pub(super) const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do",
    "does", "for", "from", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "let",
    "me", "my", "of", "on", "or", "our", "please", "s", "should", "so", "some", "that", "the",
    "their", "them", "then", "there", "these", "this", "those", "to", "up", "us", "was", "we",
    "what", "when", "where", "which", "who", "will", "with", "would", "you", "your",
];
