/*
 * railgauge: bootstrap over the launcher's socket, over MPI, or a lone rank.
 *
 * The launcher (python/railgauge/launcher.py) hands every rank one end of a
 * socketpair and serves the allgather protocol described in boot.h. Ranks
 * started by mpirun/mpiexec load the MPI plugin of that flavour (mpi_load.c)
 * and hand every collective to it. Without a launcher in the environment the
 * process is rank 0 of 1 and collectives are local copies.
 */
#include "boot/boot.h"
#include "boot/mpi_load.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RG__BOOT_OP_ALLGATHER 0x41  /* 'A' */
#define RG__BOOT_OP_RESULT    0x52  /* 'R' */
#define RG__BOOT_JOB_ID_MAX   64
/* A job larger than this is surely a corrupt RG_SIZE, not a real job. */
#define RG__BOOT_SIZE_MAX     (1 << 20)

struct rg_boot {
    int             fd;     /* the launcher socket; -1 for a lone rank and MPI */
    int             rank;
    int             size;
    char            job_id[RG__BOOT_JOB_ID_MAX + 1];
    const char     *kind;   /* "launcher", "mpi" or "single" */
    rg_mpi_loaded_t mpi;    /* the plugin of an "mpi" bootstrap */
    void           *mpi_ctx;
    int             watch_fd;  /* to railgauge's MPI launcher (RG_MPI_WATCH), or -1 */
    rg_boot_allgather_fn custom;  /* kind "custom": the allgather */
    void           *custom_ctx;
};

/*
 * The four variables below are the launcher's wire contract with its ranks,
 * not user settings, which is why they are read here directly rather than
 * through a config table.
 */
static const char *const rg__boot_vars[] = {
    "RG_BOOT_FD", "RG_RANK", "RG_SIZE", "RG_JOB_ID"
};

static rg_status_t rg__boot_parse_int(const char *var, long lo, long hi, int *out,
                                      rg_err_t *err)
{
    const char *text = getenv(var);
    char       *end;
    long        value;

    if (text == NULL || text[0] == '\0') {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "%s is not set, but other launcher variables are", var);
    }
    errno = 0;
    value = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || end == text || value < lo || value > hi) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "%s='%s' is not an integer in [%ld, %ld]", var, text, lo, hi);
    }
    *out = (int)value;
    return RG_OK;
}

/* Transports build resource names (such as the shm segment) from the job id,
 * so it is restricted to characters that are safe in a file name. */
static rg_status_t rg__boot_check_job_id(const char *text, rg_err_t *err)
{
    size_t i, len;

    if (text == NULL || text[0] == '\0') {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "RG_JOB_ID is not set, but other launcher variables are");
    }
    len = strlen(text);
    if (len > RG__BOOT_JOB_ID_MAX) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "RG_JOB_ID is %zu characters long; at most %d are allowed",
                          len, RG__BOOT_JOB_ID_MAX);
    }
    for (i = 0; i < len; i++) {
        char c = text[i];
        int  ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        if (!ok) {
            return rg_err_set(err, RG_ERR_BOOTSTRAP,
                              "RG_JOB_ID='%s' has the character '%c'; only letters, "
                              "digits, '-', '_' and '.' are allowed", text, c);
        }
    }
    return RG_OK;
}

