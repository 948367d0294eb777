/*
 * railgauge-bench: command line, set-up and tear-down around the patterns.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/timer.h"
#include "bench.h"
#include "pmpi_config.h"
#include "proto/proto.h"

static void rg__bench_usage(FILE *f)
{
    fprintf(f,
        "usage: railgauge-bench PATTERN [options]\n"
        "\n"
        "Patterns:\n"
        "  prtt       PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d,s) over a size sweep (LogGP)\n"
        "  pingpong   round-trip time of one message of each size\n"
        "  onen       1:n and n:1 round trips to p = 1 .. ranks-1 peers, with the posting\n"
        "             overheads o_s(p), o_r(p), per posting mode (LoP; docs/lop.md)\n"
        "  bw         streaming bandwidth between ranks 0 and 1, one way or both (--bidir;\n"
        "             railgauge-bench bw --help)\n"
        "  msgrate    message rate of ranks paired 0->1, 2->3, ... (osu_mbw_mr; --window W;\n"
        "             railgauge-bench msgrate --help)\n"
        "  bcast      broadcast latency from a root, binomial tree or flat (osu_bcast;\n"
        "             railgauge-bench bcast --help)\n"
        "  alltoall   all-to-all by pairwise exchange: latency and bandwidth (osu_alltoall;\n"
        "             railgauge-bench alltoall --help)\n"
        "  barrier    latency of a barrier of coll/ (--algorithm linear|binomial|recdbl|\n"
        "             dissem|nway --n N; railgauge-bench barrier --help; docs/coll.md)\n"
        "  flagprtt   PRTT round trips of signals over the barrier's shared-memory flags\n"
        "             (the flag model; railgauge-bench flagprtt --help; docs/coll.md)\n"
        "  rxwin      workloads over the shared receive window (--pattern alltoall|halo2d|\n"
        "             halo3d|incast|mix; railgauge-bench rxwin --help; docs/rxwin.md)\n"
        "\n"
        "Options:\n"
        "  --transport T      shm, tcp, ofi:<provider> (ofi:tcp, ofi:shm, ofi:udp,\n"
        "                     ofi:verbs, ...) or mpi (ranks started by mpirun.openmpi\n"
        "                     or mpiexec.mpich) (default: $RG_TRANSPORT, else shm)\n"
        "  --out FILE         JSON Lines output (default: standard output)\n"
        "  --sizes LIST       comma-separated sizes, units allowed (1,8,4KiB,1MiB);\n"
        "                     onen's default is 8\n"
        "  --min-size S       smallest size of the sweep (default 1)\n"
        "  --max-size S       largest size of the sweep (default 1MiB)\n"
        "  --per-octave K     sizes per doubling in the sweep (default 2)\n"
        "  --n N              successive messages of PRTT(n,*,s) (default 16)\n"
        "  --target-rel X     stop a point when its median's 95%% CI half-width is\n"
        "                     below X times the median (default 0.01; onen 0.02)\n"
        "  --min-reps N       repetitions at least (default 20)\n"
        "  --max-reps N       repetitions at most (default 20000)\n"
        "  --point-budget S   seconds one point may take at most (default 0.25)\n"
        "  --point-min S      onen: seconds a point runs at least, stable or not, so\n"
        "                     that its rounds span many scheduler periods (default 0.1)\n"
        "  --budget S         seconds the whole run may take (default 0: no limit)\n"
        "  --warmup S         warm-up seconds before each size (default 0.002)\n"
        "  --passes P         prtt: sweep the sizes P times (1..9, default 1; above 1\n"
        "                     each pass in its own shuffled order), each with 1/P of\n"
        "                     the repetitions and budget; a point pools the samples of its\n"
        "                     passes but those disturbed (see --pass-tol)\n"
        "  --pass-tol X       prtt: a pass whose interquartile mean exceeds the point's\n"
        "                     fastest pass by more than X times is left out (default 0.1)\n"
        "  --order-seed N     prtt: seed of the passes' shuffled orders (default 1)\n"
        "  --confirm K        prtt with --passes: up to K more passes over the points whose\n"
        "                     fastest pass no other pass confirms within --pass-tol,\n"
        "                     in the last 15%% of --budget (default 0; passes + K <= 9)\n"
        "  --max-p P          onen: peers up to P (default: ranks - 1)\n"
        "  --modes LIST       onen: of single, list, inject, rma (default: all that the\n"
        "                     transport has; the others are reported as unsupported)\n"
        "  --directions LIST  onen: of 1:n, n:1 (default: both)\n"
        "  --monotonic-timer  use clock_gettime instead of the TSC\n"
        "  --print-config     list every RG_* setting with its value and exit\n"
        "  -h, --help         this text\n");
}

/* One table loaded from the environment now (its former names too) and
 * listed; RG_BENCH_EXIT_USAGE where a value is bad. */
