"""Workload specs: data files in the study folders, read on the host only.

A workload spec (studies/<study>/workloads/<name>.toml, found in whichever study folder holds it:
studies.workload_files) is plain data; ``load`` resolves it against a profile, and the resolved dict travels
to the entrypoint inside the run request (bench/request.py), so nothing inside an image reads TOML. Framework
modules only translate it; nothing here knows a framework. Which workloads a campaign target runs is a study's
experiment (campaign/study.py).
"""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import studies
from bench import request, seqaccuracy
from bench.errors import UsageError
from bench.names import is_plain

# Keys a profile may override, and where they live in the spec.
PROFILE_KEYS = {
    "epochs": ("training", "epochs"),
    "batch_size": ("training", "batch_size"),
    "train_subset": ("data", "train_subset"),
    "test_subset": ("data", "test_subset"),
    "optimizer": ("training", "optimizer"),  # the whole table (name and hyper-parameters), not merged
}
# A profile's `model` table replaces those keys of [model], each value whole (a `layers` list is the
# profile's complete layer list), so every framework still builds one model from one spec. A profile
# that changes the model or the optimizer departs from the paper's setup and says why in `departure`
# (read by the report's departures section, analysis/departures.py; not part of the resolved spec).
MODEL_TABLE = "model"
DEPARTURE_KEY = "departure"
DEPARTING_KEYS = ("optimizer", MODEL_TABLE)
# Where the study's authors' own code for this workload differs from the spec (docs/notebook-parity.md): one
# [[authors.<framework>]] table per difference, with where in their code it is and its effect. Read by the report's
# departures section (analysis/departures.py); part of the resolved spec, so run.json carries it (but not the run's
# identity: bench/request.py).
AUTHORS_KEY = request.AUTHORS_KEY
AUTHOR_FIELDS = ("aspect", "authors", "kit", "source", "effect")
AUTHOR_ENVS = ("cpu", "gpu")  # the optional `env`: the one environment whose code differs
# The optional `definition` of an "accuracy" difference: which of bench/seqaccuracy.py's definitions the authors'
# code scores (the report sets that one beside their published figure), or NO_DEFINITION where none of them is it.
NO_DEFINITION = "none"
AUTHOR_ASPECTS = ("architecture", "initializers", "optimizer", "regularization", "preprocessing", "data", "batch",
                  "epochs", "shuffling", "loss", "accuracy", "clock")


def known_workloads() -> list[str]:
    """Names of every workload spec of every study folder."""
    return sorted(studies.workload_files())


def where(name: str) -> str:
    """A workload's spec file as messages name it (studies/shi/workloads/fcn-r-mnist.toml)."""
    path = studies.workload_files().get(name)
    if path is None:
        return f"the spec of workload '{name}'"
    return path.relative_to(studies.HERE.parent).as_posix() if path.is_relative_to(studies.HERE.parent) else str(path)


def _raw(name: str) -> dict:
    path = studies.workload_files().get(name) if is_plain(name) else None
    if path is None:  # a name with '/' or '..' is never a workload: looked up by name, not joined to a folder
        raise UsageError(
            f"unknown workload '{name}'",
            f"choose from: {', '.join(known_workloads())} (WORKLOADS=...)",
        )
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def known_profiles(name: str) -> list[str]:
    """Profiles a workload defines (always includes 'paper')."""
    return sorted(_raw(name).get("profiles", {}).keys() | {"paper"})


def load(name: str, profile: str = "paper") -> dict[str, Any]:
    """Return the workload spec with the profile's overrides applied.

    The result has no 'profiles' table; it records the profile it was resolved for and a
    'data' table with the train/test subset sizes (None = the whole split) beside the spec's own [data]
    keys (a language model's window: bench/prepared.py).
    """
    raw = _raw(name)
    profiles = raw.get("profiles", {})
    if profile != "paper" and profile not in profiles:
        raise UsageError(
            f"unknown profile '{profile}' for workload '{name}'",
            f"choose from: {', '.join(known_profiles(name))} (PROFILE=...)",
        )
    spec = copy.deepcopy({k: v for k, v in raw.items() if k != "profiles"})
    _check_authors(spec.get(AUTHORS_KEY, {}), name)
    spec["profile"] = profile
    spec.setdefault("data", {})  # a spec's own [data] (e.g. a language model's window) keeps its keys
    for key in ("train_subset", "test_subset"):
        spec["data"].setdefault(key, None)
    table = copy.deepcopy(profiles.get(profile, {}))
    if any(key in table for key in DEPARTING_KEYS) and not table.get(DEPARTURE_KEY):
        raise UsageError(
            f"profile '{profile}' of workload '{name}' changes the model or the optimizer without a '{DEPARTURE_KEY}'",
            f"say why in {DEPARTURE_KEY} = \"...\" under [profiles.{profile}] in {where(name)}",
        )
    for key, value in table.items():
        if key == DEPARTURE_KEY:
            continue
        if key == MODEL_TABLE:
            _override_model(spec, value, name, profile)
            continue
        if key not in PROFILE_KEYS:
            raise UsageError(
                f"profile '{profile}' of workload '{name}' sets unknown key '{key}'",
                f"use only {', '.join(sorted([*PROFILE_KEYS, MODEL_TABLE, DEPARTURE_KEY]))} "
                f"in {where(name)}",
            )
        section, field = PROFILE_KEYS[key]
        spec.setdefault(section, {})[field] = value
    return spec


