"""MXNet: current.py (today's MXNet Gluon) and paper.py (MXNet 1.3.0 Gluon).

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
    package="mxnet",
    imports=("mxnet",),
    eras={
        "current": Era(protocols=ALL_PROTOCOLS, layer_types=ALL_LAYER_TYPES, bias_free_conv=True,
                       switches={switches.AUTOTUNE: switches.library_variable("MXNET_CUDNN_AUTOTUNE_DEFAULT", "on",
                                                                              "off"),
                                 switches.RNN_KERNEL: {}},
                       blas={}, data_parallel=False, collective=False),
        "paper": Era(protocols=EPOCHS_ONLY, layer_types=PAPER_LAYER_TYPES, bias_free_conv=False, switches={},
                     blas={}, data_parallel=False, collective=False),
    },
)
