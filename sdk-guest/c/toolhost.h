/*
 * toolhost C SDK: write a toolhost tool as one C function.
 *
 *     #include "toolhost.h"
 *
 *     static th_status c_greet(const th_input *in, th_output *out) {
 *         th_str name;
 *         if (!th_get_string(in, "name", &name))
 *             return th_error(out, TH_INVALID_INPUT, "name is required");
 *         th_progress(0, 1, "greeting");
 *         th_object_begin(out);
 *         th_key(out, "greeting");
 *         th_string(out, name.ptr, name.len);
 *         th_object_end(out);
 *         return TH_OK;
 *     }
 *
 *     TOOLHOST_PLUGIN(
 *         { .name = "c_greet",
 *           .description = "Greet someone.",
 *           .input_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
 *                           "\"required\":[\"name\"],\"additionalProperties\":false}",
 *           .run = c_greet,
 *           .output_schema = "{\"type\":\"object\",\"properties\":{\"greeting\":{\"type\":\"string\"}},"
 *                            "\"required\":[\"greeting\"]}",
 *           .annotations = { .title = "Greet", .read_only = TH_YES } },
 *     )
 *
 * The host validates each input against the tool's schema before the
 * function runs, so a function only sees inputs that match it. A function
 * writes its JSON output with the th_* writers, adds content parts (an
 * image, audio, text, a resource) with th_add_*, and returns TH_OK; or it
 * returns th_error(...) for a structured tool error the model sees. With an
 * output schema the host checks every JSON output against it.
 *
 * Contract series: built with the bindings in bindings/0.2 (what
 * plugins/c/build.sh and `toolhost new` use), a plugin speaks
 * toolhost:plugin@0.2.0 and has everything here. Built with bindings/
 * (series 0.1, for plugins made before 0.2), output schemas, annotations
 * and content parts are refused and th_progress/th_ask do not exist.
 *
 * Resources, prompts and completions (contract 0.3): TOOLHOST_OFFERS,
 * at the end of this file, declares them; a plugin that uses it is built
 * with toolhost_offers.c and bindings/0.3 as well (the scaffold's build.sh
 * adds them when a source file names TOOLHOST_OFFERS). A plugin without
 * them is a 0.2 plugin, exactly as before.
 *
 * Memory: strings from th_get_string, answers from th_ask and everything
 * the writers build live until the call returns; the SDK frees them.
 * Nothing here is thread-safe, and nothing needs to be: a component
 * instance runs one call at a time.
 */
#ifndef TOOLHOST_H
#define TOOLHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A string slice: not NUL-terminated unless said otherwise. */
typedef struct {
    const char *ptr;
    size_t len;
} th_str;

/* What a tool function returns. */
typedef enum {
    TH_OK = 0,
    /* The input matches the schema but its values make no sense. */
    TH_INVALID_INPUT,
    /* The tool ran and could not do its job. */
    TH_FAILED,
    /* The sandbox refused something the tool needed. */
    TH_DENIED,
    /* Offers (contract 0.3): no such resource, prompt or argument. A tool
     * that returns it fails as TH_FAILED does. */
    TH_NOT_FOUND,
} th_status;

/* One call's input: a parsed view of the input JSON object. */
typedef struct th_input th_input;
/* One call's output: a JSON writer, and the error message if any. */
typedef struct th_output th_output;

/* An MCP tool annotation's yes/no hint; TH_UNSET (zero) says nothing. */
typedef enum { TH_UNSET = 0, TH_NO, TH_YES } th_hint;

/* MCP tool annotations: hints about how a tool behaves, for clients and
 * people. Hints only, never a grant. Zero-initialised: no hints. */
typedef struct {
    const char *title; /* a human-readable title, or NULL */
    th_hint read_only; /* does not change its environment */
    th_hint destructive; /* may destroy or overwrite data */
    th_hint idempotent; /* a second identical call has no further effect */
    th_hint open_world; /* reaches an open world (the web) */
} th_annotations;

/* One tool: its name, description, input JSON Schema and function, then
 * what contract 0.2 adds (leave them out, or NULL, for none). */
typedef struct {
    const char *name;
    const char *description;
    const char *input_schema;
    th_status (*run)(const th_input *in, th_output *out);
    /* JSON Schema of the JSON output (its root an object schema); the host
     * checks every output against it (`output_schema_mismatch`). */
    const char *output_schema;
    th_annotations annotations;
    /* More metadata as a JSON object (MCP `_meta`), passed on untouched. */
    const char *meta;
} th_tool;

/* ---- reading the input object (top-level keys) ---- */

/* True if `key` is present (even when its value is null). */
bool th_has(const th_input *in, const char *key);
/* A string value, unescaped and NUL-terminated (ptr[len] == 0). */
bool th_get_string(const th_input *in, const char *key, th_str *out);
/* A number value. */
bool th_get_number(const th_input *in, const char *key, double *out);
/* An integer value (a number with no fraction that fits in int64). */
bool th_get_int(const th_input *in, const char *key, int64_t *out);
/* A boolean value. */
bool th_get_bool(const th_input *in, const char *key, bool *out);
/* Any value as raw JSON text (objects and arrays included). */
bool th_get_raw(const th_input *in, const char *key, th_str *out);
/* The whole input object as JSON text. */
th_str th_input_json(const th_input *in);

