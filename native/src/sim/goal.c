/*
 * railgauge: the streaming GOAL parser (see goal.h for the language).
 */
#include "sim/goal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOK_MAX 256
#define BUF_SIZE (1u << 16) /* 64 KiB: below malloc's mmap threshold */

/* A label of the current rank block: open addressing, a slot is in use when
 * its gen is the block's (so a new block needs no clearing). */
typedef struct lslot {
    uint32_t gen, hash, name, len, op;
} lslot_t;

/* "a (i)requires b", kept in the order written: a_op and b_op where the label
 * was already defined, else UINT32_MAX and the name (offset, length) in the
 * arena, resolved at the end of the block. */
typedef struct pend {
    uint32_t a_op, b_op;
    uint32_t a, alen, b, blen;
    uint32_t line, col;
    int      ireq;
} pend_t;

/* Character classes of the hand-written scanner. */
enum { CL_OTHER = 0, CL_SPACE, CL_NL, CL_WORD, CL_PUNCT, CL_SLASH };

typedef struct parser {
    FILE       *f;
    const char *name;
    /* Input: buf[pos..len) unread; base is the file offset of buf[0] and
     * line_start that of the current line, so columns cost nothing per
     * character. */
    char       *buf;
    size_t      pos, len;
    uint64_t    base, line_start;
    uint32_t    line;
    int         in_eof;
    char       *tok;            /* one of tokbuf: tok_keep switches */
    char        tokbuf[2][TOK_MAX];
    size_t      tlen;
    uint32_t    tline, tcol;    /* where tok starts */
    int         eof;
    rg_sim_sched_t *s;
    double      calc_unit;
    rg_err_t   *err;
    uint8_t     cls[256];
    /* Per rank block. */
    char       *arena;
    size_t      arena_n, arena_cap;
    lslot_t    *slots;
    size_t      nslots, nlabels; /* nslots a power of two */
    uint32_t    gen;
    pend_t     *pend;
    size_t      npend, pend_cap;
} parser_t;

/* Moves the unread bytes to the front and reads more; 0 at the end. */
static int refill(parser_t *p)
{
    size_t n;

    if (p->in_eof) {
        return 0;
    }
    if (p->pos > 0) {
        memmove(p->buf, p->buf + p->pos, p->len - p->pos);
        p->base += p->pos;
        p->len -= p->pos;
        p->pos = 0;
    }
    n = fread(p->buf + p->len, 1, BUF_SIZE - p->len, p->f);
    if (n == 0) {
        p->in_eof = 1;
        return 0;
    }
    p->len += n;
    return 1;
}

static inline int peek_char(parser_t *p)
{
    if (p->pos == p->len && !refill(p)) {
        return EOF;
    }
    return (unsigned char)p->buf[p->pos];
}

static inline int next_char(parser_t *p)
{
    int c = peek_char(p);

    if (c != EOF) {
        p->pos++;
        if (c == '\n') {
            p->line++;
            p->line_start = p->base + p->pos;
        }
    }
    return c;
}

/* The column (from 1) of the next character. */
static inline uint32_t col_now(const parser_t *p)
{
    return (uint32_t)(p->base + p->pos - p->line_start + 1);
}

static rg_status_t syntax(parser_t *p, uint32_t line, uint32_t col, const char *what)
{
    return rg_err_set(p->err, RG_ERR_PARSE, "%s:%u:%u: %s", p->name, line, col, what);
}

/* Keeps the current token's text: the next lex writes to the other buffer. */
static const char *tok_keep(parser_t *p)
{
    const char *t = p->tok;

    p->tok = p->tok == p->tokbuf[0] ? p->tokbuf[1] : p->tokbuf[0];
    return t;
}

static int tok_is(const parser_t *p, const char *kw, size_t n)
{
    return p->tlen == n && memcmp(p->tok, kw, n) == 0;
}

#define TOK_IS(p, lit) tok_is((p), (lit), sizeof(lit) - 1)

