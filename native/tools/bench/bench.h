/*
 * railgauge-bench: measurement patterns over any transport.
 *
 * One process per rank, started by `railgauge run` (or, later, mpirun). Rank 0
 * drives: it chooses every measurement point, tells the other ranks what to do
 * with a small control message, takes the time and writes JSON Lines. The other
 * ranks only follow, so all decisions (sizes, repetitions, the delay d) are
 * made in one place.
 */
#ifndef RG_TOOLS_BENCH_H
#define RG_TOOLS_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "base/stats.h"
#include "base/timer.h"
#include "boot/boot.h"
#include "xport/xport.h"

#define RG_BENCH_MAX_SIZES 512
/* prtt --passes: at most this many sweeps. */
#define RG_BENCH_MAX_PASSES 9
/* prtt --confirm: the share of the run budget kept for the confirmation passes. */
#define RG_BENCH_CONFIRM_SHARE 0.15
/* prtt --passes: the host's state is probed before every visit of a size and
 * after each pass of its kinds by this many PRTT(n,0,1) (n 1-byte messages and
 * the answer), fewer where 33 would take longer than RG_BENCH_STATE_PROBE_US
 * microseconds, never fewer than RG_BENCH_STATE_MIN_REPS. */
#define RG_BENCH_STATE_REPS 33
#define RG_BENCH_STATE_PROBE_US 2000.0
#define RG_BENCH_STATE_MIN_REPS 9
/* The run's reference state is a band of probes this factor wide (from
 * c / sqrt(GAP) to c sqrt(GAP) about a probe c): the band in which the most
 * points have a pass with both its probes (docs/fit.md, section 1). */
#define RG_BENCH_STATE_GAP 1.25
/* prtt --passes with both ranks on one host (--state-probe auto or c2c): the
 * probe is a cache line bounced between the two ranks' processes instead,
 * the median of RG_BENCH_C2C_CHUNKS means of RG_BENCH_C2C_ROUND_TRIPS round
 * trips (after one chunk that waits for rank 1 to come), and the band is
 * RG_BENCH_C2C_GAP wide: the line's placements are 2.2x and 5x apart (13-15,
 * 29-37, 145-167 ns one way on the development host), each up to 1.3x wide. */
#define RG_BENCH_C2C_CHUNKS 9
#define RG_BENCH_C2C_ROUND_TRIPS 100
#define RG_BENCH_C2C_GAP 1.6
/* What probes the host's state (--state-probe). */
enum { RG_BENCH_PROBE_AUTO = 0, RG_BENCH_PROBE_C2C, RG_BENCH_PROBE_PRTT };

struct rg_json;

/* Exit codes of the tool: user errors 2, failed measurements 1. */
enum { RG_BENCH_EXIT_OK = 0, RG_BENCH_EXIT_FAIL = 1, RG_BENCH_EXIT_USAGE = 2 };

typedef struct rg_bench_opts {
    const char *pattern;        /* "prtt", "pingpong" or "onen" */
    char        transport[64];
    const char *out_path;       /* NULL: stdout */
    size_t      sizes[RG_BENCH_MAX_SIZES];
    size_t      nsizes;
    int         n;              /* PRTT's number of successive messages */
    double      target_rel;     /* stop when the median's CI half-width is below this */
    int         min_reps, max_reps;
    double      point_budget_s; /* time budget of one measurement point */
    double      point_min_s;    /* a point runs at least this long (onen) */
    double      budget_s;       /* time budget of the whole run (0: none) */
    double      warmup_s;       /* warm-up time before each size */
    int         passes;         /* prtt: sweeps over the sizes (1: one, in order) */
    double      pass_tol;       /* prtt: a pass slower than the fastest by more is left out */
    unsigned    order_seed;     /* prtt: seed of the size order of passes after the first */
    int         confirm;        /* prtt: extra passes at most for unconfirmed points */
    double      state_ref_us;   /* prtt: the reference state given by --state-ref (the
                                 * middle of its band, us; 0: chosen from the probes) */
    int         state_probe;    /* prtt: RG_BENCH_PROBE_* (--state-probe) */
    int         force_monotonic;
    int         sizes_given;    /* the sizes came from an option */
    int         target_given;   /* --target-rel was given */
    int         pbudget_given;  /* --point-budget was given */
    int         pmin_given;     /* --point-min was given */
    /* onen */
    int         max_p;          /* --max-p: the largest p (0: ranks - 1) */
    unsigned    modes;          /* --modes: mask of 1 << RG_ONEN_MODE_* (0: all) */
    unsigned    directions;     /* --directions: mask of 1 << RG_ONEN_DIR_* (0: both) */
} rg_bench_opts_t;