/* ---- writing the output JSON ---- */
/* Commas are inserted for you; keys and values must alternate in objects. */

void th_object_begin(th_output *out);
void th_object_end(th_output *out);
void th_array_begin(th_output *out);
void th_array_end(th_output *out);
void th_key(th_output *out, const char *key);
void th_string(th_output *out, const char *s, size_t len);
void th_cstring(th_output *out, const char *s);
void th_number(th_output *out, double value);
void th_int(th_output *out, int64_t value);
void th_bool(th_output *out, bool value);
void th_null(th_output *out);
/* Append JSON text as a value, unchecked (it must be valid JSON). */
void th_raw(th_output *out, const char *json, size_t len);

/* ---- content parts: shown in order, beside or instead of the JSON ---- */
/* Each copies its arguments. A result with content and no JSON written has
 * no structured value; with neither, the output is `null`. */

/* A text part (UTF-8). */
void th_add_text(th_output *out, const char *text, size_t len);
/* An image: its bytes and media type ("image/png", "image/jpeg", ...). */
void th_add_image(th_output *out, const char *media_type, const void *data, size_t len);
/* Audio: its bytes and media type ("audio/wav", "audio/mpeg", ...). */
void th_add_audio(th_output *out, const char *media_type, const void *data, size_t len);
/* An embedded resource with text contents; media_type may be NULL. */
void th_add_resource_text(th_output *out, const char *uri, const char *media_type, const char *text, size_t len);
/* An embedded resource with binary contents; media_type may be NULL. */
void th_add_resource_blob(th_output *out, const char *uri, const char *media_type, const void *data, size_t len);

/* True if [s, s+len) is valid UTF-8 (what a JSON string must carry). */
bool th_utf8_valid(const char *s, size_t len);