/* Reads the next token into p->tok: a word, or one of { } :. Empty at end.
 * The loops work on local copies of the buffer position: p->tok is char, which
 * may alias anything, so stores to it would otherwise reload p's fields. */
static rg_status_t lex(parser_t *p)
{
    const uint8_t *cls = p->cls;
    int            c;
    size_t         n = 0;

    for (;;) {
        /* Blanks and separators, fast within the buffer. */
        const char *b = p->buf;
        size_t      pos = p->pos, len = p->len;
        while (pos < len) {
            uint8_t k = cls[(unsigned char)b[pos]];
            if (k == CL_SPACE) {
                pos++;
            } else if (k == CL_NL) {
                pos++;
                p->line++;
                p->line_start = p->base + pos;
            } else {
                break;
            }
        }
        p->pos = pos;
        c = peek_char(p);
        if (c == EOF) {
            p->tok[0] = '\0';
            p->tlen = 0;
            p->tline = p->line;
            p->tcol = col_now(p);
            p->eof = 1;
            return RG_OK;
        }
        if (cls[c] == CL_SPACE || cls[c] == CL_NL) {
            continue;
        }
        if (c == '/') {
            uint32_t l = p->line, col = col_now(p);
            next_char(p);
            if (peek_char(p) == '/') {
                while ((c = next_char(p)) != EOF && c != '\n') {
                }
                continue;
            }
            if (peek_char(p) == '*') {
                int prev = 0;
                next_char(p);
                for (;;) {
                    c = next_char(p);
                    if (c == EOF) {
                        return syntax(p, l, col, "unterminated /* comment");
                    }
                    if (prev == '*' && c == '/') {
                        break;
                    }
                    prev = c;
                }
                continue;
            }
            return syntax(p, l, col, "unexpected character '/'");
        }
        break;
    }
    p->tline = p->line;
    p->tcol = col_now(p);
    if (cls[c] == CL_PUNCT) {
        next_char(p);
        p->tok[0] = (char)c;
        p->tok[1] = '\0';
        p->tlen = 1;
        return RG_OK;
    }
    if (cls[c] != CL_WORD) {
        char msg[64];
        snprintf(msg, sizeof(msg), "unexpected character '%c'", isprint(c) ? c : '?');
        return syntax(p, p->tline, p->tcol, msg);
    }
    for (;;) {
        const char *b = p->buf;
        char       *t = p->tok;
        size_t      pos = p->pos, len = p->len;
        while (pos < len && cls[(unsigned char)b[pos]] == CL_WORD) {
            if (n + 1 >= TOK_MAX) {
                p->pos = pos;
                return syntax(p, p->tline, p->tcol, "word too long");
            }
            t[n++] = b[pos++];
        }
        p->pos = pos;
        if (pos < len || !refill(p)) {
            break;
        }
    }
    p->tok[n] = '\0';
    p->tlen = n;
    return RG_OK;
}

static rg_status_t expect(parser_t *p, const char *what)
{
    rg_status_t st = lex(p);
    char        msg[TOK_MAX + 64];

    if (st != RG_OK) {
        return st;
    }
    if (strcmp(p->tok, what) != 0 || p->eof) {
        snprintf(msg, sizeof(msg), "expected '%s', found '%s'", what,
                 p->eof ? "end of file" : p->tok);
        return syntax(p, p->tline, p->tcol, msg);
    }
    return RG_OK;
}

/* An integer token (with optional sign) into *v: digits by hand, anything
 * else is an error. */
