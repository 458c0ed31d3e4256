/*
 * The component half of the toolhost C SDK: implements the `tool` export of
 * the toolhost:plugin world on top of the plugin's TOOLHOST_PLUGIN table,
 * and wraps the host imports. Uses the committed wit-bindgen output of
 * either series (regenerate with regenerate-bindings.sh): bindings/0.2
 * (toolhost:plugin@0.2.0) or bindings/ (0.1), whichever is on the include
 * path.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "toolhost_internal.h"

/* The 0.2 bindings define content parts; the 0.1 ones do not. */
#ifdef TOOLHOST_PLUGIN_TYPES_CONTENT_IMAGE
#define TH_CONTRACT_0_2 1
#else
#define TH_CONTRACT_0_2 0
#endif

/* Ownership, per the canonical ABI as wit-bindgen's C generator applies it:
 * the export owns its argument strings (freed here), and what it returns is
 * freed by the generated post-return functions after the host has copied
 * it, so every returned string and list must be malloc'd (or empty). */

static void set_error(exports_toolhost_plugin_tool_tool_error_t *err, uint8_t tag, const char *message) {
    err->tag = tag;
    /* Every variant case holds a string at the same place. */
    plugin_string_dup(&err->val.failed, message ? message : "the tool gave no error message");
}

/* ---- what a call hands out, freed when it returns ---- */

typedef struct th_owned {
    struct th_owned *next;
    th_input form;
    char *text;
} th_owned;

static th_owned *call_owned;

static void free_owned(void) {
    while (call_owned) {
        th_owned *next = call_owned->next;
        th_input_free(&call_owned->form);
        free(call_owned->text);
        free(call_owned);
        call_owned = next;
    }
}

/* A malloc'd, NUL-terminated copy of a host string, or NULL. */
static char *copy_host_string(const plugin_string_t *s) {
    char *c = malloc(s->len + 1);
    if (!c) return NULL;
    if (s->len) memcpy(c, s->ptr, s->len);
    c[s->len] = 0;
    return c;
}

/* ---- describe ---- */

#if TH_CONTRACT_0_2
static void option_string(plugin_option_string_t *o, const char *s) {
    o->is_some = s != NULL;
    if (s) plugin_string_dup(&o->val, s);
}

static plugin_option_bool_t hint(th_hint h) {
    plugin_option_bool_t o = {h != TH_UNSET, h == TH_YES};
    return o;
}
#else
/* A 0.1 build cannot carry what 0.2 adds: refuse to load rather than drop it. */
static void refuse_0_2_fields(const th_tool *t) {
    const th_annotations *a = &t->annotations;
    if (t->output_schema || t->meta || a->title || a->read_only || a->destructive || a->idempotent || a->open_world) {
        th_log(TH_ERROR,
               "tool %s declares an output schema, annotations or metadata, which contract 0.1 cannot carry: "
               "build it for 0.2 (without a `contract` file saying 0.1)",
               t->name);
        abort();
    }
}
#endif

void exports_toolhost_plugin_tool_describe(exports_toolhost_plugin_tool_list_tool_info_t *ret) {
    ret->len = 0;
    ret->ptr = calloc(toolhost_tool_count, sizeof(exports_toolhost_plugin_tool_tool_info_t));
    if (!ret->ptr) return;
    for (size_t i = 0; i < toolhost_tool_count; i++) {
        const th_tool *t = &toolhost_tools[i];
        exports_toolhost_plugin_tool_tool_info_t *info = &ret->ptr[i];
        plugin_string_dup(&info->name, t->name);
        plugin_string_dup(&info->description, t->description);
        plugin_string_dup(&info->input_schema, t->input_schema);
#if TH_CONTRACT_0_2
        option_string(&info->output_schema, t->output_schema);
        option_string(&info->meta, t->meta);
        option_string(&info->annotations.title, t->annotations.title);
        info->annotations.read_only = hint(t->annotations.read_only);
        info->annotations.destructive = hint(t->annotations.destructive);
        info->annotations.idempotent = hint(t->annotations.idempotent);
        info->annotations.open_world = hint(t->annotations.open_world);
#else
        refuse_0_2_fields(t);
#endif
    }
    ret->len = toolhost_tool_count;
}

