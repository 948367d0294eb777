/*
 * railgauge: the JSON reader (see json_read.h for the contract and for why
 * it is ours).
 *
 * A recursive descent over the text that builds the tree as it goes: each
 * value is a node in the document's blocks, a container points at its first
 * element or member and each of those at the next, and strings are decoded
 * into the blocks too. Recursion is bounded by the depth limit (at most
 * RG_JSON_READ_DEPTH_CAP frames of a few words). Newlines can only appear in
 * whitespace (a raw one in a string is an error), so the whitespace skipper
 * alone counts lines; columns are counted forward from a cache, so that a
 * document of one long line still costs linear time.
 */
#include "base/json_read.h"

#include "base/json.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rg_json_val {
    rg_json_type_t type;
    unsigned       line, col; /* where it starts */
    const char    *key;       /* a member's key (NUL-terminated), else NULL */
    size_t         key_len;
    size_t         len;       /* string: bytes; array, object: elements, members */
    union {
        double         num;
        int            b;
        const char    *str;
        rg_json_val_t *first; /* array, object */
    } u;
    rg_json_val_t *next;      /* the next element or member of its container */
};

/* The blocks a document's nodes and strings live in, newest first. */
struct rg__json_block {
    struct rg__json_block *next;
    size_t                 used, cap;
    max_align_t            data[];
};

#define RG__JSON_BLOCK_MIN ((size_t)4096)
#define RG__JSON_BLOCK_MAX ((size_t)1 << 20)
/* Numbers longer than this are copied to the heap for strtod. */
#define RG__JSON_NUM_BUF   64

typedef struct rg__json_parser {
    const char    *p, *end;
    rg_json_doc_t *doc;
    rg_err_t      *err;
    unsigned       max_depth;
    size_t         max_values, values;
    unsigned       line;       /* the line of p */
    const char    *line_start; /* where that line starts */
    const char    *col_at;     /* the column cache: col_at is at column col */
    unsigned       col;
    locale_t       c_locale;   /* for strtod_l, made at the first number */
} rg__json_parser_t;

static rg_status_t rg__json_value(rg__json_parser_t *ps, unsigned depth, rg_json_val_t **out);