static rg_status_t integer(parser_t *p, const char *what, long long lo, long long hi,
                           long long *v)
{
    long long   x = 0;
    size_t      i = 0;
    int         neg = 0, big = 0;
    char        msg[TOK_MAX + 96];
    rg_status_t st = lex(p);

    if (st != RG_OK) {
        return st;
    }
    if (p->tlen > 0 && (p->tok[0] == '-' || p->tok[0] == '+')) {
        neg = p->tok[0] == '-';
        i = 1;
    }
    if (p->eof || i == p->tlen) {
        goto bad;
    }
    for (; i < p->tlen; i++) {
        unsigned d = (unsigned)(unsigned char)p->tok[i] - '0';
        if (d > 9) {
            goto bad;
        }
        if (x > (LLONG_MAX - 9) / 10) {
            big = 1; /* out of any range asked for; keep checking the syntax */
        } else {
            x = x * 10 + (long long)d;
        }
    }
    if (neg) {
        x = -x;
    }
    if (big || x < lo || x > hi) {
        snprintf(msg, sizeof(msg), "%s %s out of range %lld..%lld", what, p->tok, lo, hi);
        return rg_err_set(p->err, RG_ERR_RANGE, "%s:%u:%u: %s", p->name, p->tline, p->tcol, msg);
    }
    *v = x;
    return RG_OK;
bad:
    snprintf(msg, sizeof(msg), "expected %s (an integer), found '%s'", what,
             p->eof ? "end of file" : p->tok);
    return syntax(p, p->tline, p->tcol, msg);
}

/* Whether c, after leading digits, continues a number for strtod (a call to
 * strchr per size was a visible cost). */
static int amount_more(char c)
{
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == 'x' ||
           c == 'X' || c == 'p' || c == 'P';
}

/* A size (bytes, optional suffix) or a calc amount (a number, no suffix).
 * Plain digits are read by hand; decimals, exponents and the like by strtod. */
static rg_status_t amount(parser_t *p, int is_size, double *v)
{
    const char *end;
    double      x, mult = 1;
    char        msg[TOK_MAX + 64];
    size_t      i = 0;
    uint64_t    u = 0;
    rg_status_t st = lex(p);

    if (st != RG_OK) {
        return st;
    }
    while (i < p->tlen && i < 15 && p->tok[i] >= '0' && p->tok[i] <= '9') {
        u = u * 10 + (uint64_t)(p->tok[i] - '0');
        i++;
    }
    if (i > 0 && (i == p->tlen || !amount_more(p->tok[i]))) {
        x = (double)u;
        end = p->tok + i;
    } else {
        char *e;
        errno = 0;
        x = strtod(p->tok, &e);
        end = e;
        if (p->eof || end == p->tok || errno != 0 || !isfinite(x)) {
            snprintf(msg, sizeof(msg), "expected a %s, found '%s'",
                     is_size ? "size" : "duration", p->eof ? "end of file" : p->tok);
            return syntax(p, p->tline, p->tcol, msg);
        }
    }
    if (*end != '\0') {
        if (!is_size) {
            mult = 0;
        } else if ((end[0] == 'b' || end[0] == 'B') && end[1] == '\0') {
            mult = 1;
        } else if (!strcmp(end, "kb") || !strcmp(end, "KB") || !strcmp(end, "k")) {
            mult = 1024.0;
        } else if (!strcmp(end, "mb") || !strcmp(end, "MB") || !strcmp(end, "m")) {
            mult = 1024.0 * 1024;
        } else if (!strcmp(end, "gb") || !strcmp(end, "GB") || !strcmp(end, "g")) {
            mult = 1024.0 * 1024 * 1024;
        } else {
            mult = 0;
        }
        if (mult == 0) {
            snprintf(msg, sizeof(msg), "unknown suffix '%s' in '%s'", end, p->tok);
            return syntax(p, p->tline, p->tcol, msg);
        }
    }
    if (x < 0) {
        return rg_err_set(p->err, RG_ERR_RANGE, "%s:%u:%u: negative %s '%s'", p->name,
                          p->tline, p->tcol, is_size ? "size" : "duration", p->tok);
    }
    if (is_size && x != floor(x)) {
        snprintf(msg, sizeof(msg), "size '%s' is not a whole number of bytes", p->tok);
        return syntax(p, p->tline, p->tcol, msg);
    }
    *v = x * mult;
    return RG_OK;
}

