/*
 * railgauge: tests of the JSON reader (base/json_read.h).
 */
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/json_read.h"
#include "fuzz/json_check.h"
#include "mutate.h"
#include "task.h"

/* Parses text (its strlen) and fails the test where it does not parse. */
#define PARSE_OK(doc, text)                                                    \
    do {                                                                      \
        rg_err_t rg__e;                                                       \
        ASSERT_OK(rg_json_parse((doc), (text), strlen(text), NULL, &rg__e), &rg__e); \
    } while (0)

TEST_IMPL(json_read_valid)
{
    static const char text[] =
        "{\n"
        "  \"model\": \"loggp\",\n"
        "  \"ranges\": [{\"L_us\": 1.5, \"o_us\": 0}, {\"L_us\": 2}],\n"
        "  \"ok\": true, \"bad\": false, \"none\": null,\n"
        "  \"nested\": {\"a\": [[], {}, \"s\"]}\n"
        "}\n";
    rg_json_doc_t        doc;
    const rg_json_val_t *root, *ranges, *e, *nested;
    const char          *keys[] = {"model", "ranges", "ok", "bad", "none", "nested"};
    double               x = -1;
    int                  b = -1, i;
    unsigned             line, col;
    size_t               n;

    PARSE_OK(&doc, text);
    root = rg_json_root(&doc);
    ASSERT_INT_EQ(rg_json_type(root), RG_JSON_OBJECT);
    ASSERT_INT_EQ(rg_json_count(root), 6);
    ASSERT(rg_json_string_is(rg_json_get(root, "model"), "loggp"));
    ASSERT(!rg_json_string_is(rg_json_get(root, "model"), "loggp2"));
    ASSERT_STR_EQ(rg_json_as_string(rg_json_get(root, "model"), &n), "loggp");
    ASSERT_INT_EQ(n, 5);
    ranges = rg_json_get(root, "ranges");
    ASSERT_INT_EQ(rg_json_type(ranges), RG_JSON_ARRAY);
    ASSERT_INT_EQ(rg_json_count(ranges), 2);
    ASSERT(rg_json_as_double(rg_json_get(rg_json_at(ranges, 0), "L_us"), &x) && x == 1.5);
    ASSERT(rg_json_as_double(rg_json_get(rg_json_at(ranges, 1), "L_us"), &x) && x == 2);
    ASSERT(rg_json_at(ranges, 2) == NULL);
    /* A path through something absent ends in NULL, and the getters leave
     * their output alone. */
    x = -1;
    ASSERT(!rg_json_as_double(rg_json_get(rg_json_at(ranges, 5), "L_us"), &x) && x == -1);
    ASSERT(!rg_json_as_double(rg_json_get(root, "model"), &x) && x == -1);
    ASSERT(rg_json_as_bool(rg_json_get(root, "ok"), &b) && b == 1);
    ASSERT(rg_json_as_bool(rg_json_get(root, "bad"), &b) && b == 0);
    ASSERT(!rg_json_as_bool(rg_json_get(root, "none"), &b) && b == 0);
    ASSERT(rg_json_is_null(rg_json_get(root, "none")));
    ASSERT(!rg_json_is_null(rg_json_get(root, "absent")));
    ASSERT_INT_EQ(rg_json_type(rg_json_get(root, "absent")), RG_JSON_ABSENT);
    ASSERT(rg_json_as_string(rg_json_get(root, "ok"), NULL) == NULL);
    ASSERT(rg_json_get(ranges, "L_us") == NULL); /* not an object */
    ASSERT(rg_json_at(root, 0) == NULL);          /* not an array */
    ASSERT_INT_EQ(rg_json_count(rg_json_get(root, "ok")), 0);
    ASSERT(rg_json_first(rg_json_get(root, "ok")) == NULL);
    /* Members in the document's order, with their keys and places. */
    for (e = rg_json_first(root), i = 0; e != NULL; e = rg_json_next(e), i++) {
        ASSERT_STR_EQ(rg_json_member_key(e, &n), keys[i]);
        ASSERT_INT_EQ(n, strlen(keys[i]));
    }
    ASSERT_INT_EQ(i, 6);
    ASSERT(rg_json_member_key(rg_json_at(ranges, 0), NULL) == NULL);
    rg_json_where(root, &line, &col);
    ASSERT(line == 1 && col == 1);
    rg_json_where(ranges, &line, &col);
    ASSERT(line == 3 && col == 13);
    rg_json_where(rg_json_get(root, "none"), &line, &col);
    ASSERT(line == 4 && col == 37);
    nested = rg_json_get(rg_json_get(root, "nested"), "a");
    ASSERT_INT_EQ(rg_json_type(rg_json_at(nested, 0)), RG_JSON_ARRAY);
    ASSERT_INT_EQ(rg_json_type(rg_json_at(nested, 1)), RG_JSON_OBJECT);
    ASSERT_INT_EQ(rg_json_count(rg_json_at(nested, 1)), 0);
    ASSERT(rg_json_string_is(rg_json_at(nested, 2), "s"));
    ASSERT_STR_EQ(rg_json_type_name(RG_JSON_OBJECT), "an object");
    ASSERT_STR_EQ(rg_json_type_name(rg_json_type(NULL)), "nothing");
    rg_json_doc_fini(&doc);
    ASSERT(rg_json_root(&doc) == NULL);
    rg_json_doc_fini(&doc); /* a second time does nothing */

    /* Scalars are documents too, whitespace around them allowed. */
    PARSE_OK(&doc, " \t\r\n 42 \n");
    ASSERT(rg_json_as_double(rg_json_root(&doc), &x) && x == 42);
    rg_json_doc_fini(&doc);
    PARSE_OK(&doc, "\"x\"");
    ASSERT(rg_json_string_is(rg_json_root(&doc), "x"));
    rg_json_doc_fini(&doc);
    PARSE_OK(&doc, "null");
    ASSERT(rg_json_is_null(rg_json_root(&doc)));
    rg_json_doc_fini(&doc);
    return 0;
}

