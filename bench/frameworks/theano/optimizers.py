"""The optimizers, Keras' formulas written as Theano shared-variable updates: SGD (with Keras' momentum), Keras'
Adam and Keras 2's Adadelta, each with decoupled weight decay applied first (common.WEIGHT_DECAY_RULE).

Era-neutral, CPython 3.6-clean; imported after THEANO_FLAGS is set (flags.configure).
"""

from typing import Any, Dict, List, Tuple

import numpy as np
import theano
import theano.tensor as T

from bench.frameworks.theano.graph import FLOATX, floatx

Updates = List[Tuple[Any, Any]]


def training_updates(params: List[Any], loss: Any, opt: Dict[str, Any]) -> Updates:
    """The updates of `opt` (common.optimizer_settings) for `params` on `loss`: w -= lr * weight_decay * w first
    (the factor `decay`), then the optimizer's step from the gradient at the old w."""
    decay = floatx(1.0 - opt["lr"] * opt["weight_decay"])
    return OPTIMIZERS[opt["name"]](params, T.grad(loss, params), opt, decay)


def _slot(p: Any, what: str) -> Any:
    """A zero-initialized optimizer state shaped like parameter p."""
    return theano.shared(np.zeros(p.get_value(borrow=True).shape, dtype=FLOATX), name=f"{p.name}.{what}")


def sgd(params: List[Any], grads: List[Any], opt: Dict[str, Any], decay: np.ndarray) -> Updates:
    """SGD, with momentum as Keras: v = momentum v - lr g; w += v."""
    lr, momentum = floatx(opt["lr"]), floatx(opt["momentum"])
    updates = []  # type: Updates
    for p, g in zip(params, grads):
        if opt["momentum"]:
            v = _slot(p, "velocity")
            v_new = momentum * v - lr * g
            updates += [(v, v_new), (p, p * decay + v_new)]
        else:
            updates.append((p, p * decay - lr * g))
    return updates


def adam(params: List[Any], grads: List[Any], opt: Dict[str, Any], decay: np.ndarray) -> Updates:
    """Keras' Adam: alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t); w -= alpha * m / (sqrt(v) + eps)."""
    lr, b1, b2, eps = (floatx(opt[k]) for k in ("lr", "beta1", "beta2", "epsilon"))
    one = floatx(1.0)
    t = theano.shared(floatx(0.0), name="adam.t")
    t_new = t + one
    alpha = lr * T.sqrt(one - b2**t_new) / (one - b1**t_new)
    updates = [(t, t_new)]  # type: Updates
    for p, g in zip(params, grads):
        m, v = _slot(p, "m"), _slot(p, "v")
        m_new = b1 * m + (one - b1) * g
        v_new = b2 * v + (one - b2) * T.sqr(g)
        updates += [(m, m_new), (v, v_new), (p, p * decay - alpha * m_new / (T.sqrt(v_new) + eps))]
    return updates


def adadelta(params: List[Any], grads: List[Any], opt: Dict[str, Any], decay: np.ndarray) -> Updates:
    """Keras 2's Adadelta: a = rho a + (1 - rho) g^2; step = g sqrt(d + eps) / sqrt(a + eps);
    d = rho d + (1 - rho) step^2; w -= lr step."""
    lr, rho, eps = (floatx(opt[k]) for k in ("lr", "rho", "epsilon"))
    one = floatx(1.0)
    updates = []  # type: Updates
    for p, g in zip(params, grads):
        a, d = _slot(p, "accumulator"), _slot(p, "delta_accumulator")
        a_new = rho * a + (one - rho) * T.sqr(g)
        step = g * T.sqrt(d + eps) / T.sqrt(a_new + eps)
        d_new = rho * d + (one - rho) * T.sqr(step)
        updates += [(a, a_new), (d, d_new), (p, p * decay - lr * step)]
    return updates


OPTIMIZERS = {"sgd": sgd, "adam": adam, "adadelta": adadelta}