static rg_status_t arena_add(parser_t *p, const char *text, size_t len, uint32_t *off)
{
    if (p->arena_n + len + 1 > p->arena_cap) {
        size_t nc = p->arena_cap ? p->arena_cap : 4096;
        char  *na;
        while (nc < p->arena_n + len + 1) {
            nc *= 2;
        }
        na = realloc(p->arena, nc);
        if (na == NULL) {
            return rg_err_set(p->err, RG_ERR_NOMEM, "%s: out of memory", p->name);
        }
        p->arena = na;
        p->arena_cap = nc;
    }
    memcpy(p->arena + p->arena_n, text, len);
    p->arena[p->arena_n + len] = '\0';
    *off = (uint32_t)p->arena_n;
    p->arena_n += len + 1;
    return RG_OK;
}

static uint32_t name_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    size_t   i;

    for (i = 0; i < n; i++) {
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    }
    return h;
}

/* The slot of label `s` (n bytes) in the current block: in use if it has the
 * block's gen, else where it would go. */
static lslot_t *label_slot(parser_t *p, const char *s, size_t n, uint32_t h)
{
    size_t i = h & (p->nslots - 1);

    for (;; i = (i + 1) & (p->nslots - 1)) {
        lslot_t *sl = &p->slots[i];
        if (sl->gen != p->gen) {
            return sl;
        }
        if (sl->hash == h && sl->len == n) {
            /* Labels are short: a byte loop beats a call to memcmp. */
            const char *a = p->arena + sl->name;
            size_t      k = 0;
            while (k < n && a[k] == s[k]) {
                k++;
            }
            if (k == n) {
                return sl;
            }
        }
    }
}

/* Doubles the label table, keeping the current block's labels. */
static rg_status_t labels_grow(parser_t *p)
{
    size_t   nn = p->nslots ? p->nslots * 2 : 1024, i;
    lslot_t *old = p->slots, *ns = calloc(nn, sizeof(*ns));
    size_t   on = p->nslots;

    if (ns == NULL) {
        return rg_err_set(p->err, RG_ERR_NOMEM, "%s: out of memory", p->name);
    }
    p->slots = ns;
    p->nslots = nn;
    for (i = 0; i < on; i++) {
        if (old[i].gen == p->gen) {
            size_t j = old[i].hash & (nn - 1);
            while (ns[j].gen == p->gen) {
                j = (j + 1) & (nn - 1);
            }
            ns[j] = old[i];
        }
    }
    free(old);
    return RG_OK;
}

static const lslot_t *label_find(parser_t *p, uint32_t off, uint32_t len)
{
    const char    *s = p->arena + off;
    const lslot_t *sl = label_slot(p, s, len, name_hash(s, len));

    return sl->gen == p->gen ? sl : NULL;
}

/* The operation of label s (n bytes) if defined in this block so far, else
 * UINT32_MAX. */
static uint32_t label_op(parser_t *p, const char *s, size_t n)
{
    const lslot_t *sl = label_slot(p, s, n, name_hash(s, n));

    return sl->gen == p->gen ? sl->op : UINT32_MAX;
}

/* At the end of a rank block: resolve its dependencies, in the order they
 * were written (so that dependents keep program order). */
static rg_status_t close_rank(parser_t *p, long long rank)
{
    size_t      i;
    rg_status_t st;

    for (i = 0; i < p->npend; i++) {
        const pend_t  *d = &p->pend[i];
        uint32_t       a = d->a_op, b = d->b_op;
        const lslot_t *la = NULL, *lb = NULL;
        if (a == UINT32_MAX && (la = label_find(p, d->a, d->alen)) != NULL) {
            a = la->op;
        }
        if (b == UINT32_MAX && (lb = label_find(p, d->b, d->blen)) != NULL) {
            b = lb->op;
        }
        if (a == UINT32_MAX || b == UINT32_MAX) {
            return rg_err_set(p->err, RG_ERR_NOT_FOUND, "%s:%u:%u: rank %lld: unknown label '%s'",
                              p->name, d->line, d->col, rank,
                              p->arena + (a == UINT32_MAX ? d->a : d->b));
        }
        if ((st = rg_sim_sched_dep(p->s, a, b, d->ireq, p->err)) != RG_OK) {
            return st;
        }
    }
    p->nlabels = p->npend = p->arena_n = 0;
    p->gen++;
    if (p->gen == 0) { /* wrapped: clear the table once */
        memset(p->slots, 0, p->nslots * sizeof(*p->slots));
        p->gen = 1;
    }
    return RG_OK;
}

