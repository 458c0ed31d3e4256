/*
 * The offers half of the toolhost C SDK (contract 0.3): implements the
 * `resources`, `prompts` and `completions` exports of the
 * toolhost:plugin@0.3.0 `offers` world on top of the plugin's
 * TOOLHOST_OFFERS table. Built only into a plugin that offers something,
 * with the committed wit-bindgen output in bindings/0.3 (offers.c and
 * offers_component_type.o); wit-component merges that world with 0.2's
 * `plugin` (bindings/0.2) into the component's. A plugin built without
 * this file exports none of them and is a 0.2 plugin.
 *
 * Ownership is as in toolhost.c: the exports own their arguments (freed
 * here) and what they return is freed by the generated post-return
 * functions, so everything returned is malloc'd.
 */
#include <stdlib.h>
#include <string.h>

#include "offers.h"
#include "toolhost_internal.h"

typedef toolhost_plugin_offer_types_offer_error_t offer_error_t;

const char *th_arg_get(const th_args *args, const char *name) {
    for (size_t i = 0; i < args->count; i++)
        if (strcmp(args->items[i].name, name) == 0) return args->items[i].value;
    return NULL;
}

/* ---- from the host ---- */

/* A malloc'd, NUL-terminated copy of a host string, or NULL. */
static char *copy_string(const offers_string_t *s) {
    char *c = malloc(s->len + 1);
    if (!c) return NULL;
    if (s->len) memcpy(c, s->ptr, s->len);
    c[s->len] = 0;
    return c;
}

/* The host's arguments as th_args: NUL-terminated copies. */
typedef struct {
    th_args args;
    th_arg *items;
} owned_args;

static int take_args(owned_args *o, const toolhost_plugin_offer_types_arguments_t *from) {
    memset(o, 0, sizeof *o);
    if (from->len == 0) return 1;
    o->items = calloc(from->len, sizeof *o->items);
    if (!o->items) return 0;
    o->args.items = o->items;
    for (size_t i = 0; i < from->len; i++) {
        o->items[i].name = copy_string(&from->ptr[i].f0);
        o->items[i].value = copy_string(&from->ptr[i].f1);
        o->args.count = i + 1;
        if (!o->items[i].name || !o->items[i].value) return 0;
    }
    return 1;
}

static void free_args(owned_args *o) {
    for (size_t i = 0; i < o->args.count; i++) {
        free((char *)o->items[i].name);
        free((char *)o->items[i].value);
    }
    free(o->items);
}

/* ---- to the host ---- */

static void set_error(offer_error_t *err, th_status status, const char *message) {
    switch (status) {
        case TH_NOT_FOUND: err->tag = TOOLHOST_PLUGIN_OFFER_TYPES_OFFER_ERROR_NOT_FOUND; break;
        case TH_INVALID_INPUT: err->tag = TOOLHOST_PLUGIN_OFFER_TYPES_OFFER_ERROR_INVALID_INPUT; break;
        case TH_DENIED: err->tag = TOOLHOST_PLUGIN_OFFER_TYPES_OFFER_ERROR_DENIED; break;
        default: err->tag = TOOLHOST_PLUGIN_OFFER_TYPES_OFFER_ERROR_FAILED; break;
    }
    /* Every case holds a string at the same place. */
    const char *text = message && th_utf8_valid(message, strlen(message)) ? message : "the plugin gave no error message";
    offers_string_dup(&err->val.failed, text);
}

static void option_string(offers_option_string_t *o, const char *s) {
    o->is_some = s != NULL;
    if (s) offers_string_dup(&o->val, s);
}

/* Moves a malloc'd buffer into a host list or string: post-return frees it. */
static void move_bytes(uint8_t **ptr, size_t *len, unsigned char **data, size_t n) {
    *ptr = n ? *data : NULL;
    *len = n;
    if (n) *data = NULL;
}