static void rg__json_free_blocks(rg_json_doc_t *doc)
{
    struct rg__json_block *b = doc->blocks, *next;

    for (; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    doc->blocks = NULL;
    doc->root   = NULL;
}

/* size bytes aligned to align (a power of two) from the document's blocks;
 * NULL where memory is short. */
static void *rg__json_alloc(rg_json_doc_t *doc, size_t size, size_t align)
{
    struct rg__json_block *b = doc->blocks, *nb;
    size_t                 at, cap;

    if (b != NULL) {
        at = (b->used + align - 1) & ~(align - 1);
        if (at <= b->cap && size <= b->cap - at) {
            b->used = at + size;
            return (char *)b->data + at;
        }
    }
    cap = b != NULL ? b->cap * 2 : RG__JSON_BLOCK_MIN;
    cap = cap > RG__JSON_BLOCK_MAX ? RG__JSON_BLOCK_MAX : cap;
    cap = cap < size ? size : cap;
    nb = malloc(sizeof(*nb) + cap);
    if (nb == NULL) {
        return NULL;
    }
    nb->next    = b;
    nb->cap     = cap;
    nb->used    = size;
    doc->blocks = nb;
    return nb->data;
}

/* The column of `at` on the current line, in characters (bytes that are not
 * UTF-8 continuation bytes). Positions are asked for in increasing order, so
 * the count goes on from the last one. */
static unsigned rg__json_col(rg__json_parser_t *ps, const char *at)
{
    if (ps->col_at < ps->line_start || ps->col_at > at) {
        ps->col_at = ps->line_start;
        ps->col    = 1;
    }
    for (; ps->col_at < at; ps->col_at++) {
        if (((unsigned char)*ps->col_at & 0xC0) != 0x80) {
            ps->col++;
        }
    }
    return ps->col;
}

static rg_status_t rg__json_fail(rg__json_parser_t *ps, const char *at, rg_status_t status,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Records where (at) and what went wrong, in doc->err_* and err. */
static rg_status_t rg__json_fail(rg__json_parser_t *ps, const char *at, rg_status_t status,
                                 const char *fmt, ...)
{
    rg_json_doc_t *doc = ps->doc;
    va_list        ap;

    doc->err_line = ps->line;
    doc->err_col  = rg__json_col(ps, at);
    va_start(ap, fmt);
    vsnprintf(doc->err_what, sizeof(doc->err_what), fmt, ap);
    va_end(ap);
    return rg_err_set(ps->err, status, "line %u, column %u: %s", doc->err_line, doc->err_col,
                      doc->err_what);
}

static void rg__json_ws(rg__json_parser_t *ps)
{
    const char *p = ps->p;

    for (; p < ps->end; p++) {
        if (*p == '\n') {
            ps->line++;
            ps->line_start = p + 1;
        } else if (*p != ' ' && *p != '\t' && *p != '\r') {
            break;
        }
    }
    ps->p = p;
}

/* A new node of the type, starting at `at`. */
static rg_status_t rg__json_node(rg__json_parser_t *ps, rg_json_type_t type, const char *at,
                                 rg_json_val_t **out)
{
    rg_json_val_t *v;

    if (ps->values >= ps->max_values) {
        return rg__json_fail(ps, at, RG_ERR_RANGE, "more than %zu values", ps->max_values);
    }
    v = rg__json_alloc(ps->doc, sizeof(*v), alignof(rg_json_val_t));
    if (v == NULL) {
        return rg__json_fail(ps, at, RG_ERR_NOMEM, "out of memory");
    }
    ps->values++;
    memset(v, 0, sizeof(*v));
    v->type = type;
    v->line = ps->line;
    v->col  = rg__json_col(ps, at);
    *out    = v;
    return RG_OK;
}

/* Four hex digits at r (before stop) into *cp; 0 where they are not. */
static int rg__json_hex4(const char *r, const char *stop, unsigned *cp)
{
    unsigned v = 0;
    int      i;

    if (stop - r < 4) {
        return 0;
    }
    for (i = 0; i < 4; i++) {
        char c = r[i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= (unsigned)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            v |= (unsigned)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            v |= (unsigned)(c - 'A' + 10);
        } else {
            return 0;
        }
    }
    *cp = v;
    return 1;
}

static size_t rg__json_utf8_put(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The \u escape at r (its backslash; before stop), a surrogate pair taken
 * whole, into out: *r_p past it, *n_p the bytes written. */
static rg_status_t rg__json_unicode(rg__json_parser_t *ps, const char **r_p, const char *stop,
                                    char *out, size_t *n_p)
{
    const char *r = *r_p;
    unsigned    cp, lo;

    if (!rg__json_hex4(r + 2, stop, &cp)) {
        return rg__json_fail(ps, r, RG_ERR_PARSE, "\\u needs four hex digits");
    }
    r += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
        return rg__json_fail(ps, *r_p, RG_ERR_PARSE, "a lone low surrogate \\u%04X", cp);
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (stop - r < 2 || r[0] != '\\' || r[1] != 'u' || !rg__json_hex4(r + 2, stop, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF) {
            return rg__json_fail(ps, *r_p, RG_ERR_PARSE, "\\u%04X is not followed by a low "
                                 "surrogate \\uDC00..\\uDFFF (a lone surrogate has no UTF-8)",
                                 cp);
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        r += 6;
    }
    *n_p = rg__json_utf8_put(out, cp);
    *r_p = r;
    return RG_OK;
}

/* The end of the string whose text starts at q: its closing quote, the first
 * raw control character, or the end of the text (an escaped character is
 * never its end). */
static const char *rg__json_string_stop(const char *q, const char *end)
{
    for (; q < end && *q != '"' && (unsigned char)*q >= 0x20; q++) {
        if (*q == '\\' && ++q == end) {
            break;
        }
    }
    return q;
}

/* The string at ps->p (its opening quote), decoded into the document's
 * blocks: *s_p (NUL-terminated) and *len_p. Decoded, a string is never
 * longer than its text, which bounds the room it takes. */
static rg_status_t rg__json_string(rg__json_parser_t *ps, const char **s_p, size_t *len_p)
{
    const char *open = ps->p, *r = open + 1, *stop = rg__json_string_stop(open + 1, ps->end);
    char       *out;
    size_t      n = 0, k = 0;
    rg_status_t st;

    out = rg__json_alloc(ps->doc, (size_t)(stop - r) + 1, 1);
    if (out == NULL) {
        return rg__json_fail(ps, open, RG_ERR_NOMEM, "out of memory");
    }
    while (r < stop) {
        unsigned char c = (unsigned char)*r;

        if (c == '\\') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char       *e;

            if (r + 1 >= stop) {
                break; /* the text ends after the backslash */
            }
            if (r[1] == 'u') {
                if ((st = rg__json_unicode(ps, &r, stop, out + n, &k)) != RG_OK) {
                    return st;
                }
                n += k;
                continue;
            }
            e = r[1] != '\0' ? strchr(from, r[1]) : NULL;
            if (e == NULL) {
                if ((unsigned char)r[1] >= 0x21 && (unsigned char)r[1] < 0x7F) {
                    return rg__json_fail(ps, r, RG_ERR_PARSE, "an unknown escape '\\%c'", r[1]);
                }
                return rg__json_fail(ps, r, RG_ERR_PARSE, "an unknown escape (a backslash "
                                     "before byte 0x%02X)", (unsigned char)r[1]);
            }
            out[n++] = to[e - from];
            r += 2;
        } else if (c < 0x80) {
            out[n++] = (char)c;
            r++;
        } else {
            k = rg__json_utf8_len((const unsigned char *)r, (const unsigned char *)stop);
            if (k == 0) {
                return rg__json_fail(ps, r, RG_ERR_PARSE, "a string that is not UTF-8 (byte "
                                     "0x%02X)", c);
            }
            memcpy(out + n, r, k);
            n += k;
            r += k;
        }
    }
    if (stop >= ps->end || r < stop) {
        return rg__json_fail(ps, open, RG_ERR_PARSE, "a string without its closing quote");
    }
    if (*stop != '"') {
        return rg__json_fail(ps, stop, RG_ERR_PARSE, "a control character in a string "
                             "(byte 0x%02X; write it as an escape)", (unsigned char)*stop);
    }
    out[n] = '\0';
    *s_p   = out;
    *len_p = n;
    ps->p  = stop + 1;
    return RG_OK;
}

static int rg__json_digit(const char *r, const char *end)
{
    return r < end && *r >= '0' && *r <= '9';
}

/* The end of the number at `at` (RFC 8259's grammar), or NULL after failing. */
static const char *rg__json_number_end(rg__json_parser_t *ps, const char *at)
{
    const char *r = at, *end = ps->end;

    if (*r == '-') {
        r++;
    }
    if (!rg__json_digit(r, end)) {
        rg__json_fail(ps, r, RG_ERR_PARSE, "a digit expected after '-'");
        return NULL;
    }
    if (*r == '0') {
        if (rg__json_digit(++r, end)) {
            rg__json_fail(ps, at, RG_ERR_PARSE, "a number with a leading zero");
            return NULL;
        }
    }
    while (rg__json_digit(r, end)) {
        r++;
    }
    if (r < end && *r == '.') {
        if (!rg__json_digit(++r, end)) {
            rg__json_fail(ps, r, RG_ERR_PARSE, "a digit expected after '.'");
            return NULL;
        }
        while (rg__json_digit(r, end)) {
            r++;
        }
    }
    if (r < end && (*r == 'e' || *r == 'E')) {
        r++;
        if (r < end && (*r == '+' || *r == '-')) {
            r++;
        }
        if (!rg__json_digit(r, end)) {
            rg__json_fail(ps, r, RG_ERR_PARSE, "a digit expected in the exponent");
            return NULL;
        }
        while (rg__json_digit(r, end)) {
            r++;
        }
    }
    return r;
}

/* A number: its grammar checked here, its value from strtod in the C locale
 * (on a NUL-terminated copy: the text need not end in a NUL). */
static rg_status_t rg__json_number(rg__json_parser_t *ps, rg_json_val_t **out)
{
    const char *at = ps->p, *r = rg__json_number_end(ps, at);
    char        small[RG__JSON_NUM_BUF], *buf = small, *e;
    size_t      n;
    double      v;
    int         range;
    rg_status_t st;

    if (r == NULL) {
        return RG_ERR_PARSE;
    }
    n = (size_t)(r - at);
    if (n >= sizeof(small) && (buf = malloc(n + 1)) == NULL) {
        return rg__json_fail(ps, at, RG_ERR_NOMEM, "out of memory");
    }
    memcpy(buf, at, n);
    buf[n] = '\0';
    if (ps->c_locale == (locale_t)0 &&
        (ps->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)) == (locale_t)0) {
        if (buf != small) {
            free(buf);
        }
        return rg__json_fail(ps, at, RG_ERR_NOMEM, "out of memory (the C locale)");
    }
    errno = 0;
    v     = strtod_l(buf, &e, ps->c_locale);
    range = errno == ERANGE && isinf(v);
    st    = e != buf + n ? RG_ERR_PARSE : RG_OK;
    if (buf != small) {
        free(buf);
    }
    if (st != RG_OK) {
        return rg__json_fail(ps, at, st, "not a number");
    }
    if (range) {
        return rg__json_fail(ps, at, RG_ERR_RANGE, "the number %.*s%s is out of range (a "
                             "double ends at 1.8e308)", n > 40 ? 40 : (int)n, at,
                             n > 40 ? "..." : "");
    }
    if ((st = rg__json_node(ps, RG_JSON_NUMBER, at, out)) != RG_OK) {
        return st;
    }
    (*out)->u.num = v;
    ps->p         = r;
    return RG_OK;
}

/* An array or an object (at its bracket or brace), depth deep. */
static rg_status_t rg__json_container(rg__json_parser_t *ps, unsigned depth, rg_json_val_t **out)
{
    const char     *at = ps->p;
    int             object = *at == '{';
    char            close = object ? '}' : ']';
    rg_json_val_t  *c, *v, **tail;
    const char     *key = NULL;
    size_t          key_len = 0;
    rg_status_t     st;

    if (depth > ps->max_depth) {
        return rg__json_fail(ps, at, RG_ERR_RANGE, "nested deeper than %u arrays and objects",
                             ps->max_depth);
    }
    if ((st = rg__json_node(ps, object ? RG_JSON_OBJECT : RG_JSON_ARRAY, at, &c)) != RG_OK) {
        return st;
    }
    tail = &c->u.first;
    ps->p++;
    rg__json_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        *out = c;
        return RG_OK;
    }
    for (;;) {
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') {
                return rg__json_fail(ps, ps->p, RG_ERR_PARSE, "a key (a string) expected");
            }
            if ((st = rg__json_string(ps, &key, &key_len)) != RG_OK) {
                return st;
            }
            rg__json_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                return rg__json_fail(ps, ps->p, RG_ERR_PARSE, "':' expected after a key");
            }
            ps->p++;
            rg__json_ws(ps);
        }
        if ((st = rg__json_value(ps, depth, &v)) != RG_OK) {
            return st;
        }
        v->key     = key;
        v->key_len = key_len;
        *tail      = v;
        tail       = &v->next;
        c->len++;
        rg__json_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            rg__json_ws(ps);
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            *out = c;
            return RG_OK;
        }
        return rg__json_fail(ps, ps->p, RG_ERR_PARSE, object ? "',' or '}' expected" :
                             "',' or ']' expected");
    }
}

