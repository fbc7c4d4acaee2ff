/* protocol/_record_walk.c -- record_validation._walk in C (issue 28).

   walk(body, count, want_stamps, release_above=RELEASE_GIL_RECORDS, *, want_keyless=True)
       -> (keyless, stamps)

   Parses ``count`` records that must fill ``body`` (any contiguous byte buffer: bytes,
   bytearray, memoryview) exactly; returns the indexes of keyless records (an empty list
   when ``want_keyless`` is false: only a compacted topic needs them, and a batch of
   10,000 keyless records cost 10,000 ints a walk) and, when ``want_stamps`` is true,
   the timestamp deltas (else None). Anything that does not parse
   raises protocol.records.InvalidRecordError. The pure-Python ``_walk`` in
   protocol/record_validation.py is the reference and the fallback: the verdicts, results
   and messages here are its own, byte for byte (tests/unit/protocol/
   test_record_walk_native.py holds the two together on valid and on hostile bytes).

   Record layout (protocol/records.py; varint = zig-zag, at most 10 bytes)::

       length varint (counts what follows) . attributes int8 (unused) .
       timestampDelta varlong . offsetDelta varint (must be the record's index) .
       keyLength varint (-1 null) . key . valueLength varint (-1 null) . value .
       headerCount varint . per header: keyLength varint . key .
       valueLength varint (-1 null) . value

   One call, three steps:
   1. with the GIL: take the buffer (held until step 3: a bytearray cannot be resized
      meanwhile) and refuse a count that cannot fit at 7 bytes a record;
   2. the walk, on C arrays only; without the GIL when count > release_above. A walk of
      more than broker/replication/record_checks.HEAVY_RECORDS (1000) records runs in a
      worker thread, where letting go of the GIL lets the event loop run on the other
      core; a smaller one may run on the event loop itself, which must keep the GIL (had
      it let go, a busy thread could keep it for a whole switch interval, 5 ms);
   3. with the GIL: the Python lists, or the exception with the reference's message.

   Where C ints overflow and Python's do not (the reference decides):
   * a 10-byte varint carries 70 bits (the 10th byte's 7 bits land at bits 63..69) and
     Python keeps them all. A varint is kept as its raw bits (``varint``); its value
     lies outside int64 exactly when ``hi`` is not 0. Such a value can only fail a check or
     be a timestamp delta; messages and stamps are built from the raw bits.
   * positions: the reference's ``at + size`` is unbounded and its next ``body[at]`` raises
     IndexError ("premature EOF"). Here a skip past the end leaves at = n + 1, which reads
     and compares as any position past the end does. Every skip starts from at <= n (just
     after a byte read), and no message shows a position that can be past the end.
   * the reference reads short lengths inline and longer ones with ``_varint``, and the two
     paths answer some negative lengths differently: a one-byte key length -3 says
     "invalid key length", a three-byte one "invalid key length -3"; a key length -1 is
     null in one byte only, a value length -1 in one byte or three and more, not two.
     This walk takes the same paths on the same encodings.
*/

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#define MIN_RECORD_SIZE 7        /* length and the 6 other one-byte fields: the pre-check */
#define MIN_RECORD_BODY 6        /* what a record's length must at least count */
#define RELEASE_GIL_RECORDS 1000 /* record_checks.HEAVY_RECORDS: see step 2 above */
#define MAX_SHIFT 63             /* the 10th byte of a varint; an 11th is refused */

static PyObject *InvalidRecordError; /* protocol.records.InvalidRecordError */

/* A varint as read: raw bits 0..63 in lo, 64..69 in hi. Zig-zag: the value is raw >> 1
   when raw is even, -(raw >> 1) - 1 when odd. */
typedef struct {
    uint64_t lo;
    uint32_t hi;
} varint;

static const varint NO_VALUE = {0, 0};  /* for failures without a value */

static inline int fits(varint v) { return v.hi == 0; }          /* value within int64 */
static inline int negative(varint v) { return (int)(v.lo & 1); }

static inline int64_t value_of(varint v) /* only when fits(v) */
{
    return (int64_t)(v.lo >> 1) ^ -(int64_t)(v.lo & 1);
}

/* A non-negative value as a byte count to skip; beyond int64 is beyond any buffer. */
static inline uint64_t size_of(varint v) { return fits(v) ? (uint64_t)value_of(v) : UINT64_MAX; }

