//! [`ToolIndex`]: finding tools by what a request says, so that a model (or
//! an MCP client) can be sent the few tools it needs instead of hundreds.
//!
//! Ranking is BM25F: each tool is a document of four fields — its name's
//! words, its description, its input's property names and their
//! descriptions — with a weight each (a word of the name counts most), and
//! one BM25 saturation (k1 1.2, b 0.75) over the weighted, length-normalised
//! term frequencies. Words are normalised the same way on both sides:
//! split on anything but letters and digits, on camelCase and on letter/digit
//! boundaries, lowercased, folded to ASCII, stripped of a plural, `-ing` or
//! `-ed` suffix, and common English words and bare numbers dropped; a word
//! of a small table of API synonyms also looks for the others, at half
//! weight, as do the longer words a query word of four letters or more
//! begins (`attach`: `attachment`). A tool's exact name in the query puts
//! that tool first.
//!
//! An index is built from one snapshot and never changes;
//! [`ToolSet::index`](super::ToolSet::index) builds it once per snapshot, so
//! a registry change (a new snapshot) is a fresh index.

use std::collections::HashMap;

use serde_json::Value;

use super::ToolSpec;

#[path = "search_words.rs"]
mod words;
use words::{STOP_WORDS, synonyms};

/// The name of the search tool a model or an MCP client is given in place
/// of the tools it can find ([`tool_search_spec`]).
pub const TOOL_SEARCH_NAME: &str = "tool_search";

/// How many tools one `tool_search` call answers when its input has no
/// `limit`.
pub const TOOL_SEARCH_DEFAULT_LIMIT: usize = 5;
/// The most tools one `tool_search` call answers.
pub const TOOL_SEARCH_MAX_LIMIT: usize = 20;

/// The definition of the search tool `serve` offers (`tool_search`, input
/// `{"query": string, "limit"?: integer}`): it answers the found tools'
/// input schemas, for a client to call them by name. The loop's search
/// (`runner::ToolSearch`) adds the found tools to its next request instead,
/// and says so in a definition of its own.
pub fn tool_search_spec() -> ToolSpec {
    ToolSpec {
        name: TOOL_SEARCH_NAME.into(),
        description: "Search the available tools by what you want to do. Answers the best \
            matches with their descriptions and input schemas; call a found tool by its name."
            .into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool should do, in a few words."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": TOOL_SEARCH_MAX_LIMIT,
                    "description": "How many tools to answer (default 5)."
                }
            },
            "required": ["query"]
        }),
    }
}

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// The fields of a tool's document and their weights.
const NAME: usize = 0;
const DESCRIPTION: usize = 1;
const PARAM_NAME: usize = 2;
const PARAM_DESCRIPTION: usize = 3;
const FIELDS: usize = 4;
const WEIGHTS: [f64; FIELDS] = [3.0, 1.0, 1.5, 0.5];

/// Caps on what one tool contributes (its spec is untrusted data): text
/// read per field, properties walked and their nesting.
const MAX_FIELD_CHARS: usize = 8 * 1024;
const MAX_PROPERTIES: usize = 256;
const MAX_SCHEMA_DEPTH: usize = 4;
/// Query words looked at; a longer query is clipped.
const MAX_QUERY_TERMS: usize = 64;

/// A search index over tools: names (split on `_`, `-`, `.`, camelCase and
/// digits), descriptions, and the input schema's property names and their
/// descriptions. BM25 (k1 1.2, b 0.75) over fields with weights (name words
/// weigh most), with light normalisation (lowercase, ASCII folding, a simple
/// English stemmer that strips plural, `-ing` and `-ed` suffixes, common
/// words and bare numbers dropped) and a small table of synonyms from API
/// vocabulary (`remove` for `delete`, `sum` for `arithmetic`), which count
/// half.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use toolhost::tools::ToolSpec;
/// use toolhost::tools::search::ToolIndex;
///
/// let spec = |name: &str, description: &str| ToolSpec {
///     name: name.into(),
///     description: description.into(),
///     input_schema: json!({"type": "object"}),
/// };
/// let tools = [
///     spec("get_forecast", "Get the weather forecast for a location."),
///     spec("calc_eval", "Evaluate an arithmetic expression."),
/// ];
/// let index = ToolIndex::new(&tools);
/// let hits = index.search("what's the weather like tomorrow?", 5);
/// assert_eq!(hits[0].name, "get_forecast");
/// assert!(index.search("the of and", 5).is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    /// Tool names, in the order given.
    names: Vec<String>,
    /// Each name lowercased, for the exact-name rule.
    lower_names: HashMap<String, Vec<u32>>,
    /// Term → its postings.
    terms: HashMap<String, Vec<Posting>>,
    /// Per tool and field, `1 / (1 - b + b * len / avg_len)`.
    norms: Vec<[f64; FIELDS]>,
    /// The terms that are words (not only [aliases](terms)), sorted, for
    /// prefix matching.
    vocab: Vec<String>,
}

