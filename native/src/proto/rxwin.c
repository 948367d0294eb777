/*
 * railgauge: the shared receive window's policy (see rxwin.h).
 */
#include "proto/rxwin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses a window count "N" (1 .. RG_RXWIN_MAX) at s, up to ':' or the end;
 * *end_p is set past it. */
static rg_status_t rg__rxwin_count(const char *text, const char *s, const char *what,
                                   int *n_p, const char **end_p, rg_err_t *err)
{
    char *end;
    long  v;

    if (*s < '0' || *s > '9') {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RXWIN='%s': %s must be a number of buffers", text, what);
    }
    errno = 0;
    v     = strtol(s, &end, 10);
    if (errno != 0 || (*end != '\0' && *end != ':') || v < 1 || v > RG_RXWIN_MAX) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RXWIN='%s': %s must be 1 to %d buffers", text, what,
                          RG_RXWIN_MAX);
    }
    *n_p   = (int)v;
    *end_p = end;
    return RG_OK;
}

rg_status_t rg_rxwin_parse(const char *text, rg_rxwin_spec_t *spec, rg_err_t *err)
{
    rg_rxwin_spec_t s;
    const char     *p;
    rg_status_t     status;

    if (text == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "RG_PROTO_RXWIN is missing");
    }
    memset(&s, 0, sizeof(s));
    if (strncmp(text, "fixed:", 6) == 0) {
        s.mode = RG_RXWIN_FIXED;
        status = rg__rxwin_count(text, text + 6, "N of fixed:N", &s.w_init, &p, err);
        if (status != RG_OK) {
            return status;
        }
        if (*p != '\0') {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_PROTO_RXWIN='%s': fixed takes one number (fixed:N)", text);
        }
        s.w_max = s.w_init;
    } else if (strncmp(text, "adaptive:", 9) == 0) {
        s.mode = RG_RXWIN_ADAPTIVE;
        status = rg__rxwin_count(text, text + 9, "W_init", &s.w_init, &p, err);
        if (status == RG_OK && *p != ':') {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_PROTO_RXWIN='%s': adaptive needs W_init and W_max "
                              "(adaptive:W_init:W_max[:reclaim])", text);
        }
        if (status == RG_OK) {
            status = rg__rxwin_count(text, p + 1, "W_max", &s.w_max, &p, err);
        }
        if (status != RG_OK) {
            return status;
        }
        if (*p == ':') {
            if (strcmp(p + 1, "reclaim") != 0) {
                return rg_err_set(err, RG_ERR_INVALID,
                                  "RG_PROTO_RXWIN='%s': unknown option '%s' after W_max "
                                  "(known: reclaim)", text, p + 1);
            }
            s.reclaim = 1;
        }
        if (s.w_init > s.w_max) {
            return rg_err_set(err, RG_ERR_INVALID,
                              "RG_PROTO_RXWIN='%s': W_init %d is above W_max %d", text,
                              s.w_init, s.w_max);
        }
    } else {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RXWIN='%s': must be fixed:N or "
                          "adaptive:W_init:W_max[:reclaim]", text);
    }
    *spec = s;
    return RG_OK;
}

rg_status_t rg_rxwin_parse_limit(const char *text, const rg_rxwin_spec_t *spec,
                                 int *limit_p, rg_err_t *err)
{
    char *end;
    long  v;

    if (text == NULL || strcmp(text, "auto") == 0 || text[0] == '\0') {
        *limit_p = spec->w_init / 2 > 0 ? spec->w_init / 2 : 1;
        return RG_OK;
    }
    errno = 0;
    v     = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RXWIN_LIMIT='%s': must be auto or a number of buffers",
                          text);
    }
    if (v < 1 || v > spec->w_init) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "RG_PROTO_RXWIN_LIMIT=%ld: must be 1 to the initial window (%d): "
                          "a limit event fires when fewer buffers than this are posted",
                          v, spec->w_init);
    }
    *limit_p = (int)v;
    return RG_OK;
}