/* Defines label (len bytes) as the last operation added, at line lline. */
static rg_status_t label_define(parser_t *p, const char *label, size_t len, uint32_t lline,
                                uint32_t rank)
{
    uint32_t    h = name_hash(label, len);
    lslot_t    *sl;
    rg_status_t st;

    if ((p->nlabels + 1) * 2 > p->nslots && (st = labels_grow(p)) != RG_OK) {
        return st;
    }
    sl = label_slot(p, label, len, h);
    if (sl->gen == p->gen) {
        return rg_err_set(p->err, RG_ERR_PARSE, "%s:%u: rank %u: label '%.*s' defined twice",
                          p->name, lline, rank, (int)len, label);
    }
    if ((st = arena_add(p, label, len, &sl->name)) != RG_OK) {
        return st;
    }
    sl->gen = p->gen;
    sl->hash = h;
    sl->len = (uint32_t)len;
    sl->op = (uint32_t)(p->s->nops - 1);
    p->nlabels++;
    return RG_OK;
}

static rg_status_t parse_op(parser_t *p, uint32_t rank, const char *label, size_t label_len,
                            uint32_t lline)
{
    rg_sim_op_t op;
    long long   v;
    rg_status_t st;
    char        kw[16];
    int         kind;

    memset(&op, 0, sizeof(op));
    op.rank = rank;
    op.line = lline;
    if (TOK_IS(p, "send")) {
        kind = RG_SIM_SEND;
    } else if (TOK_IS(p, "recv")) {
        kind = RG_SIM_RECV;
    } else if (TOK_IS(p, "calc")) {
        kind = RG_SIM_CALC;
    } else {
        char msg[TOK_MAX + 64];
        snprintf(msg, sizeof(msg), "expected send, recv or calc, found '%s'",
                 p->eof ? "end of file" : p->tok);
        return syntax(p, p->tline, p->tcol, msg);
    }
    op.kind = (uint8_t)kind;
    if ((st = amount(p, kind != RG_SIM_CALC, &op.amount)) != RG_OK) {
        return st;
    }
    if (kind == RG_SIM_CALC) {
        op.amount *= p->calc_unit;
    } else {
        const char *word = kind == RG_SIM_SEND ? "to" : "from";
        char        msg[TOK_MAX + 64];
        int         bare = isdigit((unsigned char)p->tok[p->tlen - 1]);
        /* LogGOPSim writes sizes as "8b" and also "8 b". */
        if ((st = lex(p)) != RG_OK) {
            return st;
        }
        if (bare && (TOK_IS(p, "b") || TOK_IS(p, "B")) && (st = lex(p)) != RG_OK) {
            return st;
        }
        if (p->eof || p->tlen != strlen(word) || memcmp(p->tok, word, p->tlen) != 0) {
            snprintf(msg, sizeof(msg), "expected '%s', found '%s'", word,
                     p->eof ? "end of file" : p->tok);
            return syntax(p, p->tline, p->tcol, msg);
        }
        if ((st = integer(p, "peer", kind == RG_SIM_RECV ? -1 : 0,
                          (long long)p->s->nranks - 1, &v)) != RG_OK) {
            return st;
        }
        op.peer = (int32_t)v;
    }
    /* Optional attributes on the operation's line: tag, cpu, nic, in any
     * order (a label on the next line is never taken for one). */
    for (;;) {
        int      c;
        uint32_t kcol;
        size_t   n = 0;
        while ((c = peek_char(p)) == ' ' || c == '\t' || c == '\r') {
            next_char(p);
        }
        if (c != 't' && c != 'c' && c != 'n') {
            break;
        }
        kcol = col_now(p);
        while (n + 1 < sizeof(kw) && (c = peek_char(p)) != EOF && isalpha(c)) {
            kw[n++] = (char)next_char(p);
        }
        kw[n] = '\0';
        if (n == 3 && !memcmp(kw, "tag", 3) && kind != RG_SIM_CALC) {
            if ((st = integer(p, "tag", -1, INT32_MAX, &v)) != RG_OK) {
                return st;
            }
            op.tag = (int32_t)v;
        } else if (n == 3 && !memcmp(kw, "cpu", 3)) {
            if ((st = integer(p, "cpu", 0, 1023, &v)) != RG_OK) {
                return st;
            }
            op.cpu = (uint16_t)v;
        } else if (n == 3 && !memcmp(kw, "nic", 3) && kind != RG_SIM_CALC) {
            if ((st = integer(p, "nic", 0, 1023, &v)) != RG_OK) {
                return st;
            }
            op.nic = (uint16_t)v;
        } else {
            char msg[64];
            snprintf(msg, sizeof(msg), "unexpected '%s' after %s", kw,
                     kind == RG_SIM_CALC ? "calc" : kind == RG_SIM_SEND ? "send" : "recv");
            return syntax(p, p->line, kcol, msg);
        }
    }
    if ((st = rg_sim_sched_add(p->s, &op, p->err)) != RG_OK) {
        return st;
    }
    if (label != NULL) {
        return label_define(p, label, label_len, lline, rank);
    }
    return RG_OK;
}

