/*
 * railgauge: the simulator's rails from text (docs/sim.md "Rails"): a comma
 * list of per-rail G values, or the rails.json of `railgauge gauge --rails`
 * (python/railgauge/gauge_rails.py writes it: {"rails": [{"name", "L_us",
 * "o_us", "G_us_per_byte", ...}, ...], "weights": [...], "policy": ...}),
 * read by a small JSON reader that checks the whole document and keeps
 * what the rails need. The model itself is in model_rails.c.
 */
#include "sim/rails.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

rg_status_t rg_sim_rails_parse_g(const char *text, rg_sim_rails_t *r, rg_err_t *err)
{
    const char *q = text;
    char       *end;
    int         n = 0;

    for (;;) {
        double v;
        if (n == RG_SIM_RAILS_MAX) {
            return rg_err_set(err, RG_ERR_RANGE, "--rails '%s': more than %d rails", text,
                              RG_SIM_RAILS_MAX);
        }
        errno = 0;
        v = strtod(q, &end);
        if (end == q || errno != 0 || (*end != ',' && *end != '\0')) {
            return rg_err_set(err, RG_ERR_INVALID, "--rails '%s': expected a rails.json or "
                              "per-rail G values (us/byte) separated by commas", text);
        }
        if (!(v > 0) || !isfinite(v)) {
            return rg_err_set(err, RG_ERR_RANGE, "--rails '%s': rail %d has G = %g: a rail's "
                              "G (us/byte) must be above 0", text, n, v);
        }
        r->rail[n++].G = v;
        if (*end == '\0') {
            break;
        }
        q = end + 1;
    }
    r->nrails = n;
    return RG_OK;
}

/* ---- a small JSON reader ---------------------------------------------------- */

typedef struct jr {
    const char *p, *start, *end;
    const char *name;
    rg_err_t   *err;
    int         failed;
} jr_t;

/* Fails with where (line, column) and what. */
static int jr_fail(jr_t *j, const char *what)
{
    const char *q;
    int         line = 1, col = 1;

    if (j->failed) {
        return -1;
    }
    for (q = j->start; q < j->p && q < j->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    rg_err_set(j->err, RG_ERR_INVALID, "%s: not a rails.json (line %d, column %d): %s",
               j->name, line, col, what);
    j->failed = 1;
    return -1;
}

static void jr_ws(jr_t *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) {
        j->p++;
    }
}

static int jr_lit(jr_t *j, const char *lit)
{
    size_t n = strlen(lit);

    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) {
        return jr_fail(j, "a value expected");
    }
    j->p += n;
    return 0;
}

/* A string into buf (escapes kept as written, truncated to cap - 1). */
static int jr_string(jr_t *j, char *buf, size_t cap)
{
    size_t n = 0;

    if (j->p >= j->end || *j->p != '"') {
        return jr_fail(j, "a string expected");
    }
    j->p++;
    while (j->p < j->end && *j->p != '"') {
        if ((unsigned char)*j->p < 0x20) {
            return jr_fail(j, "a control character in a string");
        }
        if (*j->p == '\\') {
            if (j->p + 1 >= j->end) {
                break;
            }
            if (n + 1 < cap) {
                buf[n++] = *j->p;
            }
            j->p++;
        }
        if (n + 1 < cap) {
            buf[n++] = *j->p;
        }
        j->p++;
    }
    if (j->p >= j->end) {
        return jr_fail(j, "a string without its closing quote");
    }
    j->p++;
    if (cap > 0) {
        buf[n] = '\0';
    }
    return 0;
}

static int jr_number(jr_t *j, double *v)
{
    char        tmp[64];
    const char *q = j->p;
    size_t      n;
    char       *e;

    while (q < j->end && (isdigit((unsigned char)*q) || *q == '-' || *q == '+' || *q == '.' ||
                          *q == 'e' || *q == 'E')) {
        q++;
    }
    n = (size_t)(q - j->p);
    if (n == 0 || n >= sizeof(tmp)) {
        return jr_fail(j, "a value expected");
    }
    memcpy(tmp, j->p, n);
    tmp[n] = '\0';
    errno = 0;
    *v = strtod(tmp, &e);
    if (*e != '\0' || errno != 0 || !isfinite(*v)) {
        return jr_fail(j, "not a number");
    }
    j->p = q;
    return 0;
}

