/* The dense gradient descent, Adam, RMSProp, Momentum, Adagrad and Adadelta updates as one pass
 * over memory each, as TF's training_ops.cc kernels run them; optimizer_updates.py calls them
 * where this module was built (setup.py: optional, so without a C compiler its numpy formulas run).
 *
 * Each loop does, per element, exactly the IEEE operations of the numpy formula it replaces, in
 * the same order and rounding to the array's type after each: built without floating-point
 * contraction (setup.py's -ffp-contract=off: no fused multiply-adds) and without fast-math, the
 * results are numpy's to the bit, NaN and infinities included. What a pass saves is memory
 * traffic: numpy's forms make 2 to 13 passes over var, its slots and grad.
 *
 * From Python: sgd(var, grad, out_var, alpha), adam(var, m, v, grad, out_var, out_m, out_v, lr_t,
 * 1 - beta1, 1 - beta2, epsilon, beta1, use_nesterov), rmsprop(var, ms, mom, grad, out_var,
 * out_ms, out_mom, lr, 1 - rho, momentum, epsilon), momentum(var, accum, grad, out_var, out_accum,
 * lr, momentum, use_nesterov), adagrad(var, accum, grad, out_var, out_accum, lr, update_slots),
 * adadelta(var, accum, accum_update, grad, out_var, out_accum, out_accum_update, lr, rho,
 * epsilon, 1 - rho): C-contiguous aligned float32 or float64 buffers of one type and length (an
 * out may be its input: each element is read before it is written), then the constants as numbers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

/* The loops vectorize although an output may be its input (the same element, never a shifted one) */
#if defined(__clang__)
#define EACH(i, n) _Pragma("clang loop vectorize(assume_safety)") for (Py_ssize_t i = 0; i < (n); i++)
#elif defined(__GNUC__)
#define EACH(i, n) _Pragma("GCC ivdep") for (Py_ssize_t i = 0; i < (n); i++)
#else
#define EACH(i, n) for (Py_ssize_t i = 0; i < (n); i++)
#endif

/* A copy of each loop for AVX2 (8 floats a vector), chosen when the process starts where the CPU has it */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define DISPATCH __attribute__((target_clones("avx2", "default")))
#else
#define DISPATCH
#endif

typedef void (*kernel)(Py_ssize_t n, void *const *a, const double *c);

#define SGD(NAME, T)                                                                               \
    DISPATCH static void NAME(Py_ssize_t n, void *const *a, const double *c) {                     \
        const T *var = a[0], *g = a[1];                                                            \
        T *o_var = a[2];                                                                           \
        const T alpha = (T)c[0];                                                                   \
        EACH(i, n) o_var[i] = var[i] - alpha * g[i];                                               \
    }

#define ADAM(NAME, T, SQRT)                                                                        \
    DISPATCH static void NAME(Py_ssize_t n, void *const *a, const double *c) {                     \
        const T *var = a[0], *m = a[1], *v = a[2], *g = a[3];                                      \
        T *o_var = a[4], *o_m = a[5], *o_v = a[6];                                                 \
        const T lr_t = (T)c[0], c1 = (T)c[1], c2 = (T)c[2], eps = (T)c[3], beta1 = (T)c[4];         \
        if (c[5] != 0) {                                                                           \
            EACH(i, n) {                                                                           \
                T gi = g[i], mi = m[i] + (gi - m[i]) * c1, vi = v[i] + (gi * gi - v[i]) * c2;     \
                T step = lr_t * (mi * beta1 + c1 * gi) / (SQRT(vi) + eps);                        \
                o_m[i] = mi; o_v[i] = vi; o_var[i] = var[i] - step;                               \
            }                                                                                      \
        } else {                                                                                   \
            EACH(i, n) {                                                                           \
                T gi = g[i], mi = m[i] + (gi - m[i]) * c1, vi = v[i] + (gi * gi - v[i]) * c2;     \
                T step = lr_t * mi / (SQRT(vi) + eps);                                             \
                o_m[i] = mi; o_v[i] = vi; o_var[i] = var[i] - step;                               \
            }                                                                                      \
        }                                                                                          \
    }

