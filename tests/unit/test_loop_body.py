"""A While's body as the op runs it (ops/control_flow/loop_body.py): the side part of a gradient
loop (its sums of the weights' gradients) on a second thread gives the serial loop's bits, and a
failure there is the step's error; an op of the body computed only from captured values runs
once a loop run, a stateful one at every iteration, and a Keras LSTM trains to the same bits."""
import collections
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.ops import registry
from tensorweave.ops.control_flow import loop_body

pytestmark = pytest.mark.usefixtures("graph")


def _sessions():
    """(a session with a pool of two threads, one with the caller's thread alone)."""
    return (tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)),
            tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)))


def _counting_side_work(monkeypatch) -> list:
    runs = []

    class Counted(loop_body._SideWork):
        def __init__(self, *args):
            super().__init__(*args)
            runs.append(self)
    monkeypatch.setattr(loop_body, "_SideWork", Counted)
    return runs


@pytest.mark.parametrize("setting", ["parallel", "auto"])
def test_an_lstm_gradient_loop_pipelined_gives_the_serial_bits(monkeypatch, setting):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", setting)
    runs = _counting_side_work(monkeypatch)
    # (the kernel's gradient summed in the loop, as before its products were summed after it: the
    # side part's largest share)
    monkeypatch.setattr(loop_body, "_summed_products", lambda *args: ())
    rng = np.random.RandomState(0)
    x = tf.placeholder(tf.float32, [None, 12, 5])
    cell = tf.nn.rnn_cell.LSTMCell(16, initializer=tf.constant_initializer(rng.randn(21, 64).astype(np.float32) * 0.3))
    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    loss = tf.reduce_sum(tf.square(out[:, -1] - 0.5))
    grads = tf.gradients(loss, [x] + tf.trainable_variables())
    feeds = {x: rng.randn(7, 12, 5).astype(np.float32)}
    values = []
    for sess in _sessions():
        with sess:
            sess.run(tf.global_variables_initializer())
            values.append([sess.run(grads, feeds) for _ in range(8)])
    two_threads, serial = values
    for run in two_threads:
        for a, b in zip(run, serial[0]):
            assert a.tobytes() == b.tobytes()
    assert runs   # (the side part ran beside the rest: 8 times forced, at least in the trials measured)
    assert len(runs) == 8 if setting == "parallel" else 1 <= len(runs) <= 8


def test_a_failure_in_the_side_part_is_the_steps_error(monkeypatch):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    runs = _counting_side_work(monkeypatch)
    table = tf.constant(np.arange(8 * 4, dtype=np.float32).reshape(8, 4))
    w = tf.constant(np.ones((4, 4), np.float32))
    n = tf.placeholder(tf.int32, [])

    def body(i, h, total):
        row = tf.gather(table, i, name="row_of_i") * 1.0
        for _ in range(4):   # (enough work to be worth a second thread)
            row = tf.matmul(tf.expand_dims(row, 0), w)[0] + 1.0
        return i + 1, tf.tanh(h), total + row

    _, _, total = tf.while_loop(lambda i, h, t: i < n, body, [0, tf.zeros([4]), tf.zeros([4])])
    sess = _sessions()[0]
    with sess:
        np.testing.assert_allclose(sess.run(total, {n: 3}), _numpy_total(3), rtol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError, match="row_of_i"):
            sess.run(total, {n: 9})
    assert len(runs) == 2


