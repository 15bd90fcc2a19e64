"""Chainer: current.py (Chainer 7 on NumPy, CuPy on a GPU) and paper.py (Chainer 4.5.0).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
"""

from bench import switches
from bench.frameworks.capabilities import PAPER_ERA, Capabilities, current_era

CAPABILITIES = Capabilities(
    package="chainer",
    imports=("chainer", "cupy"),
    eras={
        "current": current_era(switches={switches.AUTOTUNE: {}}),
        "paper": PAPER_ERA,
    },
)
