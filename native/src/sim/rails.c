/*
 * railgauge: the simulator's rails from text (docs/sim.md "Rails"): a comma
 * list of per-rail G values, or the rails.json of `railgauge gauge --rails`
 * (python/railgauge/gauge_rails.py writes it: {"rails": [{"name", "L_us",
 * "o_us", "G_us_per_byte", ...}, ...], "weights": [...], "policy": ...}),
 * read by base's JSON reader (base/json_read.h), which checks the whole
 * document, and then checked for what the rails need. The model itself is
 * in model_rails.c.
 */
#include "sim/rails.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"

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

/* ---- rails.json ----------------------------------------------------------- */

/* "name: not a rails.json (line L, column C): what", the form of every
 * complaint about the file's text, whether the JSON reader or the checks
 * below found it. */
static rg_status_t rails_bad(rg_err_t *err, const char *name, unsigned line, unsigned col,
                             const char *what)
{
    if (line == 0) { /* no place in particular: the text is too long */
        return rg_err_set(err, RG_ERR_INVALID, "%s: not a rails.json: %s", name, what);
    }
    return rg_err_set(err, RG_ERR_INVALID, "%s: not a rails.json (line %u, column %u): %s",
                      name, line, col, what);
}

/* As rails_bad, where the value v starts. */
static rg_status_t rails_bad_at(rg_err_t *err, const char *name, const rg_json_val_t *v,
                                const char *what)
{
    unsigned line, col;

    rg_json_where(v, &line, &col);
    return rails_bad(err, name, line, col, what);
}

/* A rail's L_us, o_us or g_us into *out: a number >= 0, or null (the
 * message's own: NaN); absent: *out as it is. */
static rg_status_t rail_param(const rg_json_val_t *rail, int i, const char *key, double *out,
                              const char *name, rg_err_t *err)
{
    const rg_json_val_t *v = rg_json_get(rail, key);
    char                 what[160];
    double               x;

    if (v == NULL) {
        return RG_OK;
    }
    if (rg_json_is_null(v)) {
        *out = NAN;
        return RG_OK;
    }
    if (!rg_json_as_double(v, &x)) {
        snprintf(what, sizeof(what), "rails[%d].%s: a number or null expected, not %s", i, key,
                 rg_json_type_name(rg_json_type(v)));
        return rails_bad_at(err, name, v, what);
    }
    if (x < 0) {
        snprintf(what, sizeof(what), "rails[%d].%s = %g: must be >= 0", i, key, x);
        return rails_bad_at(err, name, v, what);
    }
    *out = x;
    return RG_OK;
}

/* Rail i of the list (an object with G_us_per_byte above 0) into rl. */
static rg_status_t rail_read(const rg_json_val_t *rail, int i, rg_sim_rail_t *rl,
                             const char *name, rg_err_t *err)
{
    const rg_json_val_t *g = rg_json_get(rail, "G_us_per_byte");
    char                 what[160];
    rg_status_t          st;

    if (rg_json_type(rail) != RG_JSON_OBJECT) {
        snprintf(what, sizeof(what), "rails[%d]: each rail must be an object, not %s", i,
                 rg_json_type_name(rg_json_type(rail)));
        return rails_bad_at(err, name, rail, what);
    }
    if (g == NULL) {
        snprintf(what, sizeof(what), "rails[%d] has no G_us_per_byte", i);
        return rails_bad_at(err, name, rail, what);
    }
    if (!rg_json_as_double(g, &rl->G)) {
        snprintf(what, sizeof(what), "rails[%d].G_us_per_byte: a number expected, not %s", i,
                 rg_json_type_name(rg_json_type(g)));
        return rails_bad_at(err, name, g, what);
    }
    if (!(rl->G > 0)) {
        snprintf(what, sizeof(what), "rails[%d].G_us_per_byte = %g: a rail's G must be above 0",
                 i, rl->G);
        return rails_bad_at(err, name, g, what);
    }
    if ((st = rail_param(rail, i, "L_us", &rl->L, name, err)) != RG_OK ||
        (st = rail_param(rail, i, "o_us", &rl->o, name, err)) != RG_OK ||
        (st = rail_param(rail, i, "g_us", &rl->g, name, err)) != RG_OK) {
        return st;
    }
    return RG_OK;
}

/* The document's "weights" (absent: *nweights 0), each above 0, at most
 * RG_SIM_RAILS_MAX of them kept (*nweights counts them all). */