/* The first failure of a walk: enough to rebuild the reference's message in step 3. */
enum failure {
    OK = 0,
    PREMATURE_EOF,       /* a read past the end (the reference's IndexError) */
    VARINT_TOO_LONG,     /* 10 bytes with the continuation bit */
    RECORD_SIZE,         /* value: length; extra: n - at */
    OFFSET_DELTA,        /* value: the delta */
    KEY_LENGTH_BYTE,     /* a one-byte negative key length other than -1 */
    KEY_LENGTH,          /* value: a longer negative key length */
    VALUE_LENGTH_BYTES,  /* a negative one-byte value length but -1; any two-byte one */
    VALUE_LENGTH,        /* value: a longer value length below -1 */
    HEADER_COUNT,        /* value: a negative header count */
    HEADERS_CANNOT_FIT,  /* value: the count; extra: end - at */
    HEADER_KEY_LENGTH,   /* value */
    HEADER_VALUE_LENGTH, /* value */
    HEADER_PAST_END,
    FIELDS_SIZE,         /* value: length; extra: the bytes its fields took */
    RECORDS_REMAINING,   /* extra: n - at after the last record */
    NO_MEMORY,
};

typedef struct {
    enum failure code;
    int64_t index;       /* the record being read */
    varint value;
    int64_t extra;
} failure_t;

/* A growable int64 array, allocated with the raw allocator (usable without the GIL). */
typedef struct {
    int64_t *items;
    size_t len, cap;
} int_array;

static int push(int_array *a, int64_t x)
{
    if (a->len == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        int64_t *items = PyMem_RawRealloc(a->items, cap * sizeof *items);
        if (items == NULL)
            return -1;
        a->items = items;
        a->cap = cap;
    }
    a->items[a->len++] = x;
    return 0;
}

/* The varint at *at, as the reference's _varint reads it: at most 10 bytes. */
static enum failure read_varint_long(const uint8_t *buf, size_t n, size_t *at, varint *v)
{
    uint64_t lo = 0;
    uint32_t hi = 0;
    size_t p = *at;
    for (int shift = 0;; shift += 7) {
        if (p >= n)
            return PREMATURE_EOF;
        uint8_t b = buf[p++];
        uint64_t bits = b & 0x7F;
        if (shift < MAX_SHIFT) {
            lo |= bits << shift;     /* shift <= 56: bits 0..62 */
        } else {
            lo |= (bits & 1) << 63;  /* the 10th byte: bit 63, then 64..69 */
            hi = (uint32_t)(bits >> 1);
        }
        if (b < 0x80) {
            v->lo = lo;
            v->hi = hi;
            *at = p;
            return OK;
        }
        if (shift + 7 > MAX_SHIFT)
            return VARINT_TOO_LONG;
    }
}

/* The varint at *at (one byte inline: every small length, delta and count). */
static inline enum failure read_varint(const uint8_t *buf, size_t n, size_t *at, varint *v)
{
    if (*at < n && buf[*at] < 0x80) {
        v->lo = buf[(*at)++];
        v->hi = 0;
        return OK;
    }
    return read_varint_long(buf, n, at, v);
}

/* *at += size, or n + 1 when that is past the end. Needs *at <= n. */
static inline void skip(size_t n, size_t *at, uint64_t size)
{
    *at = size > n - *at ? n + 1 : *at + (size_t)size;
}

#define READ(v)                                                \
    do {                                                       \
        enum failure e_ = read_varint(buf, n, &at, &(v));      \
        if (e_ != OK)                                          \
            return e_;                                         \
    } while (0)
#define FAIL(code_, v, extra_)                                 \
    do {                                                       \
        f->value = (v);                                        \
        f->extra = (extra_);                                   \
        return (code_);                                        \
    } while (0)
#define PUSH(array, x)                                         \
    do {                                                       \
        if (push((array), (x)) < 0)                            \
            return NO_MEMORY;                                  \
    } while (0)

/* The headers of one record, from at (just after the count) to at most end. */
static enum failure walk_headers(const uint8_t *buf, size_t n, size_t end, size_t *at_io,
                                 varint count, failure_t *f)
{
    size_t at = *at_io;
    varint v;
    int64_t left = (int64_t)end - (int64_t)at;  /* negative when the count ran past end */
    if (negative(count))
        FAIL(HEADER_COUNT, count, 0);
    /* each header takes at least its two length varints */
    if (!fits(count) || left < 0 || (uint64_t)value_of(count) > (uint64_t)left / 2)
        FAIL(HEADERS_CANNOT_FIT, count, left);
    for (int64_t i = value_of(count); i > 0; i--) {
        READ(v);
        if (negative(v))
            FAIL(HEADER_KEY_LENGTH, v, 0);
        skip(n, &at, size_of(v));
        READ(v);
        if (negative(v) && !(fits(v) && value_of(v) == -1))
            FAIL(HEADER_VALUE_LENGTH, v, 0);
        if (!negative(v))
            skip(n, &at, size_of(v));
        if (at > end)
            FAIL(HEADER_PAST_END, v, 0);
    }
    *at_io = at;
    return OK;
}