def test_a_pipelined_loop_takes_short_turns_at_the_gil_and_leaves_the_processs_interval(monkeypatch):
    """While a loop runs on two threads (its side part on the pool's), a thread waits at most
    100 us for the GIL the other holds (Python's default: 5 ms); on one thread, and after the
    step, the interval is the process's own."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "auto")   # (the step's first run: serial)
    monkeypatch.setattr(loop_body._Choice, "pipelined", lambda choice: True)
    runs = _counting_side_work(monkeypatch)
    seen = []
    factory = registry.kernel_for("Tanh")

    def recording(node, ctx):
        run = factory(node, ctx)

        def tanh(x):
            seen.append(sys.getswitchinterval())
            return run(x)
        return tanh
    monkeypatch.setitem(registry.KERNELS, ("Tanh", "CPU"), recording)
    w = tf.constant(np.ones((4, 4), np.float32))

    def body(i, h, total):
        row = h
        for _ in range(4):   # (enough work to be worth a second thread)
            row = tf.matmul(tf.expand_dims(row, 0), w)[0] + 1.0
        return i + 1, tf.tanh(h), total + row

    _, _, total = tf.while_loop(lambda i, h, t: i < 3, body, [0, tf.zeros([4]), tf.zeros([4])])
    own = sys.getswitchinterval()
    for sess, expected in zip(_sessions(), (1e-4, own)):
        del seen[:]
        with sess:
            sess.run(total)
        assert seen == pytest.approx([min(own, expected)] * 3)
        assert sys.getswitchinterval() == own
    assert len(runs) == 1


def _numpy_total(n: int) -> np.ndarray:
    table = np.arange(32, dtype=np.float32).reshape(8, 4)
    total = np.zeros(4, np.float32)
    for i in range(n):
        row = table[i]
        for _ in range(4):
            row = row @ np.ones((4, 4), np.float32) + 1.0
        total = total + row
    return total


def _counting_kernel(monkeypatch, op_type: str) -> list:
    calls = []
    factory = registry.kernel_for(op_type)

    def counted(node, ctx):
        run = factory(node, ctx)

        def counting(*args):
            calls.append(node.name)
            return run(*args)
        return counting
    monkeypatch.setitem(registry.KERNELS, (op_type, "CPU"), counted)
    return calls


@pytest.mark.parametrize("setting", ["serial", "parallel"])
def test_an_op_of_captured_values_runs_once_a_loop_run(monkeypatch, setting):
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", setting)
    splits = _counting_kernel(monkeypatch, "Split")
    rng = np.random.RandomState(0)
    kernel = rng.randn(4, 8).astype(np.float32)
    w = tf.constant(kernel)
    n = tf.placeholder(tf.int32, [])

    def body(i, h, noise):
        a, b = tf.split(w, 2, axis=1)   # (of a captured value: the same at every iteration)
        drawn = tf.random_uniform([4], seed=3)   # (stateful: drawn at every iteration)
        return i + 1, tf.tanh(tf.matmul(h, a) + tf.matmul(h, b)), noise + drawn

    _, h, noise = tf.while_loop(lambda i, h, s: i < n, body, [0, tf.ones([2, 4]), tf.zeros([4])])
    expected = np.ones((2, 4), np.float32)
    for _ in range(5):
        expected = np.tanh(expected @ kernel[:, :4] + expected @ kernel[:, 4:])
    with _sessions()[0] as sess:
        got, drawn = sess.run([h, noise], {n: 5})
        np.testing.assert_allclose(got, expected, rtol=1e-5)
        assert splits.count(splits[0]) == 1 and len(splits) == 1
        assert sess.run(h, {n: 0}).tobytes() == np.ones((2, 4), np.float32).tobytes()
        assert len(splits) == 1   # (a loop of no iteration computes none)
        sess.run(h, {n: 3})
        assert len(splits) == 2
    draws = drawn / np.float32(5)
    assert 0 < drawn.min() and drawn.max() < 5 and len(set(draws.tolist())) > 1   # (5 draws summed, not 1 x 5)


def test_a_keras_lstm_trains_to_the_same_bits_with_its_invariant_ops_computed_once(monkeypatch):
    rng = np.random.RandomState(0)
    x, y = rng.randint(1, 50, (48, 10)).astype(np.int32), rng.randint(0, 2, (48, 1)).astype(np.float32)
    splits = _counting_kernel(monkeypatch, "Split")
    weights = []
    for hoisting in (True, False):
        if not hoisting:
            monkeypatch.setattr(loop_body, "_loop_invariants", lambda body, n, outputs: ())
        with tf.Graph().as_default():
            tf.set_random_seed(1)
            net = tf.keras.Sequential([tf.keras.layers.Embedding(50, 8, input_length=10),
                                       tf.keras.layers.LSTM(8, dropout=0.2, recurrent_dropout=0.2),
                                       tf.keras.layers.Dense(1, activation="sigmoid")])
            net.compile(loss="binary_crossentropy", optimizer="adam")
            del splits[:]
            net.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
            weights.append(b"".join(np.ascontiguousarray(w).tobytes() for w in net.get_weights()))
            # 6 batches of 10 steps: the recurrent kernel's Split (the input kernel's and the bias's
            # are before the loop, with the input products of all the steps), and each step's Split of
            # its input products
            in_loop = collections.Counter(name for name in splits if "/while/" in name)
            assert sorted(in_loop.values()) == ([6, 6 * 10] if hoisting else [6 * 10, 6 * 10])
    assert weights[0] == weights[1]


def test_a_loop_that_chose_serial_while_the_second_core_was_taken_tries_again_soon_and_pipelines(monkeypatch):
    """The choice is measured again a few runs after it was made: a loop that measured pipelining
    slower (another process held the second core) pipelines once it measures it faster; a choice
    the trials confirm, or a clear one, is measured less often (issue 23: a 128-step fit kept
    serial)."""
    monkeypatch.delenv("TENSORWEAVE_INTER_OP", raising=False)
    choice = loop_body._Choice()
    modes = ""
    for run in range(200):
        pipelined = choice.pipelined()
        modes += "p" if pipelined else "s"
        choice.ran(pipelined, (1.05 if run < 7 else 0.6) if pipelined else 1.0)   # (quiet from the 8th run)
    trial, first, clear = "ps" * loop_body._TRIALS, loop_body._FIRST_RECHECK, loop_body._CLEAR_RECHECK
    # (a close choice, then a changed one: tried again soon; then clear ones, less and less often)
    expected = "s" + trial + "s" * first + trial + "p" * first + trial + "p" * clear + trial + "p" * 2 * clear
    assert modes == expected[:200]
    choice = loop_body._Choice()
    modes = ""
    for run in range(100):
        pipelined = choice.pipelined()
        modes += "p" if pipelined else "s"
        choice.ran(pipelined, 1.4 if pipelined else 1.0)   # (clearly slower: the GIL, not the load)
    assert modes == ("s" + trial + "s" * clear + trial + "s" * 2 * clear)[:100]


def _summing_loop(n_rows=None, transpose_a=True, read_sum=False, read_product=False, concat=False):
    """A loop summing products a_i^T b_i of slices of two captured [6, r, c] tables into `total`
    (or [a_i^T b_i, a_i^T (2 b_i)] side by side); returns (steps placeholder, total, tables)."""
    rng = np.random.RandomState(3)
    rows = n_rows or [4] * 6
    a_table = [rng.randn(r, 3) for r in rows]
    b_table = [rng.randn(r, 5) for r in rows]
    steps = tf.placeholder(tf.int32, [])
    a_all = tf.constant(np.concatenate(a_table))
    b_all = tf.constant(np.concatenate(b_table))
    starts = tf.constant(np.cumsum([0] + rows)[:-1].astype(np.int32))
    sizes = tf.constant(np.array(rows, np.int32))

    def body(i, h, total):
        a = tf.slice(a_all, tf.stack([starts[i], 0]), tf.stack([sizes[i], -1]))
        b = tf.slice(b_all, tf.stack([starts[i], 0]), tf.stack([sizes[i], -1])) * h
        product = tf.matmul(a if transpose_a else tf.transpose(a), b, transpose_a=transpose_a, name="summed")
        if concat:
            product = tf.concat([product, tf.matmul(a, 2.0 * b, transpose_a=True, name="summed_2")], axis=1)
        h_next = h * 0.5 + tf.reduce_mean(total if read_sum else h) * 0.01
        if read_product:
            h_next += tf.reduce_mean(product) * 0.01
        return i + 1, h_next, tf.add_n([total, product])

    width = 10 if concat else 5
    _, _, total = tf.while_loop(lambda i, h, t: i < steps, body,
                                [0, tf.constant(1.0, tf.float64), tf.constant(np.ones((3, width)))])
    return steps, total, (a_table, b_table)


def _numpy_summed(tables, steps, read_sum=False, read_product=False, concat=False):
    total = np.ones((3, 10 if concat else 5))
    h = 1.0
    for i in range(steps):
        a, b = tables[0][i], tables[1][i] * h
        product = a.T @ b
        if concat:
            product = np.concatenate([product, a.T @ (2.0 * b)], axis=1)
        h_next = h * 0.5 + (total.mean() if read_sum else h) * 0.01
        if read_product:
            h_next += product.mean() * 0.01
        h, total = h_next, total + product
    return total


@pytest.mark.parametrize("concat", [False, True])
def test_products_summed_over_a_loop_are_one_product_after_it(monkeypatch, concat):
    """A loop variable that each iteration adds a_i^T b_i to (a weight's gradient in a gradient
    loop) is its initial value plus one product of the stacked factors, computed after the loop:
    the product's kernel runs once a loop run, not once an iteration."""
    products = _counting_kernel(monkeypatch, "MatMul")
    steps, total, tables = _summing_loop(concat=concat)
    with tf.Session() as sess:
        for n in (6, 1, 0):
            del products[:]
            np.testing.assert_allclose(sess.run(total, {steps: n}), _numpy_summed(tables, n, concat=concat),
                                       rtol=1e-12)
            assert len(products) == (0 if n == 0 else 2 if concat else 1)