static rg_status_t parse_rank_body(parser_t *p, uint32_t rank)
{
    rg_status_t st;
    const char *word;
    size_t      wlen;
    uint32_t    wline, wcol;

    for (;;) {
        if ((st = lex(p)) != RG_OK) {
            return st;
        }
        if (p->eof) {
            return syntax(p, p->tline, p->tcol, "end of file inside a rank block (missing '}')");
        }
        if (TOK_IS(p, "}")) {
            return close_rank(p, rank);
        }
        if (TOK_IS(p, "send") || TOK_IS(p, "recv") || TOK_IS(p, "calc")) {
            if ((st = parse_op(p, rank, NULL, 0, p->tline)) != RG_OK) {
                return st;
            }
            continue;
        }
        if (!isalpha((unsigned char)p->tok[0]) && p->tok[0] != '_' &&
            !isdigit((unsigned char)p->tok[0])) {
            char msg[TOK_MAX + 64];
            snprintf(msg, sizeof(msg), "expected a label or an operation, found '%s'", p->tok);
            return syntax(p, p->tline, p->tcol, msg);
        }
        wlen = p->tlen;
        word = tok_keep(p);
        wline = p->tline;
        wcol = p->tcol;
        if ((st = lex(p)) != RG_OK) {
            return st;
        }
        if (!p->eof && TOK_IS(p, ":")) {
            if ((st = lex(p)) != RG_OK) {
                return st;
            }
            if ((st = parse_op(p, rank, word, wlen, wline)) != RG_OK) {
                return st;
            }
        } else if (!p->eof && (TOK_IS(p, "requires") || TOK_IS(p, "irequires"))) {
            pend_t d = {.line = wline, .col = wcol, .ireq = p->tok[0] == 'i'};
            if ((st = lex(p)) != RG_OK) {
                return st;
            }
            if (p->eof || TOK_IS(p, "}") || TOK_IS(p, ":") || TOK_IS(p, "{")) {
                return syntax(p, p->tline, p->tcol, "expected a label after requires");
            }
            if (p->npend == p->pend_cap) {
                size_t  nc = p->pend_cap ? p->pend_cap * 2 : 256;
                pend_t *np = realloc(p->pend, nc * sizeof(*np));
                if (np == NULL) {
                    return rg_err_set(p->err, RG_ERR_NOMEM, "%s: out of memory", p->name);
                }
                p->pend = np;
                p->pend_cap = nc;
            }
            d.alen = (uint32_t)wlen;
            d.blen = (uint32_t)p->tlen;
            d.a_op = label_op(p, word, wlen);
            d.b_op = label_op(p, p->tok, p->tlen);
            if ((d.a_op == UINT32_MAX && (st = arena_add(p, word, wlen, &d.a)) != RG_OK) ||
                (d.b_op == UINT32_MAX && (st = arena_add(p, p->tok, p->tlen, &d.b)) != RG_OK)) {
                return st;
            }
            p->pend[p->npend++] = d;
        } else {
            char msg[2 * TOK_MAX + 64];
            snprintf(msg, sizeof(msg), "unknown operation '%s' (send, recv, calc; or a label "
                     "followed by ':', requires or irequires)", word);
            return syntax(p, wline, wcol, msg);
        }
    }
}

