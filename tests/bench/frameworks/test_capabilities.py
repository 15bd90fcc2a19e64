"""Each framework package's capability declaration (bench/frameworks/<framework>/__init__.py) holds for the era
modules it describes, read statically from their source (no framework is imported: the paper-era ones cannot be
on this Python), and the features derive their framework lists from the declarations."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from bench import blas_backends, collectives, dataparallel, frameworks, inference, iterations, modelplan, switches
from bench.errors import UsageError
from bench.frameworks import capabilities
from bench.frameworks.capabilities import PROTOCOL_METHODS, Capabilities, Era, Feature
from images import compat
from tests.declarations import declare

HERE = Path(frameworks.__file__).parent
MODULES = [(fw, era) for fw in frameworks.discovered() for era in frameworks.ERAS if (HERE / fw / f"{era}.py").exists()]
# How a module reads a switch it has no library variable for (switches.value(switches.<AXIS>), or Keras' helper).
SWITCH_READS = {switches.AUTOTUNE: ("AUTOTUNE",), switches.RNN_KERNEL: ("RNN_KERNEL", "keras_use_cudnn"),
                switches.LAYOUT: ("LAYOUT",)}


def _siblings(fw: str, tree: ast.Module) -> set[str]:
    """The modules of the framework's own package a module imports (`from bench.frameworks.<fw> import graph`,
    `from bench.frameworks.<fw>.graph import X`, `from . import graph`, `from .graph import X`)."""
    package, out = f"bench.frameworks.{fw}", set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if node.level == 0 and module.startswith(package + "."):
            out.add(module[len(package) + 1:].split(".")[0])
        elif (node.level == 0 and module == package) or (node.level == 1 and not module):
            out |= {alias.name for alias in node.names}
        elif node.level == 1:
            out.add(module.split(".")[0])
    return {name for name in out if (HERE / fw / f"{name}.py").exists()}


def _module_files(fw: str, era: str) -> list[Path]:
    """The era module and every module of its package it imports, directly or through another (the era-neutral
    modules it shares with the other era, its own <era>_*.py helpers)."""
    seen, todo = [], [era]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        todo.extend(sorted(_siblings(fw, ast.parse((HERE / fw / f"{name}.py").read_text()))))
    return [HERE / fw / f"{name}.py" for name in seen]


def _source(fw: str, era: str) -> str:
    return "\n".join(path.read_text() for path in _module_files(fw, era))


def _tree(fw: str, era: str) -> ast.Module:
    """The era module and the package modules it imports, as one module (what the era really runs)."""
    return ast.Module(body=[node for path in _module_files(fw, era) for node in ast.parse(path.read_text()).body],
                      type_ignores=[])


def _trainer_methods(tree: ast.Module) -> set[str]:
    """The methods of the class make_trainer returns (its return annotation), its base classes' included."""
    make = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make_trainer")
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def methods(name: str) -> set[str]:
        cls = classes[name.split(".")[-1].strip("'\"")]
        own = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
        bases = [ast.unparse(b).split(".")[-1] for b in cls.bases]
        return own.union(*(methods(b) for b in bases if b in classes))

    # A union names the classifier's trainer and bench/detection's DetectionTrainer (the detector's, not a module
    # class: its protocols are the epochs alone, tests/bench/detection/): the module's own class is checked.
    named = [name for name in re.findall(r"\w+", ast.unparse(make.returns)) if name in classes]
    assert len(named) == 1, ast.unparse(make.returns)
    return methods(named[0])


