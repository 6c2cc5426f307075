"""One step of a dominating pair on a loss grid: the two discretisations pb composes.

From the bucket masses (P_k, Q_k) of the loss intervals (e_k, e_{k+1}]:

* ``upper`` — connect-the-dots (Doroshenko et al. 2022): each bucket's mass is split
  between its two grid points preserving both P_k and Q_k. Its privacy curve is the
  chord of the true (convex in e^ε) curve, so the pair dominates the true pair and
  every composition of it is a certified upper bound; the error is second order in h.
  Loss below the grid is rounded up to its first point, loss above it goes to +∞.

* ``lower`` — the pair bucketed into loss intervals centred on the grid points (a
  post-processing of the true pair, so dominated by it), each bucket's exact loss
  ℓ_k = ln(P_k/Q_k) rounded to its grid point, an error of at most h/2 and, for a
  smooth PLD, of order h². The rounding errors E_t of the T steps are independent with a known law, so
  a Chernoff bound with their exact moment generating function gives η with
  P(Σ E_t > η) ≤ f; then δ_true(ε) ≥ δ_rounded(ε + η) − f (the concentration
  argument of Gopi, Lee, Wutschitz 2021, §5, with the exact MGF in place of
  Hoeffding's lemma; chernoff.rounding_slack). Loss below the grid is dropped and the top
  bucket rounded down: both only lower δ, and their errors are bounded by 0 in the MGF.
"""
from __future__ import annotations

import math

import numpy as np

from dpcalc.pld.fft_error import UNIT_ROUNDOFF
from dpcalc.numerics.log_masses import bucket_masses
from dpcalc.pld.pld import LOWER, MAX_FFT_POINTS, UPPER, DiscretePld, GridTooLarge


def _loss_error(log_p: np.ndarray, log_q: np.ndarray, edges: np.ndarray, grid_step: float,
                extra: np.ndarray | float = 0.0) -> np.ndarray:
    """A bound on the float error of a bucket's loss ln P_k − ln Q_k measured from a grid
    point: each log is within about an ulp of its value plus its mass's relative error (≥ u
    even where ln m ≈ 0: buckets holding an atom or most of the mass), so
    4u·(|ln P| + |ln Q| + |e| + h + 1), plus ``extra`` (a pair's own bound on the error of
    its log masses, e.g. max_pair's sums of many cells: _pair_log_error). An independent
    review measured at most 2.6 of u·(|ln P| + |ln Q| + |e| + h) over ~51 000 buckets of
    every pair type, and up to 1 455 at atom buckets before the "+ 1"; 1.62 after it."""
    with np.errstate(invalid="ignore"):
        size = np.abs(log_p) + np.abs(log_q) + np.abs(edges) + grid_step + 1.0
    return 4.0 * UNIT_ROUNDOFF * np.where(np.isfinite(size), size, 0.0) + 2.0 * extra


def _pair_log_error(pair, direction: str, edges: np.ndarray):
    """The pair's bound on the absolute error of each bucket's ln P_k and ln Q_k beyond an
    ulp (``bucket_log_error``), or 0."""
    own = getattr(pair, "bucket_log_error", None)
    return 0.0 if own is None else own(direction, edges)


def entry_error(pair, direction: str, edges: np.ndarray) -> float:
    """The relative error of a pmf entry built from this pair's buckets between ``edges``
    beyond fft_error.entry_relative_error's model: its log masses' own error, twice."""
    return 2.0 * float(np.max(_pair_log_error(pair, direction, edges), initial=0.0))


