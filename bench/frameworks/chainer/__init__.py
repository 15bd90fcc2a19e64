"""Chainer: current.py (Chainer 7 on NumPy, CuPy on a GPU) and paper.py (Chainer 4.5.0).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
"""

from bench import switches
from bench.frameworks.capabilities import (
    ALL_LAYER_TYPES,
    ALL_PROTOCOLS,
    EPOCHS_ONLY,
    PAPER_LAYER_TYPES,
    Capabilities,
    Era,
)

CAPABILITIES = Capabilities(
    package="chainer",
    imports=("chainer", "cupy"),
    eras={
        "current": Era(protocols=ALL_PROTOCOLS, layer_types=ALL_LAYER_TYPES, bias_free_conv=True,
                       switches={switches.AUTOTUNE: {}}, blas={}, data_parallel=False, collective=False),
        "paper": Era(protocols=EPOCHS_ONLY, layer_types=PAPER_LAYER_TYPES, bias_free_conv=False, switches={},
                     blas={}, data_parallel=False, collective=False),
    },
)
