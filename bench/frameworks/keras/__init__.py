"""Keras: current.py (Keras 3 on TensorFlow; current_optimizers.py, shared with TensorFlow's current module) and
paper.py (Keras 2.2.4 on TensorFlow 1.11).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
"""

from bench import switches
from bench.frameworks import tensorflow
from bench.frameworks.capabilities import PAPER_ERA, Capabilities, current_era

CAPABILITIES = Capabilities(
    package="keras",
    imports=("keras", "tensorflow", "theano"),
    eras={
        # Keras 3 runs on TensorFlow (current.py sets KERAS_BACKEND=tensorflow): TensorFlow's switches and BLAS.
        "current": current_era(switches={switches.AUTOTUNE: tensorflow.AUTOTUNE, switches.RNN_KERNEL: {}},
                               blas=tensorflow.BLAS),
        "paper": PAPER_ERA,
    },
)
