/* out = ... + (x2 + (x0 + x1)) elementwise (each next input added in front, as the ring adds), in
 * one pass that writes `out` with streaming (non-temporal) stores: the in-place all-reduce's segment sum (ops/collective_ops.py), whose
 * inputs are other processes' arrays read where they lie. numpy's adds in the same order make a
 * pass per input over the sum, and each store first reads the line it writes; one pass that
 * streams its result moves a quarter less memory (docs/PERFORMANCE.md, wave 21).
 *
 * Each element is the same IEEE additions in the same order as numpy's (built without
 * floating-point contraction, setup.py), so the bits are the same, NaN and infinities included.
 *
 * From Python: ordered_sum(out, inputs): `out` a writable C-contiguous float32 or float64 array,
 * `inputs` a list of at least two C-contiguous arrays of its dtype and length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define STREAMS 1
#endif

/* out[i] for i in [from, to), one element at a time */
#define SCALAR(T, out, x, k, from, to)                                                             \
    for (Py_ssize_t e = (from), end = (to); e < end; e++) {                                        \
        T s = x[0][e] + x[1][e];                                                                   \
        for (int j = 2; j < k; j++)                                                                \
            s = x[j][e] + s;                                                                       \
        out[e] = s;                                                                                \
    }

#define SUM(T, name, VEC, LOAD, ADD, STREAM, LANES)                                                \
    static void name(T *out, T *const *x, int k, Py_ssize_t n) {                                   \
        Py_ssize_t i = 0;                                                                          \
        STREAMED(T, VEC, LOAD, ADD, STREAM, LANES)                                                 \
        SCALAR(T, out, x, k, i, n)                                                                 \
    }

#ifdef STREAMS
/* one element at a time until `out` is 32-byte aligned (a stream store needs it), then 32 bytes */
#define STREAMED(T, VEC, LOAD, ADD, STREAM, LANES)                                                 \
    if (__builtin_cpu_supports("avx")) {                                                           \
        Py_ssize_t head = (Py_ssize_t)(((32 - ((uintptr_t)out & 31)) & 31) / sizeof(T));          \
        i = head < n ? head : n;                                                                   \
        SCALAR(T, out, x, k, 0, i)                                                                 \
        for (; i + LANES <= n; i += LANES) {                                                       \
            VEC s = ADD(LOAD(x[0] + i), LOAD(x[1] + i));                                           \
            for (int j = 2; j < k; j++)                                                            \
                s = ADD(LOAD(x[j] + i), s);                                                        \
            STREAM(out + i, s);                                                                    \
        }                                                                                          \
        _mm_sfence();                                                                              \
    }
__attribute__((target("avx"))) SUM(float, sum_f32, __m256, _mm256_loadu_ps, _mm256_add_ps, _mm256_stream_ps, 8)
__attribute__((target("avx"))) SUM(double, sum_f64, __m256d, _mm256_loadu_pd, _mm256_add_pd, _mm256_stream_pd, 4)
#else
#define STREAMED(T, VEC, LOAD, ADD, STREAM, LANES)
SUM(float, sum_f32, , , , , )
SUM(double, sum_f64, , , , , )
#endif

#define MAX_INPUTS 64

static char kind(Py_buffer *view) {   /* 'f' or 'd' of a native float32 or float64 buffer ("f", "<f", "=d") */
    const char *f = view->format;
    if (!f || !*f)
        return 0;
    if ((f[0] == '<' || f[0] == '=' || f[0] == '@') && f[1] && !f[2])
        f++;
    return f[1] ? 0 : (f[0] == 'f' && view->itemsize == 4) || (f[0] == 'd' && view->itemsize == 8) ? f[0] : 0;
}

static int dense(Py_buffer *view, Py_buffer *out) {
    return PyBuffer_IsContiguous(view, 'C') && view->len == out->len && kind(view) == kind(out);
}

static PyObject *ordered_sum(PyObject *self, PyObject *args) {
    PyObject *out_obj, *list;
    if (!PyArg_ParseTuple(args, "OO!", &out_obj, &PyList_Type, &list))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(list);
    if (k < 2 || k > MAX_INPUTS) {
        PyErr_Format(PyExc_ValueError, "ordered_sum takes 2 to %d inputs, not %zd", MAX_INPUTS, k);
        return NULL;
    }
    Py_buffer out, in[MAX_INPUTS];
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    Py_ssize_t got = 0;
    int ok = kind(&out) != 0;
    for (; ok && got < k; got++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(list, got), &in[got], PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
            ok = -1;
            break;
        }
        ok = dense(&in[got], &out);
    }
    if (ok == 1) {
        void *x[MAX_INPUTS];
        for (Py_ssize_t j = 0; j < k; j++)
            x[j] = in[j].buf;
        Py_ssize_t n = out.len / out.itemsize;
        Py_BEGIN_ALLOW_THREADS
        if (out.itemsize == 4)
            sum_f32((float *)out.buf, (float *const *)x, (int)k, n);
        else
            sum_f64((double *)out.buf, (double *const *)x, (int)k, n);
        Py_END_ALLOW_THREADS
    } else if (ok == 0) {
        PyErr_SetString(PyExc_ValueError, "ordered_sum takes float32 or float64 C-contiguous arrays of one length");
    }
    for (Py_ssize_t j = 0; j < got; j++)
        PyBuffer_Release(&in[j]);
    PyBuffer_Release(&out);
    if (ok != 1)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ordered_sum", ordered_sum, METH_VARARGS, "ordered_sum(out, [x0, x1, ...]): out = ... + (x2 + (x0 + x1))"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ordered_sum", NULL, -1, methods};

PyMODINIT_FUNC PyInit__ordered_sum(void) { return PyModule_Create(&module); }