@pytest.mark.parametrize("rows, chunk, calls", [([4, 2, 5, 1, 3, 4], None, 6), ([4, 4, 4, 4, 2, 4], 2, 2 + 2)])
def test_products_of_factors_whose_rows_change_are_summed_in_the_loops_order(monkeypatch, rows, chunk, calls):
    """A chunk whose factors' shapes are not the first iteration's is summed iteration by
    iteration (here all six, or the third chunk of two after two chunks' products)."""
    if chunk:
        monkeypatch.setattr(loop_body, "_CHUNK_MULTIPLY_ADDS", chunk * 4 * 3 * 5)
    products = _counting_kernel(monkeypatch, "MatMul")
    steps, total, tables = _summing_loop(n_rows=rows)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(total, {steps: 6}), _numpy_summed(tables, 6), rtol=1e-12)
    assert len(products) == calls


def test_a_chunks_factors_are_let_go_once_its_products_are_computed(monkeypatch):
    """A long loop does not keep every iteration's gate gradients: when the loop ends, the
    factors of the chunks already summed are gone (here 3 chunks of 2 of 7 iterations)."""
    monkeypatch.setattr(loop_body, "_CHUNK_MULTIPLY_ADDS", 2 * 4 * 3 * 5)
    held = []
    finish = loop_body._SumsInChunks.finish

    def finishing(self, vs, i):
        held.append([sum(x is not None for x in f) for f in self.factors[0]])
        finish(self, vs, i)
    monkeypatch.setattr(loop_body._SumsInChunks, "finish", finishing)
    steps, total, tables = _summing_loop(n_rows=[4] * 7)
    with _sessions()[1] as sess:
        np.testing.assert_allclose(sess.run(total, {steps: 7}), _numpy_summed(tables, 7), rtol=1e-12)
    assert held == [[1, 1]]   # (the last iteration's a and b, of the chunk the loop's end makes)


