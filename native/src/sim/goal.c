/*
 * railgauge: the streaming GOAL parser (see goal.h for the language).
 */
#include "sim/goal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOK_MAX 256

typedef struct label {
    uint32_t name;  /* offset in the rank's name arena */
    uint32_t op;
} label_t;

typedef struct pend {
    uint32_t a, b;  /* name offsets: a (i)requires b */
    uint32_t line, col;
    int      ireq;
} pend_t;

typedef struct parser {
    FILE       *f;
    const char *name;
    uint32_t    line, col;      /* of the next character */
    int         peeked;         /* a character read ahead, or -2 */
    char        tok[TOK_MAX];
    uint32_t    tline, tcol;    /* where tok starts */
    int         eof;
    rg_sim_sched_t *s;
    double      calc_unit;
    rg_err_t   *err;
    /* Per rank block. */
    char       *arena;
    size_t      arena_n, arena_cap;
    label_t    *labels;
    size_t      nlabels, labels_cap;
    pend_t     *pend;
    size_t      npend, pend_cap;
} parser_t;

static int next_char(parser_t *p)
{
    int c;

    if (p->peeked != -2) {
        c = p->peeked;
        p->peeked = -2;
    } else {
        c = getc(p->f);
    }
    if (c == '\n') {
        p->line++;
        p->col = 1;
    } else if (c != EOF) {
        p->col++;
    }
    return c;
}

static int peek_char(parser_t *p)
{
    if (p->peeked == -2) {
        p->peeked = getc(p->f);
    }
    return p->peeked;
}

static rg_status_t syntax(parser_t *p, uint32_t line, uint32_t col, const char *what)
{
    return rg_err_set(p->err, RG_ERR_PARSE, "%s:%u:%u: %s", p->name, line, col, what);
}

static int is_word(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == '+';
}