/* One text that must fail: its status, line, column and a part of what. */
typedef struct rg__jr_bad {
    const char *text;
    size_t      len; /* 0: strlen(text) */
    rg_status_t status;
    unsigned    line, col;
    const char *what;
} rg__jr_bad_t;

TEST_IMPL(json_read_errors)
{
    static const rg__jr_bad_t bad[] = {
        /* Structure. */
        {"", 0, RG_ERR_PARSE, 1, 1, "no value (the text is empty or blank)"},
        {"  \n ", 0, RG_ERR_PARSE, 2, 2, "no value"},
        {"{", 0, RG_ERR_PARSE, 1, 2, "a key (a string) expected"},
        {"{1: 2}", 0, RG_ERR_PARSE, 1, 2, "a key (a string) expected"},
        {"{\"a\": 1,}", 0, RG_ERR_PARSE, 1, 9, "a key (a string) expected"},
        {"{\"a\" 1}", 0, RG_ERR_PARSE, 1, 6, "':' expected after a key"},
        {"{\"a\": 1 \"b\": 2}", 0, RG_ERR_PARSE, 1, 9, "',' or '}' expected"},
        {"{\"a\": 1", 0, RG_ERR_PARSE, 1, 8, "',' or '}' expected"},
        {"[1,]", 0, RG_ERR_PARSE, 1, 4, "a value expected"},
        {"[1 2]", 0, RG_ERR_PARSE, 1, 4, "',' or ']' expected"},
        {"[1, 2", 0, RG_ERR_PARSE, 1, 6, "',' or ']' expected"},
        {"[,1]", 0, RG_ERR_PARSE, 1, 2, "a value expected"},
        {"{} x", 0, RG_ERR_PARSE, 1, 4, "text after the object"},
        {"[] ]", 0, RG_ERR_PARSE, 1, 4, "text after the array"},
        {"1 2", 0, RG_ERR_PARSE, 1, 3, "text after the value"},
        {"{\n  \"a\": 1,\n  \"b\" 2\n}", 0, RG_ERR_PARSE, 3, 7, "':' expected after a key"},
        /* Not JSON's: literals, quotes, comments, a byte order mark. */
        {"tru", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"True", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"[nul]", 0, RG_ERR_PARSE, 1, 2, "a value expected"},
        {"'a'", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"/* c */ 1", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"NaN", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"-Infinity", 0, RG_ERR_PARSE, 1, 2, "a digit expected after '-'"},
        {"\xEF\xBB\xBF{}", 0, RG_ERR_PARSE, 1, 1, "a byte order mark"},
        {"\xC3\xA9", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"[1,\0 2]", 7, RG_ERR_PARSE, 1, 4, "a value expected"},
        /* Numbers. */
        {"01", 0, RG_ERR_PARSE, 1, 1, "a number with a leading zero"},
        {"-01", 0, RG_ERR_PARSE, 1, 1, "a number with a leading zero"},
        {"-", 0, RG_ERR_PARSE, 1, 2, "a digit expected after '-'"},
        {"1.", 0, RG_ERR_PARSE, 1, 3, "a digit expected after '.'"},
        {"1.e5", 0, RG_ERR_PARSE, 1, 3, "a digit expected after '.'"},
        {"1e", 0, RG_ERR_PARSE, 1, 3, "a digit expected in the exponent"},
        {"1e+", 0, RG_ERR_PARSE, 1, 4, "a digit expected in the exponent"},
        {".5", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"+1", 0, RG_ERR_PARSE, 1, 1, "a value expected"},
        {"0x10", 0, RG_ERR_PARSE, 1, 2, "text after the value"},
        {"[1e999]", 0, RG_ERR_RANGE, 1, 2, "the number 1e999 is out of range"},
        {"-1e309", 0, RG_ERR_RANGE, 1, 1, "out of range"},
        /* Strings. */
        {"\"abc", 0, RG_ERR_PARSE, 1, 1, "a string without its closing quote"},
        {"[\"a\\", 0, RG_ERR_PARSE, 1, 2, "a string without its closing quote"},
        {"\"a\nb\"", 0, RG_ERR_PARSE, 1, 3, "a control character in a string (byte 0x0A"},
        {"\"a\tb\"", 0, RG_ERR_PARSE, 1, 3, "a control character"},
        {"\"a\0b\"", 5, RG_ERR_PARSE, 1, 3, "a control character in a string (byte 0x00"},
        {"\"\\x\"", 0, RG_ERR_PARSE, 1, 2, "an unknown escape '\\x'"},
        {"\"\\\x01\"", 0, RG_ERR_PARSE, 1, 2, "a backslash before byte 0x01"},
        {"\"\\u12\"", 0, RG_ERR_PARSE, 1, 2, "\\u needs four hex digits"},
        {"\"\\u12G4\"", 0, RG_ERR_PARSE, 1, 2, "\\u needs four hex digits"},
        {"\"ab\\uD800\"", 0, RG_ERR_PARSE, 1, 4, "\\uD800 is not followed by a low surrogate"},
        {"\"\\uD800\\u0041\"", 0, RG_ERR_PARSE, 1, 2, "is not followed by a low surrogate"},
        {"\"\\uDBFF\\uD800\"", 0, RG_ERR_PARSE, 1, 2, "is not followed by a low surrogate"},
        {"\"\\uDC00\"", 0, RG_ERR_PARSE, 1, 2, "a lone low surrogate \\uDC00"},
        /* UTF-8: overlong, surrogate, above U+10FFFF, cut short, stray. */
        {"\"\xC0\xAF\"", 0, RG_ERR_PARSE, 1, 2, "a string that is not UTF-8 (byte 0xC0)"},
        {"\"\xE0\x80\xAF\"", 0, RG_ERR_PARSE, 1, 2, "not UTF-8 (byte 0xE0)"},
        {"\"\xED\xA0\x80\"", 0, RG_ERR_PARSE, 1, 2, "not UTF-8 (byte 0xED)"},
        {"\"\xF4\x90\x80\x80\"", 0, RG_ERR_PARSE, 1, 2, "not UTF-8 (byte 0xF4)"},
        {"\"\xE2\x82\"", 0, RG_ERR_PARSE, 1, 2, "not UTF-8"},
        {"\"\x80\"", 0, RG_ERR_PARSE, 1, 2, "not UTF-8 (byte 0x80)"},
        {"\"\xFF\"", 0, RG_ERR_PARSE, 1, 2, "not UTF-8 (byte 0xFF)"},
        /* Columns count characters, not bytes. */
        {"\"\xC3\xA9\xE2\x82\xAC\" x", 0, RG_ERR_PARSE, 1, 6, "text after the value"},
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        rg_json_doc_t doc;
        rg_err_t      err;
        rg_status_t   st;
        size_t        len = bad[i].len ? bad[i].len : strlen(bad[i].text);
        char          where[48];

        rg_err_clear(&err);
        st = rg_json_parse(&doc, bad[i].text, len, NULL, &err);
        if (st != bad[i].status || doc.err_line != bad[i].line || doc.err_col != bad[i].col ||
            strstr(doc.err_what, bad[i].what) == NULL || rg_json_root(&doc) != NULL) {
            RG__TEST_FAIL("case %zu: got %s at line %u, column %u: %s; expected %s at line "
                          "%u, column %u: %s", i, rg_status_name(st), doc.err_line,
                          doc.err_col, doc.err_what, rg_status_name(bad[i].status),
                          bad[i].line, bad[i].col, bad[i].what);
        }
        /* The message says where and what. */
        snprintf(where, sizeof(where), "line %u, column %u: ", bad[i].line, bad[i].col);
        ASSERT(strncmp(err.msg, where, strlen(where)) == 0);
        ASSERT_STR_HAS(err.msg, bad[i].what);
        ASSERT_INT_EQ(err.status, st);
        rg_json_doc_fini(&doc);
    }
    return 0;
}