/* true, false or null at ps->p. */
static rg_status_t rg__json_literal(rg__json_parser_t *ps, rg_json_val_t **out)
{
    static const struct {
        const char    *text;
        rg_json_type_t type;
        int            b;
    } lit[] = {{"true", RG_JSON_BOOL, 1}, {"false", RG_JSON_BOOL, 0}, {"null", RG_JSON_NULL, 0}};
    const char *at = ps->p;
    size_t      i, n;
    rg_status_t st;

    for (i = 0; i < sizeof(lit) / sizeof(lit[0]); i++) {
        n = strlen(lit[i].text);
        if ((size_t)(ps->end - at) >= n && memcmp(at, lit[i].text, n) == 0) {
            if ((st = rg__json_node(ps, lit[i].type, at, out)) != RG_OK) {
                return st;
            }
            (*out)->u.b = lit[i].b;
            ps->p       = at + n;
            return RG_OK;
        }
    }
    return rg__json_fail(ps, at, RG_ERR_PARSE, "a value expected");
}

/* Any value at ps->p (whitespace before it skipped), inside depth containers. */
static rg_status_t rg__json_value(rg__json_parser_t *ps, unsigned depth, rg_json_val_t **out)
{
    const char *at = ps->p;
    const char *s;
    size_t      n;
    rg_status_t st;

    if (at >= ps->end) {
        return rg__json_fail(ps, at, RG_ERR_PARSE, "a value expected");
    }
    switch (*at) {
    case '{':
    case '[':
        return rg__json_container(ps, depth + 1, out);
    case '"':
        if ((st = rg__json_node(ps, RG_JSON_STRING, at, out)) != RG_OK ||
            (st = rg__json_string(ps, &s, &n)) != RG_OK) {
            return st;
        }
        (*out)->u.str = s;
        (*out)->len   = n;
        return RG_OK;
    case 't':
    case 'f':
    case 'n':
        return rg__json_literal(ps, out);
    default:
        if (*at == '-' || (*at >= '0' && *at <= '9')) {
            return rg__json_number(ps, out);
        }
        return rg__json_fail(ps, at, RG_ERR_PARSE, "a value expected");
    }
}

