/* A shared arena for a process's large numpy arrays: one memfd, mapped MAP_SHARED, that the other
 * processes of a collective on this host map read-only (distributed/arena.py), so that the
 * in-place all-reduce reads a peer's input where it lies rather than through process_vm_readv
 * (which pins and copies each page: a third of memcpy's speed; docs/PERFORMANCE.md, wave 21).
 *
 * numpy's allocation policy (PyDataMem_SetHandler, numpy >= 1.22: per thread and context) is set
 * by arena.py around the steps of a collective job's task; arrays of at least `min_bytes` then
 * come from here, smaller ones and anything past the arena's size from the C library (an array
 * remembers its allocator, so each is freed where it came from). Blocks are whole 64 KiB units,
 * a freed one reused for the next request it fits (best fit within twice its size, as a
 * training step asks for the same sizes every step). Thread safe. In a forked child the arena is
 * the parent's (MADV_DONTFORK: not mapped there): the child allocates from the C library.
 *
 * From Python: open(size_bytes, min_bytes) -> memfd or -errno, handler() -> the capsule numpy
 * takes, use(handler or None) -> the previous one (PyDataMem_SetHandler), where(address) -> offset
 * in the arena or -1.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {   /* numpy's PyDataMem_Handler, version 1 (ndarraytypes.h) */
    char name[127];
    uint8_t version;
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} Handler;

#define UNIT ((size_t)1 << 16)
#define MAX_FREED 4096

static char *base;          /* the arena's mapping, NULL until open() */
static size_t limit;        /* its size */
static size_t top;          /* bytes handed out from its start at least once */
static size_t min_bytes = (size_t)1 << 20;
static uint32_t *units_at;  /* each block's size in units, by its first unit */
static size_t freed[MAX_FREED];   /* offsets of free blocks */
static int nfreed;
static pid_t owner;         /* the process that opened it (a forked child is not) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int mine(const void *p) { return base && (const char *)p >= base && (const char *)p < base + limit; }

/* A block of at least n bytes (*fresh: never handed out before, so still zero), or NULL. */
static char *take(size_t n, int *fresh) {
    size_t units = (n + UNIT - 1) / UNIT, best = 0;
    int at = -1;
    char *p = NULL;
    if (units == 0)
        units = 1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nfreed; i++) {
        size_t have = units_at[freed[i] / UNIT];
        if (have >= units && (at < 0 || have < best)) {
            at = i;
            best = have;
        }
    }
    if (at >= 0 && best <= 2 * units) {
        p = base + freed[at];
        freed[at] = freed[--nfreed];
        *fresh = 0;
    } else if (top + units * UNIT <= limit) {
        units_at[top / UNIT] = (uint32_t)units;
        p = base + top;
        top += units * UNIT;
        *fresh = 1;
    } else if (at >= 0) {
        p = base + freed[at];
        freed[at] = freed[--nfreed];
        *fresh = 0;
    }
    pthread_mutex_unlock(&lock);
    return p;
}

static int usable(size_t n) { return base && n >= min_bytes && getpid() == owner; }

static void *arena_malloc(void *ctx, size_t n) {
    int fresh;
    char *p = usable(n) ? take(n, &fresh) : NULL;
    return p ? p : malloc(n);
}

static void *arena_calloc(void *ctx, size_t nelem, size_t elsize) {
    size_t n = nelem * elsize;
    int fresh = 0;
    char *p = (elsize && n / elsize != nelem) || !usable(n) ? NULL : take(n, &fresh);
    if (!p)
        return calloc(nelem, elsize);
    if (!fresh)
        memset(p, 0, n);
    return p;
}

static void arena_free(void *ctx, void *p, size_t size) {
    if (!mine(p)) {
        free(p);
        return;
    }
    pthread_mutex_lock(&lock);
    if (nfreed < MAX_FREED)
        freed[nfreed++] = (size_t)((char *)p - base);   /* (past that many, a block is not reused) */
    pthread_mutex_unlock(&lock);
}

