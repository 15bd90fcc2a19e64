"""Keras: current.py (Keras 3 on TensorFlow; current_optimizers.py, shared with TensorFlow's current module) and
paper.py (Keras 2.2.4 on TensorFlow 1.11).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
"""

from bench import switches
from bench.frameworks import tensorflow
from bench.frameworks.capabilities import (
    ALL_LAYER_TYPES,
    ALL_PROTOCOLS,
    EPOCHS_ONLY,
    PAPER_LAYER_TYPES,
    Capabilities,
    Era,
)

CAPABILITIES = Capabilities(
    package="keras",
    imports=("keras", "tensorflow", "theano"),
    eras={
        # Keras 3 runs on TensorFlow (current.py sets KERAS_BACKEND=tensorflow): TensorFlow's switches and BLAS.
        "current": Era(protocols=ALL_PROTOCOLS, layer_types=ALL_LAYER_TYPES, bias_free_conv=True,
                       switches={switches.AUTOTUNE: tensorflow.AUTOTUNE, switches.RNN_KERNEL: {}},
                       blas=tensorflow.BLAS, data_parallel=False, collective=False),
        "paper": Era(protocols=EPOCHS_ONLY, layer_types=PAPER_LAYER_TYPES, bias_free_conv=False, switches={},
                     blas={}, data_parallel=False, collective=False),
    },
)
