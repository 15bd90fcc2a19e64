"""What the runs ran with and on: the workload settings, the environment, and the published numbers' hardware."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analysis.context import ReportContext
from analysis.document import Block, Bullets, Heading, Inline, Para, Table
from analysis.reference import campaign_studies, published_hardware
from analysis.runs import run_python
from bench.hashing import content_hash
from campaign.runners.system import label as system_label


def _optimizer_text(opt: Any) -> str:
    if not isinstance(opt, dict):
        return str(opt) if opt is not None else "—"
    params = ", ".join(f"{k}={v}" for k, v in sorted(opt.items()) if k != "name")
    return f"{opt.get('name', '?')} ({params})" if params else str(opt.get("name", "?"))


def _subset_text(n: Any) -> str:
    return "full split" if n is None else str(n)


def settings_section(ctx: ReportContext) -> list[Block]:
    """The spec values every framework read, per (workload, profile), and whether they were identical."""
    by_era = _several_eras(ctx)
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for run in ctx.campaign.runs.values():
        cfg = run["config"]
        groups.setdefault((cfg["workload"], cfg["era"], cfg["profile"]), []).append(run)
    rows: list[list[Inline]] = []
    for (workload, era, profile), runs in sorted(groups.items()):
        spec = runs[0]["spec"]
        training, data = spec.get("training") or {}, spec.get("data") or {}
        first = content_hash(spec)
        differ = sorted({r["config"]["framework"] for r in runs if content_hash(r["spec"]) != first})
        reference_fw = runs[0]["config"]["framework"]
        same = "yes" if not differ else f"NO: {', '.join(differ)} differ from {reference_fw}"
        rows.append([workload, *([era] if by_era else []), profile, str(training.get("epochs", "—")),
                     str(training.get("batch_size", "—")),
                     _optimizer_text(training.get("optimizer")), str(training.get("loss", "—")),
                     _subset_text(data.get("train_subset")), _subset_text(data.get("test_subset")), same,
                     ctx.runs_links(runs)])
    return [Heading(2, "Workload settings (echoed from run.json)"),
            Para("What every framework's run actually read from the workload spec. 'identical' says whether "
                 "all runs of the workload and profile" + (" (and era)" if by_era else "")
                 + " carry the same resolved spec."),
            Table(["workload", *(["era"] if by_era else []), "profile", "epochs", "batch", "optimizer", "loss",
                   "train subset", "test subset", "identical across runs", "runs"], rows)]


def _several_eras(ctx: ReportContext) -> bool:
    """Whether the campaign holds runs of more than one era (the tables then show an era column)."""
    return len({run["config"]["era"] for run in ctx.campaign.runs.values()}) > 1


def distinct(values: Iterable[Any]) -> str:
    """The distinct recorded values joined by '; ' in first-seen order, or '—' when none was recorded."""
    seen = list(dict.fromkeys(str(v) for v in values if v not in (None, "", {}, [])))
    return "; ".join(seen) if seen else "—"


def _gpus_text(host: dict) -> str:
    gpus = host.get("gpus") or []
    if gpus:
        return ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus)
    return str(host.get("gpu_status") or "none")


def _kernels_text(kernels: Any) -> str:
    if isinstance(kernels, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(kernels.items()))
    return "" if kernels is None else str(kernels)


def environment_text(env: dict) -> str | None:
    """What a run ran in: the system runner's label (its Python, packages sha256 and framework build:
    no kit image or lock), else the image digest or the locked environment's id."""
    system = env.get("system")
    if isinstance(system, dict):
        return system_label(system)
    return env.get("image_digest") or env.get("env_id")


def system_environments(ctx: ReportContext) -> dict[str, list[dict]]:
    """The system environments the campaign's runs ran in (label -> runs), in label order."""
    found: dict[str, list[dict]] = {}
    for run in ctx.campaign.runs.values():
        system = (run.get("environment") or {}).get("system")
        if isinstance(system, dict):
            found.setdefault(system_label(system), []).append(run)
    return dict(sorted(found.items()))


