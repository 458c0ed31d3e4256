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
 *
 * Besides its tool the plugin offers (contract 0.3) a resource
 * SCHEME://about, a resource template SCHEME://greeting/{name}, a prompt
 * {{name}}_welcome and completions of that prompt's `name`, where SCHEME
 * is the plugin's name with `_` as `-` (the URI scheme the host gives the
 * plugin; build.sh defines it as PLUGIN_SCHEME). TOOLHOST_OFFERS at the
 * end declares them; build.sh then adds the SDK's toolhost_offers.c and
 * the 0.3 bindings. Without TOOLHOST_OFFERS the plugin is a 0.2 plugin,
 * tools only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost.h"

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* "<greeting>, <name>!" with the manifest's [config] greeting (or Hello),
 * malloc'd and NUL-terminated; NULL when out of memory. */
static char *greeting_for(const char *name, size_t name_len) {
    /* th_config's result is ours to free. */
    char *configured = th_config("greeting");
    const char *greeting = configured ? configured : "Hello";
    size_t greeting_len = strlen(greeting);
    size_t len = greeting_len + 2 + name_len + 1;
    char *text = malloc(len + 1);
    if (text) {
        memcpy(text, greeting, greeting_len);
        memcpy(text + greeting_len, ", ", 2);
        memcpy(text + greeting_len + 2, name, name_len);
        text[len - 1] = '!';
        text[len] = 0;
    }
    free(configured);
    return text;
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
    char *text = greeting_for(name.ptr, name.len);
    if (!text) return th_error(out, TH_FAILED, "out of memory");

    th_object_begin(out);
    th_key(out, "greeting");
    th_cstring(out, text);
    th_object_end(out);
    free(text);
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

/* ---- resources, prompts and completions (contract 0.3) ---- */

#ifndef PLUGIN_SCHEME
#error "PLUGIN_SCHEME (the plugin's name with `_` as `-`, a string) is not defined: build with ./build.sh"
#endif

/* SCHEME://about: a Markdown page about the plugin. */
static th_status read_about(const char *uri, const th_args *vars, th_output *out) {
    (void)vars;
    static const char about[] = "# {{name}}\n\nA toolhost plugin in C: the tool `{{name}}_greet` greets "
                                "someone by name, and " PLUGIN_SCHEME "://greeting/NAME reads a greeting.\n";
    th_add_resource_text(out, uri, "text/markdown", about, sizeof about - 1);
    return TH_OK;
}

/* SCHEME://greeting/{name}: the greeting the tool would give `name`. */
static th_status read_greeting(const char *uri, const th_args *vars, th_output *out) {
    const char *name = th_arg_get(vars, "name");
    if (!name) return th_error(out, TH_INVALID_INPUT, "no name in %s", uri);
    char *text = greeting_for(name, strlen(name));
    if (!text) return th_error(out, TH_FAILED, "out of memory");
    th_add_resource_text(out, uri, "text/plain", text, strlen(text));
    free(text);
    return TH_OK;
}

static const th_resource resources[] = {
    {.uri = PLUGIN_SCHEME "://about",
     .name = "about",
     .description = "What this plugin does.",
     .mime_type = "text/markdown",
     .read = read_about},
    {0},
};

static const th_resource templates[] = {
    {.uri = PLUGIN_SCHEME "://greeting/{name}",
     .name = "greeting",
     .description = "The greeting for someone.",
     .mime_type = "text/plain",
     .read = read_greeting},
    {0},
};

/* {{name}}_welcome: one user message asking to welcome `name` (required:
 * the SDK refuses a call without it before this runs). */
static th_status welcome(const th_args *args, th_output *out) {
    static const char format[] = "Please welcome %s to the team, warmly and in one sentence.";
    const char *name = th_arg_get(args, "name");
    size_t len = sizeof format + strlen(name);
    char *text = malloc(len);
    if (!text) return th_error(out, TH_FAILED, "out of memory");
    snprintf(text, len, format, name);
    th_add_text(out, text, strlen(text));
    free(text);
    return TH_OK;
}

static const th_prompt prompts[] = {
    {.name = "{{name}}_welcome",
     .description = "Welcome someone to the team.",
     /* One argument; the list ends at the first without a name. */
     .arguments = {
         {.name = "name", .description = "Who to welcome.", .required = true},
     },
     .get = welcome},
    {0},
};

/* Names for {{name}}_welcome's `name` that start with what was typed. */
static th_status complete_name(const char *value, const th_args *context, th_output *out) {
    (void)context;
    static const char *const names[] = {"Ada", "Alan", "Grace"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(names[i], value, strlen(value)) == 0) th_add_value(out, names[i]);
    return TH_OK;
}

static const th_completer completers[] = {
    {.prompt = "{{name}}_welcome", .argument = "name", .complete = complete_name},
    {0},
};

TOOLHOST_OFFERS(.resources = resources, .templates = templates, .prompts = prompts, .completers = completers)