static int jr_skip(jr_t *j, int depth);

/* After a value inside an object or array: 1 and past a ',' when another
 * follows, 0 and past `close` at its end, else -1 (failed). */
static int jr_next(jr_t *j, char close)
{
    jr_ws(j);
    if (j->p < j->end && *j->p == ',') {
        j->p++;
        return 1;
    }
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 0;
    }
    return close == '}' ? jr_fail(j, "',' or '}' expected") : jr_fail(j, "',' or ']' expected");
}

/* The members of an object (the opening brace read): each key, then calls
 * member(j, key, arg) with j->p at its value, which must read it. */
static int jr_object(jr_t *j, int (*member)(jr_t *, const char *, void *), void *arg)
{
    char key[64];
    int  more;

    jr_ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return 0;
    }
    for (;;) {
        jr_ws(j);
        if (jr_string(j, key, sizeof(key)) != 0) {
            return -1;
        }
        jr_ws(j);
        if (j->p >= j->end || *j->p != ':') {
            return jr_fail(j, "':' expected after a key");
        }
        j->p++;
        jr_ws(j);
        if (member(j, key, arg) != 0) {
            return -1;
        }
        if ((more = jr_next(j, '}')) <= 0) {
            return more;
        }
    }
}

static int skip_member(jr_t *j, const char *key, void *arg)
{
    (void)key;
    return jr_skip(j, *(int *)arg);
}

/* Any value, nested at most 64 deep. */
static int jr_skip(jr_t *j, int depth)
{
    char tmp[8];
    int  d = depth + 1, more;

    if (depth > 64) {
        return jr_fail(j, "nested too deep");
    }
    jr_ws(j);
    if (j->p >= j->end) {
        return jr_fail(j, "a value expected");
    }
    switch (*j->p) {
    case '{':
        j->p++;
        return jr_object(j, skip_member, &d);
    case '[':
        j->p++;
        jr_ws(j);
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 0;
        }
        for (;;) {
            if (jr_skip(j, d) != 0) {
                return -1;
            }
            if ((more = jr_next(j, ']')) <= 0) {
                return more;
            }
        }
    case '"':
        return jr_string(j, tmp, sizeof(tmp));
    case 't':
        return jr_lit(j, "true");
    case 'f':
        return jr_lit(j, "false");
    case 'n':
        return jr_lit(j, "null");
    default: {
        double v;
        return jr_number(j, &v);
    }
    }
}

/* An array of elements, each read by elem(j, index, arg). */
static int jr_array(jr_t *j, int (*elem)(jr_t *, int, void *), void *arg)
{
    int i = 0, more;

    if (j->p >= j->end || *j->p != '[') {
        return jr_fail(j, "an array expected");
    }
    j->p++;
    jr_ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 0;
    }
    for (;; i++) {
        jr_ws(j);
        if (elem(j, i, arg) != 0) {
            return -1;
        }
        if ((more = jr_next(j, ']')) <= 0) {
            return more;
        }
    }
}

typedef struct rails_doc {
    rg_sim_rails_t *r;
    double          weights[RG_SIM_RAILS_MAX];
    int             nrails, nweights, has_weights, rail_has_g;
    char            policy[32];
    int             cur; /* the rail being read */
} rails_doc_t;

/* A number >= 0 (or null: the message's own), into *v. */
static int rail_param(jr_t *j, rails_doc_t *d, const char *key, double *v)
{
    char what[160];

    if (j->p < j->end && *j->p == 'n') {
        *v = NAN;
        return jr_lit(j, "null");
    }
    if (jr_number(j, v) != 0) {
        return -1;
    }
    if (*v < 0) {
        snprintf(what, sizeof(what), "rails[%d].%s = %g: must be >= 0", d->cur, key, *v);
        return jr_fail(j, what);
    }
    return 0;
}