static rg_status_t rg__boot_init_launcher(rg_boot_t *boot, rg_err_t *err)
{
    rg_status_t status;
    socklen_t   len = sizeof(int);
    int         flags, type = 0;

    status = rg__boot_parse_int("RG_SIZE", 1, RG__BOOT_SIZE_MAX, &boot->size, err);
    if (status != RG_OK) {
        return status;
    }
    status = rg__boot_parse_int("RG_RANK", 0, boot->size - 1, &boot->rank, err);
    if (status != RG_OK) {
        return status;
    }
    status = rg__boot_parse_int("RG_BOOT_FD", 0, INT_MAX, &boot->fd, err);
    if (status != RG_OK) {
        boot->fd = -1;
        return status;
    }
    status = rg__boot_check_job_id(getenv("RG_JOB_ID"), err);
    if (status != RG_OK) {
        boot->fd = -1;
        return status;
    }
    snprintf(boot->job_id, sizeof(boot->job_id), "%s", getenv("RG_JOB_ID"));

    /* The descriptor must be open; programs the rank starts must not inherit
     * it, or the launcher would not see EOF when this rank dies. */
    flags = fcntl(boot->fd, F_GETFD);
    if (flags < 0) {
        status = rg_err_set_errno(err, RG_ERR_BOOTSTRAP, errno,
                                  "RG_BOOT_FD=%d is not an open descriptor", boot->fd);
        boot->fd = -1;
        return status;
    }
    if (getsockopt(boot->fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM) {
        status = rg_err_set(err, RG_ERR_BOOTSTRAP,
                            "RG_BOOT_FD=%d is not a stream socket from the launcher",
                            boot->fd);
        boot->fd = -1;
        return status;
    }
    (void)fcntl(boot->fd, F_SETFD, flags | FD_CLOEXEC);
    return RG_OK;
}

static void rg__boot_init_single(rg_boot_t *boot)
{
    struct timespec ts;

    /* Job ids look like "<pid>-<8 hex>" under the launcher too; transports
     * find stale resources by the pid in front. The hex part keeps two runs
     * that reuse a pid apart. */
    clock_gettime(CLOCK_REALTIME, &ts);
    boot->fd   = -1;
    boot->rank = 0;
    boot->size = 1;
    snprintf(boot->job_id, sizeof(boot->job_id), "%ld-%08lx", (long)getpid(),
             (unsigned long)(((unsigned long)ts.tv_nsec ^ (unsigned long)ts.tv_sec) &
                             0xffffffffUL));
}

/* Loads the MPI plugin and lets it initialize MPI. A failure leaves the
 * plugin loaded (MPI libraries are never unloaded) but unused. */
static rg_status_t rg__boot_init_mpi(rg_boot_t *boot, rg_mpi_env_t *env, rg_err_t *err)
{
    rg_mpi_boot_args_t args;
    rg_status_t        status;

    /* First of all, so that even a rank that dies in MPI_Init is seen. */
    boot->watch_fd = rg__boot_mpi_watch();
    status = rg__boot_mpi_load(env, &boot->mpi, err);
    if (status != RG_OK) {
        return status;
    }
    args.flavour     = env->flavour;
    args.launcher    = env->launcher;
    args.env_size    = env->size;
    args.plugin_path = boot->mpi.path;
    args.short_max   = boot->mpi.short_max;
    status = boot->mpi.plugin->boot_init(&args, &boot->mpi_ctx, &boot->rank, &boot->size,
                                         boot->job_id, sizeof(boot->job_id), err);
    if (status != RG_OK) {
        boot->mpi.plugin = NULL;
        return status;
    }
    boot->kind = "mpi";
    return RG_OK;
}

rg_status_t rg_boot_init(rg_boot_t **boot_p, rg_err_t *err)
{
    rg_boot_t   *boot;
    rg_mpi_env_t env;
    rg_status_t  status;
    size_t       i;
    int          any_set = 0;

    if (boot_p == NULL) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_boot_init: boot_p is NULL");
    }
    boot = calloc(1, sizeof(*boot));
    if (boot == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate the bootstrap handle");
    }
    boot->fd       = -1;
    boot->watch_fd = -1;
    for (i = 0; i < sizeof(rg__boot_vars) / sizeof(rg__boot_vars[0]); i++) {
        if (getenv(rg__boot_vars[i]) != NULL) {
            any_set = 1;
        }
    }
    if (any_set) {
        boot->kind = "launcher";
        status     = rg__boot_init_launcher(boot, err);
        if (status != RG_OK) {
            goto err_free;
        }
    } else if (rg__boot_mpi_detect(&env)) {
        status = rg__boot_init_mpi(boot, &env, err);
        if (status != RG_OK) {
            goto err_free;
        }
    } else {
        boot->kind = "single";
        rg__boot_init_single(boot);
    }
    *boot_p = boot;
    return RG_OK;

err_free:
    if (boot->watch_fd >= 0) {
        close(boot->watch_fd);
    }
    free(boot);
    return status;
}

void rg_boot_fini(rg_boot_t *boot)
{
    if (boot == NULL) {
        return;
    }
    if (boot->fd >= 0) {
        close(boot->fd);
    }
    if (boot->mpi.plugin != NULL) {
        boot->mpi.plugin->boot_fini(boot->mpi_ctx);
    }
    /* watch_fd stays open on purpose: the kernel closes it when the process
     * dies, which is the moment railgauge's MPI launcher wants to see (it is
     * close-on-exec, so nothing the rank starts inherits it). */
    free(boot);
}

rg_status_t rg_boot_custom(int rank, int size, const char *job_id,
                           rg_boot_allgather_fn allgather, void *ctx, rg_boot_t **boot_p,
                           rg_err_t *err)
{
    rg_boot_t *boot;

    if (allgather == NULL || boot_p == NULL || size < 1 || rank < 0 || rank >= size) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_boot_custom: bad argument");
    }
    boot = calloc(1, sizeof(*boot));
    if (boot == NULL) {
        return rg_err_set(err, RG_ERR_NOMEM, "cannot allocate a bootstrap");
    }
    boot->fd         = -1;
    boot->watch_fd   = -1;
    boot->rank       = rank;
    boot->size       = size;
    boot->kind       = "custom";
    boot->custom     = allgather;
    boot->custom_ctx = ctx;
    snprintf(boot->job_id, sizeof(boot->job_id), "%s", job_id != NULL ? job_id : "");
    *boot_p = boot;
    return RG_OK;
}

int rg_boot_rank(const rg_boot_t *boot)
{
    return boot->rank;
}

