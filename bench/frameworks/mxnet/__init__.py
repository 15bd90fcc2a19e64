"""MXNet: current.py (today's MXNet Gluon) and paper.py (MXNet 1.3.0 Gluon).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
"""

from bench import switches
from bench.frameworks.capabilities import PAPER_ERA, Capabilities, current_era

CAPABILITIES = Capabilities(
    package="mxnet",
    imports=("mxnet",),
    eras={
        "current": current_era(switches={
            switches.AUTOTUNE: switches.library_variable("MXNET_CUDNN_AUTOTUNE_DEFAULT", "on", "off"),
            switches.RNN_KERNEL: {},
        }),
        "paper": PAPER_ERA,
    },
)