/* Moves a part's malloc'd C string into an optional host string. */
static void move_option(offers_option_string_t *o, char **s) {
    o->is_some = *s != NULL;
    if (*s) move_bytes(&o->val.ptr, &o->val.len, (unsigned char **)s, strlen(*s));
}

/* Runs an offer function on a fresh output; TH_OK only when what it wrote
 * can be sent. */
static th_status run_checked(th_output *out, th_status status) {
    if (status == TH_OK) {
        const char *problem = th_output_problem(out);
        if (problem) status = th_error(out, TH_FAILED, "%s", problem);
    }
    return status;
}

/* ---- resources ---- */

static size_t count_resources(const th_resource *list) {
    size_t n = 0;
    while (list && list[n].uri) n++;
    return n;
}

static void resource_info(toolhost_plugin_offer_types_resource_info_t *info, const th_resource *r) {
    offers_string_dup(&info->uri, r->uri);
    offers_string_dup(&info->name, r->name ? r->name : r->uri);
    option_string(&info->description, r->description);
    option_string(&info->mime_type, r->mime_type);
    option_string(&info->meta, r->meta);
}

void exports_toolhost_plugin_resources_list_resources(exports_toolhost_plugin_resources_list_resource_info_t *ret) {
    size_t n = count_resources(toolhost_offers.resources);
    ret->len = 0;
    ret->ptr = n ? calloc(n, sizeof *ret->ptr) : NULL;
    if (n && !ret->ptr) return;
    for (size_t i = 0; i < n; i++) resource_info(&ret->ptr[i], &toolhost_offers.resources[i]);
    ret->len = n;
}

void exports_toolhost_plugin_resources_list_templates(exports_toolhost_plugin_resources_list_template_info_t *ret) {
    size_t n = count_resources(toolhost_offers.templates);
    ret->len = 0;
    ret->ptr = n ? calloc(n, sizeof *ret->ptr) : NULL;
    if (n && !ret->ptr) return;
    for (size_t i = 0; i < n; i++) {
        /* A template's record is a resource's, field for field. */
        resource_info((toolhost_plugin_offer_types_resource_info_t *)&ret->ptr[i], &toolhost_offers.templates[i]);
    }
    ret->len = n;
}

/* Whether level-1 template `t`, with `vars` filled in, is `uri`: the host
 * matched a template and gives its variables, so the one that expands to
 * the URI is it. */
static int expands_to(const char *t, const th_args *vars, const char *uri) {
    while (*t) {
        if (*t == '{') {
            const char *end = strchr(t, '}');
            if (!end) return 0;
            const char *value = NULL;
            for (size_t i = 0; i < vars->count && !value; i++) {
                const char *name = vars->items[i].name;
                if (strlen(name) == (size_t)(end - t - 1) && memcmp(name, t + 1, end - t - 1) == 0)
                    value = vars->items[i].value;
            }
            if (!value) return 0;
            size_t n = strlen(value);
            if (strncmp(uri, value, n) != 0) return 0;
            uri += n;
            t = end + 1;
        } else {
            if (*uri != *t) return 0;
            uri++;
            t++;
        }
    }
    return *uri == 0;
}

static const th_resource *find_resource(const char *uri, const th_args *vars) {
    const th_resource *r = toolhost_offers.resources;
    for (size_t i = 0; r && r[i].uri; i++)
        if (strcmp(r[i].uri, uri) == 0) return &r[i];
    r = toolhost_offers.templates;
    for (size_t i = 0; r && r[i].uri; i++)
        if (expands_to(r[i].uri, vars, uri)) return &r[i];
    return NULL;
}

/* Hands the read's parts over; 0 when out of memory. Text parts are the
 * URI read, with the resource's MIME type; images and audio its bytes. */