/* One run: the context every pattern works in. */
typedef struct rg_bench {
    rg_bench_opts_t opts;
    rg_timer_t      timer;
    rg_boot_t      *boot;
    rg_xport_t     *xp;
    int             rank, size;
    FILE           *out;
    unsigned char  *sbuf, *rbuf;   /* message buffers of the largest size */
    size_t          buf_size;
    double         *samples;       /* one per repetition of the current point */
    size_t          samples_cap;
    uint64_t        start_ns;      /* CLOCK_MONOTONIC at the first point */
    /* prtt --passes: the last probe of the host's state (us; 0: none yet),
     * and the run's reference state: the band [state_lo_us, state_hi_us]
     * about state_mid_us in which a pass's probes must lie for the pass to be
     * kept (0: no probes yet, every pass counts). */
    double          state_us, state_lo_us, state_hi_us, state_mid_us;
    /* The probe in use (RG_BENCH_PROBE_C2C or _PRTT), the band's width, and
     * for c2c the line both ranks map and the next exchange's first value. */
    int                      probe;
    double                   state_gap;
    struct rg_bench_cline   *cline;
    uint64_t                 cline_base;
    char                     probe_note[256];  /* why not c2c under auto ("": it is) */
    rg_err_t        err;
} rg_bench_t;

/* Control message from rank 0 to the followers. */
typedef struct rg_bench_ctl {
    uint32_t cmd;      /* RG_BENCH_CMD_* */
    uint32_t n;        /* messages per repetition */
    uint64_t size;     /* bytes per message */
    uint64_t reps;     /* repetitions in this batch */
    double   d_us;     /* ORECV: the follower's delay before each receive */
} rg_bench_ctl_t;

enum {
    RG_BENCH_CMD_END = 0,
    RG_BENCH_CMD_PRTT = 1,  /* receive n messages of size, answer with one */
    RG_BENCH_CMD_ORECV = 2, /* the same, timing each receive after a delay,
                             * then send the mean receive time (a double) */
    RG_BENCH_CMD_C2C = 3    /* answer reps round trips of the shared cache line
                             * from value size on (prtt's probe of the host) */
};

/* A cache line bounced between two parties (cline.c): threads of
 * railgauge-bench c2c, or the two ranks of prtt in a shared segment. The
 * leader stores base + 2k + 1 and waits for base + 2k + 2, which the answerer
 * stores. An exchange is given up by storing base + 1 into abort, by either
 * side, or by a side that waited RG_BENCH_CLINE_TIMEOUT_NS for the other. */
#define RG_BENCH_CLINE_TIMEOUT_NS 1000000000ull
typedef struct rg_bench_cline {
    _Alignas(64) atomic_uint_fast64_t line;
    _Alignas(64) atomic_uint_fast64_t abort;
} rg_bench_cline_t;

/* The leader's side: chunks of round_trips round trips from base on, each
 * chunk's mean one-way time (ns) into chunk_ns; RG_ERR_TIMEOUT when given up. */
rg_status_t rg_bench_cline_lead(rg_bench_cline_t *cl, uint64_t base, long round_trips,
                                long chunks, const rg_timer_t *timer, double *chunk_ns);
