"""Softmax classifiers with analytic, vectorised per-example gradients (NumPy only).

Parameters are a tuple of arrays. A per-example gradient is the same tuple with a
leading batch axis. Both models minimise the softmax cross-entropy.

Every parameter of a dense softmax network has a per-example gradient that is an
outer product: a weight matrix gets ``inputs_i ⊗ backprop_i`` and a bias gets
``backprop_i``. So its squared Frobenius norm is ``‖inputs_i‖² · ‖backprop_i‖²``
(Goodfellow 2015, "Efficient per-example gradient computations", arXiv:1510.01799),
and the clipped sum is ``inputs^T (backprop * scale)``: neither needs the
(batch × features × classes) tensor of per-example gradients.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Params = tuple[np.ndarray, ...]

# One factor pair per parameter: (inputs or None for a bias, backprop), both (batch, ·).
GradientFactors = list[tuple[np.ndarray | None, np.ndarray]]

ACTIVATIONS = ("tanh", "relu")


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax, stable for any finite logits."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def per_example_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """−log softmax(logits_i)[label_i] for every row i."""
    return -log_softmax(logits)[np.arange(labels.shape[0]), labels]


def softmax_residual(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """∂(cross-entropy)/∂logits per example: softmax_i − onehot_i."""
    residual = np.exp(log_softmax(logits))
    residual[np.arange(labels.shape[0]), labels] -= 1.0
    return residual


def _squared_row_norms(matrix: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", matrix, matrix)


class SoftmaxModel:
    """Shared machinery: per-example norms, clipped sums and materialised gradients
    from the outer-product factors a subclass returns in :meth:`gradient_factors`."""

    n_features: int
    n_classes: int

    def init_params(self, rng: np.random.Generator) -> Params:
        raise NotImplementedError

    def logits(self, params: Params, features: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def gradient_factors(self, params: Params, features: np.ndarray,
                         labels: np.ndarray) -> GradientFactors:
        raise NotImplementedError

    def per_example_loss(self, params: Params, features: np.ndarray,
                         labels: np.ndarray) -> np.ndarray:
        """Cross-entropy of every example, shape (batch,)."""
        return per_example_cross_entropy(self.logits(params, features), labels)

    def predict(self, params: Params, features: np.ndarray) -> np.ndarray:
        """Most likely class of every row."""
        return np.argmax(self.logits(params, features), axis=1)

    def per_example_gradients(self, params: Params, features: np.ndarray,
                              labels: np.ndarray) -> Params:
        """Materialised per-example gradients (batch, *shape) of every parameter.

        Memory grows as batch × parameters: meant for tests and small batches; the
        training loop uses :meth:`clipped_gradient_sum` instead.
        """
        return tuple(
            backprop if inputs is None else np.einsum("bi,bj->bij", inputs, backprop)
            for inputs, backprop in self.gradient_factors(params, features, labels)
        )

    def per_example_norms(self, factors: GradientFactors) -> np.ndarray:
        """Global L2 norm over all parameters of each example's gradient."""
        squared = np.zeros(factors[0][1].shape[0])
        for inputs, backprop in factors:
            backprop_squared = _squared_row_norms(backprop)
            if inputs is None:
                squared += backprop_squared
            else:
                # ‖x ⊗ r‖_F² = ‖x‖² ‖r‖² (Goodfellow 2015).
                squared += _squared_row_norms(inputs) * backprop_squared
        return np.sqrt(squared)

    def weighted_gradient_sum(self, factors: GradientFactors,
                              weights: np.ndarray | None) -> Params:
        """Σ_i weights_i · g_i without forming any g_i; ``None`` means all weights 1."""
        summed = []
        for inputs, backprop in factors:
            weighted = backprop if weights is None else backprop * weights[:, None]
            summed.append(weighted.sum(axis=0) if inputs is None else inputs.T @ weighted)
        return tuple(summed)

    def clipped_gradient_sum(self, params: Params, features: np.ndarray, labels: np.ndarray,
                             clip_norm: float) -> tuple[Params, np.ndarray]:
        """Σ_i clip(g_i, C) and the unclipped per-example norms ‖g_i‖.

        Clipping as in Abadi et al. 2016, Algorithm 1: ḡ_i = g_i / max(1, ‖g_i‖/C),
        with the norm taken over all parameters together.
        """
        factors = self.gradient_factors(params, features, labels)
        norms = self.per_example_norms(factors)
        scale = clip_norm / np.maximum(norms, clip_norm)
        return self.weighted_gradient_sum(factors, scale), norms

    def gradient_sum(self, params: Params, features: np.ndarray, labels: np.ndarray) -> Params:
        """Σ_i g_i, unclipped (the non-private baseline)."""
        return self.weighted_gradient_sum(self.gradient_factors(params, features, labels), None)


