/*
 * railgauge: what the JSON reader (base/json_read.h) owes any input, checked
 * on one input. Shared by the libFuzzer target (json_fuzz.c) and the
 * mutation test of test-json-read.c, which runs without clang.
 *
 * Text that does not parse must fail with RG_ERR_PARSE or RG_ERR_RANGE, a
 * message and a line and column, and leave no tree. Text that parses must
 * give a well-formed tree (counts match the iteration, members have keys and
 * elements none, rg_json_get finds the last member of each key, strings are
 * UTF-8 of their length, numbers finite), and that tree, written back by the
 * writer (base/json.h) and read again, must be the same tree.
 */
#ifndef RG_TESTS_JSON_CHECK_H
#define RG_TESTS_JSON_CHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/json_read.h"

/* Nesting of arrays and objects (0 for a scalar); *nul set where a string
 * or key holds a NUL (the writer takes C strings and cannot write it). */
static unsigned rg__jc_depth(const rg_json_val_t *v, int *nul)
{
    const rg_json_val_t *e;
    const char          *s = rg_json_as_string(v, NULL), *k = rg_json_member_key(v, NULL);
    size_t               n = 0, kn = 0;
    unsigned             d = 0, sub;

    rg_json_as_string(v, &n);
    rg_json_member_key(v, &kn);
    if ((s != NULL && strlen(s) != n) || (k != NULL && strlen(k) != kn)) {
        *nul = 1;
    }
    for (e = rg_json_first(v); e != NULL; e = rg_json_next(e)) {
        sub = rg__jc_depth(e, nul);
        d   = sub > d ? sub : d;
    }
    return rg_json_type(v) == RG_JSON_ARRAY || rg_json_type(v) == RG_JSON_OBJECT ? d + 1 : d;
}

/* 1 where s[0..n) is UTF-8 and s[n] its NUL. */
static int rg__jc_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    size_t               k;

    for (; p < end; p += k) {
        if ((k = rg__json_utf8_len(p, end)) == 0) {
            return 0;
        }
    }
    return s[n] == '\0';
}

/* The last member of obj whose key is the n bytes of key. */
static const rg_json_val_t *rg__jc_last(const rg_json_val_t *obj, const char *key, size_t n)
{
    const rg_json_val_t *e, *last = NULL;
    const char          *k;
    size_t               kn;

    for (e = rg_json_first(obj); e != NULL; e = rg_json_next(e)) {
        k = rg_json_member_key(e, &kn);
        if (kn == n && memcmp(k, key, n) == 0) {
            last = e;
        }
    }
    return last;
}

/* 0 where v and everything in it are well formed, else the failed check's
 * line. */
static int rg__jc_walk(const rg_json_val_t *v)
{
    const rg_json_val_t *e;
    const char          *s, *k;
    size_t               n = 0, kn = 0, count = 0;
    double               x;
    int                  b, object = rg_json_type(v) == RG_JSON_OBJECT;
    unsigned             line, col;

    rg_json_where(v, &line, &col);
    if (line < 1 || col < 1) {
        return __LINE__;
    }
    switch (rg_json_type(v)) {
    case RG_JSON_NULL:
        return rg_json_is_null(v) ? 0 : __LINE__;
    case RG_JSON_BOOL:
        return rg_json_as_bool(v, &b) && (b == 0 || b == 1) ? 0 : __LINE__;
    case RG_JSON_NUMBER:
        return rg_json_as_double(v, &x) && isfinite(x) ? 0 : __LINE__;
    case RG_JSON_STRING:
        s = rg_json_as_string(v, &n);
        return s != NULL && rg__jc_utf8(s, n) && rg_json_string_is(v, s) == (strlen(s) == n)
                   ? 0 : __LINE__;
    case RG_JSON_ARRAY:
    case RG_JSON_OBJECT:
        for (e = rg_json_first(v); e != NULL; e = rg_json_next(e), count++) {
            k = rg_json_member_key(e, &kn);
            if ((k != NULL) != object || rg__jc_walk(e) != 0) {
                return __LINE__;
            }
            if (!object && rg_json_at(v, count) != e) {
                return __LINE__;
            }
            /* A key is UTF-8, and the member rg_json_get finds under it is
             * the last of that key (a key with a NUL cannot be asked for). */
            if (object && (!rg__jc_utf8(k, kn) ||
                           (strlen(k) == kn && rg_json_get(v, k) != rg__jc_last(v, k, kn)))) {
                return __LINE__;
            }
        }
        return count == rg_json_count(v) && rg_json_at(v, count) == NULL ? 0 : __LINE__;
    case RG_JSON_ABSENT:
        break;
    }
    return __LINE__;
}