TEST_IMPL(json_read_limits)
{
    char             text[2 * 80 + 1];
    rg_json_doc_t    doc;
    rg_json_limits_t lim = {0, 2, 0};
    rg_err_t         err;
    int              i;

    /* The default depth, 64, holds; one more does not, named where. */
    for (i = 0; i < 64; i++) {
        text[i] = '[';
        text[64 + i] = ']';
    }
    ASSERT_OK(rg_json_parse(&doc, text, 128, NULL, &err), &err);
    rg_json_doc_fini(&doc);
    for (i = 0; i < 65; i++) {
        text[i] = '[';
        text[65 + i] = ']';
    }
    ASSERT_INT_EQ(rg_json_parse(&doc, text, 130, NULL, &err), RG_ERR_RANGE);
    ASSERT_STR_EQ(err.msg, "line 1, column 65: nested deeper than 64 arrays and objects");
    rg_json_doc_fini(&doc);
    /* A caller's own depth. */
    ASSERT_OK(rg_json_parse(&doc, "{\"a\": [1]}", 10, &lim, &err), &err);
    rg_json_doc_fini(&doc);
    ASSERT_INT_EQ(rg_json_parse(&doc, "{\"a\": [{}]}", 11, &lim, &err), RG_ERR_RANGE);
    ASSERT_STR_HAS(err.msg, "column 8: nested deeper than 2");
    lim.max_depth = RG_JSON_READ_DEPTH_CAP + 1;
    ASSERT_INT_EQ(rg_json_parse(&doc, "1", 1, &lim, &err), RG_ERR_INVALID);
    ASSERT(rg_json_root(&doc) == NULL);
    /* Size. */
    lim.max_depth = 0;
    lim.max_bytes = 4;
    ASSERT_OK(rg_json_parse(&doc, "[12]", 4, &lim, &err), &err);
    rg_json_doc_fini(&doc);
    ASSERT_INT_EQ(rg_json_parse(&doc, "[123]", 5, &lim, &err), RG_ERR_RANGE);
    ASSERT_STR_EQ(err.msg, "5 bytes, more than the limit of 4");
    ASSERT_INT_EQ(doc.err_line, 0);
    /* Values, of every kind. */
    lim.max_bytes  = 0;
    lim.max_values = 3;
    ASSERT_OK(rg_json_parse(&doc, "[1, \"a\"]", 8, &lim, &err), &err);
    rg_json_doc_fini(&doc);
    ASSERT_INT_EQ(rg_json_parse(&doc, "[1, {}, 2]", 10, &lim, &err), RG_ERR_RANGE);
    ASSERT_STR_EQ(err.msg, "line 1, column 9: more than 3 values");
    /* NULL arguments. */
    ASSERT_INT_EQ(rg_json_parse(NULL, "1", 1, NULL, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_json_parse(&doc, NULL, 1, NULL, &err), RG_ERR_INVALID);
    ASSERT_INT_EQ(rg_json_parse(&doc, NULL, 0, NULL, NULL), RG_ERR_PARSE);
    rg_json_doc_fini(NULL);
    ASSERT(rg_json_root(NULL) == NULL);
    return 0;
}

TEST_IMPL(json_read_numbers)
{
    static const struct {
        const char *text;
        double      value;
    } good[] = {
        {"0", 0.0},
        {"-0", -0.0},
        {"1.5", 1.5},
        {"1e3", 1000.0},
        {"1E-3", 1e-3},
        {"-12.5e+2", -1250.0},
        {"0.1", 0.1},
        {"123456789012345678901234567890", 1.2345678901234568e29},
        {"1.7976931348623157e308", 1.7976931348623157e308},
        {"4.9e-324", 4.9e-324},
        /* Below a double's smallest: 0, as Python's json reads it. */
        {"1e-400", 0.0},
        {"0.00000000000000000000000000000000000000000000000000000000000000000000000001", 1e-74},
    };
    rg_json_doc_t doc;
    double        x;
    size_t        i;
    char         *old, *saved = NULL;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        PARSE_OK(&doc, good[i].text);
        x = -7;
        ASSERT(rg_json_as_double(rg_json_root(&doc), &x));
        if (x != good[i].value || signbit(x) != signbit(good[i].value)) {
            RG__TEST_FAIL("'%s' read as %.17g, expected %.17g", good[i].text, x,
                          good[i].value);
        }
        rg_json_doc_fini(&doc);
    }
    /* A program with a decimal comma (LC_NUMERIC) reads the same numbers;
     * where no such locale is installed, this part has nothing to show. */
    old = setlocale(LC_NUMERIC, NULL);
    saved = old != NULL ? strdup(old) : NULL;
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL ||
        setlocale(LC_NUMERIC, "fr_FR.UTF-8") != NULL) {
        PARSE_OK(&doc, "[1.5]");
        ASSERT(rg_json_as_double(rg_json_at(rg_json_root(&doc), 0), &x) && x == 1.5);
        rg_json_doc_fini(&doc);
    }
    setlocale(LC_NUMERIC, saved != NULL ? saved : "C");
    free(saved);
    return 0;
}