int rg_rxwin_size(int w_init, int w_max, int nlimit)
{
    long long w = w_init;
    int       i;

    for (i = 0; i < nlimit && w < w_max; i++) {
        w *= 2;
    }
    return w < w_max ? (int)w : w_max;
}

rg_status_t rg_rxwin_init(rg_rxwin_t *w, const rg_rxwin_spec_t *spec, int first_limit,
                          uint64_t quiet_ns, rg_err_t *err)
{
    if (spec->w_init < 1 || spec->w_init > spec->w_max || spec->w_max > RG_RXWIN_MAX ||
        (spec->mode == RG_RXWIN_FIXED && spec->w_init != spec->w_max)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "a receive window of %d to %d buffers is out of range (1 <= W_init "
                          "<= W_max <= %d)", spec->w_init, spec->w_max, RG_RXWIN_MAX);
    }
    if (first_limit < 1 || first_limit > spec->w_init) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "a receive-window limit of %d is out of range (1 to W_init %d)",
                          first_limit, spec->w_init);
    }
    if (spec->reclaim && (spec->mode != RG_RXWIN_ADAPTIVE || quiet_ns == 0)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "reclaiming needs an adaptive window and a quiet period above 0");
    }
    memset(w, 0, sizeof(*w));
    w->spec        = *spec;
    w->window      = spec->w_init;
    w->limit       = first_limit;
    w->first_limit = first_limit;
    w->quiet_ns    = quiet_ns;
    return RG_OK;
}

/* The limit for window size W: the first limit at W_init, else W/2. */
static int rg__rxwin_limit_for(const rg_rxwin_t *w)
{
    if (w->nlimit == 0) {
        return w->first_limit;
    }
    return w->window / 2 > 0 ? w->window / 2 : 1;
}

int rg_rxwin_check(rg_rxwin_t *w, int posted)
{
    if (posted >= w->limit) {
        return 0;
    }
    w->limit_events++;
    /* A limit event is activity: a quiet period starts over. */
    w->period_start = 0;
    if (w->spec.mode == RG_RXWIN_ADAPTIVE && w->window < w->spec.w_max) {
        w->nlimit++;
        w->window = rg_rxwin_size(w->spec.w_init, w->spec.w_max, w->nlimit);
        w->limit  = rg__rxwin_limit_for(w);
    }
    return 1;
}

int rg_rxwin_reclaim(rg_rxwin_t *w, uint64_t now_ns, int in_use)
{
    int shrink;

    if (!w->spec.reclaim) {
        return 0;
    }
    if (w->period_start == 0) {
        w->period_start = now_ns;
        w->period_peak  = in_use;
        return 0;
    }
    if (in_use > w->period_peak) {
        w->period_peak = in_use;
    }
    if (now_ns - w->period_start < w->quiet_ns) {
        return 0;
    }
    /* Hysteresis: shrink only when the period's peak fits in a quarter of the
     * window, i.e. in half of the smaller window, whose limit (half of it)
     * the same load then does not reach again. */
    shrink = w->nlimit > 0 && w->window > w->spec.w_init && w->period_peak * 4 <= w->window;
    if (shrink) {
        w->nlimit--;
        /* Where W_max capped the window, step down from the capped size. */
        while (w->nlimit > 0 &&
               rg_rxwin_size(w->spec.w_init, w->spec.w_max, w->nlimit) >= w->window) {
            w->nlimit--;
        }
        w->window = rg_rxwin_size(w->spec.w_init, w->spec.w_max, w->nlimit);
        w->limit  = rg__rxwin_limit_for(w);
        w->shrinks++;
    }
    w->period_start = now_ns;
    w->period_peak  = in_use;
    return shrink;
}

void rg_rxwin_format(const rg_rxwin_spec_t *spec, char *buf, size_t cap)
{
    if (spec->mode == RG_RXWIN_FIXED) {
        snprintf(buf, cap, "fixed:%d", spec->w_init);
    } else {
        snprintf(buf, cap, "adaptive:%d:%d%s", spec->w_init, spec->w_max,
                 spec->reclaim ? ":reclaim" : "");
    }
}
