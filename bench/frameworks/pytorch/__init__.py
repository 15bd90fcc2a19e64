"""PyTorch: current.py (today's PyTorch, with the data-parallel hook; its model's modules in current_model.py) and
paper.py (PyTorch 0.4.1).

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
