"""Workload specs and campaign targets: data files under campaign/, read on the host only.

A workload spec (campaign/workloads/<name>.toml) is plain data; ``load`` resolves it against a
profile, and the resolved dict travels to the entrypoint inside the run request (bench/request.py),
so nothing inside an image reads TOML. Framework modules only translate it; nothing here knows a
framework. campaign/targets.toml names the workloads and device of each campaign target.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from bench.errors import UsageError

WORKLOAD_DIR = Path(__file__).parent / "workloads"
TARGETS_FILE = Path(__file__).parent / "targets.toml"

# Keys a profile may override, and where they live in the spec.
PROFILE_KEYS = {
    "epochs": ("training", "epochs"),
    "batch_size": ("training", "batch_size"),
    "train_subset": ("data", "train_subset"),
    "test_subset": ("data", "test_subset"),
}


def known_workloads() -> list[str]:
    """Names of every workload spec shipped with the kit."""
    return sorted(p.stem for p in WORKLOAD_DIR.glob("*.toml"))


def _raw(name: str) -> dict:
    path = WORKLOAD_DIR / f"{name}.toml"
    if not path.exists():
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
    'data' table with the train/test subset sizes (None = the whole split).
    """
    raw = _raw(name)
    profiles = raw.get("profiles", {})
    if profile != "paper" and profile not in profiles:
        raise UsageError(
            f"unknown profile '{profile}' for workload '{name}'",
            f"choose from: {', '.join(known_profiles(name))} (PROFILE=...)",
        )
    spec = copy.deepcopy({k: v for k, v in raw.items() if k != "profiles"})
    spec["profile"] = profile
    spec.setdefault("data", {"train_subset": None, "test_subset": None})
    for key, value in profiles.get(profile, {}).items():
        if key not in PROFILE_KEYS:
            raise UsageError(
                f"profile '{profile}' of workload '{name}' sets unknown key '{key}'",
                f"use only {', '.join(sorted(PROFILE_KEYS))} in campaign/workloads/{name}.toml",
            )
        section, field = PROFILE_KEYS[key]
        spec.setdefault(section, {})[field] = value
    return spec


def load_targets() -> dict[str, dict]:
    """The campaign targets (cpu-cnn, gpu-lstm, demo, ...) and their device and workloads."""
    with open(TARGETS_FILE, "rb") as fh:
        return tomllib.load(fh)