/* Step 2: the walk itself; touches no Python object. */
static enum failure walk_records(const uint8_t *buf, size_t n, int64_t count, int want_stamps,
                                 int_array *keyless, int_array *stamps, int_array *big_stamps,
                                 failure_t *f)
{
    size_t at = 0;
    for (int64_t index = 0; index < count; index++) {
        varint v;
        uint8_t b;
        f->index = index;
        /* length: at least the six one-byte fields, and within the batch */
        READ(v);
        if (!fits(v) || value_of(v) < MIN_RECORD_BODY || (uint64_t)value_of(v) > n - at)
            FAIL(RECORD_SIZE, v, (int64_t)(n - at));
        const varint length = v;
        const size_t start = at, end = at + (size_t)value_of(v);
        /* attributes (unused), then the timestamp delta; one beyond int64 is kept as
           (index, lo, hi) in big_stamps, its slot in stamps left 0 */
        at += 1;
        READ(v);
        if (want_stamps) {
            PUSH(stamps, fits(v) ? value_of(v) : 0);
            if (!fits(v)) {
                PUSH(big_stamps, index);
                PUSH(big_stamps, (int64_t)v.lo);
                PUSH(big_stamps, (int64_t)v.hi);
            }
        }
        /* offset delta: the record's index */
        READ(v);
        if (!fits(v) || value_of(v) != index)
            FAIL(OFFSET_DELTA, v, 0);
        /* key: -1 (null) only as one byte */
        if (at >= n)
            return PREMATURE_EOF;
        b = buf[at];
        if (b < 0x80) {
            at += 1;
            if (b & 1) {
                if (b != 1)
                    FAIL(KEY_LENGTH_BYTE, v, 0);
                if (keyless != NULL)
                    PUSH(keyless, index);
            } else {
                skip(n, &at, b >> 1);
            }
        } else {
            READ(v);
            if (negative(v))
                FAIL(KEY_LENGTH, v, 0);
            skip(n, &at, size_of(v));
        }
        /* value: -1 (null) as one byte or as three or more, not as two */
        if (at >= n)
            return PREMATURE_EOF;
        b = buf[at];
        if (b < 0x80) {
            at += 1;
            if (b & 1) {
                if (b != 1)
                    FAIL(VALUE_LENGTH_BYTES, v, 0);
            } else {
                skip(n, &at, b >> 1);
            }
        } else {
            if (at + 1 >= n)
                return PREMATURE_EOF;
            uint8_t c = buf[at + 1];
            if (c < 0x80) {
                unsigned raw = (b & 0x7Fu) | ((unsigned)c << 7);
                if (raw & 1)
                    FAIL(VALUE_LENGTH_BYTES, v, 0);
                at += 2;
                skip(n, &at, raw >> 1);
            } else {
                READ(v);
                if (negative(v) && !(fits(v) && value_of(v) == -1))
                    FAIL(VALUE_LENGTH, v, 0);
                if (!negative(v))
                    skip(n, &at, size_of(v));
            }
        }
        /* headers */
        if (at >= n)
            return PREMATURE_EOF;
        if (buf[at] == 0) {
            at += 1;
        } else {
            READ(v);
            enum failure e = walk_headers(buf, n, end, &at, v, f);
            if (e != OK)
                return e;
        }
        if (at != end)  /* at <= end here: past it, the headers failed */
            FAIL(FIELDS_SIZE, length, (int64_t)(at - start));
    }
    if (at != n)
        FAIL(RECORDS_REMAINING, NO_VALUE, (int64_t)(n - at));
    return OK;
}