/* The answerer's side of round_trips round trips from base on. */
rg_status_t rg_bench_cline_answer(rg_bench_cline_t *cl, uint64_t base, uint64_t round_trips);
/* Gives up the exchange that starts at base (the other side stops waiting). */
void        rg_bench_cline_give_up(rg_bench_cline_t *cl, uint64_t base);
/* A segment of len bytes mapped by every rank (collective): RG_OK and
 * *seg_p, RG_ERR_UNSUPPORTED (every rank alike) when a rank is on another
 * host, else the error; tag names the segment and the messages. */
rg_status_t rg_bench_segment_map(rg_boot_t *boot, int rank, int size, const char *tag,
                                 size_t len, void **seg_p, rg_err_t *err);

/* The onen pattern's modes and directions (onen.c), in the order of
 * docs/lop.md. */
enum { RG_ONEN_MODE_SINGLE = 0, RG_ONEN_MODE_LIST, RG_ONEN_MODE_INJECT, RG_ONEN_MODE_RMA,
       RG_ONEN_NMODES };
enum { RG_ONEN_DIR_1N = 0, RG_ONEN_DIR_N1, RG_ONEN_NDIRS };

/* Patterns: each returns a tool exit code; the message is in bench->err. */
int rg_bench_prtt_run(rg_bench_t *bench);
int rg_bench_pingpong_run(rg_bench_t *bench);
int rg_bench_onen_run(rg_bench_t *bench);

/* Parses a comma-separated list of onen modes ("single,list") or
 * directions ("1:n,n:1") into a mask; 0 on success, else -1 with the bad
 * word in *bad_p (a pointer into a static copy). */
int rg_bench_onen_parse_modes(const char *text, unsigned *mask_p, const char **bad_p);
int rg_bench_onen_parse_directions(const char *text, unsigned *mask_p, const char **bad_p);

/* Shared by patterns (prtt.c). */
rg_status_t rg_bench_write_header(rg_bench_t *bench, size_t planned_points);
rg_status_t rg_bench_write_footer(rg_bench_t *bench, size_t points, const char *status);
/* The fields every header starts with (type .. timer), into an open object. */
void        rg_bench_header_common(rg_bench_t *bench, struct rg_json *js);
/* The same footer with more fields written by extra(js, ctx) before the end. */
rg_status_t rg_bench_write_footer_with(rg_bench_t *bench, size_t points, const char *status,
                                       void (*extra)(struct rg_json *js, void *ctx),
                                       void *ctx);
double      rg_bench_elapsed_s(const rg_bench_t *bench);
/* The stopping rule of an adaptive point (prtt.c): the stats of the first
 * count samples (sorted in place: their order carries no meaning once a
 * batch is in), and *stable when the median's CI half-width relative to it
 * is at most target_rel. */
rg_status_t rg_bench_point_stable(double *samples, size_t count, double target_rel,
                                  rg_stats_t *stats, rg_err_t *err, int *stable);
/* The next batch of an adaptive point (prtt.c): about batch_ns of work at
 * per_rep_ns a repetition, at least the repetitions still missing for
 * min_reps and at least min_batch, never past budget_left_s nor max_reps
 * repetitions in all (count so far). 0: stop. */
size_t rg_bench_next_batch(size_t count, double per_rep_ns, double batch_ns, size_t min_batch,
                           size_t min_reps, size_t max_reps, double budget_left_s);

/* Messages above this need more memory than a benchmark should take. */
#define RG_BENCH_SIZE_LIMIT ((size_t)1 << 30)

/* Option values (args.c). Sizes: a comma-separated list (units allowed, at
 * most 1 GiB each) or a log-spaced sweep from lo to hi with per_octave sizes
 * per doubling, into opts->sizes, sorted and without duplicates; 0 on
 * success, else the usage exit code after one line on stderr naming the
 * problem. Numbers: 0 and *out for a number in lo .. hi, else -1. The usage
 * error prints "railgauge-bench: " and fmt with arg, and returns the usage
 * exit code. */
