"""Python 3.11 shims for paper-era packages, imported at interpreter start when this folder is on
PYTHONPATH (tests/bench/frameworks/paper/harness.py puts it there; no image ever carries it).

Theano 1.0.2 (and Keras 2.2.4 on it) was written for Python <= 3.7: it imports the collections ABCs
from `collections` (moved to collections.abc; the aliases were removed in 3.10), calls
`fractions.gcd` (removed in 3.9), and its compiled scan extension does not build against 3.11's
headers (scan then runs its Python loop; each step is still compiled C). Python 3.11 also means NumPy
>= 1.23 (the first with cp311 wheels), which reads a list of index arrays as one array index (the
non-tuple multidimensional indexing deprecated since 1.15): Theano 1.0.2's advanced (inc)subtensor
ops index that way, e.g. the one-hot targets of Keras' sparse cross-entropy, silently wrong or out of
bounds. Theano 1.0.5 passes a tuple; _fix_theano_advanced_indexing does the same for 1.0.2, applied
when theano.tensor.subtensor is first imported (THEANO_FLAGS must be read first, so not before).
"""

import collections
import collections.abc
import fractions
import importlib.abc
import importlib.machinery
import math
import sys

for _name in ("Callable", "Hashable", "Iterable", "Iterator", "Mapping", "MutableMapping", "MutableSequence",
              "MutableSet", "Sequence", "Set"):
    if not hasattr(collections, _name):
        setattr(collections, _name, getattr(collections.abc, _name))
if not hasattr(fractions, "gcd"):
    fractions.gcd = math.gcd
sys.modules.setdefault("theano.scan_module.scan_perform_ext", None)


class _TupleSlices(list):
    """An op's inputs whose slices are tuples: `inputs[1:]` as a NumPy multidimensional index."""

    def __getitem__(self, index):
        item = list.__getitem__(self, index)
        return tuple(item) if isinstance(index, slice) else item


def _tuple_indexing(perform):
    def perform_with_tuples(self, node, inputs, out):
        return perform(self, node, _TupleSlices(inputs), out)

    return perform_with_tuples


def _fix_theano_advanced_indexing(subtensor):
    """Theano 1.0.2's AdvancedSubtensor/AdvancedIncSubtensor perform(): index with tuples, as 1.0.5 does."""
    for name in ("BaseAdvancedSubtensor", "BaseAdvancedIncSubtensor"):
        cls = getattr(subtensor, name, None)
        if cls is not None:
            cls.perform = _tuple_indexing(cls.perform)


class _FixAfterImport(importlib.abc.MetaPathFinder):
    """Applies a fix to a module right after its first import (module name -> fix(module))."""

    def __init__(self, fixes):
        self.fixes = fixes

    def find_spec(self, name, path=None, target=None):
        fix = self.fixes.get(name)
        spec = importlib.machinery.PathFinder.find_spec(name, path) if fix else None
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_fix(module):
            exec_module(module)
            fix(module)

        spec.loader.exec_module = exec_and_fix
        return spec


sys.meta_path.insert(0, _FixAfterImport({"theano.tensor.subtensor": _fix_theano_advanced_indexing}))
