/* Native tests of the C SDK's JSON reader and writer and of content parts:
 *   cc -std=c11 -Wall -Werror -Isdk-guest/c sdk-guest/c/tests/json_test.c sdk-guest/c/toolhost_json.c -lm && ./a.out
 * Prints "N passed, N failed" and exits non-zero on a failure. */
#include <stdio.h>
#include <string.h>

#include "toolhost_internal.h"

static int passed, failed;
#define CHECK(cond)                                                         \
    do {                                                                    \
        if (cond) passed++;                                                 \
        else { failed++; fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #cond); } \
    } while (0)

static int streq(th_str s, const char *want) { return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0; }

static void reads_values(void) {
    const char *j = " { \"s\": \"a\\\"b\\\\c\\n\\u00e9\\ud83d\\ude00\", \"n\": -12.5e1, \"i\": 9007199254740993,"
                    " \"t\": true, \"f\": false, \"z\": null, \"o\": {\"x\": [1, \"]\", {}]}, \"e\": \"\" } ";
    th_input in;
    CHECK(th_input_parse(&in, j, strlen(j)));
    th_str s;
    CHECK(th_get_string(&in, "s", &s) && streq(s, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80") && s.ptr[s.len] == 0);
    CHECK(th_get_string(&in, "e", &s) && s.len == 0);
    double d;
    CHECK(th_get_number(&in, "n", &d) && d == -125.0);
    int64_t i;
    CHECK(th_get_int(&in, "i", &i) && i == 9007199254740993LL);
    CHECK(!th_get_int(&in, "n", &i) || i == -125);
    bool b;
    CHECK(th_get_bool(&in, "t", &b) && b);
    CHECK(th_get_bool(&in, "f", &b) && !b);
    CHECK(th_has(&in, "z") && !th_get_string(&in, "z", &s));
    CHECK(th_get_raw(&in, "o", &s) && streq(s, "{\"x\": [1, \"]\", {}]}"));
    CHECK(!th_has(&in, "missing") && !th_get_number(&in, "s", &d) && !th_get_bool(&in, "n", &b));
    th_input_free(&in);
}

static void rejects_non_objects(void) {
    th_input in;
    CHECK(!th_input_parse(&in, "[1]", 3));
    CHECK(!th_input_parse(&in, "{\"a\":", 5));
    CHECK(!th_input_parse(&in, "{\"a\" 1}", 7));
    CHECK(th_input_parse(&in, "{}", 2) && in.count == 0);
    th_input_free(&in);
}

static void writes_json(void) {
    th_output out;
    memset(&out, 0, sizeof out);
    th_object_begin(&out);
    th_key(&out, "a");
    th_array_begin(&out);
    th_int(&out, -3);
    th_number(&out, 0.1);
    th_number(&out, 1.0 / 0.0);
    th_bool(&out, true);
    th_null(&out);
    th_cstring(&out, "q\"\\\x01\n");
    th_object_begin(&out);
    th_object_end(&out);
    th_array_end(&out);
    th_key(&out, "b");
    th_raw(&out, "{\"x\":1}", 7);
    th_object_end(&out);
    const char *want = "{\"a\":[-3,0.1,null,true,null,\"q\\\"\\\\\\u0001\\n\",{}],\"b\":{\"x\":1}}";
    CHECK(out.buf && strcmp(out.buf, want) == 0);
    if (out.buf && strcmp(out.buf, want) != 0) fprintf(stderr, "got  %s\nwant %s\n", out.buf, want);
    CHECK(th_error(&out, TH_INVALID_INPUT, "bad %d", 7) == TH_INVALID_INPUT && strcmp(out.message, "bad 7") == 0);
    th_output_free(&out);
}

static void checks_utf8(void) {
    CHECK(th_utf8_valid("h\xc3\xa9 \xf0\x9f\x98\x80", 8));
    CHECK(!th_utf8_valid("\xc3", 1));
    CHECK(!th_utf8_valid("\xc0\xaf", 2));         /* overlong */
    CHECK(!th_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    CHECK(!th_utf8_valid("\xff", 1));
}

static void collects_content_parts(void) {
    th_output out;
    memset(&out, 0, sizeof out);
    static const unsigned char png[] = {0x89, 'P', 'N', 'G', 0, 0xff};
    char media[] = "image/png";
    th_add_image(&out, media, png, sizeof png);
    media[0] = 'X'; /* the part holds its own copy */
    th_add_text(&out, "caption \xc3\xa9", 10);
    th_add_audio(&out, "audio/wav", "RIFF", 4);
    th_add_resource_text(&out, "file:///notes.md", "text/markdown", "# hi", 4);
    th_add_resource_blob(&out, "file:///a.bin", NULL, "", 0);
    CHECK(out.part_count == 5);
    CHECK(out.parts[0].kind == TH_PART_IMAGE && strcmp(out.parts[0].media_type, "image/png") == 0);
    CHECK(out.parts[0].len == sizeof png && memcmp(out.parts[0].data, png, sizeof png) == 0);
    CHECK(out.parts[1].kind == TH_PART_TEXT && out.parts[1].len == 10 && !out.parts[1].media_type);
    CHECK(out.parts[3].kind == TH_PART_RESOURCE_TEXT && strcmp(out.parts[3].uri, "file:///notes.md") == 0);
    CHECK(out.parts[4].kind == TH_PART_RESOURCE_BLOB && !out.parts[4].media_type && out.parts[4].len == 0);
    CHECK(th_output_problem(&out) == NULL);
    th_output_free(&out);
    CHECK(out.part_count == 0 && out.parts == NULL);
}

static void names_what_cannot_be_sent(void) {
    th_output out;
    memset(&out, 0, sizeof out);
    th_add_text(&out, "\xff", 1);
    CHECK(th_output_problem(&out) && strstr(th_output_problem(&out), "not valid UTF-8"));
    th_output_free(&out);
    th_add_image(&out, "", "x", 1);
    CHECK(th_output_problem(&out) && strstr(th_output_problem(&out), "media type"));
    th_output_free(&out);
    th_add_resource_blob(&out, NULL, "application/octet-stream", "x", 1);
    CHECK(th_output_problem(&out) && strstr(th_output_problem(&out), "URI"));
    th_output_free(&out);
    th_cstring(&out, "\xc0\xaf");
    CHECK(th_output_problem(&out) && strstr(th_output_problem(&out), "output is not valid UTF-8"));
    th_output_free(&out);
}

/* A prompt's messages: each part is one, from the user until th_set_role
 * says otherwise; a completion's values are text parts. */
static void collects_prompt_messages_and_values(void) {
    th_output out;
    memset(&out, 0, sizeof out);
    th_add_text(&out, "hi", 2);
    th_set_role(&out, TH_ASSISTANT);
    th_add_text(&out, "hello", 5);
    th_add_value(&out, "Ada");
    CHECK(out.part_count == 3);
    CHECK(out.parts[0].role == TH_USER && out.parts[1].role == TH_ASSISTANT);
    CHECK(out.parts[2].kind == TH_PART_TEXT && out.parts[2].len == 3 && memcmp(out.parts[2].data, "Ada", 3) == 0);
    th_add_value(&out, "\xff");
    CHECK(th_output_problem(&out) != NULL);
    th_output_free(&out);
}

int main(void) {
    checks_utf8();
    reads_values();
    rejects_non_objects();
    writes_json();
    collects_content_parts();
    names_what_cannot_be_sent();
    collects_prompt_messages_and_values();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
