"""Where the kit's paper-era setup departs from what DLBench states or from what its authors' logs show.

The facts are kept here, once, as data: each Departure says what the paper or the authors' logs say,
what the kit does instead, where each side is recorded (a file of this repository, which the tests
check exists, or an outside address), and which runs it concerns. What the kit records elsewhere is
read from there, never copied: the CUDA builds from images/lockfile.py (PAPER_SOURCES beside the
paper's PAPER_SAYS), pinned versions from the paper-era locks, SVHN's split from the workload spec and
the data manifest, the published Theano numbers from studies/dlbench/reference.

Profile departures (profile_departures) are of another kind: a workload profile other than 'paper' that
trains another model or optimizer than the paper's (studies/<study>/workloads/<name>.toml, a profile with a
`departure`), in every era; read from the workload specs, with the reason the profile states.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from typing import Any

from analysis.reference import device_env, published_for, workload_cell
from bench.detection.detector import TABLES, WEIGHTS
from bench.modelplan import DETECTOR

# The authors' public repository (notebooks, saved outputs and raw logs).
AUTHORS_REPO = "github.com/DataSystemsGroupUT/DLBench"
PAPER = "DLBench paper (Elshawi et al., Cluster Computing 2021)"


@dataclass(frozen=True)
class Source:
    """Where a fact is recorded: a path in this repository, or (outside=True) an outside address."""

    where: str
    detail: str = ""  # which part of it: a key, a row, a cell
    outside: bool = False

    def text(self) -> str:
        """'path (detail)' or 'path'."""
        return f"{self.where} ({self.detail})" if self.detail else self.where


@dataclass(frozen=True)
class Departure:
    """One place where the kit's paper-era setup differs from the paper or the authors' logs."""

    topic: str
    stated: str  # what the paper states or the authors' logs show
    kit: str  # what the kit's paper-era setup does instead
    sources: tuple[Source, ...]
    # The runs it concerns: empty frameworks/workloads/profiles mean every one; env 'cpu' or 'gpu', '' both.
    frameworks: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    env: str = ""
    profiles: tuple[str, ...] = ()

    def concerns(self, row: dict[str, Any]) -> bool:
        """Whether a run-table row is one of the runs this departure concerns."""
        return ((not self.frameworks or str(row["framework"]).lower() in self.frameworks)
                and (not self.workloads or row["workload"] in self.workloads)
                and (not self.env or device_env(str(row["device"])) == self.env)
                and (not self.profiles or row.get("profile") in self.profiles))


# --- Read from where the kit records it ---------------------------------------------------

def pinned_versions(framework: str, package: str) -> list[tuple[str, str]]:
    """(lock path, version) of a package in each paper-era lock of a framework (images/<fw>/paper/)."""
    from images import envs
    from images.lockfile import image_locks, parse_lock

    return [(str(lock.relative_to(envs.REPO_ROOT)), parse_lock(lock.read_text())[package]["version"])
            for fw, era, _, lock in image_locks()
            if fw == framework and era == "paper" and package in parse_lock(lock.read_text())]


def _pins_text(pins: list[tuple[str, str]], package: str) -> str:
    versions = ", ".join(sorted({v for _, v in pins})) or "nothing"
    return f"{package} {versions}"


def _pin_sources(pins: list[tuple[str, str]], package: str) -> tuple[Source, ...]:
    return tuple(Source(path, f"{package}=={version}") for path, version in pins)


def paper_cuda() -> tuple[str, str]:
    """(CUDA, cuDNN) the paper states, read from images/lockfile.py PAPER_SAYS."""
    from images.lockfile import PAPER_SAYS

    found = re.search(r"CUDA (\d+(?:\.\d+)*) and cuDNN (\d+(?:\.\d+)*)", PAPER_SAYS)
    if found is None:
        raise ValueError(f"images/lockfile.py PAPER_SAYS names no 'CUDA x and cuDNN y': {PAPER_SAYS!r}")
    return found.group(1), found.group(2)


def paper_gpu_build(framework: str) -> tuple[str, str, Source] | None:
    """(CUDA, cuDNN, where stated) of the framework's paper-era GPU image, read from the pins its lock is
    resolved from (images/<fw>/paper/pins-gpu.in: 'cuda:' and 'cudnn:'); None when it has no GPU image."""
    from images import envs
    from images.lockfile import PINS_FILES, paper_pins

    path = envs.IMAGES_DIR / framework / "paper" / PINS_FILES["gpu"]
    if not path.is_file():
        return None
    pins = paper_pins(framework, "gpu")
    cuda, cudnn = pins.cuda or "not stated", pins.cudnn or "not stated"
    return cuda, cudnn, Source(str(path.relative_to(envs.REPO_ROOT)), f"cuda: {cuda}, cudnn: {cudnn}")


def _versions_lock_gpu(framework: str) -> Source | None:
    """versions.lock's record of a framework's paper-era GPU image, when it has one."""
    from images.lockfile import LOCK_FILE

    if not LOCK_FILE.is_file():
        return None
    key = f"{framework}/paper/gpu"
    image = tomllib.loads(LOCK_FILE.read_text()).get("images", {}).get(key)
    if not image:
        return None
    return Source(LOCK_FILE.name, f'[images."{key}"] cuda = "{image.get("cuda")}", cudnn = "{image.get("cudnn")}"')


# --- The departures -------------------------------------------------------------------------

def cuda_departures() -> list[Departure]:
    """Per framework of images/lockfile.py PAPER_SOURCES, the CUDA build its paper-era GPU image really
    carries (or that it has none), where that is not the paper's."""
    from images.lockfile import PAPER_SAYS, PAPER_SOURCES

    out = []
    for fw, why in PAPER_SOURCES.items():
        build = paper_gpu_build(fw)
        if build is not None and build[:2] == paper_cuda():
            continue
        if build is None:
            kit, stated = f"No paper-era GPU image: {why}.", ()
        else:
            kit, stated = f"The paper-era GPU image carries CUDA {build[0]} / cuDNN {build[1]}: {why}.", (build[2],)
        recorded = _versions_lock_gpu(fw)
        out.append(Departure(
            f"{fw}: CUDA build", f"The paper: {PAPER_SAYS}.", kit,
            (*stated, Source("images/lockfile.py", f"PAPER_SOURCES['{fw}'] beside PAPER_SAYS"),
             *((recorded,) if recorded else ())),
            frameworks=(fw,), env="gpu"))
    return out


