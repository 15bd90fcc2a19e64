"""What a framework's modules can do, declared once per framework (bench/frameworks/<framework>/__init__.py:
CAPABILITIES) and read by every feature that used to keep its own list of frameworks: the measurement
protocols (bench/iterations.py, bench/inference.py), the layer types (the paper-era modules' require() and
campaign.plan), the performance switches (bench/switches.py), the BLAS backends (bench/blas_backends.py),
data-parallel training (bench/dataparallel.py), collectives (bench/collectives) and the packages a module may
import (images/compat.py).

A declaration states what its era module really implements; tests/bench/frameworks/test_capabilities.py reads
each module's source to hold it to that. The planner refuses, in one line per framework, a run its
framework/era cannot do (Feature, unable()), so no run is planned that can only fail inside its container.

Standard library only, CPython 3.6-clean; it imports no framework.
"""

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from bench import measurement, modelplan
from bench.errors import UsageError

# Every layer type bench/modelplan.py plans: what a module that translates them all declares.
ALL_LAYER_TYPES = tuple(modelplan.LAYER_KEYS)
ALL_PROTOCOLS = measurement.PROTOCOLS
# The Trainer method each timed protocol needs beside train_epoch() (bench.frameworks.Trainer).
PROTOCOL_METHODS = {measurement.ITERATIONS: "step", measurement.INFERENCE: "infer"}


class Era(NamedTuple):
    """What one era's module of a framework can do."""

    protocols: Tuple[str, ...]  # the measurement protocols its trainer serves (bench/measurement.py)
    layer_types: Tuple[str, ...]  # the modelplan layer types it translates
    bias_free_conv: bool  # whether it translates conv2d with bias = false
    # performance switch axis (bench/switches.py) -> {value: library variables it sets}; {}: the module reads the
    # kit's own variable (switches.value())
    switches: Dict[str, Dict[str, Dict[str, str]]]
    blas: Dict[str, Any]  # BLAS backend -> bench.blas_backends.Backend, the first its default; {}: cannot switch
    data_parallel: bool  # make_trainer(..., parallel=...) trains over ranks (bench/dataparallel.py)
    collective: bool  # bench/collectives/<framework>.py times its collectives


def current_era(switches: Optional[Dict[str, Dict[str, Dict[str, str]]]] = None, blas: Optional[Dict[str, Any]] = None,
                data_parallel: bool = False, collective: bool = False) -> Era:
    """A current-era module's record: every protocol and layer type (all six translate them today), and what is its
    own: its switches, its BLAS backends, data-parallel training and collectives."""
    return Era(ALL_PROTOCOLS, ALL_LAYER_TYPES, True, dict(switches or {}), dict(blas or {}), data_parallel, collective)


def paper_era(switches: Optional[Dict[str, Dict[str, Dict[str, str]]]] = None,
              protocols: Tuple[str, ...] = ALL_PROTOCOLS, layer_types: Tuple[str, ...] = ALL_LAYER_TYPES,
              bias_free_conv: bool = True) -> Era:
    """A paper-era (2018) module's record: by default every protocol and layer type (all six 2018 APIs have what
    they need), its switches; no BLAS choice, one process (a paper image links one BLAS and runs no collectives).
    A module whose version lacks a protocol or a layer declares what it has (`protocols`, `layer_types`)."""
    return Era(tuple(protocols), tuple(layer_types), bias_free_conv, dict(switches or {}), {}, False, False)


class Capabilities(NamedTuple):
    """One framework's declaration: its packages and, per era it has a module for, what that module can do."""

    package: str  # the key of the module's versions() that is the framework's version
    imports: Tuple[str, ...]  # the top-level packages its modules may import beside the payload core's (compat.py)
    eras: Dict[str, Era]


def declaration(framework: str) -> Capabilities:
    """The framework's CAPABILITIES (bench/frameworks/<framework>/__init__.py)."""
    from bench import frameworks

    return frameworks.declaration(framework)


def era_of(framework: str, era: str) -> Optional[Era]:
    """What `framework`'s module of `era` can do; None when the framework has no module of that era."""
    return declaration(framework).eras.get(era)