/* Reads the next token into p->tok: a word, or one of { } :. Empty at end. */
static rg_status_t lex(parser_t *p)
{
    int    c;
    size_t n = 0;

    for (;;) {
        c = next_char(p);
        if (c == EOF) {
            p->tok[0] = '\0';
            p->tline = p->line;
            p->tcol = p->col;
            p->eof = 1;
            return RG_OK;
        }
        if (isspace(c) || c == ';' || c == ',') {
            continue;
        }
        if (c == '/' && peek_char(p) == '/') {
            while ((c = next_char(p)) != EOF && c != '\n') {
            }
            continue;
        }
        if (c == '/' && peek_char(p) == '*') {
            uint32_t l = p->line, col = p->col - 1;
            int      prev = 0;
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
        break;
    }
    p->tline = p->line;
    p->tcol = p->col - 1;
    if (c == '{' || c == '}' || c == ':') {
        p->tok[0] = (char)c;
        p->tok[1] = '\0';
        return RG_OK;
    }
    if (!is_word(c)) {
        char msg[64];
        snprintf(msg, sizeof(msg), "unexpected character '%c'", isprint(c) ? c : '?');
        return syntax(p, p->tline, p->tcol, msg);
    }
    p->tok[n++] = (char)c;
    while (is_word(peek_char(p))) {
        c = next_char(p);
        if (n + 1 >= TOK_MAX) {
            return syntax(p, p->tline, p->tcol, "word too long");
        }
        p->tok[n++] = (char)c;
    }
    p->tok[n] = '\0';
    return RG_OK;
}

static rg_status_t expect(parser_t *p, const char *what)
{
    rg_status_t st = lex(p);
    char        msg[TOK_MAX + 64];

    if (st != RG_OK) {
        return st;
    }
    if (strcmp(p->tok, what) != 0) {
        snprintf(msg, sizeof(msg), "expected '%s', found '%s'", what,
                 p->eof ? "end of file" : p->tok);
        return syntax(p, p->tline, p->tcol, msg);
    }
    return RG_OK;
}

/* An integer token (with optional sign) into *v. */
static rg_status_t integer(parser_t *p, const char *what, long long lo, long long hi,
                           long long *v)
{
    char      *end;
    long long  x;
    char       msg[TOK_MAX + 96];
    rg_status_t st = lex(p);

    if (st != RG_OK) {
        return st;
    }
    errno = 0;
    x = strtoll(p->tok, &end, 10);
    if (p->eof || end == p->tok || *end != '\0' || errno != 0) {
        snprintf(msg, sizeof(msg), "expected %s (an integer), found '%s'", what,
                 p->eof ? "end of file" : p->tok);
        return syntax(p, p->tline, p->tcol, msg);
    }
    if (x < lo || x > hi) {
        snprintf(msg, sizeof(msg), "%s %lld out of range %lld..%lld", what, x, lo, hi);
        return rg_err_set(p->err, RG_ERR_RANGE, "%s:%u:%u: %s", p->name, p->tline, p->tcol, msg);
    }
    *v = x;
    return RG_OK;
}

/* A size (bytes, optional suffix) or a calc amount (a number, no suffix). */
static rg_status_t amount(parser_t *p, int is_size, double *v)
{
    char       *end;
    double      x, mult = 1;
    char        msg[TOK_MAX + 64];
    rg_status_t st = lex(p);

    if (st != RG_OK) {
        return st;
    }
    errno = 0;
    x = strtod(p->tok, &end);
    if (p->eof || end == p->tok || errno != 0 || !isfinite(x)) {
        snprintf(msg, sizeof(msg), "expected a %s, found '%s'", is_size ? "size" : "duration",
                 p->eof ? "end of file" : p->tok);
        return syntax(p, p->tline, p->tcol, msg);
    }
    if (*end != '\0') {
        if (!is_size) {
            mult = 0;
        } else if (!strcmp(end, "b") || !strcmp(end, "B")) {
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

static rg_status_t arena_add(parser_t *p, const char *text, uint32_t *off)
{
    size_t len = strlen(text) + 1;

    if (p->arena_n + len > p->arena_cap) {
        size_t nc = p->arena_cap ? p->arena_cap : 4096;
        char  *na;
        while (nc < p->arena_n + len) {
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
    *off = (uint32_t)p->arena_n;
    p->arena_n += len;
    return RG_OK;
}

static parser_t *sort_ctx;

static int label_cmp(const void *a, const void *b)
{
    return strcmp(sort_ctx->arena + ((const label_t *)a)->name,
                  sort_ctx->arena + ((const label_t *)b)->name);
}

static const label_t *label_find(parser_t *p, const char *name)
{
    size_t lo = 0, hi = p->nlabels;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int    c = strcmp(name, p->arena + p->labels[mid].name);
        if (c == 0) {
            return &p->labels[mid];
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

/* At the end of a rank block: resolve its dependencies. */
static rg_status_t close_rank(parser_t *p, long long rank)
{
    size_t      i;
    rg_status_t st;

    sort_ctx = p;
    if (p->nlabels > 1) {
        qsort(p->labels, p->nlabels, sizeof(*p->labels), label_cmp);
    }
    for (i = 1; i < p->nlabels; i++) {
        if (strcmp(p->arena + p->labels[i].name, p->arena + p->labels[i - 1].name) == 0) {
            const rg_sim_op_t *op = &p->s->ops[p->labels[i].op];
            return rg_err_set(p->err, RG_ERR_PARSE, "%s:%u: rank %lld: label '%s' defined twice",
                              p->name, op->line, rank, p->arena + p->labels[i].name);
        }
    }
    for (i = 0; i < p->npend; i++) {
        const pend_t  *d = &p->pend[i];
        const label_t *a = label_find(p, p->arena + d->a);
        const label_t *b = label_find(p, p->arena + d->b);
        if (a == NULL || b == NULL) {
            return rg_err_set(p->err, RG_ERR_NOT_FOUND, "%s:%u:%u: rank %lld: unknown label '%s'",
                              p->name, d->line, d->col, rank,
                              p->arena + (a == NULL ? d->a : d->b));
        }
        if ((st = rg_sim_sched_dep(p->s, a->op, b->op, d->ireq, p->err)) != RG_OK) {
            return st;
        }
    }
    p->nlabels = p->npend = p->arena_n = 0;
    return RG_OK;
}

static rg_status_t parse_op(parser_t *p, uint32_t rank, const char *label, uint32_t lline)
{
    rg_sim_op_t op;
    long long   v;
    rg_status_t st;
    char        kw[16];
    int         kind;

    memset(&op, 0, sizeof(op));
    op.rank = rank;
    op.line = lline;
    if (!strcmp(p->tok, "send")) {
        kind = RG_SIM_SEND;
    } else if (!strcmp(p->tok, "recv")) {
        kind = RG_SIM_RECV;
    } else if (!strcmp(p->tok, "calc")) {
        kind = RG_SIM_CALC;
    } else {
        char msg[TOK_MAX + 64];
        snprintf(msg, sizeof(msg), "expected send, recv or calc, found '%s'", p->tok);
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
        int         bare = isdigit((unsigned char)p->tok[strlen(p->tok) - 1]);
        /* LogGOPSim writes sizes as "8b" and also "8 b". */
        if ((st = lex(p)) != RG_OK) {
            return st;
        }
        if (bare && (!strcmp(p->tok, "b") || !strcmp(p->tok, "B")) && (st = lex(p)) != RG_OK) {
            return st;
        }
        if (strcmp(p->tok, word) != 0) {
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
    /* Optional attributes: tag, cpu, nic, in any order. */
    for (;;) {
        int c;
        /* Look at the next word without consuming a label of the next line:
         * attributes are keywords, so peek by lexing and push back. */
        while ((c = peek_char(p)) == ' ' || c == '\t' || c == '\r') {
            next_char(p);
        }
        if (c != 't' && c != 'c' && c != 'n') {
            break;
        }
        /* Read the word and decide. */
        {
            size_t n = 0;
            while (n + 1 < sizeof(kw) && isalpha(peek_char(p))) {
                kw[n++] = (char)next_char(p);
            }
            kw[n] = '\0';
        }
        if (!strcmp(kw, "tag") && kind != RG_SIM_CALC) {
            if ((st = integer(p, "tag", -1, INT32_MAX, &v)) != RG_OK) {
                return st;
            }
            op.tag = (int32_t)v;
        } else if (!strcmp(kw, "cpu")) {
            if ((st = integer(p, "cpu", 0, 1023, &v)) != RG_OK) {
                return st;
            }
            op.cpu = (uint16_t)v;
        } else if (!strcmp(kw, "nic") && kind != RG_SIM_CALC) {
            if ((st = integer(p, "nic", 0, 1023, &v)) != RG_OK) {
                return st;
            }
            op.nic = (uint16_t)v;
        } else {
            char msg[64];
            snprintf(msg, sizeof(msg), "unexpected '%s' after %s", kw,
                     kind == RG_SIM_CALC ? "calc" : kind == RG_SIM_SEND ? "send" : "recv");
            return syntax(p, p->line, p->col - (uint32_t)strlen(kw), msg);
        }
    }
    if ((st = rg_sim_sched_add(p->s, &op, p->err)) != RG_OK) {
        return st;
    }
    if (label != NULL) {
        uint32_t off;
        if (p->nlabels == p->labels_cap) {
            size_t   nc = p->labels_cap ? p->labels_cap * 2 : 256;
            label_t *nl = realloc(p->labels, nc * sizeof(*nl));
            if (nl == NULL) {
                return rg_err_set(p->err, RG_ERR_NOMEM, "%s: out of memory", p->name);
            }
            p->labels = nl;
            p->labels_cap = nc;
        }
        if ((st = arena_add(p, label, &off)) != RG_OK) {
            return st;
        }
        p->labels[p->nlabels].name = off;
        p->labels[p->nlabels].op = (uint32_t)(p->s->nops - 1);
        p->nlabels++;
    }
    return RG_OK;
}

static rg_status_t parse_rank_body(parser_t *p, uint32_t rank)
{
    rg_status_t st;
    char        word[TOK_MAX];
    uint32_t    wline, wcol;

    for (;;) {
        if ((st = lex(p)) != RG_OK) {
            return st;
        }
        if (p->eof) {
            return syntax(p, p->tline, p->tcol, "end of file inside a rank block (missing '}')");
        }
        if (!strcmp(p->tok, "}")) {
            return close_rank(p, rank);
        }
        if (!strcmp(p->tok, "send") || !strcmp(p->tok, "recv") || !strcmp(p->tok, "calc")) {
            if ((st = parse_op(p, rank, NULL, p->tline)) != RG_OK) {
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
        snprintf(word, sizeof(word), "%s", p->tok);
        wline = p->tline;
        wcol = p->tcol;
        if ((st = lex(p)) != RG_OK) {
            return st;
        }
        if (!strcmp(p->tok, ":")) {
            if ((st = lex(p)) != RG_OK) {
                return st;
            }
            if ((st = parse_op(p, rank, word, wline)) != RG_OK) {
                return st;
            }
        } else if (!strcmp(p->tok, "requires") || !strcmp(p->tok, "irequires")) {
            pend_t d = {.line = wline, .col = wcol, .ireq = p->tok[0] == 'i'};
            if ((st = lex(p)) != RG_OK) {
                return st;
            }
            if (p->eof || !strcmp(p->tok, "}") || !strcmp(p->tok, ":")) {
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
            if ((st = arena_add(p, word, &d.a)) != RG_OK ||
                (st = arena_add(p, p->tok, &d.b)) != RG_OK) {
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
    p.col = 1;
    p.peeked = -2;
    p.s = s;
    p.calc_unit = calc_unit_us;
    p.err = err;
    rg_sim_sched_init(s, 0);
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
        if (strcmp(p.tok, "rank") != 0) {
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
    free(p.arena);
    free(p.labels);
    free(p.pend);
    return st;
}