/* The Python int the reference computes from a varint's raw bits. */
static PyObject *value_object(varint v)
{
    if (fits(v))
        return PyLong_FromLongLong(value_of(v));
    /* raw >> 1 = hi * 2**63 + (lo >> 1); a negative value is -(raw >> 1) - 1 = ~(raw >> 1) */
    PyObject *hi = PyLong_FromUnsignedLong(v.hi);
    PyObject *shift = PyLong_FromLong(MAX_SHIFT);
    PyObject *top = hi && shift ? PyNumber_Lshift(hi, shift) : NULL;
    PyObject *low = top ? PyLong_FromUnsignedLongLong(v.lo >> 1) : NULL;
    PyObject *magnitude = low ? PyNumber_Or(top, low) : NULL;
    PyObject *out = magnitude && negative(v) ? PyNumber_Invert(magnitude) : magnitude;
    if (out != magnitude)
        Py_XDECREF(magnitude);
    Py_XDECREF(hi);
    Py_XDECREF(shift);
    Py_XDECREF(top);
    Py_XDECREF(low);
    return out;
}

/* Step 3 for a failure: InvalidRecordError with the reference's message. */
static void raise_failure(const failure_t *f, PyObject *count)
{
    long long index = f->index;
    long long extra = f->extra;
    PyObject *value = NULL, *message = NULL;
    switch (f->code) {
    case RECORD_SIZE: case OFFSET_DELTA: case KEY_LENGTH: case VALUE_LENGTH:
    case HEADER_COUNT: case HEADERS_CANNOT_FIT: case HEADER_KEY_LENGTH:
    case HEADER_VALUE_LENGTH: case FIELDS_SIZE:
        if ((value = value_object(f->value)) == NULL)
            return;
        break;
    default:
        break;
    }
    switch (f->code) {
    case OK:
        PyErr_SetString(PyExc_SystemError, "_record_walk: no failure to raise");
        return;
    case NO_MEMORY:
        PyErr_NoMemory();
        return;
    case PREMATURE_EOF:
        message = PyUnicode_FromFormat(
            "Incorrect declared batch size, premature EOF reached in record %lld", index);
        break;
    case VARINT_TOO_LONG:
        message = PyUnicode_FromString("varint longer than 10 bytes");
        break;
    case RECORD_SIZE:
        message = PyUnicode_FromFormat(
            "Invalid record size: record %lld declares %S bytes, %lld remain in the batch",
            index, value, extra);
        break;
    case OFFSET_DELTA:
        message = PyUnicode_FromFormat(
            "record %lld has offset delta %S: offset deltas inside a batch must be 0, 1, 2, ...",
            index, value);
        break;
    case KEY_LENGTH_BYTE:
        message = PyUnicode_FromFormat("record %lld: invalid key length", index);
        break;
    case KEY_LENGTH:
        message = PyUnicode_FromFormat("record %lld: invalid key length %S", index, value);
        break;
    case VALUE_LENGTH_BYTES:
        message = PyUnicode_FromFormat("record %lld: invalid value length", index);
        break;
    case VALUE_LENGTH:
        message = PyUnicode_FromFormat("record %lld: invalid value length %S", index, value);
        break;
    case HEADER_COUNT:
        message = PyUnicode_FromFormat(
            "Found invalid number of record headers %S in record %lld", value, index);
        break;
    case HEADERS_CANNOT_FIT:
        message = PyUnicode_FromFormat(
            "record %lld: %S headers cannot fit in the %lld bytes left", index, value, extra);
        break;
    case HEADER_KEY_LENGTH:
        message = PyUnicode_FromFormat(
            "Invalid negative header key size %S in record %lld", value, index);
        break;
    case HEADER_VALUE_LENGTH:
        message = PyUnicode_FromFormat(
            "Invalid header value size %S in record %lld", value, index);
        break;
    case HEADER_PAST_END:
        message = PyUnicode_FromFormat(
            "record %lld: header runs past the end of its record", index);
        break;
    case FIELDS_SIZE:
        message = PyUnicode_FromFormat(
            "Invalid record size: record %lld declares %S bytes but its fields take %lld",
            index, value, extra);
        break;
    case RECORDS_REMAINING:
        message = PyUnicode_FromFormat(
            "Incorrect declared batch size, records still remaining in file: %lld bytes "
            "after %S records", extra, count);
        break;
    }
    Py_XDECREF(value);
    if (message != NULL) {
        PyErr_SetObject(InvalidRecordError, message);
        Py_DECREF(message);
    }
}

