"""PyTorch: one era-neutral model (model.py) and trainer (trainer.py), written with what PyTorch 0.4.1 and today's
PyTorch both have, and two thin era adapters over them: current.py (today's PyTorch: its LSTM's packing, channels_last,
the data-parallel hook) and paper.py (PyTorch 0.4.1: its LSTM's sorted packing, int64 ids).

What each can do, declared once (bench/frameworks/capabilities.py). The paper-era module serves every protocol and
layer type (0.4.1 has every module they need); it has the autotuning and recurrent-kernel switches but not the
layout one (channels_last memory arrived in PyTorch 1.5). Its collective module is bench/collectives/pytorch.py.
"""

from bench import switches
from bench.frameworks.capabilities import Capabilities, current_era, paper_era

CAPABILITIES = Capabilities(
    package="torch",
    imports=("torch",),
    eras={
        # Every switch is read by the modules themselves (switches.value()): no library variable.
        "current": current_era(switches={switches.AUTOTUNE: {}, switches.RNN_KERNEL: {}, switches.LAYOUT: {}},
                               data_parallel=True, collective=True),
        "paper": paper_era(switches={switches.AUTOTUNE: {}, switches.RNN_KERNEL: {}}),
    },
)
