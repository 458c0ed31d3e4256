/*
 * The component half of the toolhost C SDK: implements the `tool` export of
 * the toolhost:plugin world on top of the plugin's TOOLHOST_PLUGIN table,
 * and wraps the `host` imports. Uses the committed wit-bindgen output in
 * bindings/ (regenerate with regenerate-bindings.sh).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "toolhost_internal.h"

/* Ownership, per the canonical ABI as wit-bindgen's C generator applies it:
 * the export owns its argument strings (freed here), and what it returns is
 * freed by the generated post-return functions after the host has copied
 * it, so every returned string must be malloc'd. */

static void set_error(exports_toolhost_plugin_tool_tool_error_t *err, uint8_t tag, const char *message) {
    err->tag = tag;
    /* Every variant case holds a string at the same place. */
    plugin_string_dup(&err->val.failed, message ? message : "the tool gave no error message");
}

void exports_toolhost_plugin_tool_describe(exports_toolhost_plugin_tool_list_tool_info_t *ret) {
    ret->len = 0;
    ret->ptr = malloc(toolhost_tool_count * sizeof(exports_toolhost_plugin_tool_tool_info_t));
    if (!ret->ptr) return;
    for (size_t i = 0; i < toolhost_tool_count; i++) {
        plugin_string_dup(&ret->ptr[i].name, toolhost_tools[i].name);
        plugin_string_dup(&ret->ptr[i].description, toolhost_tools[i].description);
        plugin_string_dup(&ret->ptr[i].input_schema, toolhost_tools[i].input_schema);
    }
    ret->len = toolhost_tool_count;
}

static const th_tool *find_tool(const plugin_string_t *name) {
    for (size_t i = 0; i < toolhost_tool_count; i++) {
        const char *n = toolhost_tools[i].name;
        if (strlen(n) == name->len && memcmp(n, name->ptr, name->len) == 0) return &toolhost_tools[i];
    }
    return NULL;
}

bool exports_toolhost_plugin_tool_call(plugin_string_t *name, plugin_string_t *input, plugin_string_t *ret,
                                       exports_toolhost_plugin_tool_tool_error_t *err) {
    bool ok = false;
    const th_tool *tool = find_tool(name);
    if (!tool) {
        size_t n = name->len > 64 ? 64 : name->len;
        char shown[65];
        memcpy(shown, name->ptr, n);
        shown[n] = 0;
        th_output tmp = {0};
        th_error(&tmp, TH_FAILED, "no tool named `%s` in this plugin", shown);
        set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_UNKNOWN_TOOL, tmp.message);
        th_output_free(&tmp);
        goto done;
    }

    th_input in;
    if (!th_input_parse(&in, (const char *)input->ptr, input->len)) {
        set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_INVALID_INPUT, "the input is not a JSON object");
        goto done;
    }
    th_output out;
    memset(&out, 0, sizeof out);
    th_status status = tool->run(&in, &out);
    if (status == TH_OK && out.oom) {
        status = th_error(&out, TH_FAILED, "out of memory while writing the output");
    } else if (status == TH_OK && !th_utf8_valid(out.buf, out.len)) {
        status = th_error(&out, TH_FAILED, "the tool's output is not valid UTF-8");
    }
    switch (status) {
        case TH_OK:
            if (out.len == 0) {
                plugin_string_dup(ret, "null");
            } else {
                /* Hand the buffer over: post-return frees it. */
                ret->ptr = (uint8_t *)out.buf;
                ret->len = out.len;
                out.buf = NULL;
            }
            ok = true;
            break;
        case TH_INVALID_INPUT:
            set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_INVALID_INPUT, out.message);
            break;
        case TH_DENIED:
            set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_DENIED, out.message);
            break;
        default:
            set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_FAILED, out.message);
            break;
    }
    th_output_free(&out);
    th_input_free(&in);
done:
    plugin_string_free(name);
    plugin_string_free(input);
    return ok;
}

void th_log(th_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *text = th_vformat(fmt, ap);
    va_end(ap);
    if (!text) return;
    plugin_string_t message;
    plugin_string_set(&message, text);
    toolhost_plugin_host_log((toolhost_plugin_host_level_t)level, &message);
    free(text);
}

char *th_config(const char *key) {
    plugin_string_t k, value;
    plugin_string_set(&k, key);
    if (!toolhost_plugin_host_config(&k, &value)) return NULL;
    char *s = malloc(value.len + 1);
    if (s) {
        memcpy(s, value.ptr, value.len);
        s[value.len] = 0;
    }
    plugin_string_free(&value);
    return s;
}
