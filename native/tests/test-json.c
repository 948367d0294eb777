/*
 * railgauge: tests of the streaming JSON writer.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/json.h"
#include "task.h"

TEST_IMPL(json_nested)
{
    char      buf[256];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_int(&js, "a", 1);
    rg_json_key(&js, "b");
    rg_json_array_begin(&js);
    rg_json_int(&js, 1);
    rg_json_uint(&js, 2);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "c", "d");
    rg_json_object_end(&js);
    rg_json_array_begin(&js);
    rg_json_array_end(&js);
    rg_json_array_end(&js);
    rg_json_key(&js, "e");
    rg_json_object_begin(&js);
    rg_json_object_end(&js);
    rg_json_kv_bool(&js, "f", 1);
    rg_json_kv_bool(&js, "g", 0);
    rg_json_key(&js, "h");
    rg_json_null(&js);
    rg_json_kv_string(&js, "i", NULL);
    rg_json_kv_double(&js, "j", 2.5);
    rg_json_kv_uint(&js, "k", 7);
    rg_json_key(&js, "l");
    rg_json_raw(&js, "{\"mtu\":9000}");
    rg_json_object_end(&js);

    ASSERT_INT_EQ(js.status, RG_OK);
    ASSERT_STR_EQ(rg_json_text(&js),
                  "{\"a\":1,\"b\":[1,2,{\"c\":\"d\"},[]],\"e\":{},\"f\":true,"
                  "\"g\":false,\"h\":null,\"i\":null,\"j\":2.5,\"k\":7,"
                  "\"l\":{\"mtu\":9000}}");
    ASSERT_INT_EQ(js.len, strlen(buf));

    /* A top-level array is a record too. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_array_begin(&js);
    rg_json_string(&js, "x");
    rg_json_array_begin(&js);
    rg_json_int(&js, -3);
    rg_json_array_end(&js);
    rg_json_array_end(&js);
    ASSERT_STR_EQ(rg_json_text(&js), "[\"x\",[-3]]");
    return 0;
}

TEST_IMPL(json_escape)
{
    char      buf[256];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_array_begin(&js);
    rg_json_string(&js, "q\"b\\s/n\nr\rt\tc\x01" "e\x1f" "d\x7f");
    rg_json_string(&js, "");
    rg_json_string(&js, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* A lone continuation byte, a truncated sequence, an overlong '/', a
     * surrogate and a lead byte at the very end are not UTF-8. */
    rg_json_string(&js, "a\x80" "b\xc3" "c\xc0\xaf" "d\xed\xa0\x80" "e\xe2");
    rg_json_array_end(&js);
    ASSERT_STR_EQ(rg_json_text(&js),
                  "[\"q\\\"b\\\\s/n\\nr\\rt\\tc\\u0001e\\u001fd\x7f\","
                  "\"\","
                  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                  "\"a\\ufffdb\\ufffdc\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffde\\ufffd\"]");

    /* Keys are escaped the same way. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_int(&js, "k\"\n", 1);
    rg_json_object_end(&js);
    ASSERT_STR_EQ(rg_json_text(&js), "{\"k\\\"\\n\":1}");
    return 0;
}

TEST_IMPL(json_numbers)
{
    char      buf[512];
    rg_json_t js;

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_array_begin(&js);
    rg_json_double(&js, 0.1);
    rg_json_double(&js, 0.1 + 0.2);
    rg_json_double(&js, 1.0 / 3.0);
    rg_json_double(&js, 5.0);
    rg_json_double(&js, -0.0);
    rg_json_double(&js, 1e300);
    rg_json_double(&js, 1234.5678);
    rg_json_double(&js, 5e-324);
    rg_json_double(&js, NAN);
    rg_json_double(&js, INFINITY);
    rg_json_double(&js, -INFINITY);
    rg_json_int(&js, INT64_MIN);
    rg_json_int(&js, INT64_MAX);
    rg_json_uint(&js, UINT64_MAX);
    rg_json_int(&js, 0);
    rg_json_array_end(&js);
    ASSERT_STR_EQ(rg_json_text(&js),
                  "[0.1,0.30000000000000004,0.3333333333333333,5.0,-0.0,"
                  "1e+300,1234.5678,4.94065645841247e-324,null,null,null,"
                  "-9223372036854775808,9223372036854775807,"
                  "18446744073709551615,0]");
    return 0;
}

TEST_IMPL(json_double_roundtrip)
{
    uint64_t  state = 7, bits;
    char      buf[64];
    rg_json_t js;
    double    v, back;
    int       i;

    /* Random bit patterns cover every exponent; each finite one must read
     * back as exactly the same double. */
    for (i = 0; i < 20000; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        bits  = state ^ (state >> 29);
        memcpy(&v, &bits, sizeof(v));
        if (!isfinite(v)) {
            continue;
        }
        rg_json_init(&js, buf, sizeof(buf));
        rg_json_double(&js, v);
        ASSERT(rg_json_text(&js) != NULL);
        back = strtod(buf, NULL);
        if (memcmp(&back, &v, sizeof(v)) != 0) {
            RG__TEST_FAIL("%.17g was written as %s", v, buf);
        }
    }
    return 0;
}

