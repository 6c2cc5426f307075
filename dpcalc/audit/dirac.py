"""Dirac gradient canaries on coordinates no training example uses: the one-run audit's canaries.

The model's input gets m extra columns, 0 in every training and test example; canary i is a
record whose clipped per-example gradient is C·e_i on the first weight of column i (norm C, so
clipping leaves it unchanged). No example's gradient reaches those weights (their inputs are 0)
and the predictions do not depend on them, so the audited run trains exactly as it would
without the audit (dpcalc.dpsgd.train._Extension: same batches, same noise; the extension's
noise has a stream of its own). This is the white-box "Dirac canary" of Nasr, Hayes, Steinke,
Balle, Tramèr, Jagielski, Carlini, Terzis 2023 ("Tight auditing of differentially private
machine learning", USENIX Security, §4) and of the white-box experiments of Steinke, Nasr,
Jagielski 2023 ("Privacy auditing with one (1) training run", NeurIPS, §7): with a coordinate
of its own, what the auditor reads about a canary is the mechanism's output on it alone, and
the audit can approach what the one-run theorem allows for m canaries.

Sampling is the run's: under Poisson sampling each canary joins each step independently with
probability q (dpcalc.dpsgd.train.sample_poisson_batch, the law and code of the run's sampler;
Poisson sampling of N + m records IS N + m independent draws at rate q); under shuffling the
canaries take slots in the run's permutation of N + m records (placed_epoch_batches). So pb's
certificate for (q, σ, T) covers every canary exactly as it covers a training example. An "out"
canary contributes nothing (add/remove), or, in shuffled batches, the neighbouring record's
gradient (0 under zero-out, −C·e_i under replace-one; dpcalc.audit.shuffle).

What the auditor sees (the threat model):
- all iterates (white-box; the release DP-SGD's accounting certifies): the weights after every
  step. From two consecutive iterates and the public learning rate and momentum it recovers the
  step's noisy average, u_t = v_t − μ·v_{t−1} with v_t = (w_{t−1} − w_t)/η, and reads
  x_t = B·u_t[i]/C ~ N(b_t, σ²), b_t = 1 when the canary was in the batch. The score is the
  log-likelihood ratio of the pair the run claims, summed over steps: Poisson,
  Σ_t log((1 − q) + q·exp((2x_t − 1)/(2σ²))), the Neyman–Pearson statistic of "in" against
  "out" (Mironov, Talwar, Zhang 2019: (1 − q)N(0, σ²) + qN(1, σ²) vs N(0, σ²)); shuffled
  batches, the epoch pair's ratio (dpcalc.audit.shuffle).
- last model (black-box on the weights): the final weights only. w_T[i] = −(ηC/B)·Σ_t c_t·x_t
  with c_t = (1 − μ^{T−t+1})/(1 − μ) (c_t = 1 without momentum), so the score
  −B·w_T[i]/(ηC) = Σ_t c_t·x_t: a sum of Gaussians shifted by c_t·b_t ≥ 0, whose likelihood
  ratio grows with it (a mixture of non-negative location shifts against none), so ranking by
  it is ranking by the last-model likelihood ratio. Poisson sampling only.
Either way the scores are a post-processing of what the run released, as the one-run theorem
requires of the guesses made from them.
"""
from __future__ import annotations

import numpy as np

from dpcalc.audit.canaries import subsampled_gaussian_log_ratio
from dpcalc.audit.shuffle import OUT_VALUE, _log_terms, epoch_log_ratio
from dpcalc.dpsgd.train import sample_poisson_batch
from dpcalc.errors import DpcalcError

ALL_ITERATES, LAST_MODEL = "all-iterates", "last-model"
THREAT_MODELS = (ALL_ITERATES, LAST_MODEL)
THREAT_MODEL_TEXT = {
    ALL_ITERATES: "all iterates (white-box: every released update, the release DP-SGD's "
                  "accounting certifies)",
    LAST_MODEL: "last model only (the final weights)",
}