def every() -> Dict[str, Capabilities]:
    """framework -> its declaration, for every framework package (found, not listed)."""
    from bench import frameworks

    return {name: frameworks.declaration(name) for name in frameworks.discovered()}


def eras() -> Tuple[str, ...]:
    """The eras in the order bench.frameworks.ERAS gives them."""
    from bench import frameworks

    return frameworks.ERAS


class Feature:
    """A capability some frameworks' modules have in some eras, derived from the declarations (`has`), and the
    one-line refusal for the others: `lacks` completes "<framework> ...", `written` opens "... for the <eras> era,
    not <era>", and `runs` names the feature's runs in the planner's line ("...; <runs> go with FRAMEWORKS=...").
    `has(framework, era_record)` reads the feature off a declaration's era record."""

    def __init__(self, has: Callable[[str, Era], bool], lacks: str, written: str, runs: str) -> None:
        self.has, self.lacks, self.written, self.runs = has, lacks, written, runs

    def frameworks(self, era: Optional[str] = None) -> Tuple[str, ...]:
        """The frameworks with the feature in `era` (None: in some era), sorted."""
        return tuple(sorted(fw for fw, decl in every().items()
                            if any(self.has(fw, e) for name, e in decl.eras.items() if era in (None, name))))

    def eras(self, framework: Optional[str] = None) -> Tuple[str, ...]:
        """The eras in which `framework` (None: some framework) has the feature, in ERAS order."""
        return tuple(era for era in eras() if self.frameworks(era) and (framework is None or framework in
                                                                         self.frameworks(era)))

    def refusal(self, framework: str, era: str) -> Optional[str]:
        """Why `framework` of `era` lacks the feature (None when it has it)."""
        has = self.eras(framework)
        if not has:
            return f"{framework} {self.lacks}"
        if era not in has:
            return f"{self.written} for the {' and '.join(has)} era, not {era}"
        return None

    def plan_refusal(self, framework: str, era: str) -> Optional[str]:
        """The planner's line for a run it leaves out: "<refusal>; <runs> go with [FRAMEWORKS=... and] ERA=..."
        (None when `framework` of `era` has the feature)."""
        why = self.refusal(framework, era)
        return why and f"{why}; {self.runs} go with {self._where(framework)}"

    def require(self, framework: str, era: str, cannot: str, fix: str) -> None:
        """Raise a UsageError unless `framework` of `era` has the feature: "<refusal>: <cannot>", and the fix
        "<fix> with [FRAMEWORKS=... and] ERA=..."."""
        why = self.refusal(framework, era)
        if why:
            raise UsageError(f"{why}: {cannot}", f"{fix} with {self._where(framework)}")

    def _where(self, framework: str) -> str:
        """The settings that have the feature: "ERA=<era>" when `framework` has it in another era, else
        "FRAMEWORKS=<frameworks> and ERA=<era>" for the first era any framework has it in."""
        own = self.eras(framework)
        if own:
            return f"ERA={own[0]}"
        era = self.eras()[0]
        return f"FRAMEWORKS={' '.join(self.frameworks(era))} and ERA={era}"


def untranslated(framework: str, era: str, spec: dict) -> List[str]:
    """What of a resolved workload spec's model `framework`'s module of `era` does not translate (its layer types,
    and conv2d with bias = false where it has no bias-free convolution)."""
    can = era_of(framework, era)
    if can is None:
        return []
    return modelplan.untranslated(modelplan.plan(spec), can.layer_types, can.bias_free_conv)


def layer_refusal(framework: str, era: str, spec: dict) -> Optional[str]:
    """Why `framework` of `era` cannot build the spec's model (one line), naming the eras whose module can; None
    when it can."""
    missing = untranslated(framework, era, spec)
    if not missing:
        return None
    able = [e for e in declaration(framework).eras if e != era and not untranslated(framework, e, spec)]
    fix = f"run it with ERA={able[0]}" if able else f"no era of {framework} translates them"
    return f"the {era}-era {framework} module does not translate {', '.join(missing)} ({fix})"