TEST_IMPL(json_read_escapes)
{
    static const struct {
        const char *text;
        const char *value;
        size_t      len;
    } good[] = {
        {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8},
        {"\"\\u0041\\u00e9\\u00E9\"", "A\xC3\xA9\xC3\xA9", 5},
        {"\"\\u20AC\"", "\xE2\x82\xAC", 3},
        {"\"\\uD83D\\uDE00\"", "\xF0\x9F\x98\x80", 4},   /* a surrogate pair */
        {"\"\\uDBFF\\uDFFF\"", "\xF4\x8F\xBF\xBF", 4},   /* U+10FFFF */
        {"\"\\u0000x\"", "\0x", 2},                      /* a NUL inside */
        {"\"\xC3\xA9\xF0\x9F\x98\x80\xEF\xBF\xBF\x7F\"", "\xC3\xA9\xF0\x9F\x98\x80\xEF\xBF\xBF\x7F",
         10},                                            /* raw UTF-8 and DEL */
        {"\"\"", "", 0},
    };
    rg_json_doc_t doc;
    const char   *s;
    size_t        i, n;

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        PARSE_OK(&doc, good[i].text);
        s = rg_json_as_string(rg_json_root(&doc), &n);
        if (s == NULL || n != good[i].len || memcmp(s, good[i].value, n) != 0 || s[n] != '\0') {
            RG__TEST_FAIL("case %zu (%s): got %zu bytes", i, good[i].text, s ? n : 0);
        }
        rg_json_doc_fini(&doc);
    }
    /* Escaped keys are found by their text. */
    PARSE_OK(&doc, "{\"k\\u0065y\": 1, \"\\u00e9\": 2}");
    ASSERT(rg_json_get(rg_json_root(&doc), "key") != NULL);
    ASSERT(rg_json_get(rg_json_root(&doc), "\xC3\xA9") != NULL);
    rg_json_doc_fini(&doc);
    /* A key with a NUL is kept whole, and not found by its part before it. */
    PARSE_OK(&doc, "{\"a\\u0000b\": 1}");
    ASSERT(rg_json_get(rg_json_root(&doc), "a") == NULL);
    ASSERT(rg_json_member_key(rg_json_first(rg_json_root(&doc)), &n) != NULL && n == 3);
    rg_json_doc_fini(&doc);
    return 0;
}