static int hand_over_parts(th_output *out, const char *uri, const th_resource *r,
                           exports_toolhost_plugin_resources_list_resource_part_t *ret) {
    ret->len = 0;
    ret->ptr = out->part_count ? calloc(out->part_count, sizeof *ret->ptr) : NULL;
    if (out->part_count && !ret->ptr) return 0;
    for (size_t i = 0; i < out->part_count; i++) {
        th_part *p = &out->parts[i];
        toolhost_plugin_offer_types_resource_part_t *part = &ret->ptr[i];
        if (p->kind == TH_PART_RESOURCE_TEXT || p->kind == TH_PART_RESOURCE_BLOB) {
            move_bytes(&part->uri.ptr, &part->uri.len, (unsigned char **)&p->uri, strlen(p->uri));
        } else {
            offers_string_dup(&part->uri, uri);
            if (!p->media_type && r->mime_type) p->media_type = strdup(r->mime_type);
        }
        move_option(&part->mime_type, &p->media_type);
        if (p->kind == TH_PART_TEXT || p->kind == TH_PART_RESOURCE_TEXT) {
            part->contents.tag = TOOLHOST_PLUGIN_OFFER_TYPES_CONTENTS_TEXT;
            move_bytes(&part->contents.val.text.ptr, &part->contents.val.text.len, &p->data, p->len);
        } else {
            part->contents.tag = TOOLHOST_PLUGIN_OFFER_TYPES_CONTENTS_BLOB;
            move_bytes(&part->contents.val.blob.ptr, &part->contents.val.blob.len, &p->data, p->len);
        }
    }
    ret->len = out->part_count;
    return 1;
}

bool exports_toolhost_plugin_resources_read(offers_string_t *uri, toolhost_plugin_offer_types_arguments_t *vars,
                                            exports_toolhost_plugin_resources_list_resource_part_t *ret,
                                            offer_error_t *err) {
    bool ok = false;
    owned_args args = {0};
    char *u = copy_string(uri);
    th_output out;
    memset(&out, 0, sizeof out);
    th_status status;
    const th_resource *r = NULL;
    if (!u || !take_args(&args, vars)) {
        status = th_error(&out, TH_FAILED, "out of memory for the request");
    } else if (!(r = find_resource(u, &args.args)) || !r->read) {
        status = th_error(&out, TH_NOT_FOUND, "no resource %s in this plugin", u);
    } else {
        status = run_checked(&out, r->read(u, &args.args, &out));
    }
    if (status == TH_OK) {
        ok = hand_over_parts(&out, u, r, ret);
        if (!ok) set_error(err, TH_FAILED, "out of memory while handing over the read");
    } else {
        set_error(err, status, out.message);
    }
    th_output_free(&out);
    free_args(&args);
    free(u);
    offers_string_free(uri);
    toolhost_plugin_offer_types_arguments_free(vars);
    return ok;
}

/* ---- prompts ---- */

static size_t count_prompts(void) {
    size_t n = 0;
    while (toolhost_offers.prompts && toolhost_offers.prompts[n].name) n++;
    return n;
}

static size_t count_prompt_args(const th_prompt *p) {
    size_t n = 0;
    while (n < TH_MAX_PROMPT_ARGS && p->arguments[n].name) n++;
    return n;
}

void exports_toolhost_plugin_prompts_list_prompts(exports_toolhost_plugin_prompts_list_prompt_info_t *ret) {
    size_t n = count_prompts();
    ret->len = 0;
    ret->ptr = n ? calloc(n, sizeof *ret->ptr) : NULL;
    if (n && !ret->ptr) return;
    for (size_t i = 0; i < n; i++) {
        const th_prompt *p = &toolhost_offers.prompts[i];
        toolhost_plugin_offer_types_prompt_info_t *info = &ret->ptr[i];
        offers_string_dup(&info->name, p->name);
        option_string(&info->description, p->description);
        option_string(&info->meta, p->meta);
        size_t m = count_prompt_args(p);
        info->arguments.ptr = m ? calloc(m, sizeof *info->arguments.ptr) : NULL;
        if (m && !info->arguments.ptr) continue;
        for (size_t j = 0; j < m; j++) {
            toolhost_plugin_offer_types_prompt_argument_t *a = &info->arguments.ptr[j];
            offers_string_dup(&a->name, p->arguments[j].name);
            option_string(&a->description, p->arguments[j].description);
            a->required = p->arguments[j].required;
        }
        info->arguments.len = m;
    }
    ret->len = n;
}