static int rg__bench_print_table(const rg_config_table_t *t, const rg_config_alias_t *aliases,
                                 void *scratch, size_t size)
{
    rg_err_t err;

    memset(scratch, 0, size);
    if (rg_config_load_aliased(t, aliases, scratch, &err) != RG_OK) {
        fprintf(stderr, "railgauge-bench: %s\n", rg_err_message(&err));
        return RG_BENCH_EXIT_USAGE;
    }
    printf("[%s]\n", t->prefix);
    rg_config_print_aliased(t, aliases, scratch, stdout);
    return 0;
}

/* Every setting of the layers below, as loaded from the environment now. */
static int rg__bench_print_config(void)
{
    const rg_config_table_t *const *t;
    /* Large and aligned enough for any settings struct of the tables. */
    _Alignas(16) unsigned char scratch[8192];
    rg_err_t                       err;
    int                            rc = 0;

    for (t = rg_xport_config_tables(); *t != NULL; t++) {
        memset(scratch, 0, sizeof(scratch));
        if (rg_config_load(*t, scratch, &err) != RG_OK) {
            fprintf(stderr, "railgauge-bench: %s\n", rg_err_message(&err));
            rc = RG_BENCH_EXIT_USAGE;
            continue;
        }
        printf("[%s]\n", (*t)->prefix[0] != '\0' ? (*t)->prefix : "RG");
        rg_config_print(*t, scratch, stdout);
    }
    /* The runtime's (the barrier and rxwin patterns run over it). */
    if (rg__bench_print_table(&rg_proto_config_table, NULL, scratch, sizeof(scratch)) != 0) {
        rc = RG_BENCH_EXIT_USAGE;
    }
    /* The PMPI library's (native/pmpi), read in the MPI programs it is
     * preloaded into, with the former names it still reads. */
    if (rg__bench_print_table(&rg_pmpi_config_table, rg_pmpi_config_aliases, scratch,
                              sizeof(scratch)) != 0) {
        rc = RG_BENCH_EXIT_USAGE;
    }
    return rc;
}

