/*
 * railgauge: the process grid of the halo workloads (railgauge-bench rxwin
 * and the simulator's copies of them, sim/rxwin_work.c), in one place so
 * that the benchmark and the simulation always build the same grid.
 */
#ifndef RG_BASE_GRID_H
#define RG_BASE_GRID_H

/* The most nearly cubic factorisation of size into nd (1 to 3) factors: each
 * of dims[nd-1] .. dims[1] the largest divisor f of what is left with
 * f^(d+1) not above it, dims[0] the rest; unused dims are 1. */
static inline void rg_grid_dims(int size, int nd, int *dims)
{
    int  d, f, k, best, rest = size;
    long p;

    dims[0] = dims[1] = dims[2] = 1;
    for (d = nd - 1; d >= 1; d--) {
        best = 1;
        for (f = 1;; f++) {
            for (k = 0, p = 1; k <= d; k++) {
                p *= f;
            }
            if (p > rest) {
                break;
            }
            if (rest % f == 0) {
                best = f;
            }
        }
        dims[d] = best;
        rest /= best;
    }
    dims[0] = rest;
}

#endif /* RG_BASE_GRID_H */