static const th_prompt *find_prompt(const char *name) {
    for (size_t i = 0; i < count_prompts(); i++)
        if (strcmp(toolhost_offers.prompts[i].name, name) == 0) return &toolhost_offers.prompts[i];
    return NULL;
}

/* Hands the prompt's parts over as messages; 0 when out of memory. */
static int hand_over_messages(th_output *out, toolhost_plugin_offer_types_prompt_reply_t *ret) {
    memset(ret, 0, sizeof *ret);
    ret->messages.ptr = out->part_count ? calloc(out->part_count, sizeof *ret->messages.ptr) : NULL;
    if (out->part_count && !ret->messages.ptr) return 0;
    for (size_t i = 0; i < out->part_count; i++) {
        th_part *p = &out->parts[i];
        toolhost_plugin_offer_types_message_t *m = &ret->messages.ptr[i];
        m->role = p->role == TH_ASSISTANT ? TOOLHOST_PLUGIN_OFFER_TYPES_ROLE_ASSISTANT : TOOLHOST_PLUGIN_OFFER_TYPES_ROLE_USER;
        toolhost_plugin_offer_types_part_t *c = &m->content;
        switch (p->kind) {
            case TH_PART_TEXT:
                c->tag = TOOLHOST_PLUGIN_OFFER_TYPES_PART_TEXT;
                move_bytes(&c->val.text.ptr, &c->val.text.len, &p->data, p->len);
                break;
            case TH_PART_IMAGE:
            case TH_PART_AUDIO: {
                c->tag = p->kind == TH_PART_IMAGE ? TOOLHOST_PLUGIN_OFFER_TYPES_PART_IMAGE : TOOLHOST_PLUGIN_OFFER_TYPES_PART_AUDIO;
                toolhost_plugin_offer_types_media_t *media = p->kind == TH_PART_IMAGE ? &c->val.image : &c->val.audio;
                move_bytes(&media->media_type.ptr, &media->media_type.len, (unsigned char **)&p->media_type,
                           strlen(p->media_type));
                move_bytes(&media->data.ptr, &media->data.len, &p->data, p->len);
                break;
            }
            case TH_PART_RESOURCE_TEXT:
            case TH_PART_RESOURCE_BLOB: {
                c->tag = TOOLHOST_PLUGIN_OFFER_TYPES_PART_RESOURCE;
                toolhost_plugin_offer_types_resource_part_t *r = &c->val.resource;
                move_bytes(&r->uri.ptr, &r->uri.len, (unsigned char **)&p->uri, strlen(p->uri));
                move_option(&r->mime_type, &p->media_type);
                if (p->kind == TH_PART_RESOURCE_TEXT) {
                    r->contents.tag = TOOLHOST_PLUGIN_OFFER_TYPES_CONTENTS_TEXT;
                    move_bytes(&r->contents.val.text.ptr, &r->contents.val.text.len, &p->data, p->len);
                } else {
                    r->contents.tag = TOOLHOST_PLUGIN_OFFER_TYPES_CONTENTS_BLOB;
                    move_bytes(&r->contents.val.blob.ptr, &r->contents.val.blob.len, &p->data, p->len);
                }
                break;
            }
        }
    }
    ret->messages.len = out->part_count;
    return 1;
}