TEST_IMPL(json_overflow)
{
    char      buf[16 + 4];
    rg_json_t js;
    size_t    cap = 16, i;

    /* Canary bytes after the buffer the writer is given. */
    memset(buf, '#', sizeof(buf));
    rg_json_init(&js, buf, cap);
    rg_json_object_begin(&js);
    rg_json_kv_string(&js, "k", "12345");    /* {"k":"12345" is 12 bytes */
    ASSERT_STR_EQ(rg_json_text(&js), "{\"k\":\"12345\"");
    rg_json_kv_string(&js, "x", "y");        /* would need 20 + NUL */
    ASSERT_INT_EQ(js.status, RG_ERR_RANGE);
    ASSERT(rg_json_text(&js) == NULL);
    /* Sticky: a write that would fit does not clear the error. */
    rg_json_object_end(&js);
    ASSERT_INT_EQ(js.status, RG_ERR_RANGE);
    ASSERT(rg_json_text(&js) == NULL);
    /* The text stays terminated and within cap; the canary is intact. */
    ASSERT(strlen(buf) < cap);
    for (i = cap; i < sizeof(buf); i++) {
        ASSERT(buf[i] == '#');
    }

    /* Exactly full: 15 characters and the NUL fit in 16 bytes. */
    rg_json_init(&js, buf, cap);
    rg_json_string(&js, "abcdefghijklm");
    ASSERT_STR_EQ(rg_json_text(&js), "\"abcdefghijklm\"");
    rg_json_init(&js, buf, cap);
    rg_json_string(&js, "abcdefghijklmn");
    ASSERT(rg_json_text(&js) == NULL);

    /* No buffer at all. */
    rg_json_init(&js, buf, 0);
    rg_json_null(&js);
    ASSERT_INT_EQ(js.status, RG_ERR_RANGE);
    rg_json_init(&js, NULL, 10);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);
    ASSERT(rg_json_text(&js) == NULL);
    return 0;
}

TEST_IMPL(json_depth)
{
    char      buf[256];
    rg_json_t js;
    int       i;

    /* RG_JSON_MAX_DEPTH levels are allowed... */
    rg_json_init(&js, buf, sizeof(buf));
    for (i = 0; i < RG_JSON_MAX_DEPTH; i++) {
        rg_json_array_begin(&js);
    }
    for (i = 0; i < RG_JSON_MAX_DEPTH; i++) {
        rg_json_array_end(&js);
    }
    ASSERT_INT_EQ(js.status, RG_OK);
    ASSERT_INT_EQ(js.len, 2 * RG_JSON_MAX_DEPTH);

    /* ...one more is RG_ERR_RANGE. */
    rg_json_init(&js, buf, sizeof(buf));
    for (i = 0; i <= RG_JSON_MAX_DEPTH; i++) {
        rg_json_object_begin(&js);
        rg_json_key(&js, "k");
    }
    ASSERT_INT_EQ(js.status, RG_ERR_RANGE);
    ASSERT(rg_json_text(&js) == NULL);
    return 0;
}