static void rg__jc_write(rg_json_t *js, const rg_json_val_t *v)
{
    const rg_json_val_t *e;
    double               x = 0;
    int                  b = 0;

    switch (rg_json_type(v)) {
    case RG_JSON_NULL:
    case RG_JSON_ABSENT:
        rg_json_null(js);
        break;
    case RG_JSON_BOOL:
        rg_json_as_bool(v, &b);
        rg_json_bool(js, b);
        break;
    case RG_JSON_NUMBER:
        rg_json_as_double(v, &x);
        rg_json_double(js, x);
        break;
    case RG_JSON_STRING:
        rg_json_string(js, rg_json_as_string(v, NULL));
        break;
    case RG_JSON_ARRAY:
    case RG_JSON_OBJECT:
        if (rg_json_type(v) == RG_JSON_ARRAY) {
            rg_json_array_begin(js);
        } else {
            rg_json_object_begin(js);
        }
        for (e = rg_json_first(v); e != NULL; e = rg_json_next(e)) {
            if (rg_json_member_key(e, NULL) != NULL) {
                rg_json_key(js, rg_json_member_key(e, NULL));
            }
            rg__jc_write(js, e);
        }
        if (rg_json_type(v) == RG_JSON_ARRAY) {
            rg_json_array_end(js);
        } else {
            rg_json_object_end(js);
        }
        break;
    }
}

/* 1 where a and b are the same tree. */
static int rg__jc_same(const rg_json_val_t *a, const rg_json_val_t *b)
{
    const rg_json_val_t *x, *y;
    double               da = 0, db = 0;
    int                  ba = 0, bb = 0;
    size_t               la = 0, lb = 0;
    const char          *sa, *sb;

    if (rg_json_type(a) != rg_json_type(b) || rg_json_count(a) != rg_json_count(b)) {
        return 0;
    }
    sa = rg_json_member_key(a, &la);
    sb = rg_json_member_key(b, &lb);
    if ((sa == NULL) != (sb == NULL) || (sa != NULL && (la != lb || memcmp(sa, sb, la) != 0))) {
        return 0;
    }
    switch (rg_json_type(a)) {
    case RG_JSON_BOOL:
        return rg_json_as_bool(a, &ba) && rg_json_as_bool(b, &bb) && ba == bb;
    case RG_JSON_NUMBER:
        return rg_json_as_double(a, &da) && rg_json_as_double(b, &db) && da == db;
    case RG_JSON_STRING:
        sa = rg_json_as_string(a, &la);
        sb = rg_json_as_string(b, &lb);
        return la == lb && memcmp(sa, sb, la) == 0;
    case RG_JSON_ARRAY:
    case RG_JSON_OBJECT:
        for (x = rg_json_first(a), y = rg_json_first(b); x != NULL && y != NULL;
             x = rg_json_next(x), y = rg_json_next(y)) {
            if (!rg__jc_same(x, y)) {
                return 0;
            }
        }
        return x == NULL && y == NULL;
    default:
        return 1;
    }
}

/* 0 where every check holds for data[0..size), else the line of the check
 * that failed. */
static int rg_json_check_one(const char *data, size_t size)
{
    rg_json_doc_t        doc, again;
    const rg_json_val_t *root;
    rg_json_t            js;
    rg_err_t             err;
    rg_status_t          st;
    char                *buf;
    size_t               cap;
    int                  nul = 0, bad = 0;

    rg_err_clear(&err);
    st = rg_json_parse(&doc, data, size, NULL, &err);
    if (st != RG_OK) {
        bad = err.msg[0] == '\0' || (st != RG_ERR_PARSE && st != RG_ERR_RANGE) ||
              doc.root != NULL || doc.blocks != NULL || doc.err_line < 1 || doc.err_col < 1 ||
              doc.err_what[0] == '\0' || err.status != st;
        rg_json_doc_fini(&doc);
        return bad ? __LINE__ : 0;
    }
    root = rg_json_root(&doc);
    if (root == NULL || rg__jc_walk(root) != 0) {
        rg_json_doc_fini(&doc);
        return __LINE__;
    }
    if (rg__jc_depth(root, &nul) <= RG_JSON_MAX_DEPTH && !nul) {
        /* A byte of text becomes at most 6 (\u001f); a number of one
         * character at most 24 (-2.2250738585072014e-308). */
        cap = 32 * size + 64;
        buf = malloc(cap);
        if (buf != NULL) {
            rg_json_init(&js, buf, cap);
            rg__jc_write(&js, root);
            if (rg_json_text(&js) == NULL) {
                bad = __LINE__;
            } else if (rg_json_parse(&again, buf, js.len, NULL, &err) != RG_OK) {
                bad = __LINE__;
            } else {
                bad = rg__jc_same(root, rg_json_root(&again)) ? 0 : __LINE__;
                rg_json_doc_fini(&again);
            }
            free(buf);
        }
    }
    rg_json_doc_fini(&doc);
    return bad;
}

#endif /* RG_TESTS_JSON_CHECK_H */
