"""Bucket masses of a dominating pair in log space: the interface between a pair (models/)
and its discretisation (pld/discretise.py), kept below both.

A pair gives either ``log_bucket_masses(direction, edges)`` (its masses of the loss
intervals to a few ulps, numerics/gauss_intervals.py) or ``log_tails(direction, edges)``;
:func:`bucket_masses` takes the first where there is one.
"""
from __future__ import annotations

import math

import numpy as np


def log_diff(log_big: np.ndarray, log_small: np.ndarray) -> np.ndarray:
    """log(exp(log_big) − exp(log_small)) for log_big ≥ log_small; −inf where equal."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.minimum(log_small - log_big, 0.0)
        out = log_big + np.log(-np.expm1(gap))
    return np.where(np.isneginf(log_big), -np.inf, out)


def bucket_masses(pair, direction: str, edges: np.ndarray):
    """log P_k, log Q_k of the loss buckets (edges[k], edges[k+1]], and the log tails at the ends.

    From the pair's own log_bucket_masses where it has one (the masses to a few ulps:
    gauss_intervals.py); else each mass is a difference of whichever tail is smaller, whose
    relative error grows like u·tail/mass as buckets narrow.
    """
    own = getattr(pair, "log_bucket_masses", None)
    if own is not None:
        return own(direction, edges)
    return tail_masses(pair, direction, edges)


def tail_masses(pair, direction: str, edges: np.ndarray):
    """bucket_masses as differences of the pair's log tails (whichever tail is smaller)."""
    return masses_from_tails(*pair.log_tails(direction, edges))


def masses_from_tails(p_above, p_below, q_above, q_below):
    """(log P_k, log Q_k, log P(L ≤ e_0), log P(L > e_last)) from log tails at the edges."""
    use_upper = p_above[:-1] < math.log(0.5)
    log_p = np.where(use_upper, log_diff(p_above[:-1], p_above[1:]),
                     log_diff(p_below[1:], p_below[:-1]))
    use_upper_q = q_above[:-1] < math.log(0.5)
    log_q = np.where(use_upper_q, log_diff(q_above[:-1], q_above[1:]),
                     log_diff(q_below[1:], q_below[:-1]))
    return log_p, log_q, float(p_below[0]), float(p_above[-1])