@pytest.mark.parametrize("kind", ["sum read in the loop", "product read in the loop", "not a^T b"])
def test_a_sum_the_loop_reads_or_of_other_products_stays_in_the_loop(monkeypatch, kind):
    products = _counting_kernel(monkeypatch, "MatMul")
    read_sum, read_product = kind == "sum read in the loop", kind == "product read in the loop"
    steps, total, tables = _summing_loop(read_sum=read_sum, read_product=read_product,
                                         transpose_a=kind != "not a^T b")
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(total, {steps: 6}),
                                   _numpy_summed(tables, 6, read_sum=read_sum, read_product=read_product),
                                   rtol=1e-12)
    assert len(products) == 6   # (at every iteration)


def test_an_lstm_gradient_with_its_kernel_gradient_summed_after_the_loop_matches_finite_differences(monkeypatch):
    """dynamic_rnn's kernel gradient, summed after the gradient loop, against central differences
    of the float64 loss, and against the gradient summed in the loop."""
    rng = np.random.RandomState(1)
    x = tf.constant(rng.randn(3, 5, 4))
    w0 = rng.randn(4 + 6, 24) * 0.3
    cell = tf.nn.rnn_cell.BasicLSTMCell(6, dtype=tf.float64)
    with tf.variable_scope("lstm", initializer=tf.constant_initializer(w0)):
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float64)
    loss = tf.reduce_sum(tf.sin(out))
    kernel = [v for v in tf.trainable_variables() if "kernel" in v.name][0]
    grad = tf.gradients(loss, kernel)[0]
    products = _counting_kernel(monkeypatch, "MatMul")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        del products[:]
        got = sess.run(grad)
        in_grad_loop = [p for p in products if "while_grad" in p]
        assert len(in_grad_loop) == 5 + 1   # (the input's and state's product at each step; the kernel's once)
        eps, expected = 1e-6, np.zeros_like(w0)
        for idx in [(0, 0), (3, 7), (9, 23), (5, 12)]:
            for sign in (1, -1):
                w = w0.copy()
                w[idx] += sign * eps
                kernel.load(w, sess)
                expected[idx] += sign * sess.run(loss) / (2 * eps)
            np.testing.assert_allclose(got[idx], expected[idx], rtol=1e-6)
        kernel.load(w0, sess)
    monkeypatch.setattr(loop_body, "_summed_products", lambda *args: ())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(grad), got, rtol=1e-12)


