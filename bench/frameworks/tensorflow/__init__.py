"""TensorFlow: current.py (TensorFlow 2 with its own training loop) and paper.py (TensorFlow 1.11, graph mode).

What each can do, declared once (bench/frameworks/capabilities.py); the paper-era module trains epochs only.
"""

from bench import blas_backends, switches
from bench.frameworks.capabilities import PAPER_ERA, Capabilities, current_era

# TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, when it is imported: oneDNN (its default on x86) or Eigen's
# contraction kernels (today's form of Wu et al.'s Eigen build). Keras runs on it and switches the same way.
BLAS = {
    "onednn": blas_backends.Backend({blas_backends.ONEDNN_VAR: "1"}, None, None, "", "tensorflow"),
    "eigen": blas_backends.Backend({blas_backends.ONEDNN_VAR: "0"}, None, None, "", "tensorflow"),
}
# cuDNN autotuning through TensorFlow's own variable, read at import (Keras on TensorFlow too).
AUTOTUNE = switches.library_variable("TF_CUDNN_USE_AUTOTUNE", "on", "off")

CAPABILITIES = Capabilities(
    package="tensorflow",
    imports=("tensorflow",),
    eras={
        "current": current_era(switches={switches.AUTOTUNE: AUTOTUNE, switches.RNN_KERNEL: {}}, blas=BLAS),
        "paper": PAPER_ERA,
    },
)
