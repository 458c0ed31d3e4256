// Package plugin is go_regex: regular-expression search and replace with
// Go's RE2 engine, which runs in time linear in the input (no catastrophic
// backtracking, whatever pattern a model sends). Built by plugins/go/build.sh.
package plugin

import (
	"regexp"

	"wit_component/toolhost"
)

type findInput struct {
	Pattern    string `json:"pattern" description:"RE2 regular expression, e.g. (\\w+)@(\\w+)\\.com"`
	Text       string `json:"text" description:"The text to search."`
	MaxMatches *int   `json:"max_matches" description:"Stop after this many matches (default 100, at most 10000)."`
}

type match struct {
	Match  string   `json:"match"`
	Start  int      `json:"start"`
	End    int      `json:"end"`
	Groups []string `json:"groups,omitempty"`
}

type replaceInput struct {
	Pattern     string `json:"pattern" description:"RE2 regular expression."`
	Text        string `json:"text" description:"The text to rewrite."`
	Replacement string `json:"replacement" description:"Replacement; $1 or ${name} insert a captured group."`
	Literal     bool   `json:"literal,omitempty" description:"Insert the replacement as-is, without expanding $."`
}

func compile(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, toolhost.InvalidInput("pattern does not compile: %v", err)
	}
	return re, nil
}

func init() {
	toolhost.Register("go_regex_find",
		"Find the matches of a regular expression (RE2 syntax) in a text, with byte offsets and capture groups.",
		func(in findInput) (any, error) {
			limit := 100
			if in.MaxMatches != nil {
				limit = *in.MaxMatches
			}
			if limit < 1 || limit > 10000 {
				return nil, toolhost.InvalidInput("max_matches must be between 1 and 10000, not %d", limit)
			}
			re, err := compile(in.Pattern)
			if err != nil {
				return nil, err
			}
			found := re.FindAllStringSubmatchIndex(in.Text, limit)
			matches := make([]match, 0, len(found))
			for _, loc := range found {
				m := match{Match: in.Text[loc[0]:loc[1]], Start: loc[0], End: loc[1]}
				for g := 2; g+1 < len(loc); g += 2 {
					if loc[g] < 0 {
						m.Groups = append(m.Groups, "")
					} else {
						m.Groups = append(m.Groups, in.Text[loc[g]:loc[g+1]])
					}
				}
				matches = append(matches, m)
			}
			toolhost.Log(toolhost.LevelDebug, "go_regex_find: %d matches", len(matches))
			return map[string]any{"count": len(matches), "matches": matches, "truncated": len(found) == limit}, nil
		})

	toolhost.Register("go_regex_replace",
		"Replace every match of a regular expression (RE2 syntax) in a text; $1 or ${name} in the replacement insert captured groups.",
		func(in replaceInput) (any, error) {
			re, err := compile(in.Pattern)
			if err != nil {
				return nil, err
			}
			count := len(re.FindAllStringIndex(in.Text, -1))
			var out string
			if in.Literal {
				out = re.ReplaceAllLiteralString(in.Text, in.Replacement)
			} else {
				out = re.ReplaceAllString(in.Text, in.Replacement)
			}
			return map[string]any{"text": out, "replacements": count}, nil
		})
}