/* ---- call ---- */

static const th_tool *find_tool(const plugin_string_t *name) {
    for (size_t i = 0; i < toolhost_tool_count; i++) {
        const char *n = toolhost_tools[i].name;
        if (strlen(n) == name->len && memcmp(n, name->ptr, name->len) == 0) return &toolhost_tools[i];
    }
    return NULL;
}

#if TH_CONTRACT_0_2
/* Moves a malloc'd buffer into a host list or string: post-return frees it. */
static void move_bytes(uint8_t **ptr, size_t *len, unsigned char **data, size_t n) {
    *ptr = n ? *data : NULL;
    *len = n;
    if (n) *data = NULL;
}

/* Hands the output's JSON and content parts over to `ret`; 0 when out of
 * memory (nothing is handed over then). */
static int hand_over(th_output *out, exports_toolhost_plugin_tool_tool_output_t *ret) {
    memset(ret, 0, sizeof *ret);
    toolhost_plugin_types_content_t *parts = NULL;
    if (out->part_count) {
        parts = calloc(out->part_count, sizeof *parts);
        if (!parts) return 0;
    }
    for (size_t i = 0; i < out->part_count; i++) {
        th_part *p = &out->parts[i];
        toolhost_plugin_types_content_t *c = &parts[i];
        switch (p->kind) {
            case TH_PART_TEXT:
                c->tag = TOOLHOST_PLUGIN_TYPES_CONTENT_TEXT;
                move_bytes(&c->val.text.ptr, &c->val.text.len, &p->data, p->len);
                break;
            case TH_PART_IMAGE:
            case TH_PART_AUDIO: {
                c->tag = p->kind == TH_PART_IMAGE ? TOOLHOST_PLUGIN_TYPES_CONTENT_IMAGE : TOOLHOST_PLUGIN_TYPES_CONTENT_AUDIO;
                toolhost_plugin_types_media_t *m = p->kind == TH_PART_IMAGE ? &c->val.image : &c->val.audio;
                move_bytes(&m->media_type.ptr, &m->media_type.len, (unsigned char **)&p->media_type, strlen(p->media_type));
                move_bytes(&m->data.ptr, &m->data.len, &p->data, p->len);
                break;
            }
            case TH_PART_RESOURCE_TEXT:
            case TH_PART_RESOURCE_BLOB: {
                c->tag = TOOLHOST_PLUGIN_TYPES_CONTENT_RESOURCE;
                toolhost_plugin_types_embedded_resource_t *r = &c->val.resource;
                move_bytes(&r->uri.ptr, &r->uri.len, (unsigned char **)&p->uri, strlen(p->uri));
                if (p->media_type) {
                    r->media_type.is_some = true;
                    move_bytes(&r->media_type.val.ptr, &r->media_type.val.len, (unsigned char **)&p->media_type,
                               strlen(p->media_type));
                }
                if (p->kind == TH_PART_RESOURCE_TEXT) {
                    r->contents.tag = TOOLHOST_PLUGIN_TYPES_RESOURCE_CONTENTS_TEXT;
                    move_bytes(&r->contents.val.text.ptr, &r->contents.val.text.len, &p->data, p->len);
                } else {
                    r->contents.tag = TOOLHOST_PLUGIN_TYPES_RESOURCE_CONTENTS_BLOB;
                    move_bytes(&r->contents.val.blob.ptr, &r->contents.val.blob.len, &p->data, p->len);
                }
                break;
            }
        }
    }
    ret->content.ptr = parts;
    ret->content.len = out->part_count;
    if (out->len > 0) {
        ret->json.is_some = true;
        move_bytes(&ret->json.val.ptr, &ret->json.val.len, (unsigned char **)&out->buf, out->len);
    } else if (out->part_count == 0) {
        /* Nothing written at all: `null`, as a 0.1 plugin answered. */
        ret->json.is_some = true;
        plugin_string_dup(&ret->json.val, "null");
    }
    return 1;
}
#endif

#if TH_CONTRACT_0_2
typedef exports_toolhost_plugin_tool_tool_output_t th_call_ret;
#else
typedef plugin_string_t th_call_ret;
#endif

