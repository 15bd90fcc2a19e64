"""Paper-era framework modules: the versions a study used (DLBench Table 2), on CPython 3.6.

Each is written with the APIs of its version (TensorFlow 1.11 graph mode, Keras 2.2.4, PyTorch
0.4.1, MXNet 1.3.0 Gluon, Chainer 4.5.0, Theano 1.0.2) and keeps the same contract as the
current-era modules (bench/frameworks/__init__.py). They are payload core: CPython 3.6 code
(images/compat.py), NumPy 1.14-era APIs, and imports of their own framework only.
"""
