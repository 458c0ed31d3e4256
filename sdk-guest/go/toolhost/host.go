package toolhost

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"wit_component/toolhost_plugin_host"
	"wit_component/toolhost_plugin_progress"
	"wit_component/toolhost_plugin_user"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
)

// Level is a log level.
type Level = toolhost_plugin_host.Level

// Log levels.
const (
	LevelTrace = toolhost_plugin_host.Level_Trace
	LevelDebug = toolhost_plugin_host.Level_Debug
	LevelInfo  = toolhost_plugin_host.Level_Info
	LevelWarn  = toolhost_plugin_host.Level_Warn
	LevelError = toolhost_plugin_host.Level_Error
)

// Log writes a line to the host's log, tagged with the plugin's name.
func Log(level Level, format string, args ...any) {
	toolhost_plugin_host.Log(level, fmt.Sprintf(format, args...))
}

// Config returns a value from the manifest's [config] table.
func Config(key string) (string, bool) {
	v := toolhost_plugin_host.Config(key)
	if v.IsNone() {
		return "", false
	}
	return v.Some(), true
}

// Unknown is the total Progress takes when the whole is not known.
const Unknown = -1.0

// Progress reports how far the running call is: done out of total (Unknown,
// or any negative number, when not known), in the tool's own units, and
// what it is doing ("" for nothing). Reports reach whoever waits on the
// call (an MCP client, the program running the loop, a terminal); with no
// one listening they cost next to nothing. The host passes on only reports
// that move forward, at a bounded rate, and always the one where done
// reaches total.
func Progress(done, total float64, message string) {
	t := witTypes.None[float64]()
	if total >= 0 { // NaN is unknown too
		t = witTypes.Some(total)
	}
	m := witTypes.None[string]()
	if message != "" {
		// The host takes only UTF-8 text.
		m = witTypes.Some(strings.ToValidUTF8(message, "\uFFFD"))
	}
	toolhost_plugin_progress.Report(done, t, m)
}

// Action is what the person did with a question.
type Action uint8

const (
	// Accept: they answered; Answer.Value holds it.
	Accept Action = iota
	// Decline: they said no.
	Decline
	// Cancel: they dismissed the question without answering (or it timed out).
	Cancel
)

// Answer is the person's answer to Ask: Value is set when Action is Accept.
type Answer[T any] struct {
	Action Action
	Value  T
}

// AskErrorKind says why Ask got no answer.
type AskErrorKind uint8

const (
	// AskUnavailable: no one can be asked here (an MCP client without
	// elicitation, no terminal, a program with no one to ask). Go on
	// without the answer, or fail saying what input the tool needs.
	AskUnavailable AskErrorKind = iota
	// AskOverBudget: the call already asked as many questions as the host allows.
	AskOverBudget
	// AskInvalidSchema: the question's type is not a flat object of
	// strings, numbers, booleans and string enums, or its schema is too large.
	AskInvalidSchema
	// AskBadAnswer: the answer did not fit the question's type.
	AskBadAnswer
)

// AskError is why Ask got no answer.
type AskError struct {
	Kind    AskErrorKind
	Message string
}

func (e *AskError) Error() string {
	switch e.Kind {
	case AskUnavailable:
		return "no one to ask: " + e.Message
	case AskOverBudget:
		return "too many questions: " + e.Message
	case AskInvalidSchema:
		return "the question cannot be asked: " + e.Message
	default:
		return "the answer does not fit the question: " + e.Message
	}
}

// Ask asks the person behind the call a question and waits for the answer.
// T is the answer's shape: a struct of strings, numbers, booleans and
// `enum:` strings, its schema derived with QuestionSchemaOf (`description:` tags
// become the form's help text). The wait does not count against the call's
// deadline; the question has its own time limit, after which the answer is
// Cancel. The error, when there is one, is an *AskError.
//
//	type confirm struct {
//		Branch string `json:"branch" description:"Type the branch name to confirm."`
//	}
//
//	answer, err := toolhost.Ask[confirm]("Force-push over main?")
func Ask[T any](message string) (Answer[T], error) {
	var answer Answer[T]
	schema, err := QuestionSchemaOf(reflect.TypeFor[T]())
	if err != nil {
		return answer, &AskError{AskInvalidSchema, err.Error()}
	}
	text, err := json.Marshal(schema)
	if err != nil {
		return answer, &AskError{AskInvalidSchema, err.Error()}
	}
	result := toolhost_plugin_user.Ask(strings.ToValidUTF8(message, "\uFFFD"), string(text))
	if result.IsErr() {
		e := result.Err()
		switch e.Tag() {
		case toolhost_plugin_user.AskError_Unavailable:
			return answer, &AskError{AskUnavailable, e.Unavailable()}
		case toolhost_plugin_user.AskError_OverBudget:
			return answer, &AskError{AskOverBudget, e.OverBudget()}
		default:
			return answer, &AskError{AskInvalidSchema, e.InvalidSchema()}
		}
	}
	reply := result.Ok()
	switch reply.Tag() {
	case toolhost_plugin_user.Answer_Accept:
		if err := json.Unmarshal([]byte(reply.Accept()), &answer.Value); err != nil {
			return answer, &AskError{AskBadAnswer, err.Error()}
		}
		answer.Action = Accept
	case toolhost_plugin_user.Answer_Decline:
		answer.Action = Decline
	default:
		answer.Action = Cancel
	}
	return answer, nil
}
