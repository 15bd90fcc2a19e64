"""Trainable parameters of a model plan's layers, counted from the plan's shapes alone (convs, dense,
batchnorm gamma and beta, residual blocks and concat branches recursively): the count every framework
must report, worked out without any framework."""

from __future__ import annotations


def trainable(layers) -> int:
    """Trainable parameters of planned layers (bench.modelplan.Layer), residual blocks and concat branches
    recursively."""
    n = 0
    for layer in layers:
        if layer.type == "conv2d":
            bias = layer["filters"] if layer["bias"] else 0
            n += layer["kernel"] ** 2 * layer.input.features * layer["filters"] + bias
        elif layer.type == "dense":
            n += (layer.input.features + 1) * layer["units"]
        elif layer.type == "batchnorm":
            n += 2 * layer.input.features
        elif layer.type == "residual":
            n += trainable(layer.branch) + trainable(layer.shortcut)
        elif layer.type == "concat":
            n += sum(trainable(branch) for branch in layer.branches)
    return n


def planned_params(layers) -> int:
    """trainable() plus each embedding's table and each GRU's weights (bench.modelplan.gru_params: cuDNN's two bias
    vectors per gate set, the count every framework builds); LSTMs are left out (one or two biases per gate differ
    by framework)."""
    from bench.modelplan import gru_params

    embeddings = sum(layer["input_dim"] * layer["output_dim"] for layer in layers if layer.type == "embedding")
    return trainable(layers) + embeddings + sum(gru_params(layer) for layer in layers if layer.type == "gru")