def chainer_departure() -> Departure:
    """Chainer 4.5.2, the paper's GPU version, is not on the package index."""
    pins = pinned_versions("chainer", "chainer")
    return Departure(
        "chainer: version on GPU",
        "The paper's Table 2: Chainer 4.5.2 in the GPU environment (4.5.0 on CPU).",
        "chainer 4.5.2 does not exist on the package index (Chainer 4.x ends at 4.5.0): the paper-era Chainer "
        f"images pin {_pins_text(pins, 'chainer')}.",
        (Source(PAPER, "Table 2", outside=True),
         Source("the package index's release history of chainer", "the 4.x releases end at 4.5.0", outside=True),
         *_pin_sources(pins, "chainer")),
        frameworks=("chainer",), env="gpu")


def lstm_workloads() -> tuple[str, ...]:
    """The kit's workloads the study counts as LSTM workloads (IMDB, PTB, Many things)."""
    from campaign.specs import known_workloads

    return tuple(w for w in known_workloads() if (workload_cell(w) or ("",))[0] == "lstm")


def tensorflow_notebook_departure() -> Departure:
    """The authors' CPU TensorFlow LSTM run used TensorFlow >= 1.13, not the 1.11 of Table 2."""
    pins = pinned_versions("tensorflow", "tensorflow")
    return Departure(
        "tensorflow: version in the authors' CPU LSTM run",
        "The paper's Table 2 says TensorFlow 1.11.0, but the saved output of the authors' CPU TensorFlow LSTM "
        "notebook shows warnings from tensorboard/compat/tensorflow_stub, which first shipped in tensorboard "
        "1.13: that run used TensorFlow >= 1.13, not 1.11.",
        f"The paper-era TensorFlow images pin {_pins_text(pins, 'tensorflow')}, as Table 2 states: their CPU "
        "LSTM runs use an older TensorFlow than the authors' logged CPU LSTM numbers (studies/dlbench/reference/"
        "from_original_repos.csv) came from.",
        (Source(AUTHORS_REPO, "CPU Experiment/Source Code/Tensorflow_IMDB_Manythings_PTB_LSTM.ipynb, the first "
                              "cell's saved output", outside=True),
         Source(PAPER, "Table 2", outside=True), *_pin_sources(pins, "tensorflow")),
        frameworks=("tensorflow",), workloads=lstm_workloads(), env="cpu")