#define RMSPROP(NAME, T, SQRT)                                                                     \
    DISPATCH static void NAME(Py_ssize_t n, void *const *a, const double *c) {                     \
        const T *var = a[0], *ms = a[1], *mom = a[2], *g = a[3];                                   \
        T *o_var = a[4], *o_ms = a[5], *o_mom = a[6];                                              \
        const T lr = (T)c[0], c1 = (T)c[1], momentum = (T)c[2], eps = (T)c[3];                     \
        EACH(i, n) {                                                                               \
            T gi = g[i], msi = ms[i] + (gi * gi - ms[i]) * c1;                                     \
            T momi = mom[i] * momentum + lr * gi / SQRT(msi + eps);                                \
            o_ms[i] = msi; o_mom[i] = momi; o_var[i] = var[i] - momi;                             \
        }                                                                                          \
    }

#define MOMENTUM(NAME, T)                                                                          \
    DISPATCH static void NAME(Py_ssize_t n, void *const *a, const double *c) {                     \
        const T *var = a[0], *accum = a[1], *g = a[2];                                             \
        T *o_var = a[3], *o_accum = a[4];                                                          \
        const T lr = (T)c[0], momentum = (T)c[1];                                                  \
        if (c[2] != 0) {                                                                           \
            EACH(i, n) {                                                                           \
                T gi = g[i], ai = accum[i] * momentum + gi;                                        \
                o_accum[i] = ai; o_var[i] = var[i] - (gi * lr + ai * momentum * lr);              \
            }                                                                                      \
        } else {                                                                                   \
            EACH(i, n) {                                                                           \
                T ai = accum[i] * momentum + g[i];                                                 \
                o_accum[i] = ai; o_var[i] = var[i] - lr * ai;                                      \
            }                                                                                      \
        }                                                                                          \
    }

#define ADAGRAD(NAME, T, SQRT)                                                                     \
    DISPATCH static void NAME(Py_ssize_t n, void *const *a, const double *c) {                     \
        const T *var = a[0], *accum = a[1], *g = a[2];                                             \
        T *o_var = a[3], *o_accum = a[4];                                                          \
        const T lr = (T)c[0], one = 1;                                                             \
        const int update_slots = c[1] != 0;                                                        \
        EACH(i, n) {                                                                               \
            T gi = g[i], ai = update_slots ? accum[i] + gi * gi : accum[i];                        \
            o_accum[i] = ai; o_var[i] = var[i] - gi * lr * (one / SQRT(ai));                       \
        }                                                                                          \
    }

#define ADADELTA(NAME, T, SQRT)                                                                    \
    DISPATCH static void NAME(Py_ssize_t n, void *const *a, const double *c) {                     \
        const T *var = a[0], *accum = a[1], *accum_update = a[2], *g = a[3];                       \
        T *o_var = a[4], *o_accum = a[5], *o_accum_update = a[6];                                  \
        const T lr = (T)c[0], rho = (T)c[1], eps = (T)c[2], c1 = (T)c[3];                          \
        EACH(i, n) {                                                                               \
            T gi = g[i], ai = accum[i] * rho + gi * gi * c1;                                       \
            T update = SQRT(accum_update[i] + eps) / SQRT(ai + eps) * gi;                          \
            T ui = accum_update[i] * rho + update * update * c1;                                   \
            o_accum[i] = ai; o_accum_update[i] = ui; o_var[i] = var[i] - update * lr;             \
        }                                                                                          \
    }

SGD(sgd_f32, float)
SGD(sgd_f64, double)
ADAM(adam_f32, float, sqrtf)
ADAM(adam_f64, double, sqrt)
RMSPROP(rmsprop_f32, float, sqrtf)
RMSPROP(rmsprop_f64, double, sqrt)
MOMENTUM(momentum_f32, float)
MOMENTUM(momentum_f64, double)
ADAGRAD(adagrad_f32, float, sqrtf)
ADAGRAD(adagrad_f64, double, sqrt)
ADADELTA(adadelta_f32, float, sqrtf)
ADADELTA(adadelta_f64, double, sqrt)

/* A buffer's struct format without its byte-order mark where that is the machine's own ('@', '='
 * and '<' or '>'): numpy spells a float32 "f", "=f" or "<f" by how the array's dtype was made */
