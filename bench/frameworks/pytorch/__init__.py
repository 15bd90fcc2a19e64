"""PyTorch: current.py (today's PyTorch, with the data-parallel hook) and paper.py (PyTorch 0.4.1).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
Its collective module is bench/collectives/pytorch.py.
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
    package="torch",
    imports=("torch",),
    eras={
        # Every switch is read by current.py itself (switches.value()): no library variable.
        "current": Era(protocols=ALL_PROTOCOLS, layer_types=ALL_LAYER_TYPES, bias_free_conv=True,
                       switches={switches.AUTOTUNE: {}, switches.RNN_KERNEL: {}, switches.LAYOUT: {}}, blas={},
                       data_parallel=True, collective=True),
        "paper": Era(protocols=EPOCHS_ONLY, layer_types=PAPER_LAYER_TYPES, bias_free_conv=False, switches={},
                     blas={}, data_parallel=False, collective=False),
    },
)
