"""Which framework modules build the detector (bench/detection/support.py), by convention, on the real tree: every
expectation is read from the files that exist when the test runs (bench/frameworks/<name>/detection.py serves both
eras, <era>_detection.py one), so the tests hold while frameworks gain detectors."""

from pathlib import Path

import pytest

from bench import frameworks
from bench.detection import support

ROOT = Path(__file__).resolve().parents[3] / "bench" / "frameworks"
NAMES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if not p.parent.name.startswith("_"))
ERAS = ("current", "paper")


def expected(name, era):
    folder = ROOT / name
    return (folder / f"{era}.py").is_file() and (
        (folder / "detection.py").is_file() or (folder / f"{era}_detection.py").is_file())


def test_the_tree_is_the_one_the_module_reads():
    assert ROOT == frameworks.HERE.resolve() and NAMES == list(frameworks.discovered())
    assert {"chainer", "keras", "mxnet", "pytorch", "tensorflow", "theano"} <= set(NAMES)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("name", NAMES)
def test_has_detector_by_convention(name, era):
    assert support.has_detector(name, era) == expected(name, era)
    assert (support.refusal(name, era) is None) == expected(name, era)


def test_an_era_neutral_module_serves_both_eras():
    neutral = [n for n in NAMES if (ROOT / n / "detection.py").is_file()]
    assert neutral, "no framework has an era-neutral detection.py"
    for name in neutral:
        for era in ERAS:
            assert support.has_detector(name, era) == (ROOT / name / f"{era}.py").is_file()


def test_an_era_module_serves_its_era_only():
    only = [(n, era) for n in NAMES for era in ERAS
            if (ROOT / n / f"{era}_detection.py").is_file() and not (ROOT / n / "detection.py").is_file()]
    for name, era in only:
        assert support.has_detector(name, era)
        other = "paper" if era == "current" else "current"
        assert support.has_detector(name, other) == (ROOT / name / f"{other}_detection.py").is_file()


def test_the_refusal_names_the_file_and_the_era_that_can():
    cases = [(n, era) for n in NAMES for era in ERAS if (ROOT / n / f"{era}.py").is_file() and not expected(n, era)]
    if not cases:
        pytest.skip("every framework module of every era has a detector now")
    for name, era in cases:
        line = support.refusal(name, era)
        assert line.startswith(f"the {era}-era {name} module has no Faster R-CNN detector")
        assert f"bench/frameworks/{name}/{era}_detection.py" in line
        able = [e for e in ERAS if expected(name, e)]
        others = [n for n in NAMES if expected(n, era)]
        where = f"ERA={able[0]}" if able else ("FRAMEWORKS=" + " ".join(others) if others else "no framework yet")
        assert line.endswith(f"detector runs go with {where}")
        assert "\n" not in line


def test_an_unknown_framework_is_pointed_at_the_frameworks_that_can():
    line = support.refusal("nosuch", "current")
    able = [n for n in NAMES if expected(n, "current")]
    assert "bench/frameworks/nosuch/current_detection.py" in line
    assert line.endswith("detector runs go with " + ("FRAMEWORKS=" + " ".join(able) if able else "no framework yet"))
    assert not support.has_detector("nosuch", "paper")