def connect_the_dots(pair, direction: str, grid_step: float, first: int, last: int):
    """Connect-the-dots masses on the grid points first..last (in units of ``grid_step``)
    of the buckets between them, and the P-masses below the first and above the last
    point: (pmf, mass below, mass above)."""
    grid = np.arange(first, last + 1) * grid_step
    # Buckets (e_k, e_{k+1}] between grid points.
    log_p, log_q, log_below, log_above = bucket_masses(pair, direction, grid)
    mass = np.exp(log_p)
    # Exact in-bucket loss ℓ_k = ln(P_k/Q_k) as an offset in [0, h] from e_k, at the top of
    # its float error (_loss_error): more of the bucket to the higher point than the exact
    # split only raises δ(ε) = E[(1 − e^{ε−L})_+] for every ε, and after composition
    # (convolution keeps the stochastic order), so the bound stays an upper bound.
    float_error = _loss_error(log_p, log_q, grid[:-1], grid_step,
                              _pair_log_error(pair, direction, grid))
    with np.errstate(invalid="ignore"):
        offset_in_bucket = np.clip(log_p - log_q - grid[:-1] + float_error, 0.0, grid_step)
    offset_in_bucket = np.where(np.isfinite(offset_in_bucket), offset_in_bucket, grid_step)
    # Connect-the-dots split preserving P_k and Q_k: mass b at e_{k+1}, P_k − b at e_k.
    to_right = mass * (-np.expm1(-offset_in_bucket)) / (-math.expm1(-grid_step))
    to_right = np.minimum(to_right, mass)
    pmf = np.zeros(grid.size)
    pmf[1:] += to_right
    pmf[:-1] += mass - to_right
    return pmf, math.exp(log_below), math.exp(log_above)


def centred_rounding(pair, direction: str, grid_step: float, first: int, last: int):
    """The pair bucketed into loss intervals centred on the grid points first..last, each
    bucket's exact loss rounded to its point: (pmf, rounding errors (rounded − exact),
    P-mass below the lowest bucket, P-mass above the highest)."""
    grid = np.arange(first, last + 1) * grid_step
    # Buckets (e_k − h/2, e_k + h/2] centred on grid points: each bucket's exact loss
    # ℓ_k = ln(P_k/Q_k) lies within h/2 of e_k, and for a smooth PLD within O(h²).
    edges = (np.arange(first, last + 2) - 0.5) * grid_step
    log_p, log_q, log_below, log_above = bucket_masses(pair, direction, edges)
    pmf = np.exp(log_p)
    # rounded − exact loss, at the top of its float error (_loss_error): the slack η bounds
    # the upper tail of their sum (chernoff.rounding_slack), so larger is the safe side
    float_error = _loss_error(log_p, log_q, grid, grid_step, _pair_log_error(pair, direction, edges))
    with np.errstate(invalid="ignore"):
        errors = np.clip(grid - (log_p - log_q), -0.5 * grid_step, 0.5 * grid_step) + float_error
    errors = np.where(np.isfinite(errors), errors, 0.0)
    return pmf, errors, math.exp(log_below), math.exp(log_above)


def discretise(pair, direction: str, grid_step: float,
               tail_half_width: float, bound: str) -> DiscretePld:
    """One step of ``pair`` in ``direction`` on the grid of width ``grid_step``.

    ``tail_half_width`` K: the grid covers the losses of outputs x in [−Kσ, k + Kσ].
    """
    low, high = pair.loss_range(direction, tail_half_width)
    first = math.floor(low / grid_step)
    last = max(math.ceil(high / grid_step), first + 1)
    if last - first + 1 > MAX_FFT_POINTS:
        # one step wider than any composition may be: refused at its size, before a grid
        # is built (the memory budget, issue 30 §3); compose_fitting coarsens the grid
        raise GridTooLarge(last - first + 1)
    if bound == UPPER:
        pmf, below, above = connect_the_dots(pair, direction, grid_step, first, last)
        pmf[0] += below  # loss below the grid, rounded up
        own = entry_error(pair, direction, np.arange(first, last + 1) * grid_step)
        return DiscretePld(grid_step, first, pmf, above, entry_error=own)  # above the grid: +∞
    if bound == LOWER:
        pmf, errors, below, above = centred_rounding(pair, direction, grid_step, first, last)
        pmf[-1] += above  # top bucket rounded down; bottom dropped (error ≤ 0: bound by 0)
        rest = np.array([above + below])
        own = entry_error(pair, direction, (np.arange(first, last + 2) - 0.5) * grid_step)
        return DiscretePld(grid_step, first, pmf, 0.0,
                           np.concatenate([pmf[:-1], [pmf[-1] - above], rest]),
                           np.concatenate([errors, [0.0]]), own)
    raise ValueError(f"bound must be {UPPER!r} or {LOWER!r}")
