"""Departures from the paper's setup (analysis.departures), where this campaign's paper-era runs ran, and the
profiles of its runs that change the paper's model or optimizer."""

from __future__ import annotations

import json
from typing import Any

from analysis.context import ReportContext
from analysis.departures import Departure, authors_code_departures, departures, profile_departures
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.eras import (
    REGISTRY_BASE,
    base_departure_text,
    in_image,
    minor_version,
    on_study_python,
    outside_image_rows,
    outside_image_text,
    pytorch_paper_note,
    study_python,
)
from analysis.runs import PAPER_ERA
from analysis.sections.environment import distinct

# The make commands that check the study's own setup where a registry answers.
STUDY_SETUP_CHECK = "`make images ERA=paper` and a smoke campaign (`make cpu-cnn ERA=paper PROFILE=smoke`)"


def paper_rows(ctx: ReportContext) -> list[dict[str, Any]]:
    """The campaign's paper-era runs."""
    return [r for r in ctx.campaign.rows if r["era"] == PAPER_ERA]


def ran_as(row: dict[str, Any]) -> str:
    """What a paper-era run's runner and Python make it: the study's setup (in its image, on the study's Python),
    or a test environment (outside its image)."""
    if not in_image(row):
        return outside_image_text([row])
    study = on_study_python(row)
    if study is None:
        return "in the paper-era image, Python not recorded"
    if not study:
        return f"in the paper-era image, on Python {minor_version(str(row['python']))}: not the study's"
    where = "in the paper-era image" if row["runner"] == "docker" else f"in the paper-era image ({row['runner']})"
    return f"the study's Python {study_python()}, {where}"


def departures_section(ctx: ReportContext) -> list[Block]:
    """Every departure with what the paper says, what the kit does, where it is recorded and the runs it
    concerns; then which paper-era runs ran where. One line when the campaign holds no paper-era run."""
    heading = Heading(2, "Departures from the paper's setup")
    mine = paper_rows(ctx)
    if not mine:
        return [heading, Para("No paper-era runs in this campaign: the departures of the kit's paper-era setup from "
                              "the paper (analysis/departures.py) are listed with paper-era runs (e.g. "
                              "`make cpu-cnn ERA=paper`)."), *departing_profiles(ctx), *authors_code(ctx)]
    rows: list[list[Inline]] = []
    for d in departures():
        concerned = [r for r in mine if d.concerns(r)]
        rows.append([d.topic, d.stated, d.kit, "; ".join(s.text() for s in d.sources),
                     [f"{len(concerned)}:", *ctx.run_links(concerned)] if concerned else "none"])
    return [
        heading,
        Para("Every place where the kit's paper-era setup differs from what the paper states or what its authors' "
             "logs show, where each is recorded (a path in this repository, or an outside address), and this "
             "campaign's paper-era runs it concerns. The facts are kept in analysis/departures.py."),
        Table(["departure", "the paper / the authors' logs", "the kit's paper-era setup", "recorded in",
               "paper-era runs here"], rows),
        *where_paper_runs_ran(ctx, mine),
        *departing_profiles(ctx),
        *authors_code(ctx),
    ]


def concerning(ctx: ReportContext, found: tuple[Departure, ...]) -> list[list[Inline]]:
    """A table row per departure that concerns any of the campaign's runs (any era): topic, what is stated, what the
    kit does, where each is recorded, and the runs."""
    rows: list[list[Inline]] = []
    for d in found:
        concerned = [r for r in ctx.campaign.rows if d.concerns(r)]
        if concerned:
            rows.append([d.topic, d.stated, d.kit, "; ".join(s.text() for s in d.sources),
                         [f"{len(concerned)}:", *ctx.run_links(concerned)]])
    return rows