static int rg__bench_parse_args(int argc, char **argv, rg_bench_opts_t *opts)
{
    enum { O_TRANSPORT = 256, O_OUT, O_SIZES, O_MIN, O_MAX, O_OCT, O_N, O_TARGET,
           O_MINREPS, O_MAXREPS, O_PBUDGET, O_BUDGET, O_WARMUP, O_MONO, O_MAXP, O_MODES,
           O_DIRS, O_PMIN, O_PASSES, O_PASSTOL, O_OSEED, O_CONFIRM };
    static const struct option longopts[] = {
        {"transport", required_argument, NULL, O_TRANSPORT},
        {"out", required_argument, NULL, O_OUT},
        {"sizes", required_argument, NULL, O_SIZES},
        {"min-size", required_argument, NULL, O_MIN},
        {"max-size", required_argument, NULL, O_MAX},
        {"per-octave", required_argument, NULL, O_OCT},
        {"n", required_argument, NULL, O_N},
        {"target-rel", required_argument, NULL, O_TARGET},
        {"min-reps", required_argument, NULL, O_MINREPS},
        {"max-reps", required_argument, NULL, O_MAXREPS},
        {"point-budget", required_argument, NULL, O_PBUDGET},
        {"budget", required_argument, NULL, O_BUDGET},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"monotonic-timer", no_argument, NULL, O_MONO},
        {"max-p", required_argument, NULL, O_MAXP},
        {"modes", required_argument, NULL, O_MODES},
        {"directions", required_argument, NULL, O_DIRS},
        {"point-min", required_argument, NULL, O_PMIN},
        {"passes", required_argument, NULL, O_PASSES},
        {"pass-tol", required_argument, NULL, O_PASSTOL},
        {"confirm", required_argument, NULL, O_CONFIRM},
        {"order-seed", required_argument, NULL, O_OSEED},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}
    };
    const char *sizes_arg = NULL;
    size_t      min_size = 1, max_size = (size_t)1 << 20;
    int         per_octave = 2, c, rc, onen, passes_given = 0;
    const char *bad;
    rg_err_t    err;

    memset(opts, 0, sizeof(*opts));
    if (rg_xport_default_name(opts->transport, sizeof(opts->transport), &err) != RG_OK) {
        return rg_bench_usage_error("%s", rg_err_message(&err));
    }
    opts->n = 16;
    opts->target_rel = 0.01;
    opts->min_reps = 20;
    opts->max_reps = 20000;
    opts->point_budget_s = 0.25;
    opts->warmup_s = 0.002;
    opts->passes = 1;
    opts->pass_tol = 0.1;
    opts->order_seed = 1;

    if (argc >= 2 && strcmp(argv[1], "--print-config") == 0) {
        int prc = rg__bench_print_config();
        return prc != 0 ? prc : -1;
    }
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
            rg__bench_usage(stdout);
            return -1;
        }
        rg__bench_usage(stderr);
        return RG_BENCH_EXIT_USAGE;
    }
    opts->pattern = argv[1];
    if (strcmp(opts->pattern, "prtt") != 0 && strcmp(opts->pattern, "pingpong") != 0 &&
        strcmp(opts->pattern, "onen") != 0) {
        return rg_bench_usage_error("unknown pattern '%s' (known: prtt, pingpong, onen, bw, "
                                     "msgrate, bcast, alltoall, barrier, flagprtt, rxwin)",
                                     opts->pattern);
    }
    onen = strcmp(opts->pattern, "onen") == 0;

    optind = 2;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_TRANSPORT:
            if (strlen(optarg) >= sizeof(opts->transport)) {
                return rg_bench_usage_error("--transport: name too long '%s'", optarg);
            }
            snprintf(opts->transport, sizeof(opts->transport), "%s", optarg);
            break;
        case O_OUT:
            opts->out_path = optarg;
            break;
        case O_SIZES:
            sizes_arg = optarg;
            opts->sizes_given = 1;
            break;
        case O_MIN:
        case O_MAX: {
            size_t v;

            opts->sizes_given = 1;
            if (rg_parse_size(optarg, &v, &err) != RG_OK) {
                return rg_bench_usage_error("%s", rg_err_message(&err));
            }
            if (v > RG_BENCH_SIZE_LIMIT) {
                return rg_bench_usage_error("size %s is above the limit of 1 GiB", optarg);
            }
            *(c == O_MIN ? &min_size : &max_size) = v;
            break;
        }
        case O_OCT:
            opts->sizes_given = 1;
            if (rg_bench_parse_int(optarg, 1, 16, &per_octave) != 0) {
                return rg_bench_usage_error("--per-octave must be an integer 1..16, not '%s'", optarg);
            }
            break;
        case O_N:
            if (rg_bench_parse_int(optarg, 2, 4096, &opts->n) != 0) {
                return rg_bench_usage_error("--n must be an integer 2..4096, not '%s'", optarg);
            }
            break;
        case O_TARGET:
            opts->target_given = 1;
            if (rg_bench_parse_double(optarg, 1e-4, 1.0, &opts->target_rel) != 0) {
                return rg_bench_usage_error("--target-rel must be in [0.0001, 1], not '%s'", optarg);
            }
            break;
        case O_MINREPS:
            if (rg_bench_parse_int(optarg, 1, 100000000, &opts->min_reps) != 0) {
                return rg_bench_usage_error("--min-reps must be a positive integer, not '%s'", optarg);
            }
            break;
        case O_MAXREPS:
            if (rg_bench_parse_int(optarg, 1, 100000000, &opts->max_reps) != 0) {
                return rg_bench_usage_error("--max-reps must be a positive integer, not '%s'", optarg);
            }
            break;
        case O_PBUDGET:
            opts->pbudget_given = 1;
            if (rg_bench_parse_double(optarg, 1e-4, 3600, &opts->point_budget_s) != 0) {
                return rg_bench_usage_error("--point-budget must be seconds in (0, 3600], not '%s'", optarg);
            }
            break;
        case O_PMIN:
            if (rg_bench_parse_double(optarg, 0, 3600, &opts->point_min_s) != 0) {
                return rg_bench_usage_error("--point-min must be seconds in [0, 3600], not '%s'",
                                             optarg);
            }
            opts->pmin_given = 1;
            break;
        case O_BUDGET:
            if (rg_bench_parse_double(optarg, 0, 86400, &opts->budget_s) != 0) {
                return rg_bench_usage_error("--budget must be seconds in [0, 86400], not '%s'", optarg);
            }
            break;
        case O_WARMUP:
            if (rg_bench_parse_double(optarg, 0, 10, &opts->warmup_s) != 0) {
                return rg_bench_usage_error("--warmup must be seconds in [0, 10], not '%s'", optarg);
            }
            break;
        case O_MONO:
            opts->force_monotonic = 1;
            break;
        case O_PASSES:
            if (rg_bench_parse_int(optarg, 1, RG_BENCH_MAX_PASSES, &opts->passes) != 0) {
                return rg_bench_usage_error("--passes must be an integer 1..9, not '%s'", optarg);
            }
            passes_given = 1;
            break;
        case O_PASSTOL:
            if (rg_bench_parse_double(optarg, 0.001, 10, &opts->pass_tol) != 0) {
                return rg_bench_usage_error("--pass-tol must be in [0.001, 10], not '%s'", optarg);
            }
            passes_given = 1;
            break;
        case O_CONFIRM:
            if (rg_bench_parse_int(optarg, 0, RG_BENCH_MAX_PASSES - 1, &opts->confirm) != 0) {
                return rg_bench_usage_error("--confirm must be an integer 0..8, not '%s'", optarg);
            }
            passes_given = 1;
            break;
        case O_OSEED: {
            long seed;
            if (rg_bench_parse_long(optarg, 0, 4294967295L, &seed) != 0) {
                return rg_bench_usage_error("--order-seed must be an integer 0..4294967295, "
                                             "not '%s'", optarg);
            }
            opts->order_seed = (unsigned)seed;
            passes_given = 1;
            break;
        }
        case O_MAXP:
            if (rg_bench_parse_int(optarg, 1, 1 << 20, &opts->max_p) != 0) {
                return rg_bench_usage_error("--max-p must be a positive integer, not '%s'",
                                             optarg);
            }
            break;
        case O_MODES:
            if (rg_bench_onen_parse_modes(optarg, &opts->modes, &bad) != 0) {
                fprintf(stderr, "railgauge-bench: --modes: unknown mode '%s' in '%s' (known: "
                        "single, list, inject, rma)\n", bad, optarg);
                return RG_BENCH_EXIT_USAGE;
            }
            break;
        case O_DIRS:
            if (rg_bench_onen_parse_directions(optarg, &opts->directions, &bad) != 0) {
                fprintf(stderr, "railgauge-bench: --directions: unknown direction '%s' in '%s' "
                        "(known: 1:n, n:1)\n", bad, optarg);
                return RG_BENCH_EXIT_USAGE;
            }
            break;
        case 'h':
            rg__bench_usage(stdout);
            return -1;
        case ':':
            return rg_bench_usage_error("option %s needs a value", argv[optind - 1]);
        default:
            return rg_bench_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        return rg_bench_usage_error("unexpected argument '%s'", argv[optind]);
    }
    if (opts->min_reps > opts->max_reps) {
        return rg_bench_usage_error("--min-reps is above --max-reps%s", "");
    }
    if (passes_given && strcmp(opts->pattern, "prtt") != 0) {
        return rg_bench_usage_error("--passes, --pass-tol, --order-seed and --confirm are "
                                     "options of the prtt pattern, not of %s", opts->pattern);
    }
    if (opts->confirm > 0 && opts->passes < 2) {
        return rg_bench_usage_error("--confirm needs --passes 2 or more (a pass confirms "
                                     "another)%s", "");
    }
    if (opts->passes + opts->confirm > RG_BENCH_MAX_PASSES) {
        return rg_bench_usage_error("--passes plus --confirm: at most 9 passes in all%s", "");
    }
    if (!onen && (opts->max_p != 0 || opts->modes != 0 || opts->directions != 0 ||
                  opts->pmin_given)) {
        return rg_bench_usage_error("--max-p, --modes, --directions and --point-min are "
                                     "options of the onen pattern, not of %s", opts->pattern);
    }
    if (onen) {
        /* A round of onen is one small message per peer: 8 bytes unless told,
         * and a looser target, since rounds of many peers on few cores spread
         * more than a ping-pong. */
        if (!opts->target_given) {
            opts->target_rel = 0.02;
        }
        if (!opts->pmin_given) {
            opts->point_min_s = 0.1;
        }
        if (opts->point_min_s > opts->point_budget_s) {
            return rg_bench_usage_error("--point-min is above --point-budget%s",
                                         opts->pbudget_given || opts->pmin_given ? ""
                                         : " (0.25 s by default)");
        }
        if (!opts->sizes_given) {
            opts->sizes[0] = 8;
            opts->nsizes   = 1;
            return 0;
        }
    }
    if (sizes_arg != NULL) {
        return rg_bench_parse_sizes(sizes_arg, opts);
    }
    if (min_size > max_size) {
        return rg_bench_usage_error("--min-size is above --max-size%s", "");
    }
    rc = rg_bench_make_sweep(opts, min_size, max_size, per_octave);
    return rc;
}

