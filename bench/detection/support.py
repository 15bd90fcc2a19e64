"""Which framework modules build the detector, found by convention: a framework package's detection.py (era-neutral:
both eras' images carry it) or <era>_detection.py (one era's). The planner refuses, in one line, a detector run of
a framework and era without one. CPython 3.6-clean; it imports no framework.
"""

from typing import Optional

from bench import frameworks

MODULE = "detection"


def has_detector(framework: str, era: str) -> bool:
    """Whether `framework`'s modules of `era` build the detector (bench/detection/detector.py)."""
    folder = frameworks.HERE / framework
    return (folder / (era + ".py")).exists() and any(
        (folder / (name + ".py")).exists() for name in (MODULE, era + "_" + MODULE))


def refusal(framework: str, era: str) -> Optional[str]:
    """The planner's line for a detector run `framework` of `era` cannot do (None when it can)."""
    if has_detector(framework, era):
        return None
    able = [e for e in frameworks.ERAS if has_detector(framework, e)]
    others = [fw for fw in frameworks.discovered() if has_detector(fw, era)]
    where = "ERA=" + able[0] if able else ("FRAMEWORKS=" + " ".join(others) if others else "no framework yet")
    return (f"the {era}-era {framework} module has no Faster R-CNN detector (bench/frameworks/{framework}/{era}_"
            f"{MODULE}.py); detector runs go with {where}")
