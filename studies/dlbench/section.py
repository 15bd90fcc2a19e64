"""DLBench's sequence accuracies as its authors' notebooks scored them, beside the kit's own.

The published LSTM accuracies are not one quantity (docs/notebook-parity.md, "Accuracy definitions"): on Many things
three notebooks count the padding, Keras' also scores the step after each sentence, Chainer's and Theano's score a copy
task. Every sequence run reports its final weights' test accuracy under each definition (bench/seqaccuracy.py, run.json
results.authors_accuracy); this section sets, per framework, the value under the definition that framework's authors
used (the workload spec's [[authors.<framework>]] accuracy entry, its `definition`) beside their published figure.
Shown only when the campaign holds such runs.
"""

from __future__ import annotations

from statistics import mean
from typing import Any

from analysis.context import ReportContext
from analysis.document import Block, Heading, Inline, Para, Table
from analysis.reference import device_env, published_for
from analysis.stats import format_number
from bench.seqaccuracy import DEFINITIONS
from campaign.specs import NO_DEFINITION, authors_code

# How the table names each definition.
NAMES = {"real_tokens": "real tokens (the kit's)", "padding_counted": "padding counted",
         "end_step_counted": "real tokens + the step after"}


def authors_definition(workload: str, framework: str, env: str) -> str | None:
    """The definition the framework's notebook scores this workload with (a DEFINITIONS name or NO_DEFINITION), from
    its spec's accuracy entry for `env` (or both environments); None where the spec records none."""
    for entry in authors_code(workload).get(framework, []):
        if entry["aspect"] == "accuracy" and "definition" in entry and entry.get("env", env) == env:
            return entry["definition"]
    return None


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{format_number(100 * value, 4)} %"


def _row(ctx: ReportContext, key: tuple[str, str, str], runs: list[dict[str, Any]]) -> list[Inline]:
    workload, device, framework = key
    scored = {name: [r["results"]["authors_accuracy"][name] for r in runs] for name in DEFINITIONS}
    means = {name: mean(v) if None not in v else None for name, v in scored.items()}
    definition = authors_definition(workload, framework, device_env(device))
    if definition is None:
        theirs = "not recorded"
    elif definition == NO_DEFINITION:
        theirs = "none of these (docs/notebook-parity.md)"
    else:
        theirs = f"{NAMES[definition]}: {_percent(means[definition])}"
    published = [f"{format_number(p.value, 4)} {p.unit.replace('percent', '%')} ({p.source_text})"
                 for p in published_for(device, workload, framework, "test_accuracy")]
    return [workload, framework, device, str(len(runs)), *(_percent(means[name]) for name in DEFINITIONS), theirs,
            "; ".join(published) or "—", ctx.runs_links(runs)]


def dlbench_section(ctx: ReportContext) -> list[Block]:
    """Per workload, device and framework of the campaign's sequence runs: the mean final test accuracy under each
    definition, the one the framework's authors scored, and their published figure; nothing without such runs."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for run in ctx.campaign.runs.values():
        if run["status"] == "ok" and run["results"].get("authors_accuracy"):
            config = run["config"]
            groups.setdefault((config["workload"], config["device"], config["framework"]), []).append(run)
    if not groups:
        return []
    return [
        Heading(2, "DLBench's sequence accuracies as its authors scored them"),
        Para("The published LSTM accuracies count different steps in different notebooks (docs/notebook-parity.md, "
             "Accuracy definitions): on Many things TensorFlow's, PyTorch's and MXNet's count the padding after each "
             "sentence, Keras' also the step after its last word, Chainer's and Theano's score a copy task; on PTB "
             "all count every step of their windows, as the kit does. Each row is the final test accuracy of the "
             "same runs under each definition (bench/seqaccuracy.py, from the trainer's logits), and the value "
             "under the definition of that framework's notebook, beside the published figure. Two cautions. The "
             "kit's loss skips the padding, so its models never learn to predict it and counting it lowers their "
             "figure, where the notebooks' losses counted the padding too and their models gained from it; and the "
             "kit pads at its own length (20 steps), not the notebooks' (the longest sentence). So these columns "
             "show what each definition does to the same predictions, not the figure the notebooks' training would "
             "have reached."),
        Table(["workload", "framework", "device", "runs", *(NAMES[name] for name in DEFINITIONS),
               "the authors' definition", "published", "runs here"],
              [_row(ctx, key, runs) for key, runs in sorted(groups.items())]),
    ]


# The report sections this study adds (studies.sections(), placed by analysis.report.sections()).
SECTIONS = (dlbench_section,)
