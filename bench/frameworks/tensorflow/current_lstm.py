"""TensorFlow 2's LSTM for the current-era module (current.py): one tf.keras.layers.LSTM's weights, three forms.

The LSTM reads real lengths, derived from the post-padded ids (check_post_padded guards the
contract). On a GPU it is tf.keras.layers.LSTM given the right-padded mask, the form that runs
TensorFlow's cuDNN kernel (CudnnRNNV3 with sequence lengths). On the CPU it runs the same weights
through one of two forms, both over the padded batch up to its longest sequence, reading each
sequence's state at its last real step (an LSTM never looks ahead, so the padding after it cannot
change that state):
- TensorFlow's fused LSTM kernel, tf.raw_ops.BlockLSTM, up to BLOCK_LSTM_MAX_UNITS units. BlockLSTM
  (not BlockLSTMV2, which takes Keras' gate order directly) because BlockLSTMV2's gradient is wrong in
  TensorFlow 2.21 (it disagrees with autodiff of the same cell; BlockLSTM's agrees): the gates are
  reordered to BlockLSTM's i, c, f, o and its forget_bias is 0, which is the same cell.
- Above that, a split recurrence (_recurrence): the input projection of all steps is one matmul
  before the loop, a tf.while_loop runs only h @ recurrent_kernel and the gates, and its
  tf.custom_gradient runs the loop backwards for the gate gradients, then the recurrent kernel's
  gradient is one matmul over all steps. BlockLSTM's gradient kernel adds a batch-sized outer
  product into the whole weight gradient at every step, which makes it slower as the layer widens
  (forward + backward of one layer and batch, one thread: 1024 units, lstm-ptb: 7.5 s vs 0.6 s;
  256 units, seq2seq-manythings: 0.38 s vs 0.30 s); on long narrow sequences (lstm-imdb, 500
  steps x 100 units: 0.39 s vs 0.98 s) BlockLSTM's fused steps beat the loop's per-op cost.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

# CPU LSTMs up to this many units run TensorFlow's fused BlockLSTM, wider ones the split
# recurrence (see the module docstring: measured crossover, one thread).
BLOCK_LSTM_MAX_UNITS = 128

keras = tf.keras  # TensorFlow 2's layer API (Keras 3 in TensorFlow 2.21)


def _icfo(w: tf.Tensor) -> tf.Tensor:
    """Gate blocks along the last axis from Keras' order (i, f, c, o) to BlockLSTM's (i, c, f, o)."""
    i, f, c, o = tf.split(w, 4, axis=-1)
    return tf.concat([i, c, f, o], axis=-1)


def _recurrence(xw: tf.Tensor, h0: tf.Tensor, c0: tf.Tensor, r: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """The LSTM recurrence over time-major input projections xw (T, N, 4U), Keras' gates i, f, c, o.

    Returns every step's h and c, (T, N, U) each. Its gradient runs the steps backwards with only
    the batch-sized matmul by r's transpose inside the loop; r's gradient is one matmul after it.
    """

    @tf.custom_gradient
    def run(xw: tf.Tensor, h0: tf.Tensor, c0: tf.Tensor, r: tf.Tensor):
        steps = tf.shape(xw)[0]

        def step(t, h, c, hs, cs, gates):
            i, f, g, o = tf.split(xw[t] + tf.matmul(h, r), 4, axis=1)
            i, f, g, o = tf.sigmoid(i), tf.sigmoid(f), tf.tanh(g), tf.sigmoid(o)
            c = f * c + i * g
            h = o * tf.tanh(c)
            return t + 1, h, c, hs.write(t, h), cs.write(t, c), gates.write(t, tf.concat([i, f, g, o], 1))

        def arrays():
            return tf.TensorArray(xw.dtype, size=steps)

        loop = tf.while_loop(lambda t, *_: t < steps, step, (0, h0, c0, arrays(), arrays(), arrays()))
        hs, cs, gates = (a.stack() for a in loop[3:])

        def grad(d_hs: tf.Tensor, d_cs: tf.Tensor):
            h_prev = tf.concat([h0[None], hs[:-1]], 0)
            c_prev = tf.concat([c0[None], cs[:-1]], 0)
            tanh_c = tf.tanh(cs)
            # Transposed once: matmul(..., transpose_b=True) re-packs the whole kernel at every step (~3x slower).
            r_t = tf.transpose(r)

            def back(t, dh, dc, dzs):
                i, f, g, o = tf.split(gates[t], 4, axis=1)
                dh = dh + d_hs[t]
                dc = dc + d_cs[t] + dh * o * (1.0 - tanh_c[t] ** 2)
                dz = tf.concat(
                    [dc * g * i * (1.0 - i), dc * c_prev[t] * f * (1.0 - f), dc * i * (1.0 - g * g),
                     dh * tanh_c[t] * o * (1.0 - o)], 1,
                )
                return t - 1, tf.matmul(dz, r_t), dc * f, dzs.write(t, dz)

            start = (steps - 1, tf.zeros_like(h0), tf.zeros_like(c0), arrays())
            _, dh0, dc0, dzs = tf.while_loop(lambda t, *_: t >= 0, back, start)
            dz = dzs.stack()
            d_r = tf.matmul(tf.reshape(h_prev, [-1, tf.shape(r)[0]]), tf.reshape(dz, [-1, tf.shape(r)[1]]),
                            transpose_a=True)
            return dz, dh0, dc0, d_r

        return (hs, cs), grad

    return run(xw, h0, c0, r)


class LSTM:
    """An LSTM whose weights are a tf.keras.layers.LSTM's, run by cuDNN (GPU), BlockLSTM or the split
    recurrence (CPU).

    Called as (x, lengths, training, initial_state=[h, c] or None); returns the output, or
    [output, h, c] (the state at each sequence's last real step) with return_state.
    """

    def __init__(self, units: int, use_lengths: bool, return_sequences: bool, fused_cpu: bool,
                 return_state: bool = False):
        # Default activations, no recurrent dropout, unroll=False: the cuDNN-eligible settings.
        self.lstm = keras.layers.LSTM(units, return_sequences=return_sequences, return_state=return_state)
        self.units = units
        self.use_lengths = use_lengths
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.fused_cpu = fused_cpu  # the CPU forms below, rather than Keras' layer (cuDNN on a GPU)
        self.cpu_kernel = "BlockLSTM" if units <= BLOCK_LSTM_MAX_UNITS else "split"

    @property
    def trainable_variables(self) -> list:
        return self.lstm.trainable_variables

    def __call__(self, x: tf.Tensor, lengths: tf.Tensor | None, training: bool = False,
                 initial_state: list | None = None) -> Any:
        if not self.lstm.built:
            self.lstm.build(tuple(x.shape))
        lengths = lengths if self.use_lengths else None
        if not self.fused_cpu:
            return self.masked(x, lengths, training, initial_state)
        if self.cpu_kernel == "BlockLSTM":
            return self.fused(x, lengths, initial_state)
        return self.split(x, lengths, initial_state)

    def masked(self, x: tf.Tensor, lengths: tf.Tensor | None, training: bool = False,
               initial_state: list | None = None) -> Any:
        """tf.keras.layers.LSTM with a right-padded mask: cuDNN on a GPU (TF's loop elsewhere)."""
        mask = None if lengths is None else tf.sequence_mask(lengths, tf.shape(x)[1])
        result = self.lstm(x, mask=mask, training=training, initial_state=initial_state)
        out, state = (result[0], list(result[1:])) if self.return_state else (result, [])
        if self.return_sequences and mask is not None:  # zeros after the end, on every path
            out = out * tf.cast(mask, out.dtype)[:, :, None]
        return [out, *state] if self.return_state else out

    def fused(self, x: tf.Tensor, lengths: tf.Tensor | None, initial_state: list | None = None) -> Any:
        """tf.raw_ops.BlockLSTM over the padded batch, then each sequence's last real step (CPU)."""
        cell = self.lstm.cell
        h0, c0 = self._initial(x, initial_state)
        no_peephole = tf.zeros([self.units], x.dtype)
        outputs = tf.raw_ops.BlockLSTM(
            seq_len_max=tf.cast(self._run_steps(x, lengths), tf.int64),
            x=tf.transpose(x, [1, 0, 2]),  # time-major
            cs_prev=c0,
            h_prev=h0,
            w=_icfo(tf.concat([cell.kernel, cell.recurrent_kernel], axis=0)),
            wci=no_peephole, wcf=no_peephole, wco=no_peephole,
            b=_icfo(cell.bias),
            forget_bias=0.0,
            cell_clip=-1.0,  # no clipping
            use_peephole=False,
        )
        # Steps past the batch's longest sequence are not computed (BlockLSTM leaves zeros there).
        return self._read(outputs[6], outputs[1], lengths)

    def split(self, x: tf.Tensor, lengths: tf.Tensor | None, initial_state: list | None = None) -> Any:
        """The split recurrence (_recurrence) over the padded batch, then each sequence's last real step."""
        cell = self.lstm.cell
        steps, run_steps = tf.shape(x)[1], self._run_steps(x, lengths)
        # One matmul projects every step's input; the loop only adds h @ recurrent_kernel.
        xw = tf.transpose(tf.tensordot(x[:, :run_steps], cell.kernel, 1) + cell.bias, [1, 0, 2])
        # The kernel's value, not the variable: the tape takes its gradient through the read.
        r = tf.convert_to_tensor(cell.recurrent_kernel)
        hs, cs = _recurrence(xw, *self._initial(x, initial_state), r)
        after = [[0, steps - run_steps], [0, 0], [0, 0]]  # zeros past the longest sequence, as BlockLSTM
        return self._read(tf.pad(hs, after), tf.pad(cs, after), lengths)

    def _initial(self, x: tf.Tensor, initial_state: list | None) -> tuple[tf.Tensor, tf.Tensor]:
        if initial_state is not None:
            return initial_state[0], initial_state[1]
        zeros = tf.zeros([tf.shape(x)[0], self.units], x.dtype)
        return zeros, zeros

    @staticmethod
    def _run_steps(x: tf.Tensor, lengths: tf.Tensor | None) -> tf.Tensor:
        return tf.shape(x)[1] if lengths is None else tf.reduce_max(lengths)

    def _read(self, hs: tf.Tensor, cs: tf.Tensor, lengths: tf.Tensor | None) -> Any:
        """The layer's result from every step's h and c, time-major (T, N, U)."""
        steps, batch = tf.shape(hs)[0], tf.shape(hs)[1]
        last = tf.fill([batch], steps - 1) if lengths is None else lengths - 1
        where = tf.stack([last, tf.range(batch, dtype=last.dtype)], axis=1)
        h_last = tf.gather_nd(hs, where)
        if self.return_sequences:
            out = tf.transpose(hs, [1, 0, 2])
            if lengths is not None:
                out = out * tf.cast(tf.sequence_mask(lengths, steps), out.dtype)[:, :, None]
        else:
            out = h_last
        return [out, h_last, tf.gather_nd(cs, where)] if self.return_state else out
