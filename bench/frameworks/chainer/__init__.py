"""Chainer: one era-neutral model (layers.py) and trainer (trainer.py), written with the API Chainer 4.5.0 and
Chainer 7 share, and two thin era adapters: current.py (Chainer 7 on NumPy, CuPy on a GPU) and paper.py
(Chainer 4.5.0), holding only the device handling, OpenBLAS' threads and the versions each reports.

What each can do, declared once (bench/frameworks/capabilities.py): both eras the same, every protocol, layer
type and bias-free convolution, and the cuDNN autotuning switch (chainer.config.autotune exists in 4.5.0).
"""

from bench import switches
from bench.frameworks.capabilities import Capabilities, current_era, paper_era

_AUTOTUNE = {switches.AUTOTUNE: {}}  # read by the module itself (switches.value), no library variable

CAPABILITIES = Capabilities(
    package="chainer",
    imports=("chainer", "cupy"),
    eras={
        "current": current_era(switches=_AUTOTUNE),
        "paper": paper_era(switches=_AUTOTUNE),
    },
)
