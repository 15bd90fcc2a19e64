"""The spec's optimizer as a Keras 3 optimizer: shared by the keras and tensorflow modules.

Both drive Keras 3's optimizers (the tensorflow module through tf.keras), so one translation keeps
their hyper-parameters identical. Keras applies weight_decay decoupled (w -= lr * wd * w before
each update): the rule every framework module follows (common.WEIGHT_DECAY_RULE).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


def make_optimizer(optimizers: ModuleType, opt: dict[str, Any]) -> Any:
    """The optimizer the spec's resolved settings name; `optimizers` is keras.optimizers (or
    tf.keras.optimizers), passed in so this module imports no framework."""
    wd = opt["weight_decay"] or None
    if opt["name"] == "sgd":
        return optimizers.SGD(learning_rate=opt["lr"], momentum=opt["momentum"], weight_decay=wd)
    if opt["name"] == "adadelta":
        return optimizers.Adadelta(learning_rate=opt["lr"], rho=opt["rho"], epsilon=opt["epsilon"], weight_decay=wd)
    return optimizers.Adam(
        learning_rate=opt["lr"], beta_1=opt["beta1"], beta_2=opt["beta2"], epsilon=opt["epsilon"], weight_decay=wd
    )