TEST_IMPL(json_read_duplicates)
{
    rg_json_doc_t        doc;
    const rg_json_val_t *root, *e;
    double               x = 0;
    int                  seen = 0;

    /* The last of a key wins (as in Python's json); both stay in the tree. */
    PARSE_OK(&doc, "{\"a\": 1, \"b\": 0, \"a\": 2}");
    root = rg_json_root(&doc);
    ASSERT(rg_json_as_double(rg_json_get(root, "a"), &x) && x == 2);
    ASSERT_INT_EQ(rg_json_count(root), 3);
    for (e = rg_json_first(root); e != NULL; e = rg_json_next(e)) {
        seen += strcmp(rg_json_member_key(e, NULL), "a") == 0;
    }
    ASSERT_INT_EQ(seen, 2);
    rg_json_doc_fini(&doc);
    return 0;
}

TEST_IMPL(json_read_spacing)
{
    /* One document, three spacings (Python's default, separators=(",", ":")
     * and indent=1): one tree. */
    static const char *const texts[] = {
        "{\"model\": \"loggp\", \"ranges\": [{\"L_us\": 10.0, \"o_us\": 2.0}]}",
        "{\"model\":\"loggp\",\"ranges\":[{\"L_us\":10.0,\"o_us\":2.0}]}",
        "{\n \"model\": \"loggp\",\n \"ranges\": [\n  {\n   \"L_us\": 10.0,\n   \"o_us\": 2.0\n"
        "  }\n ]\n}\n",
    };
    rg_json_doc_t first, doc;
    size_t        i;

    PARSE_OK(&first, texts[0]);
    for (i = 1; i < sizeof(texts) / sizeof(texts[0]); i++) {
        PARSE_OK(&doc, texts[i]);
        ASSERT(rg__jc_same(rg_json_root(&first), rg_json_root(&doc)));
        rg_json_doc_fini(&doc);
    }
    rg_json_doc_fini(&first);
    return 0;
}

