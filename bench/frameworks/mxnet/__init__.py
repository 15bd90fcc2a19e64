"""MXNet: blocks.py (the Gluon model) and trainer.py (the Trainer protocol), written with the Gluon API MXNet 1.3.0
and today's MXNet share, and two thin era adapters: current.py (today's MXNet Gluon) and paper.py (MXNet 1.3.0).
library.py imports MXNet once the run's threads are pinned.

What each era can do, declared once (bench/frameworks/capabilities.py). The paper era serves every protocol, layer
type and switch the current one does: MXNet 1.3.0 has gluon.rnn.GRU and GRUCell, contrib.foreach, BatchNorm, LRN,
count_include_pad, bias-free Conv2D and MXNET_CUDNN_AUTOTUNE_DEFAULT.
"""

from bench import switches
from bench.frameworks.capabilities import Capabilities, current_era, paper_era

# Both eras' MXNet read the same variable; rnn_kernel is read by blocks.py (switches.value()).
SWITCHES = {
    switches.AUTOTUNE: switches.library_variable("MXNET_CUDNN_AUTOTUNE_DEFAULT", "on", "off"),
    switches.RNN_KERNEL: {},
}

CAPABILITIES = Capabilities(
    package="mxnet",
    imports=("mxnet",),
    eras={
        "current": current_era(switches=SWITCHES),
        "paper": paper_era(switches=SWITCHES),
    },
)