static int rail_member(jr_t *j, const char *key, void *arg)
{
    rails_doc_t   *d = arg;
    rg_sim_rail_t *rl = &d->r->rail[d->cur];
    char           what[160];

    if (strcmp(key, "G_us_per_byte") == 0) {
        if (jr_number(j, &rl->G) != 0) {
            return -1;
        }
        if (!(rl->G > 0)) {
            snprintf(what, sizeof(what), "rails[%d].G_us_per_byte = %g: a rail's G must be "
                     "above 0", d->cur, rl->G);
            return jr_fail(j, what);
        }
        d->rail_has_g = 1;
        return 0;
    }
    if (strcmp(key, "L_us") == 0) {
        return rail_param(j, d, key, &rl->L);
    }
    if (strcmp(key, "o_us") == 0) {
        return rail_param(j, d, key, &rl->o);
    }
    if (strcmp(key, "g_us") == 0) {
        return rail_param(j, d, key, &rl->g);
    }
    return jr_skip(j, 2);
}

static int rail_elem(jr_t *j, int i, void *arg)
{
    rails_doc_t *d = arg;
    char         what[96];

    if (i >= RG_SIM_RAILS_MAX) {
        snprintf(what, sizeof(what), "more than %d rails", RG_SIM_RAILS_MAX);
        return jr_fail(j, what);
    }
    if (j->p >= j->end || *j->p != '{') {
        return jr_fail(j, "each rail must be an object");
    }
    j->p++;
    d->cur = i;
    d->rail_has_g = 0;
    if (jr_object(j, rail_member, d) != 0) {
        return -1;
    }
    if (!d->rail_has_g) {
        snprintf(what, sizeof(what), "rails[%d] has no G_us_per_byte", i);
        return jr_fail(j, what);
    }
    d->nrails = i + 1;
    return 0;
}

static int weight_elem(jr_t *j, int i, void *arg)
{
    rails_doc_t *d = arg;
    double       v;
    char         what[96];

    if (jr_number(j, &v) != 0) {
        return -1;
    }
    if (!(v > 0)) {
        snprintf(what, sizeof(what), "weights[%d] = %g: a weight must be above 0", i, v);
        return jr_fail(j, what);
    }
    if (i < RG_SIM_RAILS_MAX) {
        d->weights[i] = v;
    }
    d->nweights = i + 1;
    return 0;
}

static int top_member(jr_t *j, const char *key, void *arg)
{
    rails_doc_t *d = arg;

    if (strcmp(key, "rails") == 0) {
        return jr_array(j, rail_elem, d);
    }
    if (strcmp(key, "weights") == 0) {
        d->has_weights = 1;
        return jr_array(j, weight_elem, d);
    }
    if (strcmp(key, "policy") == 0) {
        return jr_string(j, d->policy, sizeof(d->policy));
    }
    return jr_skip(j, 1);
}

rg_status_t rg_sim_rails_parse_json(const char *text, size_t len, const char *name,
                                    rg_sim_rails_t *r, int *policy, double *weights,
                                    int *nweights, rg_err_t *err)
{
    jr_t        j = {text, text, text + len, name, err, 0};
    rails_doc_t d;
    int         i;

    memset(&d, 0, sizeof(d));
    d.r = r;
    jr_ws(&j);
    if (j.p >= j.end || *j.p != '{') {
        jr_fail(&j, "an object expected");
        return RG_ERR_INVALID;
    }
    j.p++;
    if (jr_object(&j, top_member, &d) != 0) {
        return RG_ERR_INVALID;
    }
    jr_ws(&j);
    if (j.p != j.end) {
        jr_fail(&j, "text after the object");
        return RG_ERR_INVALID;
    }
    if (d.nrails == 0) {
        return rg_err_set(err, RG_ERR_INVALID, "%s: no rails (a rails.json of `railgauge "
                          "gauge --rails` has a list \"rails\" of per-rail fits)", name);
    }
    if (d.has_weights && d.nweights != d.nrails) {
        return rg_err_set(err, RG_ERR_INVALID, "%s: %d weights for %d rails", name,
                          d.nweights, d.nrails);
    }
    *policy = -1;
    if (d.policy[0] != '\0' && (*policy = rg_sim_rails_policy(d.policy)) < 0) {
        return rg_err_set(err, RG_ERR_INVALID, "%s: policy '%s' is not binding, round-robin, "
                          "even, weighted or adaptive", name, d.policy);
    }
    r->nrails = d.nrails;
    *nweights = d.has_weights ? d.nweights : 0;
    for (i = 0; i < *nweights; i++) {
        weights[i] = d.weights[i];
    }
    return RG_OK;
}