class DiracCanaries:
    """m Dirac gradient canaries on the weights of m extra input columns (module doc); a
    dpcalc.dpsgd.train.CanaryHook with ``extension_size`` m."""

    kind = "gradient"

    def __init__(self, included: np.ndarray, sampling_rate: float, noise_multiplier: float,
                 clip_norm: float, batch_size: int, learning_rate: float, momentum: float,
                 threat_model: str, rng: np.random.Generator,
                 shuffle: tuple[int, str] | None = None):
        if threat_model not in THREAT_MODELS:
            raise DpcalcError(f"--audit-threat-model must be one of {', '.join(THREAT_MODELS)}; "
                              f"got {threat_model!r}")
        if shuffle is not None and threat_model != ALL_ITERATES:
            raise DpcalcError("shuffled audits read every iterate: give --audit-threat-model "
                              "all-iterates with --sampling shuffle")
        self.included = np.asarray(included, dtype=bool)
        self.extension_size = int(self.included.shape[0])
        self.sampling_rate = sampling_rate
        self.noise_multiplier = noise_multiplier
        self.clip_norm = clip_norm
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.threat_model = threat_model
        self._rng = rng
        self.shuffle = shuffle
        if shuffle is not None:
            self.placed_records = self.extension_size  # slots in the run's permutation
            self.steps_per_epoch, adjacency = int(shuffle[0]), shuffle[1]
            self.shifts = (1.0, OUT_VALUE[adjacency])
        self.scores = np.zeros(self.extension_size)
        self.steps = 0
        self._here = np.zeros(0, dtype=np.int64)
        self._previous = np.zeros(self.extension_size)   # the extension starts at 0
        self._velocity = np.zeros(self.extension_size)
        self._log_in: list[np.ndarray] = []
        self._log_out: list[np.ndarray] = []

    # ------------------------------------------------------------ the run's side
    def place(self, indices: np.ndarray, batch_size: int) -> None:
        """Shuffled batches: the canaries in this step's batch."""
        self._here = np.asarray(indices, dtype=np.int64)

    def extension_gradients(self) -> np.ndarray:
        """The sum of this step's canary gradients on the extension: C on the coordinate of
        every "in" canary in the batch (an "out" one: nothing, or the neighbour's record)."""
        summed = np.zeros(self.extension_size)
        if self.shuffle is not None:
            here = self._here
            summed[here] = self.clip_norm * np.where(self.included[here], 1.0, self.shifts[1])
            return summed
        batch = sample_poisson_batch(self.extension_size, self.sampling_rate, self._rng)
        summed[batch[self.included[batch]]] = self.clip_norm
        return summed

    # ------------------------------------------------------------ the auditor's side
    def observe_extension(self, weights: np.ndarray) -> None:
        """The extension's weights released after a step. A last-model auditor sees only the
        final ones (final_scores), so nothing is read here."""
        self.steps += 1
        if self.threat_model == LAST_MODEL:
            return
        readings = self.readings(weights)
        if self.shuffle is None:
            self.scores += subsampled_gaussian_log_ratio(readings, self.sampling_rate,
                                                         self.noise_multiplier)
            return
        self._log_in.append(_log_terms(readings, self.shifts[0], self.noise_multiplier))
        self._log_out.append(_log_terms(readings, self.shifts[1], self.noise_multiplier))
        if len(self._log_in) == self.steps_per_epoch:
            self._flush()

    def readings(self, weights: np.ndarray) -> np.ndarray:
        """x_t = B·u_t/C per canary, u_t = v_t − μ·v_{t−1}, v_t = (w_{t−1} − w_t)/η: the step's
        noisy average recovered from two consecutive released iterates (all iterates)."""
        velocity = (self._previous - weights) / self.learning_rate
        update = velocity - self.momentum * self._velocity
        self._previous, self._velocity = np.array(weights, dtype=float), velocity
        return update * self.batch_size / self.clip_norm

    def _flush(self) -> None:
        if self._log_in:
            self.scores += epoch_log_ratio(np.stack(self._log_in, axis=-1),
                                           np.stack(self._log_out, axis=-1), self.steps_per_epoch)
        self._log_in, self._log_out = [], []

    def final_scores(self, final_weights: np.ndarray) -> np.ndarray:
        """One score per canary, higher meaning "in" more likely: the summed log-likelihood
        ratios (all iterates) or −B·w_T/(ηC) from the final weights alone (last model)."""
        if self.threat_model == LAST_MODEL:
            return -np.asarray(final_weights, dtype=float) * self.batch_size / (
                self.learning_rate * self.clip_norm)
        self._flush()
        return self.scores.copy()