static void classes(uint8_t *cls)
{
    int c;

    memset(cls, CL_OTHER, 256);
    for (c = 0; c < 256; c++) {
        if (isalnum(c) || c == '_' || c == '-' || c == '.' || c == '+') {
            cls[c] = CL_WORD;
        }
    }
    cls[' '] = cls['\t'] = cls['\r'] = cls['\v'] = cls['\f'] = CL_SPACE;
    cls[';'] = cls[','] = CL_SPACE;
    cls['\n'] = CL_NL;
    cls['{'] = cls['}'] = cls[':'] = CL_PUNCT;
    cls['/'] = CL_SLASH;
}

rg_status_t rg_sim_goal_parse(FILE *f, const char *name, double calc_unit_us,
                              rg_sim_sched_t *s, rg_err_t *err)
{
    parser_t    p;
    rg_status_t st;
    long long   v;
    uint8_t    *seen = NULL;

    memset(&p, 0, sizeof(p));
    p.f = f;
    p.name = name;
    p.line = 1;
    p.s = s;
    p.calc_unit = calc_unit_us;
    p.err = err;
    p.gen = 1;
    p.tok = p.tokbuf[0];
    classes(p.cls);
    rg_sim_sched_init(s, 0);
    p.buf = malloc(BUF_SIZE);
    if (p.buf == NULL || (st = labels_grow(&p)) != RG_OK) {
        st = rg_err_set(err, RG_ERR_NOMEM, "%s: out of memory", name);
        goto out;
    }
    if ((st = expect(&p, "num_ranks")) != RG_OK ||
        (st = integer(&p, "num_ranks", 1, 1 << 26, &v)) != RG_OK) {
        goto out;
    }
    s->nranks = (uint32_t)v;
    seen = calloc((size_t)v, 1);
    if (seen == NULL) {
        st = rg_err_set(err, RG_ERR_NOMEM, "%s: out of memory", name);
        goto out;
    }
    for (;;) {
        if ((st = lex(&p)) != RG_OK) {
            goto out;
        }
        if (p.eof) {
            break;
        }
        if (!TOK_IS(&p, "rank")) {
            char msg[TOK_MAX + 64];
            snprintf(msg, sizeof(msg), "expected 'rank', found '%s'", p.tok);
            st = syntax(&p, p.tline, p.tcol, msg);
            goto out;
        }
        if ((st = integer(&p, "rank", 0, (long long)s->nranks - 1, &v)) != RG_OK) {
            goto out;
        }
        if (seen[v]) {
            st = rg_err_set(err, RG_ERR_PARSE, "%s:%u:%u: rank %lld defined twice", name,
                            p.tline, p.tcol, v);
            goto out;
        }
        seen[v] = 1;
        if ((st = expect(&p, "{")) != RG_OK ||
            (st = parse_rank_body(&p, (uint32_t)v)) != RG_OK) {
            goto out;
        }
    }
    if (ferror(f)) {
        st = rg_err_set_errno(err, RG_ERR_IO, errno, "%s: read error", name);
        goto out;
    }
    st = rg_sim_sched_finish(s, err);
out:
    free(seen);
    free(p.buf);
    free(p.arena);
    free(p.slots);
    free(p.pend);
    return st;
}