static rg_status_t rails_weights(const rg_json_val_t *list, double *weights, int *nweights,
                                 const char *name, rg_err_t *err)
{
    const rg_json_val_t *e;
    char                 what[160];
    double               v;
    int                  i = 0;

    *nweights = 0;
    if (list == NULL) {
        return RG_OK;
    }
    if (rg_json_type(list) != RG_JSON_ARRAY) {
        snprintf(what, sizeof(what), "weights: an array expected, not %s",
                 rg_json_type_name(rg_json_type(list)));
        return rails_bad_at(err, name, list, what);
    }
    for (e = rg_json_first(list); e != NULL; e = rg_json_next(e), i++) {
        if (!rg_json_as_double(e, &v)) {
            snprintf(what, sizeof(what), "weights[%d]: a number expected, not %s", i,
                     rg_json_type_name(rg_json_type(e)));
            return rails_bad_at(err, name, e, what);
        }
        if (!(v > 0)) {
            snprintf(what, sizeof(what), "weights[%d] = %g: a weight must be above 0", i, v);
            return rails_bad_at(err, name, e, what);
        }
        if (i < RG_SIM_RAILS_MAX) {
            weights[i] = v;
        }
    }
    *nweights = i;
    return RG_OK;
}

/* The checks of a parsed rails.json (its root an object); see rails.h. */
static rg_status_t rails_doc(const rg_json_val_t *root, const char *name, rg_sim_rails_t *r,
                             int *policy, double *weights, int *nweights, rg_err_t *err)
{
    const rg_json_val_t *list = rg_json_get(root, "rails"), *e;
    const rg_json_val_t *pol = rg_json_get(root, "policy");
    double               w[RG_SIM_RAILS_MAX];
    char                 what[160];
    const char          *ptext = NULL;
    int                  n = 0, nw = 0, has_weights = rg_json_get(root, "weights") != NULL;
    int                  i;
    rg_status_t          st;

    if (list != NULL && rg_json_type(list) != RG_JSON_ARRAY) {
        snprintf(what, sizeof(what), "rails: an array expected, not %s",
                 rg_json_type_name(rg_json_type(list)));
        return rails_bad_at(err, name, list, what);
    }
    for (e = rg_json_first(list); e != NULL; e = rg_json_next(e), n++) {
        if (n == RG_SIM_RAILS_MAX) {
            snprintf(what, sizeof(what), "more than %d rails", RG_SIM_RAILS_MAX);
            return rails_bad_at(err, name, e, what);
        }
        if ((st = rail_read(e, n, &r->rail[n], name, err)) != RG_OK) {
            return st;
        }
    }
    if ((st = rails_weights(rg_json_get(root, "weights"), w, &nw, name, err)) != RG_OK) {
        return st;
    }
    if (pol != NULL && (ptext = rg_json_as_string(pol, NULL)) == NULL) {
        snprintf(what, sizeof(what), "policy: a string expected, not %s",
                 rg_json_type_name(rg_json_type(pol)));
        return rails_bad_at(err, name, pol, what);
    }
    if (n == 0) {
        return rg_err_set(err, RG_ERR_INVALID, "%s: no rails (a rails.json of `railgauge "
                          "gauge --rails` has a list \"rails\" of per-rail fits)", name);
    }
    if (has_weights && nw != n) {
        return rg_err_set(err, RG_ERR_INVALID, "%s: %d weights for %d rails", name, nw, n);
    }
    *policy = -1;
    if (ptext != NULL && ptext[0] != '\0' && (*policy = rg_sim_rails_policy(ptext)) < 0) {
        return rg_err_set(err, RG_ERR_INVALID, "%s: policy '%s' is not binding, round-robin, "
                          "even, weighted or adaptive", name, ptext);
    }
    r->nrails = n;
    *nweights = has_weights ? nw : 0;
    for (i = 0; i < *nweights; i++) {
        weights[i] = w[i];
    }
    return RG_OK;
}

rg_status_t rg_sim_rails_parse_json(const char *text, size_t len, const char *name,
                                    rg_sim_rails_t *r, int *policy, double *weights,
                                    int *nweights, rg_err_t *err)
{
    rg_json_doc_t doc;
    const char   *p = text, *end = text + len;
    unsigned      line = 1, col = 1;
    rg_status_t   st;

    /* A rails.json is one object: said first, where the text starts
     * otherwise, whatever else is wrong with it. */
    for (; p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'); p++) {
        line = *p == '\n' ? line + 1 : line;
        col  = *p == '\n' ? 1 : col + 1;
    }
    if (p == end || *p != '{') {
        return rails_bad(err, name, line, col, "an object expected");
    }
    if (rg_json_parse(&doc, text, len, NULL, NULL) != RG_OK) {
        return rails_bad(err, name, doc.err_line, doc.err_col, doc.err_what);
    }
    st = rails_doc(rg_json_root(&doc), name, r, policy, weights, nweights, err);
    rg_json_doc_fini(&doc);
    return st;
}
