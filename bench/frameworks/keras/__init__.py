"""Keras: current.py (Keras 3 on TensorFlow; current_optimizers.py, shared with TensorFlow's current module) and
paper.py (Keras 2.2.4 on TensorFlow 1.11).

What each can do, declared once (bench/frameworks/capabilities.py). The paper-era module serves every protocol and
layer type (Keras 2.2.4 has train_on_batch, predict_on_batch and every layer, lrn through a Lambda over TensorFlow's);
its switches are TensorFlow's autotuning variable (TensorFlow 1.11 reads it too) and the recurrent kernel, CuDNNGRU or
GRU on a GPU (Keras 2.2.4 has no fused GRU kernel for a CPU).
"""

from bench import switches
from bench.frameworks import tensorflow
from bench.frameworks.capabilities import Capabilities, current_era, paper_era

# Both eras' modules read the rnn_kernel switch themselves; cuDNN autotuning is TensorFlow's variable.
SWITCHES = {switches.AUTOTUNE: tensorflow.AUTOTUNE, switches.RNN_KERNEL: {}}

CAPABILITIES = Capabilities(
    package="keras",
    imports=("keras", "tensorflow", "theano"),
    eras={
        # Keras 3 runs on TensorFlow (current.py sets KERAS_BACKEND=tensorflow): TensorFlow's switches and BLAS.
        "current": current_era(switches=SWITCHES, blas=tensorflow.BLAS),
        "paper": paper_era(switches=SWITCHES),
    },
)