int rg_boot_size(const rg_boot_t *boot)
{
    return boot->size;
}

const char *rg_boot_job_id(const rg_boot_t *boot)
{
    return boot->job_id;
}

const char *rg_boot_kind(const rg_boot_t *boot)
{
    return boot->kind;
}

const struct rg_mpi_plugin *rg_boot_mpi_plugin(const rg_boot_t *boot)
{
    return boot->mpi.plugin;
}

const char *rg_boot_mpi_plugin_path(const rg_boot_t *boot)
{
    return boot->mpi.plugin != NULL ? boot->mpi.path : "";
}

void *rg_boot_mpi_context(const rg_boot_t *boot)
{
    return boot->mpi.plugin != NULL ? boot->mpi_ctx : NULL;
}

static rg_status_t rg__boot_gone(rg_err_t *err)
{
    return rg_err_set(err, RG_ERR_BOOTSTRAP,
                      "launcher went away: the bootstrap socket closed (the launcher "
                      "exited, or another rank left the job)");
}

static rg_status_t rg__boot_write(rg_boot_t *boot, const void *buf, size_t len,
                                  rg_err_t *err)
{
    const char *p = buf;
    ssize_t     n;

    while (len > 0) {
        /* MSG_NOSIGNAL: a dead launcher must give an error, not SIGPIPE. */
        n = send(boot->fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EPIPE || errno == ECONNRESET) {
                return rg__boot_gone(err);
            }
            return rg_err_set_errno(err, RG_ERR_BOOTSTRAP, errno,
                                    "writing to the bootstrap socket failed");
        }
        p   += n;
        len -= (size_t)n;
    }
    return RG_OK;
}

static rg_status_t rg__boot_read(rg_boot_t *boot, void *buf, size_t len, rg_err_t *err)
{
    char   *p = buf;
    ssize_t n;

    while (len > 0) {
        n = recv(boot->fd, p, len, 0);
        if (n == 0) {
            return rg__boot_gone(err);
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == ECONNRESET) {
                return rg__boot_gone(err);
            }
            return rg_err_set_errno(err, RG_ERR_BOOTSTRAP, errno,
                                    "reading from the bootstrap socket failed");
        }
        p   += n;
        len -= (size_t)n;
    }
    return RG_OK;
}

static void rg__boot_put_u32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t rg__boot_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

rg_status_t rg_boot_allgather(rg_boot_t *boot, const void *mine, size_t len,
                              void *all, rg_err_t *err)
{
    unsigned char hdr[5];
    uint64_t      expect;
    uint32_t      total;
    rg_status_t   status;

    if (boot == NULL || (len > 0 && (mine == NULL || all == NULL))) {
        return rg_err_set(err, RG_ERR_INVALID, "rg_boot_allgather: NULL argument");
    }
    if (boot->mpi.plugin != NULL) {
        return boot->mpi.plugin->boot_allgather(boot->mpi_ctx, mine, len, all, err);
    }
    if (boot->custom != NULL) {
        return boot->custom(boot->custom_ctx, mine, len, all, err);
    }
    if (boot->fd < 0) {
        if (len > 0) {
            memmove(all, mine, len);
        }
        return RG_OK;
    }
    expect = (uint64_t)len * (uint64_t)boot->size;
    if (expect > UINT32_MAX) {
        return rg_err_set(err, RG_ERR_RANGE,
                          "allgather of %zu bytes from %d ranks exceeds the 4 GiB "
                          "limit of the bootstrap protocol", len, boot->size);
    }

    hdr[0] = RG__BOOT_OP_ALLGATHER;
    rg__boot_put_u32(hdr + 1, (uint32_t)len);
    status = rg__boot_write(boot, hdr, sizeof(hdr), err);
    if (status == RG_OK && len > 0) {
        status = rg__boot_write(boot, mine, len, err);
    }
    if (status != RG_OK) {
        return status;
    }

    status = rg__boot_read(boot, hdr, sizeof(hdr), err);
    if (status != RG_OK) {
        return status;
    }
    total = rg__boot_get_u32(hdr + 1);
    if (hdr[0] != RG__BOOT_OP_RESULT || total != expect) {
        return rg_err_set(err, RG_ERR_BOOTSTRAP,
                          "malformed reply from the launcher (op 0x%02x, %u bytes; "
                          "expected op 0x%02x, %llu bytes)", hdr[0], total,
                          RG__BOOT_OP_RESULT, (unsigned long long)expect);
    }
    if (total > 0) {
        return rg__boot_read(boot, all, total, err);
    }
    return RG_OK;
}

rg_status_t rg_boot_barrier(rg_boot_t *boot, rg_err_t *err)
{
    if (boot != NULL && boot->mpi.plugin != NULL) {
        return boot->mpi.plugin->boot_barrier(boot->mpi_ctx, err);
    }
    return rg_boot_allgather(boot, NULL, 0, NULL, err);
}
