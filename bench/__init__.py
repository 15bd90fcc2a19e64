"""dlrepro's in-image payload: the only code that enters an image.

The entrypoint (`python -m bench run`) reads one run request and writes one run folder; beside it
the monitor, the artifact schema, the prepared-data reader, thread pinning, the GPU probe, the
model plan and the framework modules (bench/frameworks/<framework>/<era>.py). Everything here except the
current-era framework modules is CPython 3.6 code using only the standard library, NumPy >= 1.14,
psutil and nvidia-ml-py (images/compat.py checks it), so paper-era images run it too.
"""

__version__ = "0.2.0"