def svhn_departure() -> Departure:
    """The authors trained SVHN on the 'extra' split; the kit trains on the train split."""
    from campaign.specs import load
    from data.manifest import load_manifest

    split = load("cnn-svhn")["choices"]["training_split"]
    svhn = load_manifest().get("svhn")
    return Departure(
        "SVHN: training split",
        "The paper (Fig. 2) gives SVHN as 73,257 train / 26,032 test images, but the authors' loader returned "
        "the 531k-image 'extra' split as the training set (their GPU SVHN logs; a GPU SVHN row of "
        "studies/dlbench/reference/from_original_repos.csv says 'extra split 531k train').",
        f"The kit trains on {split}. The data manifest lists {', '.join(f.name for f in svhn.files)} for "
        f"svhn ({svhn.description}).",
        (Source("studies/dlbench/workloads/cnn-svhn.toml", "[choices] training_split"),
         Source("data/manifest.toml", "[datasets.svhn]"),
         Source("studies/dlbench/reference/from_original_repos.csv", "the GPU SVHN rows"),
         Source(AUTHORS_REPO, "the SVHN loader of the CNN notebooks; GPU Experiment/GPU logs/SVHN", outside=True)),
        workloads=("cnn-svhn",))


def theano_nan_departure() -> Departure:
    """Theano's 50 % on IMDB in the paper is a run whose loss became NaN."""
    published = "; ".join(f"{p.value:g} % ({p.source_text})"
                          for p in published_for("cpu", "lstm-imdb", "theano", "test_accuracy"))
    return Departure(
        "theano: NaN on IMDB",
        f"Theano's IMDB LSTM accuracy is given as a result: {published}. The authors' CPU log shows the loss "
        "became NaN: that number is a diverged run, not a trained model.",
        "A NaN or infinite loss stops a run with failure cause 'nan' (bench/entrypoint.py): the report counts it as "
        "a failed run, never as an accuracy, and claim 7 ('What reproduced') counts NaN failures as the failure "
        "to learn the paper describes.",
        (Source("studies/dlbench/reference/dlbench.csv", "cpu, lstm, imdb, theano, test_accuracy"),
         Source("studies/dlbench/reference/from_original_repos.csv", "CPU IMDB LSTM Theano row: '49.981% (NaN loss)'"),
         Source("bench/entrypoint.py", "classify_failure: NonFiniteLoss -> 'nan'"),
         Source("studies/dlbench/claims.py", "theano_imdb_failure_and_leak (claim 7)")),
        frameworks=("theano",), workloads=("lstm-imdb",))


def frcnn_weights_departure() -> Departure:
    """Faster R-CNN's ResNet-50 starts from ImageNet weights in Ren et al. and every public implementation; the
    kit's detector starts from scratch."""
    return Departure(
        "frcnn-voc2012: initial weights",
        "The paper does not say how its Faster R-CNNs were initialised (no code or log of them is public); Ren et "
        "al. 2015 (Sec 3.1.3) and the public implementations start the ResNet-50 from ImageNet weights, with "
        "batchnorm frozen.",
        f"The kit's detector starts {WEIGHTS} (run.json model.detector.weights), every batchnorm trained with the "
        "one image's statistics: its mAPs after as many epochs are not comparable with the paper's ~51-63 %.",
        (Source("studies/dlbench/workloads/frcnn-voc2012.toml", "[choices] batchnorm, initialization"),
         Source("bench/detection/detector.py", "WEIGHTS"),
         Source(PAPER, "Sec 4.3", outside=True)),
        workloads=("frcnn-voc2012",))


# --- Profiles that train another model or optimizer than the paper's ------------------------

# The size that names each layer type in one line (model_text).
_LAYER_SIZE = {"embedding": "output_dim", "lstm": "units", "dense": "units", "dropout": "rate", "conv2d": "filters",
               "maxpool2d": "pool"}


