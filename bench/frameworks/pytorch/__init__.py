"""PyTorch: current.py (today's PyTorch, with the data-parallel hook) and paper.py (PyTorch 0.4.1).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
Its collective module is bench/collectives/pytorch.py.
"""

from bench import switches
from bench.frameworks.capabilities import PAPER_ERA, Capabilities, current_era

CAPABILITIES = Capabilities(
    package="torch",
    imports=("torch",),
    eras={
        # Every switch is read by current.py itself (switches.value()): no library variable.
        "current": current_era(switches={switches.AUTOTUNE: {}, switches.RNN_KERNEL: {}, switches.LAYOUT: {}},
                               data_parallel=True, collective=True),
        "paper": PAPER_ERA,
    },
)
