"""TensorFlow 1.11's graph of a planned model, for the paper-era module (paper.py): tf.layers and tf.nn ops.

Every layer type bench/modelplan.py plans, built with the TensorFlow 1.x API (NHWC, TensorFlow's native
layout: TensorFlow 1.11's CPU conv and pool kernels run NHWC only) and the current module's numerics:

- conv2d is tf.layers.conv2d (use_bias as the plan says), pools tf.layers.max_pooling2d and
  average_pooling2d (TensorFlow's 'same' average counts real values only, the plan's definition),
  global_avgpool a tf.reduce_mean over H and W, lrn tf.nn.local_response_normalization (the plan's
  convention is TensorFlow's own). Every image layer's static shape is checked against the plan.
- batchnorm is tf.layers.batch_normalization(fused=False) with the plan's momentum (Keras' convention,
  TensorFlow's too) and epsilon, batch statistics while training (the `training` placeholder): the
  unfused form, as the current module's Keras 3 layer computes it, because TensorFlow 1.11's fused kernel
  raises an epsilon under 1.001e-5 to that (the plan's default is 1e-5) and keeps the moving variance
  Bessel-corrected. Its moving-statistics updates go to tf.GraphKeys.UPDATE_OPS (the train op runs them).
- a residual block is activation(branch(x) + shortcut(x)) (an empty shortcut is the identity), a concat
  tf.concat of its branches on channels; each block's layers live in a variable scope of their own.
- a gru is tf.keras.layers.GRU(reset_after=True, recurrent_activation='sigmoid'): cuDNN's form and gates
  and Keras' initializers, the current module's layer and parameters (TensorFlow 1.11's GRUCell and
  GRUBlockCell reset before the recurrent product and keep one bias per gate: other parameters). On a GPU
  with rnn_kernel "fused" (the default) it is tf.keras.layers.CuDNNGRU, the same weights in cuDNN's
  kernel (GPU-only in TensorFlow 1.11); on a CPU both switch values run GRU's loop, as the current
  module's use_cudnn="auto" does.
- the LSTM is tf.nn.dynamic_rnn over tf.nn.rnn_cell.LSTMCell (paper.py's docstring says why).
"""

from typing import Any, Dict, List, Optional, Tuple

import tensorflow as tf

from bench import modelplan, switches

# Keras' embedding initializer (uniform +-0.05), as the current-era module's keras.layers.Embedding.
EMBEDDING_INIT_RANGE = 0.05
ACTIVATIONS = {None: None, "linear": None, "relu": tf.nn.relu, "tanh": tf.tanh, "sigmoid": tf.sigmoid}
LRN_SETTINGS = ("depth_radius", "bias", "alpha", "beta")  # the plan's names are tf.nn's


def check_shape(x: tf.Tensor, layer: modelplan.Layer) -> None:
    """The graph's static per-example shape must be the plan's (a wrong padding rule would differ)."""
    got = x.shape.as_list()[1:]
    want = list(layer.output.dims)
    if got != want:
        raise RuntimeError(f"layer {layer.index} ({layer.type}): TensorFlow built {got}, the plan says {want}")


def fused_gru(gpu: bool) -> bool:
    """Whether this run's gru layers are cuDNN's fused kernel: on a GPU unless the rnn_kernel switch says plain."""
    return gpu and switches.value(switches.RNN_KERNEL) == "fused"


def _activate(x: tf.Tensor, name: Optional[str]) -> tf.Tensor:
    fn = ACTIVATIONS[name]
    return x if fn is None else fn(x)


def _lstm(x: tf.Tensor, layer: modelplan.Layer, scope: str, lengths: Optional[tf.Tensor],
          initial_state: Optional[tf.nn.rnn_cell.LSTMStateTuple]) -> Tuple[tf.Tensor, Any]:
    """tf.nn.dynamic_rnn over an LSTMCell: (the layer's output, its final LSTMStateTuple)."""
    cell = tf.nn.rnn_cell.LSTMCell(layer["units"])
    outputs, state = tf.nn.dynamic_rnn(
        cell, x, sequence_length=lengths if layer["use_lengths"] else None,
        initial_state=initial_state, dtype=tf.float32, scope=scope,
    )
    # With sequence_length, outputs after each sequence's end are zeros and the state is the one
    # after its last real token; without it, both come from the last step.
    return (outputs if layer["return_sequences"] else state.h), state