def _layers_text(layers: list[dict[str, Any]]) -> str:
    return ", ".join(f"{layer['type']} {layer[_LAYER_SIZE[layer['type']]]}" if layer["type"] in _LAYER_SIZE
                     else str(layer["type"]) for layer in layers)


def _table_text(name: str, table: dict[str, Any]) -> str:
    return f"{name} ({', '.join(f'{k} {v}' for k, v in table.items())})"


def model_text(model: dict[str, Any], against: dict[str, Any] | None = None) -> str:
    """A spec's model in one line, layer by layer ('embedding 128, lstm 1024, dropout 0.5, dense 10000');
    an encoder-decoder's encoder first. A detector's (bench/detection/detector.py) by its tables, only those that
    differ from `against`'s where it is given ('image (short_side 300, ...), rpn (...)')."""
    if model.get("architecture") == DETECTOR:
        return "; ".join(_table_text(name, model[name]) for name in TABLES
                         if against is None or model[name] != against.get(name))
    text = _layers_text(model.get("layers") or [])
    return f"encoder ({_layers_text(model['encoder'])}), decoder ({text})" if model.get("encoder") else text


def optimizer_text(optimizer: dict[str, Any]) -> str:
    """'adam (lr 0.01)': an optimizer table's name and the hyper-parameters it sets."""
    params = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
                       for k, v in optimizer.items() if k != "name")
    return f"{optimizer['name']} ({params})" if params else str(optimizer["name"])


def profile_departures() -> tuple[Departure, ...]:
    """One departure per workload profile that trains another model or optimizer than the paper profile
    (studies/<study>/workloads/<name>.toml [profiles.<profile>] with its `departure`), read from the specs."""
    from campaign.specs import departing_profiles, known_workloads, load, where

    out = []
    for workload in known_workloads():
        for profile, why in departing_profiles(workload).items():
            paper, mine = load(workload), load(workload, profile)
            what = []
            if mine["model"] != paper["model"]:
                what.append(("model", model_text(paper["model"], mine["model"]),
                             model_text(mine["model"], paper["model"])))
            if mine["training"]["optimizer"] != paper["training"]["optimizer"]:
                what.append(("optimizer", optimizer_text(paper["training"]["optimizer"]),
                             optimizer_text(mine["training"]["optimizer"])))
            out.append(Departure(
                f"{workload}: {profile} profile's {' and '.join(w for w, _, _ in what)}",
                "The paper's setup (the paper profile): " + "; ".join(f"{w} {a}" for w, a, _ in what) + ".",
                f"The {profile} profile trains " + "; ".join(f"{w} {b}" for w, _, b in what) + f" instead. {why}. "
                "Its accuracies and times are not those of the paper's setup.",
                (Source(where(workload), f"[profiles.{profile}] departure, beside [model] and [training]"),
                 Source(PAPER, "Fig. 3", outside=True)),
                workloads=(workload,), profiles=(profile,)))
    return tuple(out)


def authors_code_departures() -> tuple[Departure, ...]:
    """One departure per difference between a workload spec and its study's authors' own code for a framework
    (studies/<study>/workloads/<name>.toml [[authors.<framework>]], docs/notebook-parity.md), in every era: what
    their code does (with the notebook cell), what the spec does, and the difference's effect as the spec states it."""
    from campaign.specs import authors_code, known_workloads, where

    out = []
    for workload in known_workloads():
        for framework, entries in authors_code(workload).items():
            for entry in entries:
                env = entry.get("env", "")
                out.append(Departure(
                    f"{workload}: {framework}'s {entry['aspect']}" + (f" ({env.upper()})" if env else ""),
                    f"{entry['authors']} (the authors' {entry['source']})",
                    f"{entry['kit']}. Effect: {entry['effect']}",
                    (Source(where(workload), f"[[authors.{framework}]] {entry['aspect']}"),
                     Source(AUTHORS_REPO, entry["source"], outside=True)),
                    frameworks=(framework,), workloads=(workload,), env=env))
    return tuple(out)


@cache
def departures() -> tuple[Departure, ...]:
    """Every departure of the kit's paper-era setup, in the order the report lists them."""
    return (*cuda_departures(), chainer_departure(), tensorflow_notebook_departure(), svhn_departure(),
            theano_nan_departure(), frcnn_weights_departure())