bool exports_toolhost_plugin_tool_call(plugin_string_t *name, plugin_string_t *input, th_call_ret *ret,
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
    if (status == TH_OK) {
        const char *problem = th_output_problem(&out);
#if !TH_CONTRACT_0_2
        if (!problem && out.part_count)
            problem = "content parts need contract 0.2: build the plugin for 0.2 (without a `contract` file "
                      "saying 0.1)";
#endif
        if (problem) status = th_error(&out, TH_FAILED, "%s", problem);
    }
    switch (status) {
        case TH_OK:
#if TH_CONTRACT_0_2
            ok = hand_over(&out, ret);
            if (!ok) set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_FAILED, "out of memory while handing over the output");
#else
            if (out.len == 0) {
                plugin_string_dup(ret, "null");
            } else {
                /* Hand the buffer over: post-return frees it. */
                ret->ptr = (uint8_t *)out.buf;
                ret->len = out.len;
                out.buf = NULL;
            }
            ok = true;
#endif
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
    free_owned();
    plugin_string_free(name);
    plugin_string_free(input);
    return ok;
}

/* ---- host imports ---- */

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
    char *s = copy_host_string(&value);
    plugin_string_free(&value);
    return s;
}

#if TH_CONTRACT_0_2
/* Keeps `text` (and a form parsed from it) until the call returns. */
static th_owned *own(char *text) {
    th_owned *o = calloc(1, sizeof *o);
    if (!o) {
        free(text);
        return NULL;
    }
    o->text = text;
    o->next = call_owned;
    call_owned = o;
    return o;
}

void th_progress(double done, double total, const char *message) {
    /* NaN compares false: unknown too. */
    double *maybe_total = total >= 0 ? &total : NULL;
    plugin_string_t text;
    plugin_string_t *maybe_message = NULL;
    /* The host can only take UTF-8; a report without its message beats none. */
    if (message && th_utf8_valid(message, strlen(message))) {
        plugin_string_set(&text, message);
        maybe_message = &text;
    }
    toolhost_plugin_progress_report(done, maybe_total, maybe_message);
}

th_answer th_ask(const char *message, const char *schema) {
    th_answer answer = {TH_ASK_INVALID_SCHEMA, NULL, "the question and its schema must be UTF-8 text"};
    if (!message || !schema || !th_utf8_valid(message, strlen(message)) || !th_utf8_valid(schema, strlen(schema)))
        return answer;
    plugin_string_t m, s;
    plugin_string_set(&m, message);
    plugin_string_set(&s, schema);
    toolhost_plugin_user_answer_t ret;
    toolhost_plugin_user_ask_error_t err;
    if (!toolhost_plugin_user_ask(&m, &s, &ret, &err)) {
        switch (err.tag) {
            case TOOLHOST_PLUGIN_USER_ASK_ERROR_UNAVAILABLE: answer.status = TH_ASK_UNAVAILABLE; break;
            case TOOLHOST_PLUGIN_USER_ASK_ERROR_OVER_BUDGET: answer.status = TH_ASK_OVER_BUDGET; break;
            default: answer.status = TH_ASK_INVALID_SCHEMA; break;
        }
        /* Every case holds a string at the same place. */
        th_owned *o = own(copy_host_string(&err.val.unavailable));
        answer.error = o && o->text ? o->text : "out of memory for the host's answer";
        toolhost_plugin_user_ask_error_free(&err);
        return answer;
    }
    answer.error = NULL;
    switch (ret.tag) {
        case TOOLHOST_PLUGIN_USER_ANSWER_ACCEPT: {
            th_owned *o = own(copy_host_string(&ret.val.accept));
            if (o && o->text && th_input_parse(&o->form, o->text, ret.val.accept.len)) {
                answer.status = TH_ASK_ACCEPT;
                answer.form = &o->form;
            } else {
                answer.status = TH_ASK_BAD_ANSWER;
                answer.error = o && o->text ? "the answer is not a JSON object" : "out of memory for the answer";
            }
            break;
        }
        case TOOLHOST_PLUGIN_USER_ANSWER_DECLINE: answer.status = TH_ASK_DECLINE; break;
        default: answer.status = TH_ASK_CANCEL; break;
    }
    toolhost_plugin_user_answer_free(&ret);
    return answer;
}
#endif