def _gru(x: tf.Tensor, layer: modelplan.Layer, scope: str, gpu: bool) -> tf.Tensor:
    """A gru over every step of x (padding included): Keras' GRU in cuDNN's form, or CuDNNGRU (fused_gru)."""
    if fused_gru(gpu):
        return tf.keras.layers.CuDNNGRU(layer["units"], return_sequences=layer["return_sequences"], name=scope)(x)
    return tf.keras.layers.GRU(layer["units"], return_sequences=layer["return_sequences"], reset_after=True,
                               recurrent_activation="sigmoid", name=scope)(x)


def _dense(x: tf.Tensor, layer: modelplan.Layer, scope: str) -> tf.Tensor:
    activation = ACTIVATIONS[layer["activation"]]
    if layer.input.kind != modelplan.SEQUENCE:
        return tf.layers.dense(x, layer["units"], activation=activation, name=scope)
    steps = tf.shape(x)[1]  # every step: one matmul over (N*T, units)
    flat = tf.reshape(x, [-1, layer.input.features])
    flat = tf.layers.dense(flat, layer["units"], activation=activation, name=scope)
    return tf.reshape(flat, [-1, steps, layer["units"]])


def _embedding(x: tf.Tensor, layer: modelplan.Layer, scope: str) -> tf.Tensor:
    with tf.variable_scope(scope):
        table = tf.get_variable(
            "embeddings", [layer["input_dim"], layer["output_dim"]], dtype=tf.float32,
            initializer=tf.random_uniform_initializer(-EMBEDDING_INIT_RANGE, EMBEDDING_INIT_RANGE))
    return tf.nn.embedding_lookup(table, x)


def _image_layer(x: tf.Tensor, layer: modelplan.Layer, scope: str, inputs: Any) -> tf.Tensor:
    """An image-to-image (or, global_avgpool, image-to-vector) layer."""
    kind = layer.type
    if kind == "conv2d":
        return tf.layers.conv2d(x, layer["filters"], layer["kernel"], strides=layer["stride"],
                                padding=layer["padding"], activation=ACTIVATIONS[layer["activation"]],
                                use_bias=layer["bias"], name=scope)
    if kind in modelplan.POOLS:
        pool = tf.layers.max_pooling2d if kind == "maxpool2d" else tf.layers.average_pooling2d
        return pool(x, layer["pool"], layer["stride"], padding=layer["padding"], name=scope)
    if kind == "global_avgpool":
        return tf.reduce_mean(x, axis=[1, 2], name=scope)
    if kind == "batchnorm":
        return tf.layers.batch_normalization(x, momentum=layer["momentum"], epsilon=layer["epsilon"],
                                             training=inputs.training, fused=False, name=scope)
    if kind == "lrn":
        return tf.nn.local_response_normalization(x, name=scope, **{key: layer[key] for key in LRN_SETTINGS})
    if kind == "residual":
        with tf.variable_scope(scope):
            branch, _ = stack(layer.branch, x, inputs, "branch")
            shortcut, _ = stack(layer.shortcut, x, inputs, "shortcut")  # no layers: the identity
            return _activate(branch + shortcut, layer["activation"])
    if kind == "concat":
        with tf.variable_scope(scope):
            outs = [stack(branch, x, inputs, f"branch{b}_")[0] for b, branch in enumerate(layer.branches)]
            return tf.concat(outs, axis=-1)
    raise modelplan.SpecError(f"layer {layer.index}: {kind} is not an image layer")