/* Set the error message (printf-style) and return `status`. */
th_status th_error(th_output *out, th_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- host imports ---- */

typedef enum { TH_TRACE, TH_DEBUG, TH_INFO, TH_WARN, TH_ERROR } th_level;

/* Log a line through the host's logger (printf-style). */
void th_log(th_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A value from the manifest's [config] table, NUL-terminated; the caller
 * frees it with free(). NULL when the key is not set. */
char *th_config(const char *key);

/* What th_progress takes as `total` when the whole is not known. */
#define TH_UNKNOWN (-1.0)

/* Report how far the call is: `done` out of `total` (TH_UNKNOWN, or any
 * negative number, when not known), in the tool's own units, and what it is
 * doing (NULL for nothing). Reports reach whoever waits on the call (an MCP
 * client, the program running the loop, a terminal); with no one listening
 * they cost next to nothing. The host passes on only reports that move
 * forward, at a bounded rate (the last one, done == total, always). */
void th_progress(double done, double total, const char *message);

/* How a question to the user went. */
typedef enum {
    /* They answered: `form` holds the answer object. */
    TH_ASK_ACCEPT,
    /* They said no. */
    TH_ASK_DECLINE,
    /* They dismissed the question without answering (or it timed out). */
    TH_ASK_CANCEL,
    /* No one can be asked here (an MCP client without elicitation, no
     * terminal, a program with no one to ask): go on without the answer, or
     * fail saying what input the tool needs. */
    TH_ASK_UNAVAILABLE,
    /* The call already asked as many questions as the host allows. */
    TH_ASK_OVER_BUDGET,
    /* The schema is not a flat object of strings, numbers, integers,
     * booleans and string enums, or is too large. */
    TH_ASK_INVALID_SCHEMA,
    /* The answer is not a JSON object. */
    TH_ASK_BAD_ANSWER,
} th_ask_status;

/* The answer to th_ask. Lives until the call returns. */
typedef struct {
    th_ask_status status;
    /* TH_ASK_ACCEPT: the answer object; read it with th_get_*. Else NULL. */
    const th_input *form;
    /* Any other status but decline and cancel: why, NUL-terminated; else NULL. */
    const char *error;
} th_answer;

/* Ask the person behind the call a question and wait for the answer.
 * `schema` is a JSON Schema of a flat object whose properties are strings,
 * numbers, integers, booleans or enums of strings (MCP elicitation's
 * shape). The wait does not count against the call's deadline. */
th_answer th_ask(const char *message, const char *schema);

/* ---- declaring the plugin ---- */

/* The tool table; TOOLHOST_PLUGIN defines both. */
extern const th_tool toolhost_tools[];
extern const size_t toolhost_tool_count;

/* Positional entries ({name, description, schema, run}, as plugins made
 * before 0.2 write them) leave the 0.2 fields zero: no warning for that. */
#define TOOLHOST_PLUGIN(...)                                                \
    _Pragma("GCC diagnostic push")                                          \
    _Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"")      \
    const th_tool toolhost_tools[] = {__VA_ARGS__};                         \
    _Pragma("GCC diagnostic pop")                                           \
    const size_t toolhost_tool_count = sizeof(toolhost_tools) / sizeof(toolhost_tools[0]);

/* ---- offering resources, prompts and completions (contract 0.3) ---- */
/*
 *     static th_status read_about(const char *uri, const th_args *vars, th_output *out) {
 *         (void)vars;
 *         th_add_resource_text(out, uri, "text/markdown", "# notes", 7);
 *         return TH_OK;
 *     }
 *     static const th_resource resources[] = {
 *         {.uri = "notes://about", .name = "about", .mime_type = "text/markdown", .read = read_about},
 *         {0},
 *     };
 *     TOOLHOST_OFFERS(.resources = resources)
 *
 * Build the plugin with toolhost_offers.c, bindings/0.3/offers.c and
 * bindings/0.3/offers_component_type.o besides what a 0.2 plugin has (and
 * -I bindings/0.3). The host lists resources, templates and prompts once,
 * when the plugin loads (like the tools: the lists must not depend on
 * input or state); every read, prompt and completion is a call of its own,
 * under the plugin's limits, and may use th_config, th_log and th_progress.
 * A resource's URI must have a scheme the host gives the plugin: its name
 * with `_` as `-`, or one its manifest lists in `resource_schemes`.
 */

/* A name and its value, both NUL-terminated UTF-8. */
typedef struct {
    const char *name;
    const char *value;
} th_arg;

/* Names and values: a template's variables, a prompt's arguments, the
 * arguments filled in before a completion. Live until the call returns. */
typedef struct {
    const th_arg *items;
    size_t count;
} th_args;

/* The value of `name` in `args`, or NULL. */
const char *th_arg_get(const th_args *args, const char *name);

/* A resource, or a resource template. A read adds what it read with
 * th_add_resource_text / th_add_resource_blob (the URI read, or one under
 * it), or with th_add_text (text of the URI read, no MIME type); or it
 * returns th_error(out, TH_NOT_FOUND, ...) and the like. */
typedef struct {
    /* A resource's URI, or a template's: RFC 6570 level 1, "notes://{day}". */
    const char *uri;
    const char *name;
    const char *description; /* or NULL */
    const char *mime_type; /* or NULL */
    /* Reads `uri` (for a template, a URI it matches; `vars` holds its
     * variables, empty for a resource). */
    th_status (*read)(const char *uri, const th_args *vars, th_output *out);
    const char *meta; /* a JSON object (MCP `_meta`), or NULL */
} th_resource;

/* The most arguments one prompt declares. */
#define TH_MAX_PROMPT_ARGS 16

/* An argument of a prompt. */
typedef struct {
    const char *name;
    const char *description; /* or NULL */
    bool required;
} th_prompt_arg;

/* Who says a message of a prompt: th_set_role sets it for the parts added after. */
typedef enum { TH_USER = 0, TH_ASSISTANT } th_role;

/* A prompt. `get` renders it: each th_add_text / th_add_image /
 * th_add_audio / th_add_resource_text / th_add_resource_blob is one
 * message, from the user unless th_set_role says otherwise. Its required
 * arguments are always in `args` (the SDK checks). */
typedef struct {
    const char *name; /* follows a tool name's rules */
    const char *description; /* or NULL */
    /* Its arguments, up to the first without a name. */
    th_prompt_arg arguments[TH_MAX_PROMPT_ARGS];
    th_status (*get)(const th_args *args, th_output *out);
    const char *meta; /* a JSON object (MCP `_meta`), or NULL */
} th_prompt;

/* Completions of one prompt argument, or of one template variable: set
 * `prompt` (the prompt's name) or `template_uri` (the template's URI
 * template), and `argument`. `complete` adds the values that fit `value`
 * (what the user typed so far), best first, with th_add_value; `context`
 * holds the arguments filled in already. */
typedef struct {
    const char *prompt;
    const char *template_uri;
    const char *argument;
    th_status (*complete)(const char *value, const th_args *context, th_output *out);
} th_completer;

/* Set who says the prompt messages added after this (TH_USER at first). */
void th_set_role(th_output *out, th_role role);
/* Add a completion value (NUL-terminated UTF-8). */
void th_add_value(th_output *out, const char *value);

/* What the plugin offers. Each list ends with an entry that is all zero
 * ({0}); NULL for none. */
typedef struct {
    const th_resource *resources;
    const th_resource *templates;
    const th_prompt *prompts;
    const th_completer *completers;
} th_offers;

/* The offers; TOOLHOST_OFFERS defines it. */
extern const th_offers toolhost_offers;

/*     TOOLHOST_OFFERS(.resources = resources, .templates = templates,
 *                     .prompts = prompts, .completers = completers) */
#define TOOLHOST_OFFERS(...) const th_offers toolhost_offers = {__VA_ARGS__};

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_H */
