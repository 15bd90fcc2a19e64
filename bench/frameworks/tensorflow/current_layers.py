"""The current-era TensorFlow module's model (current.py): planned layers translated into tf.keras layers.

A stack applies its layers in order (the LSTMs, current_lstm.py, get the real lengths derived from the
post-padded ids); residual blocks, concats and LRN are small callables over tf.keras layers, so every layer
type bench/modelplan.py plans is built from TensorFlow 2's layer API with Keras' default initializers (the
Keras module's model). Images are NHWC, TensorFlow's native layout: channels are the last axis.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from bench import modelplan, switches
from bench.frameworks.tensorflow.current_lstm import LSTM

keras = tf.keras  # TensorFlow 2's layer API (Keras 3 in TensorFlow 2.21)


class Stack:
    """Layers applied in order; the lengths (from the post-padded ids) go to the LSTM layers.

    An LSTM built with return_state hands its final [h, c] out; one marked takes_state starts from
    the state given to the stack.
    """

    def __init__(self, layers: list[Any], reads_lengths: bool, takes_state: Any = None):
        self.layers = layers
        self.reads_lengths = reads_lengths
        self.takes_state = takes_state  # the layer that starts from the given state

    @property
    def trainable_variables(self) -> list:
        return [v for layer in self.layers for v in layer.trainable_variables]

    def __call__(self, x: Any, training: bool, initial_state: list | None = None) -> tuple[tf.Tensor, list | None]:
        x = tf.convert_to_tensor(x)
        lengths = None
        if self.reads_lengths:  # post-padded ids: the real length is the number of non-zero ids
            lengths = tf.math.count_nonzero(x, axis=1, dtype=tf.int32)
        state = None
        for layer in self.layers:
            if isinstance(layer, LSTM):
                x = layer(x, lengths, training, initial_state if layer is self.takes_state else None)
                if layer.return_state:
                    x, *state = x
            elif isinstance(layer, _TRAINING_AWARE):
                x = layer(x, training=training)
            else:
                x = layer(x)  # Dense on (N, T, units): one matmul over (N*T, units)
        return x, state


class Residual:
    """One residual block: activation(branch(x) + shortcut(x)); an empty shortcut is the identity."""

    def __init__(self, branch: Stack, shortcut: Stack, activation: str | None):
        self.branch = branch
        self.shortcut = shortcut
        self.activation = keras.activations.get(activation)  # None -> linear

    @property
    def trainable_variables(self) -> list:
        return self.branch.trainable_variables + self.shortcut.trainable_variables

    def __call__(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        return self.activation(self.branch(x, training)[0] + self.shortcut(x, training)[0])


class Concat:
    """Parallel branches from one input, their outputs stacked on channels (NHWC: the last axis)."""

    def __init__(self, branches: list[Stack]):
        self.branches = branches

    @property
    def trainable_variables(self) -> list:
        return [v for branch in self.branches for v in branch.trainable_variables]

    def __call__(self, x: tf.Tensor, training: bool = False) -> tf.Tensor:
        return tf.concat([branch(x, training)[0] for branch in self.branches], axis=-1)


class _LRN:
    """tf.nn.local_response_normalization over the channels (NHWC: the last axis), the plan's own convention."""

    def __init__(self, layer: modelplan.Layer):
        self.settings = {key: layer[key] for key in ("depth_radius", "bias", "alpha", "beta")}

    @property
    def trainable_variables(self) -> list:
        return []  # no parameters

    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        return tf.nn.local_response_normalization(x, **self.settings)


# Layers whose call takes `training` (dropout on in training, batchnorm's batch statistics vs moving ones).
_TRAINING_AWARE = (keras.layers.Dropout, keras.layers.BatchNormalization, Residual, Concat)


class SpecNet:
    """A stack of layers built from a spec: model(x, training) -> outputs."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self.layers = stack.layers

    @property
    def trainable_variables(self) -> list:
        return self.stack.trainable_variables

    def __call__(self, x: Any, training: bool = False) -> tf.Tensor:
        return self.stack(x, training)[0]


class EncoderDecoderNet:
    """Encoder over inputs["x"]; its last LSTM's final (h, c) starts the decoder LSTM over inputs["x_dec"]."""

    def __init__(self, encoder: Stack, decoder: Stack):
        self.encoder = encoder
        self.decoder = decoder
        self.layers = encoder.layers + decoder.layers

    @property
    def trainable_variables(self) -> list:
        return self.encoder.trainable_variables + self.decoder.trainable_variables

    def __call__(self, inputs: dict, training: bool = False) -> tf.Tensor:
        _, state = self.encoder(inputs["x"], training)
        return self.decoder(inputs["x_dec"], training, initial_state=state)[0]


