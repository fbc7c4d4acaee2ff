/* protocol/_frame_body.c -- a large frame's body received straight into its bytes (issue 28).

   FrameBody(size) -> an object with the buffer protocol (writable) over a fresh,
   uninitialised ``bytes`` object of ``size`` bytes, and one method:

       take() -> bytes      the bytes object itself (no copy); after it the body gives
                            out no buffer any more (BufferError), and a second take()
                            raises too

   Why: protocol/framing.py's FrameReceiver received the body of a frame larger than
   its read buffer into zeroed bytearray chunks of at most 256 KiB and joined them into
   the frame's bytes at the end: per byte of a 1 MB produce request a memset (bytearray
   zeroes what it allocates), the recv and a memmove (the join), plus the chunks' and
   the frame's fresh pages. perf put the memset and the memmove at 4.4 % and 8.4 % of
   the broker's CPU under rdkperf's 1 KiB produce load. Here the socket's bytes land
   in the frame's own storage: the recv is the only copy, and the pages that no byte
   reached yet are not touched (so not resident: a frame header that claims a size
   costs address space, not memory, until the bytes arrive).

   Invariants: the body holds a reference to its bytes for its whole life, and every
   buffer it gives out holds a reference to the body, so a view never outlives the
   storage (memory safety does not depend on the caller). After take() no new buffer
   is given out; a view taken before stays valid memory, and the caller must not write
   through it any more: FrameReceiver hands a view to the transport only for the read
   that fills it (asyncio.BufferedProtocol: the transport writes into get_buffer's
   buffer before buffer_updated, never after), and takes the bytes once the last of
   them arrived, so no byte of a bytes object changes once Python code holds it.
   (asyncio's selector transport still holds its last view while buffer_updated runs,
   so take() cannot require that no view is left.)
   The pure-Python reference and fallback is FrameReceiver's chunked path (framing.py),
   which tests/unit/protocol/test_framing.py runs beside this one on the same input.
*/

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *bytes;        /* the storage, held until the body goes */
    int taken;              /* take() was called: no more buffers */
} FrameBody;

static PyObject *body_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_ssize_t size;
    static char *kwlist[] = {"size", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:FrameBody", kwlist, &size))
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "FrameBody: negative size");
        return NULL;
    }
    FrameBody *self = (FrameBody *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    /* PyBytes_FromStringAndSize(NULL, n): storage not initialised (malloc, no memset) */
    self->bytes = PyBytes_FromStringAndSize(NULL, size);
    if (self->bytes == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->taken = 0;
    return (PyObject *)self;
}

static void body_dealloc(FrameBody *self)
{
    Py_XDECREF(self->bytes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int body_getbuffer(FrameBody *self, Py_buffer *view, int flags)
{
    if (self->taken) {
        PyErr_SetString(PyExc_BufferError, "FrameBody: already taken");
        view->obj = NULL;
        return -1;
    }
    /* view->obj = self (a new reference): the view keeps the body, so the bytes */
    return PyBuffer_FillInfo(view, (PyObject *)self, PyBytes_AS_STRING(self->bytes),
                             PyBytes_GET_SIZE(self->bytes), 0, flags);
}

static PyObject *body_take(FrameBody *self, PyObject *Py_UNUSED(ignored))
{
    if (self->taken) {
        PyErr_SetString(PyExc_BufferError, "FrameBody: already taken");
        return NULL;
    }
    self->taken = 1;
    Py_INCREF(self->bytes);
    return self->bytes;
}

static PyObject *body_size(FrameBody *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(PyBytes_GET_SIZE(self->bytes));
}

static PyBufferProcs body_as_buffer = {
    (getbufferproc)body_getbuffer,
    NULL,
};

static PyMethodDef body_methods[] = {
    {"take", (PyCFunction)body_take, METH_NOARGS,
     "take() -> bytes: the body's bytes (no copy); no buffer is given out after it"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef body_getset[] = {
    {"size", (getter)body_size, NULL, "the body's size in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject FrameBodyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "protocol._frame_body.FrameBody",
    .tp_basicsize = sizeof(FrameBody),
    .tp_dealloc = (destructor)body_dealloc,
    .tp_as_buffer = &body_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "FrameBody(size): a writable buffer over a fresh bytes object; take() "
              "gives the bytes",
    .tp_methods = body_methods,
    .tp_getset = body_getset,
    .tp_new = body_new,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "protocol._frame_body",
    "A large frame's body received straight into its bytes (see the C source's header).",
    -1,
    NULL,
};

PyMODINIT_FUNC PyInit__frame_body(void)
{
    if (PyType_Ready(&FrameBodyType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&FrameBodyType);
    if (PyModule_AddObject(m, "FrameBody", (PyObject *)&FrameBodyType) < 0) {
        Py_DECREF(&FrameBodyType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