int rg_bench_parse_sizes(const char *text, rg_bench_opts_t *opts);
int rg_bench_make_sweep(rg_bench_opts_t *opts, size_t lo, size_t hi, int per_octave);
int rg_bench_parse_long(const char *text, long lo, long hi, long *out);
int rg_bench_parse_int(const char *text, long lo, long hi, int *out);
int rg_bench_parse_double(const char *text, double lo, double hi, double *out);
int rg_bench_usage_error(const char *fmt, const char *arg);

/* A pattern's options as a table (args.c), read by one getopt_long loop.
 * Each entry names an option, its kind and where its value goes (offset
 * into the pattern's options struct):
 *   FLAG    int = 1                      LONG   long in lo..hi
 *   INT     int in lo..hi                UINT   unsigned in lo..hi
 *   DOUBLE  double in [lo, hi]           STRING const char * (argv's)
 *   NAME    char[hi] (a copy)            CHOICE int = index in choices
 *   CALL    call(opts, arg, err_prefix): 0, or the usage exit code
 * and, where `given` is an offset, an int there set to 1 when it is given.
 * A value out of range gives "--NAME must be WHAT, not 'ARG'", WHAT being
 * `what`, else "an integer in LO..HI". Errors are printed by rank 0 alone
 * (all ranks parse the same line) after "<prefix>: ". Returns 0, -1 after
 * --help (usage on stdout), or the usage exit code. */
typedef enum rg_bench_optkind {
    RG_BOPT_FLAG, RG_BOPT_LONG, RG_BOPT_INT, RG_BOPT_UINT, RG_BOPT_DOUBLE, RG_BOPT_STRING,
    RG_BOPT_NAME, RG_BOPT_CHOICE, RG_BOPT_CALL
} rg_bench_optkind_t;

typedef struct rg_bench_optdef {
    const char          *name;
    rg_bench_optkind_t   kind;
    size_t               offset;
    double               lo, hi;
    const char          *what;
    const char *const   *choices;  /* CHOICE: NULL-terminated */
    int                (*call)(void *opts, const char *arg, const char *prefix);
    long                 given;    /* offset of an int set to 1 when the option is
                                      given, or -1 */
} rg_bench_optdef_t;

#define RG_BOPT(name, kind, type, field, lo, hi, what) \
    {(name), RG_BOPT_##kind, offsetof(type, field), (lo), (hi), (what), NULL, NULL, -1}
/* The same, marking type's int flag `given_field` when the option is given. */
#define RG_BOPT_G(name, kind, type, field, lo, hi, what, given_field)                  \
    {(name), RG_BOPT_##kind, offsetof(type, field), (lo), (hi), (what), NULL, NULL,     \
     (long)offsetof(type, given_field)}

int rg_bench_getopt(int argc, char **argv, const rg_bench_optdef_t *defs, size_t ndefs,
                    void *opts, const char *prefix, void (*usage)(FILE *f));
/* The usage error of a pattern run by several ranks: rank 0 prints it. */
int rg_bench_rank_usage_error(const char *prefix, const char *fmt, const char *arg);

/* The loop of the ranks that follow rank 0 (follow.c): receive a control
 * message of ctl_len bytes into ctl through recv (which reports its own
 * failure into err), then hand it to on: 1 it was the end, 0 go on, < 0
 * it failed (err says why). A message of another length is a parse error.
 * Returns RG_BENCH_EXIT_OK at the end, else RG_BENCH_EXIT_FAIL. */
typedef rg_status_t (*rg_bench_recv_ctl_fn)(void *ctx, void *ctl, size_t cap, size_t *len);
typedef int (*rg_bench_on_ctl_fn)(void *ctx, const void *ctl);
int rg_bench_follow(rg_err_t *err, void *ctl, size_t ctl_len, rg_bench_recv_ctl_fn recv,
                    rg_bench_on_ctl_fn on, void *ctx);

/* The message-rate and collective patterns (coll_patterns.c): msgrate,
 * bcast and alltoall, each with its own options; argv[1] names it. */
int rg_bench_coll_main(int argc, char **argv);

#endif /* RG_TOOLS_BENCH_H */