def _override_model(spec: dict, table: Any, name: str, profile: str) -> None:
    """Replace the [model] keys a profile's model table names (only keys [model] has: a typo is an error)."""
    here = f"[profiles.{profile}.model] of {where(name)}"
    if not isinstance(table, dict):
        raise UsageError(f"profile '{profile}' of workload '{name}' sets 'model' to a value, not a table",
                         f"write the model keys it replaces under {here}")
    unknown = sorted(set(table) - set(spec["model"]))
    if unknown:
        raise UsageError(f"profile '{profile}' of workload '{name}' replaces unknown model key '{unknown[0]}'",
                         f"use keys of [model] ({', '.join(sorted(spec['model']))}) in {here}")
    spec["model"].update(table)


def _check_authors(table: Any, name: str) -> None:
    """Refuse, in one line, an [[authors.<framework>]] entry of no known framework, or one lacking or adding a field."""
    from bench.frameworks import discovered

    here = f"[[{AUTHORS_KEY}.<framework>]] of {where(name)}"
    if not isinstance(table, dict):
        raise UsageError(f"'{AUTHORS_KEY}' of workload '{name}' is not a table of frameworks",
                         f"write each difference as {here}")
    for framework, entries in table.items():
        if framework not in discovered():
            raise UsageError(f"{AUTHORS_KEY}.{framework} of workload '{name}' names no framework",
                             f"use one of {', '.join(discovered())} in {here}")
        for i, entry in enumerate(entries if isinstance(entries, list) else [entries], 1):
            what = f"{AUTHORS_KEY}.{framework} entry {i} of workload '{name}'"
            keys = set(entry) if isinstance(entry, dict) else set()
            if keys - {"env", "definition"} != set(AUTHOR_FIELDS) or not isinstance(entries, list):
                raise UsageError(f"{what} has keys {sorted(keys)}",
                                 f"give exactly {', '.join(AUTHOR_FIELDS)} (and optionally env, definition) in {here}")
            definitions = (*seqaccuracy.DEFINITIONS, NO_DEFINITION)
            if "definition" in entry and (entry["aspect"] != "accuracy" or entry["definition"] not in definitions):
                raise UsageError(f"{what} has definition {entry['definition']!r} (aspect {entry['aspect']!r})",
                                 f"give an accuracy difference one of {', '.join(definitions)} in {here}")
            if entry["aspect"] not in AUTHOR_ASPECTS or entry.get("env", "cpu") not in AUTHOR_ENVS:
                raise UsageError(f"{what} has aspect {entry['aspect']!r}, env {entry.get('env')!r}",
                                 f"use an aspect of {', '.join(AUTHOR_ASPECTS)} and env cpu or gpu in {here}")
            if not all(isinstance(entry[key], str) and entry[key].strip() for key in AUTHOR_FIELDS):
                raise UsageError(f"{what} has an empty or non-text field", f"write each as a line of text in {here}")


def authors_code(name: str) -> dict[str, list[dict[str, str]]]:
    """{framework: its [[authors.<framework>]] differences} of a workload, validated (see AUTHORS_KEY)."""
    table = _raw(name).get(AUTHORS_KEY, {})
    _check_authors(table, name)
    return table


def for_framework(spec: dict[str, Any], framework: str) -> dict[str, Any]:
    """The resolved spec a run of `framework` carries (its request, run.json): the authors' differences of that
    framework only, none when it has none."""
    authors = spec.get(AUTHORS_KEY)
    if authors is None:
        return spec
    mine = {k: v for k, v in spec.items() if k != AUTHORS_KEY}
    if authors.get(framework):
        mine[AUTHORS_KEY] = {framework: authors[framework]}
    return mine


def departing_profiles(name: str) -> dict[str, str]:
    """{profile: why} for each profile of a workload that changes its model or optimizer (its `departure`)."""
    found = {}
    for profile, table in sorted(_raw(name).get("profiles", {}).items()):
        if any(key in table for key in DEPARTING_KEYS):
            load(name, profile)  # a UsageError where the departure is not said
            found[profile] = str(table[DEPARTURE_KEY])
    return found