static const char *native(const char *format) {
#if PY_LITTLE_ENDIAN
    return format[0] && strchr("@=<", format[0]) ? format + 1 : format;
#else
    return format[0] && strchr("@=>!", format[0]) ? format + 1 : format;
#endif
}

#define MAX_ARRAYS 8
#define MAX_CONSTANTS 8

/* Checks the arguments (n_in inputs, n_out outputs, n_constants numbers) and runs the loop of
 * their type, without the GIL where numpy's loops would drop it too (over 500 elements). */
static PyObject *run(PyObject *args, int n_in, int n_out, int n_constants, kernel f32, kernel f64) {
    int n_arrays = n_in + n_out;
    if (PyTuple_GET_SIZE(args) != n_arrays + n_constants)
        return PyErr_Format(PyExc_TypeError, "takes %d arguments (%zd given)", n_arrays + n_constants,
                            PyTuple_GET_SIZE(args));
    Py_buffer views[MAX_ARRAYS];
    void *data[MAX_ARRAYS];
    double constants[MAX_CONSTANTS];
    int held = 0;
    kernel loop = NULL;
    Py_ssize_t n = 0;
    for (int k = 0; k < n_arrays; k++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (k >= n_in ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, k), &views[k], flags) < 0)
            goto done;
        held = k + 1;   /* (the buffers held, released at done) */
        Py_buffer *b = &views[k];
        const char *format = native(b->format);
        kernel own = strcmp(format, "f") == 0 ? f32 : strcmp(format, "d") == 0 ? f64 : NULL;
        if (own == NULL || (k > 0 && own != loop)) {
            PyErr_Format(PyExc_TypeError, "array %d is of format '%s': all must be float32 or all float64", k,
                         b->format);
            goto done;
        }
        if ((uintptr_t)b->buf % b->itemsize) {
            PyErr_Format(PyExc_ValueError, "array %d is not aligned to its type's size", k);
            goto done;
        }
        if (k > 0 && b->len != views[0].len) {
            PyErr_Format(PyExc_ValueError, "array %d has %zd bytes, array 0 %zd", k, b->len, views[0].len);
            goto done;
        }
        loop = own;
        data[k] = b->buf;
    }
    for (int k = 0; k < n_constants; k++) {
        constants[k] = PyFloat_AsDouble(PyTuple_GET_ITEM(args, n_arrays + k));
        if (constants[k] == -1.0 && PyErr_Occurred())
            goto done;
    }
    n = views[0].len / views[0].itemsize;
    if (n > 500) {
        Py_BEGIN_ALLOW_THREADS
        loop(n, data, constants);
        Py_END_ALLOW_THREADS
    } else {
        loop(n, data, constants);
    }
done:
    while (held > 0)
        PyBuffer_Release(&views[--held]);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *sgd(PyObject *self, PyObject *args) { return run(args, 2, 1, 1, sgd_f32, sgd_f64); }
static PyObject *adam(PyObject *self, PyObject *args) { return run(args, 4, 3, 6, adam_f32, adam_f64); }
static PyObject *rmsprop(PyObject *self, PyObject *args) { return run(args, 4, 3, 4, rmsprop_f32, rmsprop_f64); }
static PyObject *momentum(PyObject *self, PyObject *args) { return run(args, 3, 2, 3, momentum_f32, momentum_f64); }
static PyObject *adagrad(PyObject *self, PyObject *args) { return run(args, 3, 2, 2, adagrad_f32, adagrad_f64); }
static PyObject *adadelta(PyObject *self, PyObject *args) { return run(args, 4, 3, 4, adadelta_f32, adadelta_f64); }

static PyMethodDef methods[] = {
    {"sgd", sgd, METH_VARARGS, "Gradient descent's update, var - alpha * grad, into the output"},
    {"adam", adam, METH_VARARGS, "Adam's update (use_nesterov the last constant) into the outputs"},
    {"rmsprop", rmsprop, METH_VARARGS, "RMSProp's update into the outputs"},
    {"momentum", momentum, METH_VARARGS, "Momentum's update (use_nesterov the last constant) into the outputs"},
    {"adagrad", adagrad, METH_VARARGS, "Adagrad's update (update_slots the last constant) into the outputs"},
    {"adadelta", adadelta, METH_VARARGS, "Adadelta's update into the outputs"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fused_updates", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fused_updates(void) { return PyModule_Create(&module); }
