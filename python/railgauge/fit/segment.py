"""Protocol-range detection by segmented least squares.

The measured sizes s_1 < ... < s_N are split into contiguous blocks (protocol ranges), and
every block gets its own straight line in x = s - 1 for each of K series (for LogGP the
derived series G_all(s), o_s(s), o_r(s) and PRTT(1,0,s)/2, or without a measured receive
overhead G_all(s), o_s(s) and PRTT(1,0,s)/2). The partition minimises

    C(P) = sum over blocks B of P
             sum over series k
               min_{a,b} sum_{i in B} w_ki (y_ki - a - b x_i)^2
           + lambda * (m(P) - 1)

over all partitions P into m(P) <= max_segments blocks of at least ``min_seg`` sizes each.
``w_ki = 1 / sigma_ki^2`` are the weights of the normalised residuals (``w_ki = 0`` leaves
a value out); ``lambda`` is the penalty per extra block. The exact minimum is found by
dynamic programming over the breakpoints (Bellman 1961; Kleinberg and Tardos, "Algorithm
Design", section 6.3) in O(K N^2 + max_segments N^2) time. Ties go to fewer blocks.

:func:`bic_penalty` gives the default ``lambda = factor * k * ln(M)``: with Gaussian
errors of the given sigmas the fit cost is -2 log-likelihood up to a constant, and a block
adds k free parameters (two per series, plus the breakpoint: 9 for the four LogGP series,
7 for three), so ``factor = 1`` is the Bayesian information criterion with M residuals.

:func:`segment_starts_batch` solves the same problem for many value sets that share the
sizes and the weights at once (vectorised over them; the break support of
:mod:`railgauge.fit.loggp` re-segments bootstrap resamples with it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "Segmentation",
    "bic_penalty",
    "line_sse",
    "segment",
    "segment_cost_matrix",
    "segment_starts_batch",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Segmentation:
    """The chosen partition.

    ``bounds`` are inclusive index ranges ``(first, last)`` into the sorted sizes.
    ``fit_cost`` is the sum of squared normalised residuals of the chosen partition, ``cost``
    adds ``penalty * (len(bounds) - 1)``. ``fit_cost_by_count[m - 1]`` is the smallest fit
    cost with exactly m blocks (``inf`` where m blocks of ``min_seg`` sizes do not fit).
    """

    bounds: list[tuple[int, int]]
    cost: float
    fit_cost: float
    penalty: float
    fit_cost_by_count: list[float]
    n_residuals: int


def bic_penalty(n_residuals: int, k_params: int = 7, factor: float = 1.0) -> float:
    """The penalty per extra block: ``factor * k_params * ln(n_residuals)``."""
    if n_residuals < 1:
        raise ValueError(f"n_residuals must be >= 1, got {n_residuals}")
    if k_params < 1:
        raise ValueError(f"k_params must be >= 1, got {k_params}")
    if not (factor >= 0.0 and math.isfinite(factor)):
        raise ValueError(f"factor must be a finite number >= 0, got {factor}")
    return factor * k_params * math.log(max(n_residuals, 2))


def line_sse(x: FloatArray, y: FloatArray, w: FloatArray) -> float:
    """Weighted sum of squared residuals of the best unconstrained line ``a + b x``.

    Values with ``w == 0`` are left out. With fewer than two distinct x left the sum is
    about the weighted mean (or 0 when nothing is left).
    """
    keep = w > 0.0
    if not np.any(keep):
        return 0.0
    xk, yk, wk = x[keep], y[keep], w[keep]
    sw = float(wk.sum())
    xm = float((wk * xk).sum() / sw)
    ym = float((wk * yk).sum() / sw)
    dx = xk - xm
    dy = yk - ym
    sxx = float((wk * dx * dx).sum())
    syy = float((wk * dy * dy).sum())
    if sxx <= 0.0 or not math.isfinite(sxx):
        return syy
    sxy = float((wk * dx * dy).sum())
    b = sxy / sxx
    r = dy - b * dx
    return float((wk * r * r).sum())


def segment_cost_matrix(x: FloatArray, ys: FloatArray, ws: FloatArray, min_seg: int) -> FloatArray:
    """``cost[i, j]``: summed line SSE over the series of block ``i..j`` (inclusive).

    ``ys`` and ``ws`` have shape (K, N); blocks shorter than ``min_seg`` cost ``inf``.
    """
    # From running sums (:func:`_batch_cost_matrix`, one value set): O(K N^2) array work
    # instead of N^2 / 2 calls of :func:`line_sse`; equal to them to rounding (tested), and
    # what makes a Netgauge sweep of 1025 sizes fit in seconds rather than minutes.
    return _batch_cost_matrix(
        np.asarray(x, dtype=np.float64), np.asarray(ys, dtype=np.float64)[None, :, :],
        np.asarray(ws, dtype=np.float64), min_seg,
    )[0]


def segment(
    x: FloatArray,
    ys: FloatArray,
    ws: FloatArray,
    *,
    penalty: float,
    min_seg: int = 3,
    max_segments: int = 6,
) -> Segmentation:
    """Exact penalised segmented least squares (see the module docstring for the criterion).

    Parameters
    ----------
    x
        Sorted abscissae, shape (N,).
    ys, ws
        Values and weights (1 / sigma^2; 0 leaves a value out), shape (K, N) or (N,).
    penalty
        Cost of each block beyond the first, in units of squared normalised residuals.
    min_seg
        Fewest sizes per block (>= 2). With fewer than ``min_seg`` sizes in all, the
        result is a single block.
    max_segments
        Most blocks (>= 1).
    """
    x = np.asarray(x, dtype=np.float64)
    ys = np.atleast_2d(np.asarray(ys, dtype=np.float64))
    ws = np.atleast_2d(np.asarray(ws, dtype=np.float64))
    n = x.size
    if ys.shape != ws.shape or ys.shape[1] != n:
        raise ValueError("ys and ws must have shape (K, N) with N = len(x)")
    if min_seg < 2:
        raise ValueError(f"min_seg must be >= 2, got {min_seg}")
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments}")
    if not (penalty >= 0.0 and math.isfinite(penalty)):
        raise ValueError(f"penalty must be a finite number >= 0, got {penalty}")
    if n == 0:
        raise ValueError("x must not be empty")
    if np.any(np.diff(x) <= 0.0):
        raise ValueError("x must be strictly increasing")
    m_res = int(np.count_nonzero(ws > 0.0))

    if n < min_seg:
        fit = sum(line_sse(x, ys[k], ws[k]) for k in range(ys.shape[0]))
        return Segmentation([(0, n - 1)], fit, fit, penalty, [fit], m_res)

    cost = segment_cost_matrix(x, ys, ws, min_seg)
    kmax = min(max_segments, n // min_seg)
    # best[m, j]: smallest fit cost of points 0..j in m + 1 blocks; arg[m, j]: start of the
    # last block.
    best = np.full((kmax, n), np.inf)
    arg = np.full((kmax, n), -1, dtype=np.int64)
    best[0, :] = cost[0, :]
    arg[0, :] = 0
    for m in range(1, kmax):
        for j in range(n):
            lo = m * min_seg  # the last block starts here at the earliest
            hi = j - min_seg + 1
            if hi < lo:
                continue
            starts = np.arange(lo, hi + 1)
            cand = best[m - 1, starts - 1] + cost[starts, j]
            t = int(np.argmin(cand))
            best[m, j] = cand[t]
            arg[m, j] = starts[t]

    by_count = [float(best[m, n - 1]) for m in range(kmax)]
    total = [c + penalty * m for m, c in enumerate(by_count)]
    m_best = 0
    for m in range(1, kmax):
        if total[m] < total[m_best]:
            m_best = m

    bounds: list[tuple[int, int]] = []
    j = n - 1
    for m in range(m_best, -1, -1):
        i = int(arg[m, j])
        bounds.append((i, j))
        j = i - 1
    bounds.reverse()
    return Segmentation(
        bounds=bounds,
        cost=float(total[m_best]),
        fit_cost=float(by_count[m_best]),
        penalty=float(penalty),
        fit_cost_by_count=by_count,
        n_residuals=m_res,
    )


#: At most this many cells (value sets x N x N) of cost matrices at once (64 MiB of doubles).
_BATCH_CELLS = 8 * 1024 * 1024


def _batch_cost_matrix(x: FloatArray, ys: FloatArray, ws: FloatArray, min_seg: int) -> FloatArray:
    """``cost[b, i, j]`` of :func:`segment_cost_matrix` for value sets ``ys[b]`` (B, K, N)
    with shared weights ``ws`` (K, N), from running weighted sums.

    For every first index i the sums run over i..j with x and y shifted by their values at
    i (this keeps the cancellation in the centred sums small); the SSE of the best line is
    ``Syy - Sxy^2 / Sxx`` of the centred sums, ``Syy`` where fewer than two values have a
    weight (as :func:`line_sse`), clipped at 0.
    """
    bcount, _, n = ys.shape
    cost = np.full((bcount, n, n), np.inf)
    pos = ws > 0.0
    ysz = np.where(pos, ys, 0.0)
    for i in range(n - min_seg + 1):
        w = ws[:, i:]  # (K, L)
        xs = x[i:] - x[i]
        wx = w * xs
        sw = np.cumsum(w, axis=-1)
        sx = np.cumsum(wx, axis=-1)
        sxx = np.cumsum(wx * xs, axis=-1)
        cnt = np.cumsum(pos[:, i:], axis=-1)
        y = ysz[:, :, i:] - ysz[:, :, i : i + 1]  # (B, K, L)
        wy = w * y
        sy = np.cumsum(wy, axis=-1)
        syy = np.cumsum(wy * y, axis=-1)
        sxy = np.cumsum(wx * y, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(sw > 0.0, 1.0 / sw, 0.0)
            cxx = sxx - sx * sx * inv
            cyy = syy - sy * sy * inv
            cxy = sxy - sx * sy * inv
            line = cyy - cxy * cxy / np.where(cxx > 0.0, cxx, 1.0)
        sse = np.where((cnt >= 2) & (cxx > 0.0), line, cyy)
        total = np.maximum(sse, 0.0).sum(axis=1)  # (B, L)
        cost[:, i, i + min_seg - 1 :] = total[:, min_seg - 1 :]
    return cost


def segment_starts_batch(
    x: FloatArray,
    ys: FloatArray,
    ws: FloatArray,
    *,
    penalty: float,
    min_seg: int = 3,
    max_segments: int = 6,
) -> BoolArray:
    """The optimal partitions of :func:`segment` for many value sets at once.

    ``ys`` has shape (B, K, N) (B value sets of the K series), ``ws`` (K, N) the weights
    shared by all of them. Returns a boolean array (B, N) that is True at index p > 0 where
    a block of value set b's optimal partition starts (a break between sizes p-1 and p).
    The criterion, the constraints and the tie rules are those of :func:`segment`
    (ties between partitions to fewer blocks, between starts to the earliest); the block
    costs come from running sums (:func:`segment` sums each block anew), so they agree to
    rounding.
    """
    x = np.asarray(x, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    ws = np.atleast_2d(np.asarray(ws, dtype=np.float64))
    if ys.ndim == 2:
        ys = ys[:, None, :]
    n = x.size
    if ys.ndim != 3 or ys.shape[1:] != ws.shape or ws.shape[1] != n:
        raise ValueError("ys must have shape (B, K, N) and ws (K, N) with N = len(x)")
    if min_seg < 2:
        raise ValueError(f"min_seg must be >= 2, got {min_seg}")
    if max_segments < 1:
        raise ValueError(f"max_segments must be >= 1, got {max_segments}")
    if not (penalty >= 0.0 and math.isfinite(penalty)):
        raise ValueError(f"penalty must be a finite number >= 0, got {penalty}")
    if n == 0 or np.any(np.diff(x) <= 0.0):
        raise ValueError("x must be non-empty and strictly increasing")
    bcount = ys.shape[0]
    starts = np.zeros((bcount, n), dtype=bool)
    kmax = min(max_segments, n // min_seg)
    if n < min_seg or kmax < 2 or bcount == 0:
        return starts
    if bcount * n * n > _BATCH_CELLS:
        # Value sets in chunks: the cost matrices of all at once take B N^2 doubles (840 MB
        # for 100 redraws of a Netgauge sweep of 1025 sizes).
        step = max(1, _BATCH_CELLS // (n * n))
        for b in range(0, bcount, step):
            starts[b : b + step] = segment_starts_batch(
                x, ys[b : b + step], ws, penalty=penalty, min_seg=min_seg,
                max_segments=max_segments)
        return starts
    cost = _batch_cost_matrix(x, ys, ws, min_seg)
    best = np.full((bcount, kmax, n), np.inf)
    arg = np.zeros((bcount, kmax, n), dtype=np.int64)
    best[:, 0, :] = cost[:, 0, :]
    for m in range(1, kmax):
        # cand[b, t, j]: the last block starts at t + 1 and ends at j.
        cand = best[:, m - 1, : n - 1, None] + cost[:, 1:, :]
        t = np.argmin(cand, axis=1)  # the earliest start among equals, as segment()
        best[:, m, :] = np.take_along_axis(cand, t[:, None, :], axis=1)[:, 0, :]
        arg[:, m, :] = t + 1
    total = best[:, :, n - 1] + penalty * np.arange(kmax)
    m_best = np.argmin(total, axis=1)  # the fewest blocks among equals
    rows = np.arange(bcount)
    j = np.full(bcount, n - 1)
    for m in range(kmax - 1, 0, -1):
        act = m_best >= m
        i = arg[rows, m, j]
        starts[rows[act], i[act]] = True
        j = np.where(act, i - 1, j)
    return starts