static void *arena_realloc(void *ctx, void *p, size_t n) {
    if (!mine(p))
        return realloc(p, n);
    size_t have = (size_t)units_at[((char *)p - base) / UNIT] * UNIT;
    if (n <= have)
        return p;
    void *q = arena_malloc(ctx, n);
    if (q) {
        memcpy(q, p, have);
        arena_free(ctx, p, have);
    }
    return q;
}

static Handler handler_struct = {"tensorweave_shared_arena", 1, NULL, arena_malloc, arena_calloc, arena_realloc,
                                 arena_free};
static PyObject *capsule;   /* the handler numpy takes (kept: arrays refer to it) */
static void **numpy_api;

static PyObject *py_open(PyObject *self, PyObject *args) {
    Py_ssize_t size, least;
    if (!PyArg_ParseTuple(args, "nn", &size, &least))
        return NULL;
    if (base)
        return PyLong_FromLong(-EEXIST);
    int fd = memfd_create("tensorweave-arena", MFD_CLOEXEC);
    if (fd < 0)
        return PyLong_FromLong(-errno);
    size = (Py_ssize_t)(((size_t)size + UNIT - 1) / UNIT * UNIT);
    char *p = ftruncate(fd, size) == 0 ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    uint32_t *units = p == MAP_FAILED ? NULL : calloc(size / UNIT, sizeof(uint32_t));
    if (!units) {
        int e = errno;
        if (p != MAP_FAILED)
            munmap(p, size);
        close(fd);
        return PyLong_FromLong(-e);
    }
    madvise(p, size, MADV_DONTFORK);
    pthread_mutex_lock(&lock);
    base = p;
    limit = (size_t)size;
    units_at = units;
    min_bytes = (size_t)least;
    owner = getpid();
    pthread_mutex_unlock(&lock);
    return PyLong_FromLong(fd);
}

static PyObject *py_handler(PyObject *self, PyObject *noargs) {
    if (!capsule && !(capsule = PyCapsule_New(&handler_struct, "mem_handler", NULL)))
        return NULL;
    Py_INCREF(capsule);
    return capsule;
}

static PyObject *py_use(PyObject *self, PyObject *handler) {
    if (!numpy_api) {
        PyObject *m = PyImport_ImportModule("numpy._core._multiarray_umath");
        if (!m) {
            PyErr_Clear();
            m = PyImport_ImportModule("numpy.core._multiarray_umath");
        }
        PyObject *api = m ? PyObject_GetAttrString(m, "_ARRAY_API") : NULL;
        Py_XDECREF(m);
        numpy_api = api ? (void **)PyCapsule_GetPointer(api, NULL) : NULL;
        Py_XDECREF(api);   /* (the module keeps the table) */
        if (!numpy_api)
            return NULL;
    }
    PyObject *(*set)(PyObject *) = (PyObject * (*)(PyObject *)) numpy_api[304];   /* PyDataMem_SetHandler */
    return set(handler == Py_None ? NULL : handler);
}

static PyObject *py_where(PyObject *self, PyObject *arg) {
    void *p = PyLong_AsVoidPtr(arg);
    if (!p && PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(mine(p) ? (Py_ssize_t)((char *)p - base) : -1);
}

static PyMethodDef methods[] = {
    {"open", py_open, METH_VARARGS, "open(size_bytes, min_bytes) -> the arena's memfd, or -errno"},
    {"handler", py_handler, METH_NOARGS, "the allocation policy numpy takes (a 'mem_handler' capsule)"},
    {"use", py_use, METH_O, "use(handler or None) -> the previous policy, for this thread and context"},
    {"where", py_where, METH_O, "where(address) -> its offset in the arena, or -1"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_arena", NULL, -1, methods};

PyMODINIT_FUNC PyInit__arena(void) { return PyModule_Create(&module); }