/* Step 3 for a success: a list of ints, big_stamps' (index, lo, hi) in their slots. */
static PyObject *int_list(const int_array *a, const int_array *big)
{
    PyObject *list = PyList_New((Py_ssize_t)a->len);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < a->len; i++) {
        PyObject *x = PyLong_FromLongLong(a->items[i]);
        if (x == NULL)
            goto error;
        PyList_SET_ITEM(list, (Py_ssize_t)i, x);
    }
    for (size_t i = 0; big != NULL && i + 2 < big->len; i += 3) {
        varint v = {(uint64_t)big->items[i + 1], (uint32_t)big->items[i + 2]};
        PyObject *x = value_object(v);
        if (x == NULL || PyList_SetItem(list, (Py_ssize_t)big->items[i], x) < 0)
            goto error;
    }
    return list;
error:
    Py_DECREF(list);
    return NULL;
}

PyDoc_STRVAR(walk_doc,
"walk(body, count, want_stamps, release_above=1000, *, want_keyless=True)\n"
"    -> (keyless, stamps)\n\n"
"protocol.record_validation._walk in C: parse ``count`` records filling ``body``\n"
"exactly; the indexes of keyless records (want_keyless, else []) and (want_stamps) the\n"
"timestamp deltas, else None. Raises InvalidRecordError as _walk does. The walk runs\n"
"without the GIL when count > release_above.");

static PyObject *walk(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                     PyObject *kwnames)
{
    (void)module;
    nargs = PyVectorcall_NARGS(nargs);
    if (nargs < 3 || nargs > 4) {
        PyErr_Format(PyExc_TypeError, "walk() takes 3 or 4 positional arguments (%zd given)",
                     nargs);
        return NULL;
    }
    int want_keyless = 1;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "want_keyless")) {
            PyErr_Format(PyExc_TypeError, "walk() got an unexpected keyword argument %R", name);
            return NULL;
        }
        if ((want_keyless = PyObject_IsTrue(args[nargs + i])) < 0)
            return NULL;
    }
    PyObject *count_obj = args[1];
    int want_stamps = PyObject_IsTrue(args[2]);
    if (want_stamps < 0)
        return NULL;
    long long release_above = RELEASE_GIL_RECORDS;
    if (nargs == 4 && (release_above = PyLong_AsLongLong(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    int overflow;
    long long count = PyLong_AsLongLongAndOverflow(count_obj, &overflow);
    if (count == -1 && PyErr_Occurred())
        return NULL;

    /* step 1 */
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const size_t n = (size_t)view.len;
    /* the reference's count * 7 > n, without the overflow */
    if (overflow > 0 || (count > 0 && (unsigned long long)count > n / MIN_RECORD_SIZE)) {
        PyErr_Format(InvalidRecordError, "%S records cannot fit in %zd bytes", count_obj,
                     view.len);
        PyBuffer_Release(&view);
        return NULL;
    }
    if (overflow < 0)
        count = -1;  /* any negative count walks no record */

    /* step 2 */
    int_array keyless = {0}, stamps = {0}, big_stamps = {0};
    failure_t f = {OK, 0, {0, 0}, 0};
    if (count > release_above) {
        Py_BEGIN_ALLOW_THREADS
        f.code = walk_records(view.buf, n, count, want_stamps, want_keyless ? &keyless : NULL,
                              &stamps, &big_stamps, &f);
        Py_END_ALLOW_THREADS
    } else {
        f.code = walk_records(view.buf, n, count, want_stamps, want_keyless ? &keyless : NULL,
                              &stamps, &big_stamps, &f);
    }

    /* step 3 */
    PyObject *result = NULL, *keyless_list = NULL, *stamps_list = NULL;
    if (f.code != OK) {
        raise_failure(&f, count_obj);
    } else if ((keyless_list = int_list(&keyless, NULL)) != NULL) {
        stamps_list = want_stamps ? int_list(&stamps, &big_stamps) : Py_NewRef(Py_None);
        if (stamps_list != NULL)
            result = PyTuple_Pack(2, keyless_list, stamps_list);
    }
    Py_XDECREF(keyless_list);
    Py_XDECREF(stamps_list);
    PyMem_RawFree(keyless.items);
    PyMem_RawFree(stamps.items);
    PyMem_RawFree(big_stamps.items);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL | METH_KEYWORDS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "protocol._record_walk",
    .m_doc = "protocol.record_validation._walk in C (see protocol/_record_walk.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__record_walk(void)
{
    PyObject *records = PyImport_ImportModule("protocol.records");
    if (records == NULL)
        return NULL;
    InvalidRecordError = PyObject_GetAttrString(records, "InvalidRecordError");
    Py_DECREF(records);
    if (InvalidRecordError == NULL)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddIntConstant(module, "RELEASE_GIL_RECORDS", RELEASE_GIL_RECORDS) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
