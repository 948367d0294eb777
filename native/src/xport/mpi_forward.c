/*
 * railgauge: the "mpi" transport as the registry sees it. Its code is in the
 * MPI plugin that the bootstrap loaded (boot/mpi_plugin.h, xport/mpi.c); this
 * table forwards each operation to it, one indirect call more than a built-in
 * transport. Without an MPI bootstrap there is no plugin, and open says how
 * to start the ranks instead.
 */
#include <string.h>

#include "boot/mpi_plugin.h"
#include "xport/mpi.h"

static inline const rg_xport_ops_t *rg__mpi_impl(rg_xport_t *xp)
{
    return ((rg_xport_mpi_head_t *)xp)->impl;
}

static rg_status_t rg__mpi_fwd_open(const char *name, rg_boot_t *boot, rg_xport_t **xp_p,
                                    rg_err_t *err)
{
    const rg_mpi_plugin_t *plugin = rg_boot_mpi_plugin(boot);
    rg_xport_t            *xp;
    rg_status_t            status;

    (void)name;  /* Always "mpi": the transport has no variants. */
    if (plugin == NULL) {
        return rg_err_set(err, RG_ERR_UNSUPPORTED,
                          "the mpi transport needs ranks started by mpirun/mpiexec "
                          "(mpirun.openmpi -n 2 ..., mpiexec.mpich -n 2 ..., or "
                          "`railgauge gauge --transport mpi`), which measure the MPI "
                          "library under them; these ranks were started %s",
                          strcmp(rg_boot_kind(boot), "launcher") == 0
                              ? "by `railgauge run`"
                              : "without a launcher (a single process)");
    }
    if (plugin->sizeof_xport != sizeof(rg_xport_t) ||
        plugin->sizeof_xreq != sizeof(rg_xreq_t)) {
        return rg_err_set(err, RG_ERR_INVALID,
                          "MPI plugin %s is from another railgauge build (handle %u and "
                          "request %u bytes; this tool: %zu and %zu); rebuild railgauge",
                          rg_boot_mpi_plugin_path(boot), plugin->sizeof_xport,
                          plugin->sizeof_xreq, sizeof(rg_xport_t), sizeof(rg_xreq_t));
    }
    status = plugin->xport_open(rg_boot_mpi_context(boot), &xp, err);
    if (status != RG_OK) {
        return status;
    }
    xp->ops  = &rg_xport_mpi_ops;
    xp->boot = boot;
    *xp_p    = xp;
    return RG_OK;
}

static void rg__mpi_fwd_close(rg_xport_t *xp)
{
    rg__mpi_impl(xp)->close(xp);
}

static rg_status_t rg__mpi_fwd_isend(rg_xport_t *xp, rg_xreq_t *req)
{
    return rg__mpi_impl(xp)->isend(xp, req);
}

static rg_status_t rg__mpi_fwd_irecv(rg_xport_t *xp, rg_xreq_t *req)
{
    return rg__mpi_impl(xp)->irecv(xp, req);
}

static rg_status_t rg__mpi_fwd_progress(rg_xport_t *xp)
{
    return rg__mpi_impl(xp)->progress(xp);
}

/* The optional operations: the plugin's slot, where it has one (attr.why_not,
 * filled in by the plugin, says why not otherwise). */
static rg_status_t rg__mpi_fwd_win_create(rg_xport_t *xp, void *base, size_t len,
                                          rg_xwin_t **win_p)
{
    const rg_xport_ops_t *impl = rg__mpi_impl(xp);

    if (impl->win_create == NULL) {
        return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED,
                          "this MPI plugin has no memory windows; rebuild railgauge");
    }
    return impl->win_create(xp, base, len, win_p);
}

static rg_status_t rg__mpi_fwd_isend_list(rg_xport_t *xp, rg_xreq_t *reqs, size_t n)
{
    const rg_xport_ops_t *impl = rg__mpi_impl(xp);
    size_t                i;

    if (impl->isend_list == NULL) {
        for (i = 0; i < n; i++) {
            reqs[i].status = RG_ERR_UNSUPPORTED;
        }
        return rg_err_set(&xp->err, RG_ERR_UNSUPPORTED,
                          "this MPI plugin has no list post; rebuild railgauge");
    }
    return impl->isend_list(xp, reqs, n);
}

static rg_status_t rg__mpi_fwd_win_write(rg_xport_t *xp, rg_xwin_t *win, int peer, size_t off,
                                         rg_xreq_t *req)
{
    return rg__mpi_impl(xp)->win_write(xp, win, peer, off, req);
}

static void rg__mpi_fwd_win_free(rg_xport_t *xp, rg_xwin_t *win)
{
    rg__mpi_impl(xp)->win_free(xp, win);
}

static rg_status_t rg__mpi_fwd_info_json(rg_xport_t *xp, char *buf, size_t cap)
{
    return rg__mpi_impl(xp)->info_json(xp, buf, cap);
}

const rg_xport_ops_t rg_xport_mpi_ops = {
    .name        = "mpi",
    .description = "MPI point-to-point (Open MPI or MPICH, loaded as a plugin; ranks "
                   "started by mpirun.openmpi or mpiexec.mpich)",
    .open        = rg__mpi_fwd_open,
    .close       = rg__mpi_fwd_close,
    .isend       = rg__mpi_fwd_isend,
    .irecv       = rg__mpi_fwd_irecv,
    .progress    = rg__mpi_fwd_progress,
    /* MPI has no way to sleep until a message arrives: rg_xport_wait() keeps
     * polling with sched_yield() between polls instead. */
    .block       = rg_xport_no_block,
    .info_json   = rg__mpi_fwd_info_json,
    .get         = rg_xport_no_get,
    .win_create  = rg__mpi_fwd_win_create,
    .win_write   = rg__mpi_fwd_win_write,
    .win_free    = rg__mpi_fwd_win_free,
    .isend_list  = rg__mpi_fwd_isend_list,
};
