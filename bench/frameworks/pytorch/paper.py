"""PyTorch 0.4.1: the era adapter over model.py's module and trainer.py's loop (both era-neutral, shared with
today's PyTorch).

Runs inside the paper-era pytorch image (CPython 3.6). The same model and loop as the current-era module; what
differs here is what 0.4.1 lacks or does otherwise: token ids are int64 (0.4.1's nn.Embedding requires them);
shuffling is a seeded NumPy permutation; forward passes without autograd run under torch.no_grad
(torch.inference_mode is 1.9); there is no inter-op thread pool to size (set_num_interop_threads is 1.2), no
channels_last memory (1.5: the layout switch is left out), no data-parallel hook.

The LSTM is torch.nn.LSTM fed packed sequences where the spec reads real lengths, so padding is
never computed and the state is the one after each sequence's last real token.
pack_padded_sequence in 0.4.1 needs the batch sorted by length, longest first (enforce_sorted=False
is 1.1): the batch is sorted by its lengths, packed, run, and its outputs and final states are put
back in the batch's own order. On a GPU nn.LSTM runs cuDNN over the packed batch; on the CPU
PyTorch 0.4.1 steps its LSTM cell in autograd over the packed batch sizes, so a packed batch also
shrinks as its sequences end. The encoder-decoder hands the encoder's final (h, c) to the decoder
LSTM as its initial state.
"""

import platform
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from bench import modelplan
from bench.detection.detector import is_detector
from bench.detection.trainer import DetectionTrainer
from bench.frameworks import common
from bench.frameworks.pytorch import CAPABILITIES, detection, model, trainer
from bench.frameworks.pytorch.trainer import NAME  # noqa: F401  (the module's contract)

PACKAGE = CAPABILITIES.package  # whose version is the framework's version
PAPER = CAPABILITIES.eras["paper"]  # what this module translates and serves


def versions() -> Dict[str, str]:
    """Versions of what this module really imported (and the CUDA/cuDNN torch was built with)."""
    out = {"torch": torch.__version__, "numpy": np.__version__, "python": platform.python_version()}
    if torch.version.cuda:
        out["cuda"] = str(torch.version.cuda)
    cudnn = _cudnn_version()
    if cudnn is not None:
        out["cudnn"] = str(cudnn)
    return out


def threads() -> Dict[str, int]:
    """The intra-op pool's size; ops run one at a time from the Python thread: 0.4.1 has no inter-op pool."""
    return {"intra_op": torch.get_num_threads(), "inter_op": 1}


def _cudnn_version() -> Optional[int]:
    """cuDNN's version, None without it (backends.cudnn.version() is there in every release)."""
    return torch.backends.cudnn.version() if torch.cuda.is_available() else None


class _LSTM(model.LengthsLSTM):
    """torch.nn.LSTM over real lengths: sorted, packed, run, put back in the batch's order."""

    def over_lengths(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        out, h, _ = self.packed(x, lengths)
        return out if self.return_sequences else h

    def final_state(self, x: torch.Tensor, lengths: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        if not self.use_lengths or lengths is None:
            return self.lstm(x)[1]
        _, h, c = self.packed(x, lengths, outputs=False)
        return h.unsqueeze(0), c.unsqueeze(0)

    def packed(self, x: torch.Tensor, lengths: torch.Tensor,
               outputs: bool = True) -> Tuple[Optional[torch.Tensor], torch.Tensor, torch.Tensor]:
        """(every step's output or None, final h, final c) in the batch's order, run over the packed batch.

        lengths: int64 on the CPU. pack_padded_sequence (0.4.1) wants them sorted, longest first.
        """
        sorted_lengths, order = lengths.sort(0, descending=True)
        _, restore = order.sort(0)  # the inverse permutation
        order, restore = order.to(x.device), restore.to(x.device)
        packed = pack_padded_sequence(x.index_select(0, order), sorted_lengths, batch_first=True)
        out, (h_n, c_n) = self.lstm(packed)
        h, c = h_n[-1].index_select(0, restore), c_n[-1].index_select(0, restore)
        if not (outputs and self.return_sequences):
            return None, h, c
        # Zeros after each sequence's end, padded back to the input's length.
        padded, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return padded.index_select(0, restore), h, c


def _modules(layers: List[modelplan.Layer]) -> List[nn.Module]:
    """The torch modules of planned layers with this era's LSTM (the lrn probe builds a layer with it)."""
    return model.modules(layers, _LSTM)


def _set_threads() -> None:
    threads = common.threads_from_env()
    if threads is not None:
        torch.set_num_threads(threads)  # 0.4.1 has no inter-op pool to set (set_num_interop_threads is 1.2)


class TorchTrainer(trainer.TorchTrainer):
    """The Trainer protocol (bench.frameworks.Trainer) for PyTorch 0.4.1."""

    LSTM = _LSTM
    ID_DTYPE = np.int64  # 0.4.1's nn.Embedding takes int64 ids only
    versions = staticmethod(versions)

    def __init__(self, spec: dict, data: Any, device: str, seed: int):
        _set_threads()
        # Shuffling has its own generator so its order depends on the seed alone.
        self.rng = np.random.RandomState(seed)
        super().__init__(spec, data, trainer.resolve_device(device), seed)

    def check_plan(self, plan: modelplan.ModelPlan) -> None:
        modelplan.require(plan, PAPER.layer_types, f"{NAME} (paper era)", PAPER.bias_free_conv)

    def order(self, n: int) -> torch.Tensor:
        return torch.from_numpy(self.rng.permutation(n).astype(np.int64))

    def cudnn(self) -> bool:
        return self.cuda and bool(torch.backends.cudnn.enabled) and _cudnn_version() is not None

    def threads(self) -> Dict[str, int]:
        return threads()

    def conv_kernel(self, cudnn: bool) -> str:
        autotune = "on" if torch.backends.cudnn.benchmark else "off"
        return f"torch.nn.Conv2d (cuDNN, benchmark autotuning {autotune})" if cudnn else "torch.nn.Conv2d (CPU)"

    def lstm_kernel(self, cudnn: bool) -> str:
        return ("torch.nn.LSTM (cuDNN)" if cudnn
                else "torch.nn.LSTM (CPU: PyTorch 0.4.1's autograd LSTM cell, stepped per time step)")

    def gru_kernel(self, cudnn: bool) -> str:
        return ("torch.nn.GRU (cuDNN, fused)" if cudnn
                else "torch.nn.GRU (CPU: PyTorch 0.4.1's autograd GRU cell, stepped per time step)")

    def lengths_kernels(self, cudnn: bool) -> Tuple[str, str]:
        sort = "batch sorted by length (longest first), pack_padded_sequence, order restored after"
        return ("encoder: " + sort + "; final (h, c) at the last real token; decoder: from that state over the "
                "whole padded batch", sort + "; last real hidden state")

    def ids_layout(self) -> str:
        return "ids (N, T), int64"

    def input_pipeline(self) -> str:
        return "whole split as device tensors, rows picked by a seeded NumPy permutation each epoch"


def make_trainer(spec: dict, data: Any, device: str, seed: int) -> Union[TorchTrainer, DetectionTrainer]:
    """Build the spec's model and optimizer on `device` ('cpu' or 'gpu') with the given seed; a detector workload
    gets detection.py's DetectionTrainer."""
    if is_detector(spec):
        _set_threads()
        return detection.make_trainer(spec, data, trainer.resolve_device(device), seed, versions, threads)
    return TorchTrainer(spec, data, device, seed)