def test_factors_that_do_not_line_up_are_the_products_error():
    steps = tf.placeholder(tf.int32, [])

    def body(i, total):
        a = tf.ones(tf.stack([3 + i // 2, 2]), tf.float64)   # (4 rows from the third iteration)
        return i + 1, tf.add_n([total, tf.matmul(a, tf.ones([3, 4], tf.float64), transpose_a=True, name="summed")])

    _, total = tf.while_loop(lambda i, t: i < steps, body, [0, tf.zeros([2, 4], tf.float64)])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(total, {steps: 2}), np.full((2, 4), 6.0))
        with pytest.raises(tf.errors.InvalidArgumentError, match="summed"):
            sess.run(total, {steps: 3})


def test_summed_products_in_chunks_give_the_same_bits_on_a_pool_thread_and_without_one(monkeypatch):
    """The iterations' products are summed a chunk of iterations at a time (here 2 of 4 x 3 x 5
    multiply-adds: 3 chunks and one of the last iteration for 7), on a pool thread while the loop
    goes on, or on the loop's own: the chunks are the same, and so are the bits."""
    monkeypatch.setattr(loop_body, "_CHUNK_MULTIPLY_ADDS", 2 * 4 * 3 * 5)
    products = _counting_kernel(monkeypatch, "MatMul")
    rng = np.random.RandomState(5)
    a_all, b_all = rng.randn(7, 4, 3).astype(np.float32), rng.randn(7, 4, 5).astype(np.float32)
    steps = tf.placeholder(tf.int32, [])

    def body(i, total):
        return i + 1, tf.add_n([total, tf.matmul(tf.gather(a_all, i), tf.gather(b_all, i), transpose_a=True)])

    _, total = tf.while_loop(lambda i, t: i < steps, body, [0, tf.zeros([3, 5])])
    got = []
    for sess in _sessions():
        with sess:
            got.append([sess.run(total, {steps: n}) for n in (7, 2, 1)])
    assert len(products) == 2 * (4 + 1 + 1)
    for n, pooled, alone in zip((7, 2, 1), *got):
        assert pooled.tobytes() == alone.tobytes()
        expected = sum((a_all[i].astype(np.float64).T @ b_all[i] for i in range(n)), np.zeros((3, 5)))
        np.testing.assert_allclose(pooled, expected, rtol=1e-5, atol=1e-5)


def _recording_kernel(monkeypatch, op_type: str) -> list:
    """(node name, inputs) of each call of op_type's kernel."""
    calls = []
    factory = registry.kernel_for(op_type)

    def recorded(node, ctx):
        run = factory(node, ctx)

        def recording(*args):
            calls.append((node.name, args))
            return run(*args)
        return recording
    monkeypatch.setitem(registry.KERNELS, (op_type, "CPU"), recorded)
    return calls


@pytest.mark.parametrize("also_read_as_is", [False, True])
def test_a_weight_read_only_transposed_is_given_in_column_order(monkeypatch, also_read_as_is):
    """A captured matrix that the body reads only as MatMul's transposed right operand comes to
    those products in Fortran order (oneDNN then reads its transpose's rows in place), the same
    values; one that an op also reads as it is stays in row order."""
    calls = _recording_kernel(monkeypatch, "MatMul")
    rng = np.random.RandomState(2)
    w_value, h0 = rng.randn(6, 8).astype(np.float32), rng.randn(3, 8).astype(np.float32)
    w = tf.constant(w_value)

    def body(i, h):
        back = tf.matmul(h, w, transpose_b=True, name="by_w_transposed")   # [3, 6]
        forth = tf.matmul(back, w, name="by_w") if also_read_as_is else back @ tf.ones([6, 8]) * 0.1
        return i + 1, tf.tanh(forth)

    _, h = tf.while_loop(lambda i, h: i < 4, body, [0, tf.constant(h0)])
    expected = h0.astype(np.float64)
    for _ in range(4):
        back = expected @ w_value.T
        expected = np.tanh(back @ w_value if also_read_as_is else back @ np.ones((6, 8)) * 0.1)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(h), expected, rtol=1e-5, atol=1e-6)
    operands = [args[1] for name, args in calls if name.endswith("by_w_transposed")]
    assert len(operands) == 4 and all(np.array_equal(b, w_value) for b in operands)
    assert all(b.flags.f_contiguous != also_read_as_is for b in operands)


@pytest.mark.parametrize("also_read_as_is", [False, True])
def test_a_split_of_a_kernel_hoisted_out_of_the_loop_comes_to_its_products_in_row_order(monkeypatch, also_read_as_is):
    """The LSTM cell's gates of a kernel: a Split of a captured [4, 12] matrix into column slices,
    computed once (loop-invariant), comes to the MatMuls that read it as dense rows (a copy of
    the slice, the same values); a slice that another op reads too stays the slice."""
    calls = _recording_kernel(monkeypatch, "MatMul")
    rng = np.random.RandomState(5)
    k_value, h0 = rng.randn(4, 12).astype(np.float32), rng.randn(3, 4).astype(np.float32)
    kernel = tf.constant(k_value)

    def body(i, h):
        gates = tf.split(kernel, 3, axis=1)
        h = tf.tanh(tf.matmul(h, gates[0], name="by_gate") + tf.matmul(h * 0.5, gates[1]))
        return i + 1, h + tf.reduce_sum(gates[0]) * 0.01 if also_read_as_is else h

    _, h = tf.while_loop(lambda i, h: i < 4, body, [0, tf.constant(h0)])
    expected = h0.astype(np.float64)
    for _ in range(4):
        expected = np.tanh(expected @ k_value[:, :4] + (expected * 0.5) @ k_value[:, 4:8])
        if also_read_as_is:
            expected = expected + k_value[:, :4].sum() * 0.01
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(h), expected, rtol=1e-5, atol=1e-6)
    operands = [args[1] for name, args in calls if name.endswith("by_gate")]
    assert len(operands) == 4 and all(np.array_equal(b, k_value[:, :4]) for b in operands)
    assert all(b.flags.c_contiguous != also_read_as_is for b in operands)