rg_status_t rg_json_parse(rg_json_doc_t *doc, const char *text, size_t len,
                          const rg_json_limits_t *limits, rg_err_t *err)
{
    rg__json_parser_t ps;
    rg_json_val_t    *root = NULL;
    size_t            max_bytes;
    rg_status_t       st;

    if (doc == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_json_parse: doc is NULL");
    }
    memset(doc, 0, sizeof(*doc));
    if (text == NULL && len > 0) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_json_parse: text is NULL");
    }
    if (text == NULL) {
        text = ""; /* no arithmetic on a null pointer, even + 0 */
    }
    memset(&ps, 0, sizeof(ps));
    max_bytes     = limits != NULL && limits->max_bytes ? limits->max_bytes
                                                        : RG_JSON_READ_MAX_BYTES;
    ps.max_depth  = limits != NULL && limits->max_depth ? limits->max_depth
                                                        : RG_JSON_READ_MAX_DEPTH;
    ps.max_values = limits != NULL && limits->max_values ? limits->max_values
                                                         : RG_JSON_READ_MAX_VALUES;
    if (ps.max_depth > RG_JSON_READ_DEPTH_CAP) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_json_parse: a depth limit of %u is above "
                          "%u", ps.max_depth, RG_JSON_READ_DEPTH_CAP);
    }
    if (len > max_bytes) {
        snprintf(doc->err_what, sizeof(doc->err_what), "%zu bytes, more than the limit of %zu",
                 len, max_bytes);
        return rg_err_set(err, RG_ERR_RANGE, "%s", doc->err_what);
    }
    ps.p          = text;
    ps.end        = text + len;
    ps.doc        = doc;
    ps.err        = err;
    ps.line       = 1;
    ps.line_start = text;
    ps.col_at     = text;
    ps.col        = 1;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        st = rg__json_fail(&ps, text, RG_ERR_PARSE, "a byte order mark (JSON text has none)");
    } else {
        rg__json_ws(&ps);
        if (ps.p == ps.end) {
            st = rg__json_fail(&ps, ps.p, RG_ERR_PARSE, "no value (the text is empty or "
                               "blank)");
        } else if ((st = rg__json_value(&ps, 0, &root)) == RG_OK) {
            rg__json_ws(&ps);
            if (ps.p != ps.end) {
                st = rg__json_fail(&ps, ps.p, RG_ERR_PARSE, "text after the %s",
                                   root->type == RG_JSON_OBJECT  ? "object"
                                   : root->type == RG_JSON_ARRAY ? "array"
                                                                 : "value");
            }
        }
    }
    if (ps.c_locale != (locale_t)0) {
        freelocale(ps.c_locale);
    }
    if (st != RG_OK) {
        rg__json_free_blocks(doc);
        return st;
    }
    doc->root = root;
    return RG_OK;
}

