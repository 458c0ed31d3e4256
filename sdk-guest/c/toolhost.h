/*
 * toolhost C SDK: write a toolhost tool as one C function.
 *
 *     #include "toolhost.h"
 *
 *     static th_status c_greet(const th_input *in, th_output *out) {
 *         th_str name;
 *         if (!th_get_string(in, "name", &name))
 *             return th_error(out, TH_INVALID_INPUT, "name is required");
 *         th_object_begin(out);
 *         th_key(out, "greeting");
 *         th_string(out, name.ptr, name.len);
 *         th_object_end(out);
 *         return TH_OK;
 *     }
 *
 *     TOOLHOST_PLUGIN(
 *         { "c_greet", "Greet someone.",
 *           "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
 *           "\"required\":[\"name\"],\"additionalProperties\":false}",
 *           c_greet },
 *     )
 *
 * The host validates each input against the tool's schema before the
 * function runs, so a function only sees inputs that match it. A function
 * writes its JSON output with the th_* writers and returns TH_OK, or returns
 * th_error(...) for a structured tool error the model sees.
 *
 * Memory: strings from th_get_string and everything the writers build live
 * until the call returns; the SDK frees them. Nothing here is thread-safe,
 * and nothing needs to be: a component instance runs one call at a time.
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
} th_status;

/* One call's input: a parsed view of the input JSON object. */
typedef struct th_input th_input;
/* One call's output: a JSON writer, and the error message if any. */
typedef struct th_output th_output;

/* One tool: its name, description, input JSON Schema, and function. */
typedef struct {
    const char *name;
    const char *description;
    const char *input_schema;
    th_status (*run)(const th_input *in, th_output *out);
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

/* ---- declaring the plugin ---- */

/* The tool table; TOOLHOST_PLUGIN defines both. */
extern const th_tool toolhost_tools[];
extern const size_t toolhost_tool_count;

#define TOOLHOST_PLUGIN(...)                                            \
    const th_tool toolhost_tools[] = {__VA_ARGS__};                     \
    const size_t toolhost_tool_count = sizeof(toolhost_tools) / sizeof(toolhost_tools[0]);

#ifdef __cplusplus
}
#endif

#endif /* TOOLHOST_H */