#[derive(Debug, Clone)]
struct Posting {
    tool: u32,
    tf: [u16; FIELDS],
}

/// One tool a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The tool's registry name.
    pub name: String,
    /// Its relevance (higher is better; only comparable within one search).
    pub score: f64,
}

impl ToolIndex {
    /// An index of `tools` (a registry's `ToolSet::specs()`, say).
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let mut index = Self::default();
        let mut lens: Vec<[u32; FIELDS]> = Vec::new();
        let mut vocab = std::collections::HashSet::new();
        let mut words = Vec::new();
        for spec in tools {
            let Ok(tool) = u32::try_from(index.names.len()) else {
                break;
            };
            let mut doc: HashMap<String, [u16; FIELDS]> = HashMap::new();
            let mut len = [0u32; FIELDS];
            let mut add = |field: usize, text: &str, words: &mut Vec<String>| {
                words.clear();
                split(clip(text), &mut |term, alias| {
                    if !alias {
                        len[field] += 1;
                        if !vocab.contains(&term) {
                            vocab.insert(term.clone());
                        }
                    }
                    words.push(term);
                });
                for word in words.drain(..) {
                    let tf = doc.entry(word).or_default();
                    tf[field] = tf[field].saturating_add(1);
                }
            };
            add(NAME, &spec.name, &mut words);
            add(DESCRIPTION, &spec.description, &mut words);
            let mut budget = MAX_PROPERTIES;
            let mut params = Vec::new();
            properties(&spec.input_schema, 0, &mut budget, &mut params);
            for (name, description) in params {
                add(PARAM_NAME, name, &mut words);
                for text in description {
                    add(PARAM_DESCRIPTION, text, &mut words);
                }
            }
            for (term, tf) in doc {
                index
                    .terms
                    .entry(term)
                    .or_default()
                    .push(Posting { tool, tf });
            }
            lens.push(len);
            index
                .lower_names
                .entry(spec.name.to_ascii_lowercase())
                .or_default()
                .push(tool);
            index.names.push(spec.name.clone());
        }
        index.vocab = vocab.into_iter().collect();
        index.vocab.sort_unstable();
        let count = lens.len().max(1) as f64;
        let mut avg = [0f64; FIELDS];
        for len in &lens {
            for f in 0..FIELDS {
                avg[f] += f64::from(len[f]) / count;
            }
        }
        index.norms = lens
            .iter()
            .map(|len| {
                std::array::from_fn(|f| {
                    if avg[f] == 0.0 {
                        1.0
                    } else {
                        1.0 / (1.0 - B + B * f64::from(len[f]) / avg[f])
                    }
                })
            })
            .collect();
        index
    }

    /// At most `limit` tools for `query`, best first (ties by name); none
    /// for a query with no known term. An exact tool name in the query
    /// ranks that tool first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        if limit == 0 || self.names.is_empty() {
            return Vec::new();
        }
        let mut words = Vec::new();
        terms(clip(query), &mut words);
        words.sort_unstable();
        words.dedup();
        words.truncate(MAX_QUERY_TERMS);
        // The query's words count whole, their synonyms a part.
        let mut weighted: HashMap<&str, f64> = words.iter().map(|w| (w.as_str(), 1.0)).collect();
        let synonyms = synonyms();
        for word in &words {
            for other in synonyms.get(word).into_iter().flatten() {
                weigh(&mut weighted, other, SYNONYM_WEIGHT);
            }
        }
        // A word the index has only longer forms of (`attach`:
        // `attachment`) finds them, as a synonym does.
        for word in words.iter().filter(|w| w.len() >= MIN_PREFIX) {
            let from = self.vocab.partition_point(|t| t.as_str() < word.as_str());
            for longer in self.vocab[from..]
                .iter()
                .take_while(|t| t.starts_with(word.as_str()))
                .filter(|t| t.len() > word.len())
                .take(MAX_PREFIX_TERMS)
            {
                weigh(&mut weighted, longer, SYNONYM_WEIGHT);
            }
        }
        let n = self.names.len() as f64;
        let mut scores = vec![0f64; self.names.len()];
        let mut found = vec![false; self.names.len()];
        for (word, weight) in weighted {
            let Some(postings) = self.terms.get(word) else {
                continue;
            };
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for p in postings {
                let t = p.tool as usize;
                let norm = &self.norms[t];
                let tf: f64 = (0..FIELDS)
                    .map(|f| WEIGHTS[f] * f64::from(p.tf[f]) * norm[f])
                    .sum();
                scores[t] += weight * idf * tf * (K1 + 1.0) / (tf + K1);
                found[t] = true;
            }
        }
        // An exact name outranks every other hit.
        let top = scores.iter().copied().fold(0.0, f64::max);
        let mut exact = vec![false; self.names.len()];
        for word in query.split_whitespace().take(MAX_QUERY_TERMS) {
            let word =
                word.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'));
            let Some(tools) = self.lower_names.get(&word.to_ascii_lowercase()) else {
                continue;
            };
            for &tool in tools {
                let t = tool as usize;
                // Once per tool, however often the query names it.
                if !std::mem::replace(&mut exact[t], true) {
                    scores[t] += top + 1.0;
                    found[t] = true;
                }
            }
        }
        let mut hits: Vec<SearchHit> = found
            .iter()
            .enumerate()
            .filter(|(_, found)| **found)
            .map(|(t, _)| SearchHit {
                name: self.names[t].clone(),
                score: scores[t],
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.name.cmp(&b.name))
        });
        hits.truncate(limit);
        hits
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// `term` counts at least `weight` in a query.
fn weigh<'a>(weighted: &mut HashMap<&'a str, f64>, term: &'a str, weight: f64) {
    let w = weighted.entry(term).or_insert(weight);
    *w = w.max(weight);
}