void rg_json_doc_fini(rg_json_doc_t *doc)
{
    if (doc != NULL) {
        rg__json_free_blocks(doc);
    }
}

const rg_json_val_t *rg_json_root(const rg_json_doc_t *doc)
{
    return doc != NULL ? doc->root : NULL;
}

rg_json_type_t rg_json_type(const rg_json_val_t *v)
{
    return v != NULL ? v->type : RG_JSON_ABSENT;
}

const char *rg_json_type_name(rg_json_type_t type)
{
    switch (type) {
    case RG_JSON_ABSENT: return "nothing";
    case RG_JSON_NULL:   return "null";
    case RG_JSON_BOOL:   return "a boolean";
    case RG_JSON_NUMBER: return "a number";
    case RG_JSON_STRING: return "a string";
    case RG_JSON_ARRAY:  return "an array";
    case RG_JSON_OBJECT: return "an object";
    }
    return "nothing";
}

void rg_json_where(const rg_json_val_t *v, unsigned *line_p, unsigned *col_p)
{
    *line_p = v != NULL ? v->line : 0;
    *col_p  = v != NULL ? v->col : 0;
}

const rg_json_val_t *rg_json_get(const rg_json_val_t *obj, const char *key)
{
    const rg_json_val_t *m, *found = NULL;
    size_t               n;

    if (obj == NULL || obj->type != RG_JSON_OBJECT || key == NULL) {
        return NULL;
    }
    n = strlen(key);
    /* The last of the name wins: read on to the end. */
    for (m = obj->u.first; m != NULL; m = m->next) {
        if (m->key_len == n && memcmp(m->key, key, n) == 0) {
            found = m;
        }
    }
    return found;
}