/* A mutation fuzzer for the reader, for a fixed number of rounds from a
 * fixed seed (a failure reproduces): byte edits, insertions of JSON's
 * pieces, deletions and repeats (mutate.h) applied to small documents, each
 * checked by json_check.h (parses into a well-formed tree that the writer
 * writes back as the same tree, or fails with a message and a place). The
 * sanitizer build runs it too; the coverage-guided libFuzzer target is
 * native/tests/fuzz/json_fuzz.c (tests/test_json_read.py). */
static const char *const jr_seeds[] = {
    "{\"model\": \"loggp\", \"engine\": \"flags\", \"ranges\": [{\"from_bytes\": 0, "
    "\"L_us\": 0.18, \"o_us\": 0.0, \"g_us\": 8.5e-3, \"duplex_us\": null}], \"ok\": true}",
    "{\"rails\":[{\"name\":\"r\\\"0\",\"L_us\":40,\"G_us_per_byte\":0.5,\"x\":[1,{}]}],"
    "\"weights\":[1,3],\"policy\":\"adaptive\"}",
    "[\"\\u00e9\\ud83d\\ude00\\n\", \"\xC3\xA9\xF0\x9F\x98\x80\", -0, 1e-3, [[[]]], {\"a\":1,\"a\":2}]",
};

static const char *const jr_words[] = {
    "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\uD800", "\\uDC00", "0", "-", "1e",
    "1e400", ".5", "true", "null", "false", " ", "\n", "\t", "\xC3", "\xA9", "\xF0\x9F",
    "\xED\xA0\x80", "\x01", "\"a\":", "[[[[[[[[", "]]]]]]]]", "\xEF\xBB\xBF",
};

TEST_IMPL(json_read_fuzz)
{
    enum { ROUNDS = 50000, MAX = 1024 };
    unsigned rnd = 20261128u;
    char     buf[MAX + 64];
    int      round, failed, parsed = 0;

    for (round = 0; round < ROUNDS; round++) {
        const char *seed = jr_seeds[round % 3];
        size_t      n = strlen(seed);

        memcpy(buf, seed, n);
        rg_test_mutate(buf, &n, MAX, jr_words, sizeof(jr_words) / sizeof(*jr_words), 3, &rnd);
        if ((failed = rg_json_check_one(buf, n)) != 0) {
            RG__TEST_FAIL("round %d: check at json_check.h:%d failed on %zu bytes: %.*s", round,
                          failed, n, (int)n, buf);
        }
        {
            rg_json_doc_t doc;
            parsed += rg_json_parse(&doc, buf, n, NULL, NULL) == RG_OK;
            rg_json_doc_fini(&doc);
        }
    }
    /* Both sides were taken often. */
    ASSERT(parsed > ROUNDS / 20 && parsed < ROUNDS - ROUNDS / 20);
    /* The seeds themselves parse, and so does the corpus's deepest case. */
    for (round = 0; round < 3; round++) {
        rg_json_doc_t doc;
        PARSE_OK(&doc, jr_seeds[round]);
        rg_json_doc_fini(&doc);
    }
    return 0;
}