TEST_IMPL(json_misuse)
{
    char      buf[64];
    rg_json_t js;

    /* An end without a begin. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_end(&js);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);

    /* A key in an array. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_array_begin(&js);
    rg_json_key(&js, "k");
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);

    /* A value in an object without its key. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_int(&js, 1);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);

    /* Two keys in a row, a NULL key, a key left without a value. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_key(&js, "a");
    rg_json_key(&js, "b");
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_key(&js, NULL);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_key(&js, "a");
    rg_json_object_end(&js);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);

    /* Mismatched ends, a second top-level value, empty raw text. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_array_begin(&js);
    rg_json_object_end(&js);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_int(&js, 1);
    rg_json_int(&js, 2);
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_raw(&js, "");
    ASSERT_INT_EQ(js.status, RG_ERR_INVALID);
    ASSERT(rg_json_text(&js) == NULL);

    /* NULL writers are ignored rather than dereferenced. */
    rg_json_init(NULL, buf, sizeof(buf));
    rg_json_object_begin(NULL);
    rg_json_kv_int(NULL, "a", 1);
    rg_json_double(NULL, 1.0);
    rg_json_array_end(NULL);
    ASSERT(rg_json_text(NULL) == NULL);
    return 0;
}

/* Reads the whole of f from the start into buf. */
static size_t rg__test_slurp(FILE *f, char *buf, size_t cap)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    return n;
}

TEST_IMPL(json_write_line)
{
    char      buf[64], back[128], small[4];
    rg_json_t js;
    rg_err_t  err;
    FILE     *f;
    int       rc = 1;

    f = tmpfile();
    ASSERT(f != NULL);

    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_json_kv_int(&js, "n", 1);
    rg_json_object_end(&js);
    if (rg_json_write_line(&js, f, &err) != RG_OK) {
        fprintf(stderr, "write_line: %s\n", rg_err_message(&err));
        goto out;
    }
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_array_begin(&js);
    rg_json_array_end(&js);
    if (rg_json_write_line(&js, f, &err) != RG_OK) {
        goto out;
    }
    rg__test_slurp(f, back, sizeof(back));
    if (strcmp(back, "{\"n\":1}\n[]\n") != 0) {
        fprintf(stderr, "file holds '%s'\n", back);
        goto out;
    }

    /* An open container is not written. */
    rg_json_init(&js, buf, sizeof(buf));
    rg_json_object_begin(&js);
    rg_err_clear(&err);
    if (rg_json_write_line(&js, f, &err) != RG_ERR_INVALID ||
        strstr(err.msg, "1 container(s) still open") == NULL) {
        fprintf(stderr, "incomplete record: '%s'\n", err.msg);
        goto out;
    }
    /* An overflowed record is not written, and the message says why. */
    rg_json_init(&js, small, sizeof(small));
    rg_json_string(&js, "too long");
    rg_err_clear(&err);
    if (rg_json_write_line(&js, f, &err) != RG_ERR_RANGE ||
        strstr(err.msg, "4-byte buffer") == NULL) {
        fprintf(stderr, "overflowed record: '%s'\n", err.msg);
        goto out;
    }
    if (rg_json_write_line(&js, NULL, &err) != RG_ERR_INVALID) {
        goto out;
    }
    /* Nothing more reached the file. */
    rg__test_slurp(f, back, sizeof(back));
    if (strcmp(back, "{\"n\":1}\n[]\n") != 0) {
        goto out;
    }
    rc = 0;

out:
    fclose(f);
    ASSERT(rc == 0);
    return 0;
}