size_t rg_json_count(const rg_json_val_t *v)
{
    return v != NULL && (v->type == RG_JSON_ARRAY || v->type == RG_JSON_OBJECT) ? v->len : 0;
}

const rg_json_val_t *rg_json_at(const rg_json_val_t *arr, size_t i)
{
    const rg_json_val_t *e;

    if (arr == NULL || arr->type != RG_JSON_ARRAY || i >= arr->len) {
        return NULL;
    }
    for (e = arr->u.first; i > 0; i--) {
        e = e->next;
    }
    return e;
}

const rg_json_val_t *rg_json_first(const rg_json_val_t *container)
{
    return rg_json_count(container) > 0 ? container->u.first : NULL;
}

const rg_json_val_t *rg_json_next(const rg_json_val_t *v)
{
    return v != NULL ? v->next : NULL;
}

const char *rg_json_member_key(const rg_json_val_t *member, size_t *len_p)
{
    if (member == NULL || member->key == NULL) {
        return NULL;
    }
    if (len_p != NULL) {
        *len_p = member->key_len;
    }
    return member->key;
}

int rg_json_as_double(const rg_json_val_t *v, double *out)
{
    if (v == NULL || v->type != RG_JSON_NUMBER) {
        return 0;
    }
    *out = v->u.num;
    return 1;
}

int rg_json_as_bool(const rg_json_val_t *v, int *out)
{
    if (v == NULL || v->type != RG_JSON_BOOL) {
        return 0;
    }
    *out = v->u.b;
    return 1;
}

const char *rg_json_as_string(const rg_json_val_t *v, size_t *len_p)
{
    if (v == NULL || v->type != RG_JSON_STRING) {
        return NULL;
    }
    if (len_p != NULL) {
        *len_p = v->len;
    }
    return v->u.str;
}

int rg_json_string_is(const rg_json_val_t *v, const char *s)
{
    return v != NULL && v->type == RG_JSON_STRING && s != NULL && strlen(s) == v->len &&
           memcmp(v->u.str, s, v->len) == 0;
}

int rg_json_is_null(const rg_json_val_t *v)
{
    return v != NULL && v->type == RG_JSON_NULL;
}