/* The patterns with options and set-up of their own, each in its file:
 * argv[1] names one. prtt, pingpong and onen share this file's options. */
int rg_bench_barrier_main(int argc, char **argv);   /* barrier.c: over the runtime */
int rg_bench_rxwin_main(int argc, char **argv);     /* rxwin.c: over the runtime */
int rg_bench_flagprtt_main(int argc, char **argv);  /* flagprtt.c: the barrier's flags */
int rg_bench_bw_main(int argc, char **argv);        /* bw.c: streaming bandwidth */

static const struct {
    const char *name;
    int (*main)(int argc, char **argv);
} rg__bench_subcommands[] = {
    {"bw", rg_bench_bw_main},
    {"msgrate", rg_bench_coll_main},
    {"bcast", rg_bench_coll_main},
    {"alltoall", rg_bench_coll_main},
    {"barrier", rg_bench_barrier_main},
    {"flagprtt", rg_bench_flagprtt_main},
    {"rxwin", rg_bench_rxwin_main},
};

int main(int argc, char **argv)
{
    rg_bench_t bench;
    int        rc;
    size_t     i;

    for (i = 0; argc >= 2 && i < sizeof(rg__bench_subcommands) / sizeof(rg__bench_subcommands[0]);
         i++) {
        if (strcmp(argv[1], rg__bench_subcommands[i].name) == 0) {
            return rg__bench_subcommands[i].main(argc, argv);
        }
    }
    memset(&bench, 0, sizeof(bench));
    rc = rg__bench_parse_args(argc, argv, &bench.opts);
    if (rc != 0) {
        return rc < 0 ? 0 : rc;
    }
    if (rg_xport_find(bench.opts.transport) == NULL) {
        const rg_xport_ops_t *const *t;
        fprintf(stderr, "railgauge-bench: unknown transport '%s' (known:", bench.opts.transport);
        for (t = rg_xport_registry(); *t != NULL; t++) {
            fprintf(stderr, " %s", (*t)->name);
        }
        fprintf(stderr, ")\n");
        return RG_BENCH_EXIT_USAGE;
    }

    rc = RG_BENCH_EXIT_FAIL;
    if (rg_timer_init(&bench.timer, bench.opts.force_monotonic, &bench.err) != RG_OK) {
        goto out;
    }
    if (rg_boot_init(&bench.boot, &bench.err) != RG_OK) {
        goto out;
    }
    bench.rank = rg_boot_rank(bench.boot);
    bench.size = rg_boot_size(bench.boot);
    if (bench.size < 2) {
        rg_err_set(&bench.err, RG_ERR_INVALID,
                   "pattern '%s' needs at least 2 ranks; start it with `railgauge run -n 2 -- "
                   "railgauge-bench %s` (or mpirun.openmpi -n 2 / mpiexec.mpich -n 2, which "
                   "the mpi transport needs)", bench.opts.pattern, bench.opts.pattern);
        rc = RG_BENCH_EXIT_USAGE;
        goto out;
    }
    if (rg_xport_open(bench.opts.transport, bench.boot, &bench.xp, &bench.err) != RG_OK) {
        goto out;
    }
    /* A measurement must never include a futex or poll wake-up: with the
     * delays of PRTT(n,d,s) (up to a few milliseconds at 1 MiB) the default
     * yield phase would run out and put the waiting rank to sleep, adding the
     * scheduler's wake-up latency to o and g. sched_yield() still lets other
     * runnable processes in, so an oversubscribed machine keeps working.
     * RG_XPORT_YIELD_NS, when set, wins. */
    if (getenv("RG_XPORT_YIELD_NS") == NULL && bench.xp->wait.yield_ns < 200e6) {
        bench.xp->wait.yield_ns = 200e6;
    }
    if (bench.rank == 0) {
        bench.out = stdout;
        if (bench.opts.out_path != NULL) {
            bench.out = fopen(bench.opts.out_path, "w");
            if (bench.out == NULL) {
                rg_err_set_errno(&bench.err, RG_ERR_IO, errno, "cannot open '%s' for writing",
                                 bench.opts.out_path);
                goto out;
            }
        }
    }
    if (strcmp(bench.opts.pattern, "prtt") == 0) {
        rc = rg_bench_prtt_run(&bench);
    } else if (strcmp(bench.opts.pattern, "onen") == 0) {
        rc = rg_bench_onen_run(&bench);
    } else {
        rc = rg_bench_pingpong_run(&bench);
    }

out:
    /* A user error found after the start (--max-p above the ranks) is the
     * same on every rank: one line, from rank 0. */
    if (rc == RG_BENCH_EXIT_USAGE && bench.rank != 0) {
        rc = -rc;
    }
    if (rc > RG_BENCH_EXIT_OK) {
        fprintf(stderr, "railgauge-bench: rank %d: %s\n", bench.rank, rg_err_message(&bench.err));
    }
    if (bench.out != NULL && bench.out != stdout) {
        fclose(bench.out);
    }
    free(bench.sbuf);
    free(bench.rbuf);
    free(bench.samples);
    rg_xport_close(bench.xp);
    rg_boot_fini(bench.boot);
    return rc < 0 ? -rc : rc;
}