@dataclass(frozen=True)
class LogisticRegression(SoftmaxModel):
    """Multinomial logistic regression: logits = x W + b. Parameters (W, b)."""

    n_features: int
    n_classes: int

    def init_params(self, rng: np.random.Generator) -> Params:
        # The loss is convex: start at zero (rng unused, kept for a uniform interface).
        return (np.zeros((self.n_features, self.n_classes)), np.zeros(self.n_classes))

    def logits(self, params: Params, features: np.ndarray) -> np.ndarray:
        weights, bias = params
        return features @ weights + bias

    def gradient_factors(self, params, features, labels):
        # ∂ℓ_i/∂W = x_i ⊗ (softmax_i − onehot_i), ∂ℓ_i/∂b = softmax_i − onehot_i.
        residual = softmax_residual(self.logits(params, features), labels)
        return [(features, residual), (None, residual)]


@dataclass(frozen=True)
class MultilayerPerceptron(SoftmaxModel):
    """One hidden layer: logits = act(x W1 + b1) W2 + b2. Parameters (W1, b1, W2, b2)."""

    n_features: int
    n_classes: int
    hidden_units: int
    activation: str = "tanh"

    def init_params(self, rng: np.random.Generator) -> Params:
        # Glorot & Bengio 2010 (tanh) / He et al. 2015 (relu) scales.
        if self.activation == "relu":
            hidden_scale = np.sqrt(2.0 / self.n_features)
        else:
            hidden_scale = np.sqrt(2.0 / (self.n_features + self.hidden_units))
        output_scale = np.sqrt(1.0 / self.hidden_units)
        return (
            rng.normal(0.0, hidden_scale, (self.n_features, self.hidden_units)),
            np.zeros(self.hidden_units),
            rng.normal(0.0, output_scale, (self.hidden_units, self.n_classes)),
            np.zeros(self.n_classes),
        )

    def _hidden(self, params: Params, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pre_activation = features @ params[0] + params[1]
        if self.activation == "relu":
            return pre_activation, np.maximum(pre_activation, 0.0)
        return pre_activation, np.tanh(pre_activation)

    def logits(self, params: Params, features: np.ndarray) -> np.ndarray:
        _, hidden = self._hidden(params, features)
        return hidden @ params[2] + params[3]

    def gradient_factors(self, params, features, labels):
        pre_activation, hidden = self._hidden(params, features)
        residual = softmax_residual(hidden @ params[2] + params[3], labels)
        if self.activation == "relu":
            derivative = (pre_activation > 0.0).astype(features.dtype)
        else:
            derivative = 1.0 - hidden * hidden  # tanh' = 1 − tanh²
        hidden_backprop = (residual @ params[2].T) * derivative  # backpropagation, chain rule
        return [(features, hidden_backprop), (None, hidden_backprop),
                (hidden, residual), (None, residual)]


def build_model(n_features: int, n_classes: int, hidden_units: int = 0,
                activation: str = "tanh") -> SoftmaxModel:
    """Logistic regression when ``hidden_units`` is 0, else a one-hidden-layer MLP."""
    if hidden_units == 0:
        return LogisticRegression(n_features, n_classes)
    return MultilayerPerceptron(n_features, n_classes, hidden_units, activation)