def departing_profiles(ctx: ReportContext) -> list[Block]:
    """The profiles of this campaign's runs (any era) that train another model or optimizer than the paper's;
    nothing when none does."""
    rows = concerning(ctx, profile_departures())
    if not rows:
        return []
    return [
        Heading(3, "Profiles that change the paper's model or optimizer"),
        Para("Every profile but 'paper' trains fewer epochs on subsets; these also train another model or optimizer "
             "than the paper's, so that their runs learn within minutes. Each workload spec says why; their "
             "accuracies and times are not those of the paper's setup."),
        Table(["departure", "the paper's setup", "this profile", "recorded in", "runs here"], rows),
    ]


def authors_code(ctx: ReportContext) -> list[Block]:
    """Where the study authors' own code for the campaign's runs (any era) differs from the workload specs, one row
    per difference with its estimated or measured effect; nothing when none concerns a run here."""
    rows = concerning(ctx, authors_code_departures())
    if not rows:
        return []
    return [
        Heading(3, "Where the authors' own code differs from the kit's spec"),
        Para("The study's authors published the code they ran, one notebook per framework and architecture. The kit "
             "builds every framework's model from one spec; each row is a difference between that spec and the "
             "authors' notebook for one of this campaign's framework and workload cells, with the notebook cell and "
             "the difference's effect (estimated unless it says measured). The whole comparison, the cells that "
             "match included: docs/notebook-parity.md."),
        Table(["difference", "the authors' code", "the kit's spec, and the effect", "recorded in", "runs here"], rows),
    ]


def where_paper_runs_ran(ctx: ReportContext, mine: list[dict[str, Any]]) -> list[Block]:
    """Per framework, Python and runner: the paper-era runs, and whether they ran in the study's setup."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in mine:
        groups.setdefault((row["framework"], str(row["python"] or "?"), row["runner"]), []).append(row)
    rows: list[list[Inline]] = [
        [fw, distinct(r["framework_version"] for r in runs), python, runner,
         distinct(r["image_digest"] or r["env_id"] for r in runs), ran_as(runs[0]), ctx.run_links(runs)]
        for (fw, python, runner), runs in sorted(groups.items())]
    blocks: list[Block] = [
        Heading(3, "Where the paper-era runs ran"),
        Para(f"The study's setup is CPython {study_python()} with the paper's framework versions, in the paper-era "
             "images. Each run records the Python it really ran on (run.json host.python)."),
        Table(["framework", "version", "Python", "runner", "image digest / env lock", "what these runs are", "runs"],
              rows),
    ]
    off = outside_image_rows(mine)
    if off:
        text = outside_image_text(off)
        blocks.append(Para(f"{len(off)} of {len(mine)} paper-era runs: {text}. They show that the paper-era "
                           "framework modules train through the kit's entrypoint and monitor; they are not the "
                           "study's setup, and their numbers are not the paper era's numbers.", "note"))
    blocks += base_departures(ctx, mine)
    if not any(in_image(r) and on_study_python(r) for r in mine):
        blocks.append(Para(f"No paper-era run here ran on CPython {study_python()}: the study's setup is checked by "
                           f"{STUDY_SETUP_CHECK} (the base from the registry, or made by `make base ERA=paper` where "
                           "no registry answers)."))
    torch = pytorch_paper_note(mine)
    if torch:
        blocks.append(Para(torch, "note"))
    return blocks


def base_departures(ctx: ReportContext, mine: list[dict[str, Any]]) -> list[Block]:
    """One line per base the paper-era runs' images were built on here (run.json environment.base, written by
    `make base ERA=paper`): how it departs from the registry image, and the runs on it."""
    bases: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for row in mine:
        base = (ctx.campaign.runs.get(row["run_id"], {}).get("environment") or {}).get("base")
        if base:
            bases.setdefault(json.dumps(base, sort_keys=True), (base, []))[1].append(row)
    if not bases:
        return []
    count = sum(len(runs) for _, runs in bases.values())
    return [Para(f"{count} of {len(mine)} paper-era runs ran in images on a base made here, not on the registry's "
                 f"{REGISTRY_BASE} (each run's run.json environment.base says which):", "note"),
            Bullets([[f"{base_departure_text(base)}:", *ctx.run_links(runs)] for base, runs in bases.values()])]
