"""TensorFlow: current.py (TensorFlow 2 with its own training loop; its model in current_layers.py, its LSTM in
current_lstm.py) and paper.py (TensorFlow 1.11, graph mode; its graph in paper_layers.py).

What each can do, declared once (bench/frameworks/capabilities.py). The paper-era module serves every protocol and
layer type too, and the same switches: cuDNN autotuning is TF_CUDNN_USE_AUTOTUNE in TensorFlow 1.11 as today, and
rnn_kernel picks tf.keras.layers.CuDNNGRU or GRU's loop on a GPU (a CPU has no fused GRU of cuDNN's form in either
era). It has no layout switch, as the current module has none (TensorFlow 1.11's CPU conv and pool kernels refuse
NCHW anyway).
"""

from bench import blas_backends, switches
from bench.frameworks.capabilities import Capabilities, current_era, paper_era

# TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, when it is imported: oneDNN (its default on x86) or Eigen's
# contraction kernels (today's form of Wu et al.'s Eigen build). Keras runs on it and switches the same way.
BLAS = {
    "onednn": blas_backends.Backend({blas_backends.ONEDNN_VAR: "1"}, None, None, "", "tensorflow"),
    "eigen": blas_backends.Backend({blas_backends.ONEDNN_VAR: "0"}, None, None, "", "tensorflow"),
}
# cuDNN autotuning through TensorFlow's own variable, read at import (Keras on TensorFlow too).
AUTOTUNE = switches.library_variable("TF_CUDNN_USE_AUTOTUNE", "on", "off")
# Both eras' switches: autotuning through that variable, the gru's kernel read by the module (switches.value()).
SWITCHES = {switches.AUTOTUNE: AUTOTUNE, switches.RNN_KERNEL: {}}

CAPABILITIES = Capabilities(
    package="tensorflow",
    imports=("tensorflow",),
    eras={
        "current": current_era(switches=SWITCHES, blas=BLAS),
        "paper": paper_era(switches=SWITCHES),
    },
)
