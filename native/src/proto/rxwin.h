/*
 * railgauge: the shared receive window of the messaging runtime (issue 9,
 * paper 004: adaptive receive window scaling over a shared receive queue).
 *
 * The eager pool of proto/ is a shared receive queue: buffers posted to the
 * transport as receives from any source. This file holds the window's
 * policy, apart from the runtime so that it can be tested alone:
 *
 *   - fixed:N          the window is N buffers for the whole run;
 *   - adaptive:Wi:Wm   the window starts at Wi buffers; when the number of
 *                      posted buffers falls below the limit (a limit event,
 *                      raised by the progress engine), it grows to
 *                      W = min(2^nlimit * Wi, Wm) and the next limit is W/2;
 *   - adaptive:Wi:Wm:reclaim   the same, and after a quiet period in which
 *                      at most a quarter of the window was in use at once,
 *                      the window halves (not below Wi), one step per quiet
 *                      period, and nlimit steps back so that the next burst
 *                      grows it again by the same formula.
 *
 * The first limit is a setting (RG_PROTO_RXWIN_LIMIT, "auto" = Wi/2, at
 * least 1). window.c owns the buffers; this file only says how many.
 */
#ifndef RG_PROTO_RXWIN_H
#define RG_PROTO_RXWIN_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The largest window (buffers), the same bound as RG_PROTO_POOL_BUFS. */
#define RG_RXWIN_MAX 65536

typedef enum rg_rxwin_mode {
    RG_RXWIN_FIXED    = 0,
    RG_RXWIN_ADAPTIVE = 1
} rg_rxwin_mode_t;

/* A window setting, as RG_PROTO_RXWIN gives it. */
typedef struct rg_rxwin_spec {
    rg_rxwin_mode_t mode;
    int             w_init;   /* fixed: N */
    int             w_max;    /* fixed: N */
    int             reclaim;  /* adaptive only: shrink after quiet periods */
} rg_rxwin_spec_t;

/* The window's state (a handle embedded in the runtime). */
typedef struct rg_rxwin {
    rg_rxwin_spec_t spec;
    int             window;        /* W: buffers the window has now */
    int             limit;         /* a limit event when posted < limit */
    int             first_limit;   /* the limit at W = w_init */
    int             nlimit;        /* growth exponent: W = min(2^nlimit * Wi, Wm) */
    uint64_t        limit_events;  /* every limit event, grown or not */
    uint64_t        shrinks;       /* reclaim steps taken */
    /* reclaim */
    uint64_t        quiet_ns;      /* the quiet period */
    uint64_t        period_start;  /* when the current period began (0: not yet) */
    int             period_peak;   /* the most buffers in use at once in it */
} rg_rxwin_t;

/* Parses "fixed:N", "adaptive:Wi:Wm" or "adaptive:Wi:Wm:reclaim" (N, Wi,
 * Wm from 1 to RG_RXWIN_MAX, Wi <= Wm); RG_ERR_INVALID naming the problem
 * otherwise. Nothing is written to *spec on error. */
rg_status_t rg_rxwin_parse(const char *text, rg_rxwin_spec_t *spec, rg_err_t *err);

/* The first limit: "auto" (Wi/2, at least 1) or a number 1 .. Wi. */
rg_status_t rg_rxwin_parse_limit(const char *text, const rg_rxwin_spec_t *spec,
                                 int *limit_p, rg_err_t *err);

/* min(2^nlimit * w_init, w_max), without overflow for any nlimit >= 0. */
int rg_rxwin_size(int w_init, int w_max, int nlimit);

/* Starts a window of spec with the first limit (checked as above) and the
 * reclaim quiet period (ns, > 0 when spec->reclaim). */
rg_status_t rg_rxwin_init(rg_rxwin_t *w, const rg_rxwin_spec_t *spec, int first_limit,
                          uint64_t quiet_ns, rg_err_t *err);

/* The progress engine's check, once per pass, with the number of buffers
 * still posted (before it reposts the ones it handled): below the limit it
 * counts a limit event and, adaptive, grows the window and sets the next
 * limit to W/2. Returns 1 if it raised a limit event. */
int rg_rxwin_check(rg_rxwin_t *w, int posted);

/* Reclaim, once per pass, with the time and the number of buffers in use
 * (consumed and not yet reposted) at the pass's low point: returns 1 if the
 * window shrank (w->window is then the new, smaller size). */
int rg_rxwin_reclaim(rg_rxwin_t *w, uint64_t now_ns, int in_use);

/* "fixed:N" / "adaptive:Wi:Wm[:reclaim]" of a spec, into buf. */
void rg_rxwin_format(const rg_rxwin_spec_t *spec, char *buf, size_t cap);

#endif /* RG_PROTO_RXWIN_H */
