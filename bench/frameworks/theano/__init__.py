"""Theano: one era-neutral implementation (graph.py: the model's graph; optimizers.py; trainer.py: the Trainer;
runtime.py: device, toolchain, threads; flags.py: THEANO_FLAGS before Theano loads) and two thin era modules,
current.py (Theano 1.0.5, CPython 3.11) and paper.py (Theano 1.0.2, CPython 3.6), holding what differs.

What each can do, declared once (bench/frameworks/capabilities.py): both eras build every layer type and serve
every protocol (Theano 1.0.2 has every op the graph uses); only the current era can choose its BLAS.
"""

from bench import blas_backends
from bench.frameworks.capabilities import Capabilities, current_era, paper_era

# The BLAS its compiled modules link (THEANO_FLAGS blas.ldflags, read when Theano is imported): bench/blas_backends.py
# says how each is found and linked.
BLAS = {
    "openblas": blas_backends.Backend({}, "-lopenblas", "openblas", "install Debian's libopenblas-dev", "theano"),
    "reference": blas_backends.Backend({}, f"-L{blas_backends.REFERENCE_BLAS_DIR} -lblas",
                                       blas_backends.REFERENCE_BLAS_DIR + "/libblas.so",
                                       "install Debian's libblas-dev", "theano"),
    "mkl": blas_backends.Backend({"MKL_THREADING_LAYER": "GNU"}, blas_backends.MKL_MARK, blas_backends.MKL_RT_GLOB,
                                 "add mkl to images/theano/current/requirements.in, run make lock and rebuild the "
                                 "theano environment (or sweep blas over openblas and reference)", "theano"),
}

CAPABILITIES = Capabilities(
    package="theano",
    imports=("theano", "scipy"),
    eras={
        "current": current_era(blas=BLAS),
        "paper": paper_era(),
    },
)