def system_notes(ctx: ReportContext) -> list[Block]:
    """A note naming each system environment, when runs ran in one: they are not a kit image or lock."""
    found = system_environments(ctx)
    if not found:
        return []
    blocks: list[Block] = [
        Para("Some runs ran in the machine's own Python environment as it was (RUNNER=system), not in a kit "
             "image or a locked environment. Their runner is 'system', part of every summary cell's key: they "
             "are never averaged with runs in the kit's images or environments.", "note"),
        Bullets([[f"{text} ({len(runs)} runs):", *ctx.runs_links(runs)] for text, runs in found.items()])]
    per_framework: dict[str, set[str]] = {}
    for runs in found.values():
        for run in runs:
            per_framework.setdefault(run["config"]["framework"], set()).add(run["environment"]["env_id"])
    mixed = sorted(fw for fw, ids in per_framework.items() if len(ids) > 1)
    if mixed:
        blocks.append(Para(f"{', '.join(mixed)}: runs of more than one system environment (the packages differ) "
                           "share summary cells here; analyse each environment's runs in a campaign folder of its "
                           "own to keep them apart.", "note"))
    return blocks


def environment_section(ctx: ReportContext) -> list[Block]:
    """Versions, runner, image digest or environment lock, host and device details per framework."""
    by_era = _several_eras(ctx)
    groups: dict[tuple[str, str, str, str], list[dict]] = {}
    for run in ctx.campaign.runs.values():
        cfg = run["config"]
        groups.setdefault((cfg["framework"], cfg["era"], cfg["device"], cfg["runner"]), []).append(run)
    rows: list[list[Inline]] = []
    for (framework, era, device, runner), runs in sorted(groups.items()):
        envs = [r.get("environment") or {} for r in runs]
        hosts = [r.get("host") or {} for r in runs]
        used = [r.get("device_used") or {} for r in runs]
        rows.append([
            framework, *([era] if by_era else []), device, runner,
            distinct(e.get("framework_version") for e in envs),
            distinct(_kernels_text(e.get("framework_build")) for e in envs),
            distinct(environment_text(e) for e in envs),
            distinct(run_python(r) for r in runs),
            distinct(f"{h.get('hostname', '?')}: {h.get('cpu_model', '?')} ({h.get('cpu_count', '?')} CPUs, "
                      f"{h.get('mem_total_mb', '?')} MB)" for h in hosts if h),
            distinct(_gpus_text(h) for h in hosts if h),
            distinct(u.get("device_name") for u in used),
            distinct(u.get("threads") for u in used),
            distinct(_kernels_text(u.get("kernels")) for u in used),
            ctx.runs_links(runs),
        ])
    return [Heading(2, "Environment"),
            Para("Exact versions as each run recorded them: the framework, its build (e.g. CUDA and cuDNN where "
                 "the framework reports them), the container image digest, the locked environment's id or, for the "
                 "system runner, the environment found on the machine, the host and its GPUs, the device the "
                 "framework used."),
            Table(["framework", *(["era"] if by_era else []), "device", "runner", "version", "framework build",
                   "image digest / env lock", "python", "host", "GPUs", "device used", "threads", "kernels", "runs"],
                  rows)]


def hardware_section(ctx: ReportContext) -> list[Block]:
    """The hardware behind the published files of the studies whose workloads the campaign ran (their
    reference/SOURCES.md tables) and this campaign's."""
    ran = campaign_studies(ctx.campaign.rows)
    sources = published_hardware(ran)
    rows: list[list[Inline]] = [[h.study, h.file, h.source, h.hardware] for h in sources]
    bare = [found.name for found in ran if found.name not in {h.study for h in sources}]
    hosts: dict[str, list[dict]] = {}
    for run in ctx.campaign.runs.values():
        host = run.get("host") or {}
        gpus = host.get("gpus") or []
        gpu_text = ", ".join(str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus) or "no GPU"
        text = (f"{host.get('cpu_model', '?')}, {host.get('cpu_count', '?')} CPUs, {host.get('mem_total_mb', '?')} MB "
                f"RAM; {gpu_text}; {host.get('os', '?')}")
        hosts.setdefault(text, []).append(run)
    blocks: list[Block] = [
        Heading(2, "Hardware of the published numbers"),
        Para("The published files of the studies whose workloads this campaign ran, copied from each study's "
             "reference/SOURCES.md (studies/<study>/reference). Timings measured on this hardware are context for "
             "ours, not targets.")]
    blocks.append(Table(["study", "reference file", "source", "hardware"], rows) if rows
                  else Para("No study of this campaign's workloads lists a published file."))
    if bare:
        blocks.append(Para(f"No published file listed (reference/SOURCES.md has none): {', '.join(bare)}."))
    return [*blocks, Para("This campaign set ran on:"),
            Bullets([[f"{text} ({len(runs)} runs):", *ctx.runs_links(runs)] for text, runs in sorted(hosts.items())])]
