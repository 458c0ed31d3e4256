/*
 * {{name}}: a toolhost plugin in C; greets someone by name.
 *
 * Build with ./build.sh, then
 * toolhost call {{name}}_greet --input '{"name":"Ada"}' --plugins dist
 *
 * Every tool is one function that reads its input with th_get_* and writes
 * its JSON output with the th_* writers (toolhost.h, in the toolhost
 * checkout's sdk-guest/c). TOOLHOST_PLUGIN lists the tools, each with its
 * input JSON Schema, which the host checks every input against before the
 * function runs, and its output schema, which the host checks every output
 * against after. th_progress tells whoever waits how far a call is;
 * th_add_image and friends add content parts beside the JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "toolhost.h"

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static th_status greet(const th_input *in, th_output *out) {
    th_str name;
    if (!th_get_string(in, "name", &name)) return th_error(out, TH_INVALID_INPUT, "`name` must be a string");
    while (name.len > 0 && is_space(name.ptr[0])) {
        name.ptr++;
        name.len--;
    }
    while (name.len > 0 && is_space(name.ptr[name.len - 1])) name.len--;
    if (name.len == 0) return th_error(out, TH_INVALID_INPUT, "`name` must not be blank");

    th_progress(0, 1, "looking up the greeting");
    /* The manifest's [config] greeting; th_config's result is ours to free. */
    char *configured = th_config("greeting");
    const char *greeting = configured ? configured : "Hello";
    size_t greeting_len = strlen(greeting);

    /* "<greeting>, <name>!" */
    size_t len = greeting_len + 2 + name.len + 1;
    char *text = malloc(len);
    if (!text) {
        free(configured);
        return th_error(out, TH_FAILED, "out of memory");
    }
    memcpy(text, greeting, greeting_len);
    memcpy(text + greeting_len, ", ", 2);
    memcpy(text + greeting_len + 2, name.ptr, name.len);
    text[len - 1] = '!';

    th_object_begin(out);
    th_key(out, "greeting");
    th_string(out, text, len);
    th_object_end(out);
    free(text);
    free(configured);
    th_progress(1, 1, "greeted");
    return TH_OK;
}

TOOLHOST_PLUGIN(
    {.name = "{{name}}_greet",
     .description = "Greet someone by name.",
     .input_schema = "{\"type\":\"object\",\"properties\":{"
                     "\"name\":{\"type\":\"string\",\"description\":\"Who to greet.\"}},"
                     "\"required\":[\"name\"],\"additionalProperties\":false}",
     .run = greet,
     .output_schema = "{\"type\":\"object\",\"properties\":{\"greeting\":{\"type\":\"string\"}},"
                      "\"required\":[\"greeting\"],\"additionalProperties\":false}",
     .annotations = {.title = "Greet", .read_only = TH_YES}},
)