def build_model(model: modelplan.ModelPlan, device: str) -> SpecNet | EncoderDecoderNet:
    """Translate planned layers into tf.keras layers (Keras infers the shapes when they are first called)."""
    if model.encoder is None:
        return SpecNet(_build_stack(model.layers, device, "layer"))
    encoder = _build_stack(model.encoder, device, "encoder layer", state_out=True)
    return EncoderDecoderNet(encoder, _build_stack(model.layers, device, "layer"))


def build_layers(spec_layers: list[modelplan.Layer], device: str, what: str) -> SpecNet:
    """One planned layer list as a model of its own (a detector's trunk or head, current_detection.py): the same
    layers build_model makes, shapes inferred when first called, so an image stack takes any H and W."""
    return SpecNet(_build_stack(spec_layers, device, what))


def _build_stack(spec_layers: list[modelplan.Layer], device: str, what: str, state_out: bool = False) -> Stack:
    """The layers of one list; state_out: its last layer (an LSTM) also returns its final state."""
    layers = keras.layers
    stack: list[Any] = []
    takes_state = None
    for i, layer in enumerate(spec_layers):
        kind = layer["type"]
        if kind == "conv2d":
            stack.append(layers.Conv2D(
                layer["filters"], layer["kernel"], strides=layer["stride"],
                padding=layer["padding"], activation=layer["activation"], use_bias=layer["bias"],
            ))
        elif kind in modelplan.POOLS:
            # TensorFlow's own 'same' rule (out = ceil(in / stride); an average over real values only)
            # is the spec's definition.
            pool = layers.MaxPooling2D if kind == "maxpool2d" else layers.AveragePooling2D
            stack.append(pool(layer["pool"], strides=layer["stride"], padding=layer["padding"]))
        elif kind == "lrn":
            stack.append(_LRN(layer))
        elif kind == "global_avgpool":
            stack.append(layers.GlobalAveragePooling2D())
        elif kind == "batchnorm":  # the plan's momentum is Keras' (the moving statistics' weight)
            stack.append(layers.BatchNormalization(momentum=layer["momentum"], epsilon=layer["epsilon"]))
        elif kind == "activation":
            stack.append(layers.Activation(layer["activation"]))
        elif kind == "residual":
            stack.append(Residual(_build_stack(layer.branch, device, f"{what} {i} branch layer"),
                                   _build_stack(layer.shortcut, device, f"{what} {i} shortcut layer"),
                                   layer["activation"]))
        elif kind == "concat":
            stack.append(Concat([_build_stack(branch, device, f"{what} {i} branch {b} layer")
                                  for b, branch in enumerate(layer.branches)]))
        elif kind == "dropout":
            stack.append(layers.Dropout(layer["rate"]))
        elif kind == "flatten":
            stack.append(layers.Flatten())
        elif kind == "dense":
            stack.append(layers.Dense(layer["units"], activation=layer["activation"]))
        elif kind == "embedding":
            stack.append(layers.Embedding(layer["input_dim"], layer["output_dim"]))
        elif kind == "gru":  # the Keras module's layer: reset_after is cuDNN's form (two bias vectors per gate set)
            stack.append(layers.GRU(layer["units"], return_sequences=layer["return_sequences"], reset_after=True,
                                    use_cudnn=switches.keras_use_cudnn()))
        elif kind == "lstm":
            if layer["use_lengths"] and not any(p["type"] == "embedding" for p in spec_layers[:i]):
                raise modelplan.SpecError(f"{what} {i}: use_lengths needs an embedding before the lstm")
            lstm = LSTM(layer["units"], layer["use_lengths"], layer["return_sequences"], device == "cpu",
                         return_state=state_out and i == len(spec_layers) - 1)
            if layer["initial_state"] == "encoder":
                takes_state = lstm
            stack.append(lstm)
    reads_lengths = any(layer["type"] == "lstm" and layer["use_lengths"] for layer in spec_layers)
    return Stack(stack, reads_lengths, takes_state)