def test_a_loop_variable_the_body_changes_is_not_given_in_column_order(monkeypatch):
    calls = _recording_kernel(monkeypatch, "MatMul")
    w0 = np.arange(12, dtype=np.float32).reshape(3, 4) / 10

    def body(i, h, w):
        return i + 1, tf.matmul(h, w, transpose_b=True, name="by_w_transposed") @ w, w * 0.5

    _, h, _ = tf.while_loop(lambda i, h, w: i < 3, body, [0, tf.ones([2, 4]), tf.constant(w0)])
    expected, w = np.ones((2, 4)), w0.astype(np.float64)
    for _ in range(3):
        expected, w = expected @ w.T @ w, w * 0.5
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(h), expected, rtol=1e-5)
    operands = [args[1] for name, args in calls if name.endswith("by_w_transposed")]
    assert len(operands) == 3 and not any(b.flags.f_contiguous for b in operands)


@pytest.mark.parametrize("summed", [True, False])
def test_a_two_layer_lstm_runs_one_layers_step_beside_the_other_and_gives_the_serial_bits(monkeypatch, summed):
    """A MultiRNNCell of two LSTMs: the forward loop's side part is the upper layer's step (and
    the values it records for the gradient), the gradient loop's the lower layer's; pipelined,
    the loss, the gradients and the chunks of the summed kernel gradients are the serial bits."""
    monkeypatch.setenv("TENSORWEAVE_INTER_OP", "parallel")
    monkeypatch.setattr(loop_body, "_CHUNK_MULTIPLY_ADDS", 3 * 7 * 20 * 40)   # (3 steps a chunk)
    if not summed:
        monkeypatch.setattr(loop_body, "_summed_products", lambda *args: ())
    runs = _counting_side_work(monkeypatch)
    rng = np.random.RandomState(4)
    x = tf.placeholder(tf.float32, [7, 11, 6])
    cells = [tf.nn.rnn_cell.BasicLSTMCell(10) for _ in range(2)]
    with tf.variable_scope("lm", initializer=tf.random_uniform_initializer(-0.3, 0.3, seed=3)):
        out, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), x, dtype=tf.float32)
    loss = tf.reduce_sum(tf.sin(out)) + tf.reduce_sum(state[0].c)
    fetches = [loss] + tf.gradients(loss, [x] + tf.trainable_variables())
    feeds = {x: rng.randn(7, 11, 6).astype(np.float32)}
    values = []
    for sess in _sessions():
        with sess:
            sess.run(tf.global_variables_initializer())
            values.append([sess.run(fetches, feeds) for _ in range(3)])
    assert len(runs) == 2 * 3   # (forward and gradient loops, each step)
    sides = {run.split.side for run in runs}
    assert len(sides) == 2 and all(len(side) >= 2 for side in sides)
    for run in values[0] + values[1][1:]:
        for a, b in zip(run, values[1][0]):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
