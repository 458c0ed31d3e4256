//! A search index over tools (issue 41). PLACEHOLDER: replaced by the
//! BM25 index of branch i41-index at merge; same API.

use super::ToolSpec;

/// A search index over tools.
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    docs: Vec<(String, String)>,
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
    /// An index of `tools`.
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ToolSpec>) -> Self {
        let docs = tools
            .into_iter()
            .map(|t| {
                let text = format!("{} {} {}", t.name, t.description, t.input_schema)
                    .to_lowercase()
                    .replace(['_', '-'], " ");
                (t.name.clone(), text)
            })
            .collect();
        Self { docs }
    }

    /// At most `limit` tools for `query`, best first (ties by name).
    pub fn search(&self, query: &str, limit: usize) -> Vec<SearchHit> {
        let terms: Vec<String> = query
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|t| t.len() > 1)
            .map(str::to_owned)
            .collect();
        let mut hits: Vec<SearchHit> = self
            .docs
            .iter()
            .filter_map(|(name, text)| {
                let score = terms.iter().filter(|t| text.contains(t.as_str())).count();
                (score > 0).then(|| SearchHit {
                    name: name.clone(),
                    score: score as f64,
                })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.name.cmp(&b.name)));
        hits.truncate(limit);
        hits
    }

    /// How many tools it indexes.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether it indexes none.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}