bool exports_toolhost_plugin_prompts_get(offers_string_t *name, toolhost_plugin_offer_types_arguments_t *arguments,
                                         toolhost_plugin_offer_types_prompt_reply_t *ret, offer_error_t *err) {
    bool ok = false;
    owned_args args = {0};
    char *n = copy_string(name);
    th_output out;
    memset(&out, 0, sizeof out);
    th_status status = TH_OK;
    const th_prompt *p = NULL;
    if (!n || !take_args(&args, arguments)) {
        status = th_error(&out, TH_FAILED, "out of memory for the request");
    } else if (!(p = find_prompt(n)) || !p->get) {
        status = th_error(&out, TH_NOT_FOUND, "no prompt named `%s` in this plugin", n);
    } else {
        for (size_t i = 0; i < count_prompt_args(p) && status == TH_OK; i++)
            if (p->arguments[i].required && !th_arg_get(&args.args, p->arguments[i].name))
                status = th_error(&out, TH_INVALID_INPUT, "prompt %s needs its argument %s", n, p->arguments[i].name);
        if (status == TH_OK) status = run_checked(&out, p->get(&args.args, &out));
    }
    if (status == TH_OK) {
        ok = hand_over_messages(&out, ret);
        if (!ok) set_error(err, TH_FAILED, "out of memory while handing over the prompt");
    } else {
        set_error(err, status, out.message);
    }
    th_output_free(&out);
    free_args(&args);
    free(n);
    offers_string_free(name);
    toolhost_plugin_offer_types_arguments_free(arguments);
    return ok;
}

/* ---- completions ---- */

static const th_completer *find_completer(bool template, const char *name, const char *argument) {
    const th_completer *c = toolhost_offers.completers;
    for (size_t i = 0; c && (c[i].prompt || c[i].template_uri); i++) {
        const char *target = template ? c[i].template_uri : c[i].prompt;
        if (target && c[i].argument && strcmp(target, name) == 0 && strcmp(c[i].argument, argument) == 0)
            return &c[i];
    }
    return NULL;
}

bool exports_toolhost_plugin_completions_complete(exports_toolhost_plugin_completions_target_t *target,
                                                  offers_string_t *argument, offers_string_t *value,
                                                  toolhost_plugin_offer_types_arguments_t *context,
                                                  toolhost_plugin_offer_types_completion_t *ret, offer_error_t *err) {
    bool ok = false;
    owned_args args = {0};
    bool template = target->tag == EXPORTS_TOOLHOST_PLUGIN_COMPLETIONS_TARGET_TEMPLATE;
    /* Both cases hold a string at the same place. */
    char *name = copy_string(&target->val.prompt);
    char *arg = copy_string(argument);
    char *typed = copy_string(value);
    th_output out;
    memset(&out, 0, sizeof out);
    th_status status = TH_OK;
    const th_completer *c = NULL;
    if (!name || !arg || !typed || !take_args(&args, context)) {
        status = th_error(&out, TH_FAILED, "out of memory for the request");
    } else if ((c = find_completer(template, name, arg)) && c->complete) {
        /* Nothing to complete is no values, not an error. */
        status = run_checked(&out, c->complete(typed, &args.args, &out));
    }
    if (status == TH_OK) {
        memset(ret, 0, sizeof *ret);
        ret->values.ptr = out.part_count ? calloc(out.part_count, sizeof *ret->values.ptr) : NULL;
        ok = !out.part_count || ret->values.ptr;
        for (size_t i = 0; ok && i < out.part_count; i++)
            move_bytes(&ret->values.ptr[i].ptr, &ret->values.ptr[i].len, &out.parts[i].data, out.parts[i].len);
        if (ok) ret->values.len = out.part_count;
        else set_error(err, TH_FAILED, "out of memory while handing over the completion");
    } else {
        set_error(err, status, out.message);
    }
    th_output_free(&out);
    free_args(&args);
    free(name);
    free(arg);
    free(typed);
    exports_toolhost_plugin_completions_target_free(target);
    offers_string_free(argument);
    offers_string_free(value);
    toolhost_plugin_offer_types_arguments_free(context);
    return ok;
}
