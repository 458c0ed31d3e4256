//! URI templates (RFC 6570 level 1: `{var}` expands to one value without
//! `/`, `?` or `#`), and matching a URI against one.

use std::collections::BTreeMap;

/// The most variables one template may have.
const MAX_VARS: usize = 16;

/// A parsed URI template: literal text and `{name}` variables, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

impl UriTemplate {
    /// Parse `text`. A variable is `{name}` with a name of `a-z A-Z 0-9 _`;
    /// two variables must be apart (else matching is ambiguous).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest
                        .find('}')
                        .ok_or("a `{` without its `}`: write variables as `{name}`")?;
                    let name = &rest[1..end];
                    if name.is_empty()
                        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        return Err(format!(
                            "`{{{name}}}` is not a level-1 variable: use `{{name}}` with a-z, 0-9 and _"
                        ));
                    }
                    if matches!(parts.last(), Some(Part::Var(_))) {
                        return Err("two variables must have literal text between them".into());
                    }
                    parts.push(Part::Var(name.to_owned()));
                    rest = &rest[end + 1..];
                }
                Some(at) => {
                    if rest[..at].contains('}') {
                        return Err("a `}` without its `{`".into());
                    }
                    parts.push(Part::Literal(rest[..at].to_owned()));
                    rest = &rest[at..];
                }
                None => {
                    if rest.contains('}') {
                        return Err("a `}` without its `{`".into());
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        let vars = parts.iter().filter(|p| matches!(p, Part::Var(_))).count();
        if vars > MAX_VARS {
            return Err(format!("more than {MAX_VARS} variables"));
        }
        Ok(Self { parts })
    }

    /// The variable names, in order.
    #[cfg(test)]
    pub(crate) fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' values when `uri` matches: each variable takes at
    /// least one character, none of `/ ? #`, up to the next literal.
    /// Linear in the URI's length: no backtracking.
    pub(crate) fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Var(name) => {
                    let stop = rest.find(['/', '?', '#']).unwrap_or(rest.len());
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => {
                            rest.find(next.as_str()).filter(|at| *at <= stop)?
                        }
                        _ => stop,
                    };
                    if end == 0 {
                        return None;
                    }
                    vars.insert(name.clone(), rest[..end].to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn level_one_templates_match_and_extract() {
        let t = UriTemplate::parse("demo://resource/dynamic/text/{resourceId}").unwrap();
        assert_eq!(t.vars().collect::<Vec<_>>(), ["resourceId"]);
        assert_eq!(
            t.matches("demo://resource/dynamic/text/7"),
            Some(vars(&[("resourceId", "7")]))
        );
        assert_eq!(t.matches("demo://resource/dynamic/text/"), None);
        assert_eq!(t.matches("demo://resource/dynamic/text/7/8"), None);
        assert_eq!(t.matches("demo://resource/dynamic/blob/7"), None);

        let t = UriTemplate::parse("notes://{user}/n-{id}.md").unwrap();
        assert_eq!(
            t.matches("notes://ann/n-12.md"),
            Some(vars(&[("user", "ann"), ("id", "12")]))
        );
        assert_eq!(t.matches("notes://ann/n-12.txt"), None);
        // A plain URI is a template without variables.
        let t = UriTemplate::parse("memo://a").unwrap();
        assert_eq!(t.matches("memo://a"), Some(BTreeMap::new()));
        assert_eq!(t.matches("memo://ab"), None);
    }

    #[test]
    fn bad_templates_are_refused() {
        for bad in [
            "x://{",
            "x://{}",
            "x://{a b}",
            "x://{+path}",
            "x://{a}{b}",
            "x://a}",
        ] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
        let many: String = (0..17).map(|i| format!("/{{v{i}}}")).collect();
        assert!(UriTemplate::parse(&format!("x://h{many}")).is_err());
    }

    #[test]
    fn a_template_that_never_matches_costs_one_pass() {
        let t = UriTemplate::parse("x://{a}/b").unwrap();
        let long = format!("x://{}", "a".repeat(100_000));
        assert_eq!(t.matches(&long), None);
    }
}