def _compared_strings(tree: ast.Module) -> set[str]:
    """The string constants a module compares something with (`kind == "lstm"`, `kind in ("a", "b")`)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                out |= {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
    return out


def _switches_read(tree: ast.Module) -> set[str]:
    names = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
             and n.value.id == "switches"}
    return {axis for axis, reads in SWITCH_READS.items() if names & set(reads)}


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - compat.THIRD_PARTY - {"bench", "threadpoolctl"}


def test_the_frameworks_are_the_packages_and_each_declares_the_eras_it_has_modules_for():
    assert frameworks.discovered() == ("chainer", "keras", "mxnet", "pytorch", "tensorflow", "theano")
    for fw in frameworks.discovered():
        decl = frameworks.declaration(fw)
        assert isinstance(decl, Capabilities) and all(isinstance(e, Era) for e in decl.eras.values()), fw
        assert sorted(decl.eras) == sorted(e for e in frameworks.ERAS if (HERE / fw / f"{e}.py").exists()), fw
        assert decl.package in decl.imports, fw
    assert frameworks.known_frameworks("paper") == list(frameworks.discovered())


@pytest.mark.parametrize(("fw", "era"), MODULES)
def test_a_declared_protocol_has_its_trainer_method_and_an_undeclared_one_has_none(fw, era):
    can = capabilities.era_of(fw, era)
    methods = _trainer_methods(_tree(fw, era))
    assert {"train_epoch", "evaluate", "synchronize", "info"} <= methods
    for protocol, method in PROTOCOL_METHODS.items():
        assert (method in methods) == (protocol in can.protocols), (fw, era, method)


@pytest.mark.parametrize(("fw", "era"), MODULES)
def test_the_declared_layer_types_are_what_the_module_translates(fw, era):
    can, tree = capabilities.era_of(fw, era), _tree(fw, era)
    source = _source(fw, era)
    named = _compared_strings(tree).union(*(getattr(modelplan, group) for group in ("POOLS", "WINDOWED")
                                            if f"modelplan.{group}" in source))
    # A bare activation layer is any layer's `activation` option alone, which every module applies where it reads
    # that option: no layer type of its own to look for.
    declared = set(can.layer_types) - {"activation"}
    assert set(can.layer_types) <= set(modelplan.LAYER_KEYS)
    assert declared <= named, (fw, era, sorted(declared - named))
    others = set(modelplan.LAYER_KEYS) - set(can.layer_types) - {"activation"}
    assert not others & named, (fw, era, sorted(others & named))
    if set(can.layer_types) != set(modelplan.LAYER_KEYS) or not can.bias_free_conv:  # it refuses the rest itself
        assert "modelplan.require(self.spec_model, PAPER.layer_types, f\"{NAME} (paper era)\", " \
               "PAPER.bias_free_conv)" in source and f'PAPER = CAPABILITIES.eras["{era}"]' in source


@pytest.mark.parametrize(("fw", "era"), MODULES)
def test_the_declared_switches_are_read_by_the_module_or_set_through_its_library(fw, era):
    can, read = capabilities.era_of(fw, era), _switches_read(_tree(fw, era))
    assert set(can.switches) <= set(switches.SWITCHES)
    for axis, variables in can.switches.items():
        assert variables or axis in read, (fw, era, axis)  # no library variable: the module reads the kit's own
        assert set(variables) <= set(switches.SWITCHES[axis].values)
    assert read <= set(can.switches), (fw, era, sorted(read - set(can.switches)))


@pytest.mark.parametrize(("fw", "era"), MODULES)
def test_data_parallel_collectives_blas_and_imports_are_as_declared(fw, era):
    can, decl, tree = capabilities.era_of(fw, era), frameworks.declaration(fw), _tree(fw, era)
    make = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make_trainer")
    assert ("parallel" in [a.arg for a in make.args.args]) == can.data_parallel, (fw, era)
    if can.collective:
        assert (HERE.parent / "collectives" / f"{fw}.py").exists()
    for backend in can.blas.values():
        assert isinstance(backend, blas_backends.Backend) and backend.imported in decl.imports, (fw, era)
    assert _imports(tree) <= set(decl.imports), (fw, era)


def test_every_collective_module_is_declared():
    found = {p.stem for p in (HERE.parent / "collectives").glob("*.py") if p.stem != "__init__"}
    assert found == set(collectives.SUPPORT.frameworks())


def test_the_features_read_their_frameworks_off_the_declarations(monkeypatch):
    everyone = frameworks.discovered()
    for era in frameworks.ERAS:  # the 2018 APIs have step() and a forward pass too (issue 29)
        assert iterations.SUPPORT.frameworks(era) == inference.SUPPORT.frameworks(era) == everyone
    assert dataparallel.SUPPORT.frameworks() == collectives.SUPPORT.frameworks() == ("pytorch",)
    assert blas_backends.FEATURE.frameworks() == ("keras", "tensorflow", "theano")
    assert blas_backends.FEATURE.eras() == ("current",)  # a paper image links one BLAS
    assert switches.feature(switches.LAYOUT).frameworks() == ("pytorch",)
    assert switches.feature(switches.LAYOUT).eras() == ("current",)  # PyTorch 0.4.1 has no channels_last
    assert switches.feature(switches.AUTOTUNE).frameworks() == ("chainer", "keras", "mxnet", "pytorch", "tensorflow")
    assert switches.feature(switches.RNN_KERNEL).eras() == ("current", "paper")
    assert iterations.refusal("mxnet", "paper") is None
    declare(monkeypatch, "mxnet", "paper")  # a 2018 module training epochs only
    assert iterations.refusal("mxnet", "paper") == "the iterations protocol's step() is written for the current era, " \
                                                   "not paper"


# A toy feature: pytorch's current module has it, nothing else does.
WIDGET = Feature(lambda framework, can: framework == "pytorch" and can.data_parallel, "has no widget (bench/widget.py)",
                 "widgets are written", "widget runs")


@pytest.mark.parametrize(("framework", "era", "why", "where"), [
    ("pytorch", "current", None, None),
    ("mxnet", "current", "mxnet has no widget (bench/widget.py)", "FRAMEWORKS=pytorch and ERA=current"),
    ("pytorch", "paper", "widgets are written for the current era, not paper", "ERA=current"),
])
def test_a_feature_refuses_other_frameworks_and_eras_in_one_line(framework, era, why, where):
    assert WIDGET.refusal(framework, era) == why
    assert WIDGET.plan_refusal(framework, era) == (why and f"{why}; widget runs go with {where}")
    if why is None:
        WIDGET.require(framework, era, "it cannot widget", "run it")
        return
    with pytest.raises(UsageError) as caught:
        WIDGET.require(framework, era, "it cannot widget", "run it")
    assert caught.value.problem == f"{why}: it cannot widget"
    assert caught.value.fix == f"run it with {where}"


def test_a_module_belongs_to_the_era_its_name_opens_with():
    assert [frameworks.module_era(s) for s in ("current", "current_optimizers", "paper", "__init__", "common")] == [
        "current", "current", "paper", None, None]