def stack(layers: List[modelplan.Layer], x: tf.Tensor, inputs: Any, prefix: str,
          initial_state: Any = None) -> Tuple[tf.Tensor, Any]:
    """The planned layers applied to x in order: (output, the final state of the last LSTM built).

    `inputs` holds paper.py's placeholders (training, lengths) and whether the graph runs on a GPU (gpu)."""
    state = None
    for layer in layers:
        kind = layer.type
        scope = f"{prefix}{layer.index}_{kind}"
        if kind in modelplan.WINDOWED or kind in ("global_avgpool", "batchnorm", "lrn", "residual", "concat"):
            x = _image_layer(x, layer, scope, inputs)
            check_shape(x, layer)
        elif kind == "activation":
            x = _activate(x, layer["activation"])
        elif kind == "dropout":
            x = tf.layers.dropout(x, rate=layer["rate"], training=inputs.training, name=scope)
        elif kind == "flatten":
            x = tf.reshape(x, [-1, layer.output.size])
        elif kind == "dense":
            x = _dense(x, layer, scope)
        elif kind == "embedding":
            x = _embedding(x, layer, scope)
        elif kind == "gru":
            x = _gru(x, layer, scope, inputs.gpu)
        elif kind == "lstm":
            if layer["use_lengths"] and inputs.lengths is None:
                raise modelplan.SpecError(f"layer {layer.index}: use_lengths needs the data's len array")
            start = initial_state if layer["initial_state"] == "encoder" else None
            x, state = _lstm(x, layer, scope, inputs.lengths, start)
    return x, state


def kernels(model: modelplan.ModelPlan, gpu: bool) -> Dict[str, str]:
    """What runs each of the model's layer types (Trainer.info()'s kernels)."""
    types = {layer.type for layer in model.flat_layers}
    out = {}
    if "conv2d" in types:
        out["conv2d"] = "tf.layers.conv2d (" + ("cuDNN" if gpu else "TensorFlow CPU kernels") + ")"
    if "maxpool2d" in types:
        out["maxpool2d"] = "tf.layers.max_pooling2d (TensorFlow's 'same' rule)"
    if "avgpool2d" in types:
        out["avgpool2d"] = "tf.layers.average_pooling2d (TensorFlow's 'same' average over real values)"
    if "batchnorm" in types:
        out["batchnorm"] = ("tf.layers.batch_normalization(fused=False) (batch statistics in training, moving "
                            "statistics in evaluation; updates run with the train op)")
    if "residual" in types:
        out["residual"] = "activation(branch(x) + shortcut(x)); projection = 1x1 conv2d(use_bias=False) + batchnorm"
    if "concat" in types:
        out["concat"] = "tf.concat of the branches' outputs on channels (the last axis, NHWC)"
    if "lrn" in types:
        out["lrn"] = "tf.nn.local_response_normalization on the last axis (NHWC), the plan's own parameters"
    if "gru" in types:
        out["gru"] = ("tf.keras.layers.CuDNNGRU (cuDNN)" if fused_gru(gpu) else
                      "tf.keras.layers.GRU(reset_after=True, recurrent_activation='sigmoid') (Keras' loop over all "
                      "steps, padding included)")
    lstms = [layer for layer in model.all_layers if layer.type == "lstm"]
    if lstms:
        out.update(_lstm_kernels(lstms, gpu, model.encoder is not None))
    if model.kind == "sequence":
        out["dense"] = "tf.layers.dense on (N*T, units): one matmul over every step"
    return out


def _lstm_kernels(lstms: List[modelplan.Layer], gpu: bool, seq2seq: bool) -> Dict[str, str]:
    uses_lengths = any(layer["use_lengths"] for layer in lstms)
    form = "tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell)" + (" with sequence_length" if uses_lengths else "")
    if gpu:
        form += (" (per-step CUDA kernels and cuBLAS matmuls, not cuDNN: TensorFlow 1.11's CudnnLSTM "
                 "takes no sequence lengths)")
    else:
        form += " (per-step TensorFlow CPU kernels in a tf.while_loop)"
    out = {"lstm": form}
    if uses_lengths:
        out["lstm_lengths"] = ("sequence_length: the loop stops at the batch's longest sequence, outputs "
                               "after each end are zeros, the state is the one at each last real token")
    if seq2seq:
        out["lstm_state"] = "encoder's final LSTMStateTuple at the last real token -> decoder initial_state"
    return out
