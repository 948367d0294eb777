"""Definitions shared by the modules of the LogGP fit: array types, parameter names, the
constants of the criterion and the texts that state them (docs/fit.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
ArrayLike = float | int | Sequence[float] | npt.NDArray[Any]

#: Parameters of a range: JSON key -> (description, unit).
PARAMS: dict[str, tuple[str, str]] = {
    "L_us": ("latency L", "us"),
    "o_us": ("overhead o = (o_s + o_r)/2", "us"),
    "g_us": ("gap g", "us"),
    "G_us_per_byte": ("gap per byte G", "us/B"),
    "O_us_per_byte": ("overhead per byte O = (O_s + O_r)/2", "us/B"),
    "Glat_us_per_byte": ("latency per byte (slope of PRTT(1,0,s)/2 - o_s(s) - o_r(s))", "us/B"),
    "o_s_us": ("send overhead o_s", "us"),
    "o_r_us": ("receive overhead o_r", "us"),
    "O_s_us_per_byte": ("send overhead per byte O_s", "us/B"),
    "O_r_us_per_byte": ("receive overhead per byte O_r", "us/B"),
}
_CONTRACT_PARAMS = ("L_us", "o_us", "g_us", "G_us_per_byte")
_SPLIT_PARAMS = ("o_s_us", "o_r_us", "O_s_us_per_byte", "O_r_us_per_byte")
#: Parameters added to the model per extra range: two per line of the four series plus the
#: breakpoint (7 when no receive overhead was measured: three series).
K_PARAMS_PER_SEGMENT = 9
K_PARAMS_PER_SEGMENT_PAPER = 7
_Z95 = 1.959963984540054
_SIGNIFICANT_Z = 1.959963984540054
#: o_r_source values.
O_R_MEASURED = "measured"
O_R_ASSUMED = "assumed equal to o_s"
#: The definition of the reported o, stated in the JSON and the docs.
O_US_DEFINITION = (
    "o_us = (o_s_us + o_r_us)/2, the symmetric LogGP overhead at s=1 (O_us_per_byte = "
    "(O_s + O_r)/2 likewise): with it the paper's PRTT(1,0,s) = 2 (L + 2 o(s) + (s-1) G) equals "
    "2 (L + o_s(s) + o_r(s) + (s-1) G) exactly. Where L is held at 0 (o_s + o_r exceed "
    "PRTT(1,0,1)/2: the receive overlaps the send), o_us = (o_s_us + o_r_us + L')/2 with L' the "
    "unconstrained intercept of L, so that L + 2 o is still PRTT(1,0,1)/2; PRTT(n,d,s) = "
    "PRTT(1,0,s) + (n-1) "
    "max(o_s(s) + d, G_all(s)) needs the send overhead o_s_us. Where no receive overhead was "
    "measured, o_r = o_s (the paper's assumption) and o_us = o_s_us. L_us, o_us, o_s_us and "
    "o_r_us are network-wide (the intercepts over the first range up to its first bend, repeated "
    "in every range, "
    "as in the paper's table); O_s, O_r (and O) are per range."
)
#: How the network-wide parameters are defined, stated in the JSON and the docs.
NETWORK_DEFINITION = (
    "L, o_s, o_r and o = (o_s + o_r)/2 are one value per network, as in the paper's table: the "
    "intercepts at s=1 of the weighted lines of o_s(s), o_r(s) and PRTT(1,0,s)/2 - o_s(s) - "
    "o_r(s) over the first segment of the optimal partition, i.e. the first protocol range up "
    "to its first bend where a bend with too little break support was merged into it (small "
    "messages, which fit the transport's buffers, so that the overheads are measurable; a line "
    "through a bend would be a poor line), with their bootstrap CIs; every range carries the "
    "same values. g and G come from each range's gap line; O_s, O_r and G_lat are the slopes of "
    "that range's own lines, whose intercepts are reported as range_overhead (extras: where "
    "sending and receiving overlap, as for transfers pipelined through a buffer, L and o are "
    "not identifiable per range)."
)
#: Break support: a redraw supports a break at index p when one of its blocks starts within
#: this many positions of p; the second word of the seed of its random stream.
_SUPPORT_WINDOW = 1
_SUPPORT_STREAM = 0x5E6
#: The rule, stated in the JSON and the docs.
SUPPORT_RULE = (
    "support of a break between the measured sizes s_(p-1) and s_p of the optimal partition "
    "= the fraction of n_resamples redraws whose optimal partition (the same criterion, "
    "weights, penalty, min_seg and max_segments) has a break within one step of the planned "
    "sweep of it and nearer to it than to any other break of the partition: between "
    "s_(p-2) and s_(p-1), between s_(p-1) and s_p, or between s_p and s_(p+1) (+-1 position) "
    "where no refinement sizes lie between the planned ones, and every break between sizes "
    "less than one planned step from s_(p-1) .. s_p (positions interpolated on a log scale) "
    "where the refinement added sizes around a change; a redraw draws every raw value "
    "(PRTT(1,0,s), PRTT(n,0,s), PRTT(n,d,s), measured o_r(s)) from N(m, u^2), u its floored "
    "uncertainty max(sigma_CI, max(rel_tol, local scatter, spike, transition) m), recomputes "
    "the derived "
    "series and adds N(0, sigma^2 - sigma_prop^2) to each series of the criterion where the "
    "absolute floor raised its normaliser sigma (seeded: [seed, 0x5E6]). Breaks with support >= "
    "min_support are protocol changes; the others are bends: the ranges on either side are "
    "merged and fitted as one"
)
#: Overshoot of the busy delay (d_actual - d) accepted beyond the reference overshoot: at
#: least this many us (see _delays).
_OVERSHOOT_TOL_US = 0.05
_OVERSHOOT_TOL_REL_D = 0.01



class ModelError(ValueError):
    """A fitted-model document is not a valid LogGP model."""