/// At most [`MAX_FIELD_CHARS`] of `text`, cut at a character boundary.
fn clip(text: &str) -> &str {
    if text.len() <= MAX_FIELD_CHARS {
        return text;
    }
    let mut end = MAX_FIELD_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The property names of `schema` (and of objects nested in it, through
/// `properties` and `items`), each with its description and string `enum`
/// values, at most `budget` of them.
fn properties<'a>(
    schema: &'a Value,
    depth: usize,
    budget: &mut usize,
    out: &mut Vec<(&'a str, Vec<&'a str>)>,
) {
    if depth >= MAX_SCHEMA_DEPTH {
        return;
    }
    if let Some(items) = schema.get("items") {
        properties(items, depth + 1, budget, out);
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let mut texts = Vec::new();
        if let Some(d) = prop.get("description").and_then(Value::as_str) {
            texts.push(d);
        }
        if let Some(values) = prop.get("enum").and_then(Value::as_array) {
            texts.extend(values.iter().filter_map(Value::as_str).take(32));
        }
        out.push((name, texts));
        properties(prop, depth + 1, budget, out);
    }
}

/// The normalised terms of `text`, appended to `out`; returns how many
/// words they are. A word that splits on case or digits (`PagerDuty`,
/// `ec2`) is also a term whole (`pagerduty`, `ec2`), so either spelling
/// finds it, but that whole is an alias, not one more word: `listPod` is as
/// long as `list_pod`, so a naming style does not change a tool's rank.
/// Numbers alone are not terms (they are arguments, not what a tool does).
fn terms(text: &str, out: &mut Vec<String>) -> usize {
    let mut words = 0;
    split(text, &mut |term, alias| {
        words += usize::from(!alias);
        out.push(term);
    });
    words
}

/// [`terms`]' work: each term of `text` to `sink`, with whether it is the
/// alias of a run of several words.
fn split(text: &str, sink: &mut dyn FnMut(String, bool)) {
    let mut word = String::new();
    // The whole run of letters and digits `word` is part of, and how many
    // parts it has had.
    let mut run = String::new();
    let mut parts = 0usize;
    // The class of the previous character: 0 none/separator, 1 lower, 2
    // upper, 3 digit.
    let mut prev = 0u8;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let class = if c.is_numeric() {
            3
        } else if c.is_uppercase() {
            2
        } else if c.is_alphabetic() {
            1
        } else {
            0
        };
        let next_lower = chars.peek().is_some_and(|n| n.is_lowercase());
        let boundary = class == 0
            || (prev != 0 && (prev == 3) != (class == 3))
            || (prev == 1 && class == 2)
            // `HTTPServer`: the `S` starts a word.
            || (prev == 2 && class == 2 && next_lower);
        if boundary && !word.is_empty() {
            parts += 1;
            if let Some(term) = term(&mut word) {
                sink(term, false);
            }
        }
        if class == 0 {
            if let Some(term) = term(&mut run).filter(|_| parts > 1) {
                sink(term, true);
            }
            run.clear();
            parts = 0;
        } else {
            for lower in c.to_lowercase() {
                fold(lower, &mut word);
                fold(lower, &mut run);
            }
        }
        prev = class;
    }
    if !word.is_empty() {
        parts += 1;
        if let Some(term) = term(&mut word) {
            sink(term, false);
        }
    }
    if let Some(term) = term(&mut run).filter(|_| parts > 1) {
        sink(term, true);
    }
}

/// `word`'s stem unless it is a common word or a number; empties `word`.
fn term(word: &mut String) -> Option<String> {
    let keep = !word.is_empty()
        && !STOP_WORDS.contains(&word.as_str())
        && !word.chars().all(char::is_numeric);
    let stem = keep.then(|| stem(word));
    word.clear();
    stem
}

/// `c` (lowercase) as ASCII where it is a Latin letter with a mark.
fn fold(c: char, out: &mut String) {
    let folded = match c {
        'à'..='å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è'..='ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
        'ì'..='ï' | 'ī' | 'į' | 'ı' => "i",
        'ł' | 'ľ' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò'..='ö' | 'ø' | 'ō' | 'ő' => "o",
        'œ' => "oe",
        'ř' => "r",
        'ś' | 'š' | 'ş' => "s",
        'ß' => "ss",
        'ť' | 'ţ' => "t",
        'ù'..='ü' | 'ū' | 'ů' | 'ű' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        'þ' => "th",
        _ => {
            out.push(c);
            return;
        }
    };
    out.push_str(folded);
}

/// A light English stemmer: the same stem for `file`, `files`; `match`,
/// `matches`; `create`, `creates`, `created`, `creating`; `run`, `running`.
/// Not a linguist's stem, only a consistent one.
fn stem(word: &str) -> String {
    if word.len() <= 3 || !word.is_ascii() || word.bytes().any(|b| b.is_ascii_digit()) {
        return word.to_owned();
    }
    let mut w = word.to_owned();
    if let Some(s) = w.strip_suffix("ies").filter(|s| s.len() >= 2) {
        w = format!("{s}y");
    } else if w.ends_with("sses")
        || ["xes", "zes", "ches", "shes"]
            .iter()
            .any(|s| w.ends_with(s))
    {
        w.truncate(w.len() - 2);
    } else if w.ends_with('s') && !["ss", "us", "is"].iter().any(|s| w.ends_with(s)) {
        w.pop();
    }
    for suffix in ["ing", "ed"] {
        if let Some(s) = w
            .strip_suffix(suffix)
            .filter(|s| s.len() >= 3 && has_vowel(s))
        {
            w = s.to_owned();
            let b = w.as_bytes();
            let n = b.len();
            if n >= 2 && b[n - 1] == b[n - 2] && !b"aeioulsz".contains(&b[n - 1]) {
                w.pop();
            }
            break;
        }
    }
    if w.len() >= 4 && w.ends_with('e') && !w.ends_with("ee") {
        w.pop();
    }
    w
}

fn has_vowel(s: &str) -> bool {
    s.bytes().any(|b| b"aeiouy".contains(&b))
}

/// The shortest query word that also finds the longer words it begins.
const MIN_PREFIX: usize = 4;
/// The most longer words one query word finds.
const MAX_PREFIX_TERMS: usize = 16;

/// How much a synonym of a query's word counts, against the word itself.
const SYNONYM_WEIGHT: f64 = 0.5;

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
