/* protocol/_gzip_members.c -- compression._gzip_decompress_bounded in C (issue 28).

   inflate(data, max_size, release_above=RELEASE_GIL_BYTES) -> bytes | (kind, message)

   Reads ``data`` (any contiguous byte buffer) member after member as gzip.decompress does
   and returns the concatenated output, never more than ``max_size`` bytes of it; a
   refusal is returned, not raised, as (TOO_LARGE, "") or (CORRUPT, message), which
   protocol/compression.py turns into its exceptions. The pure-Python
   ``_gzip_decompress_bounded`` is the reference and the fallback: verdicts and messages
   here are its own (tests/unit/protocol/test_compression.py runs both on the same
   valid, damaged and cut streams).

   A member (RFC 1952)::

       1f 8b . method 8 . flags . mtime int32 . xfl . os .
       [FEXTRA: xlen uint16-le . xlen bytes] [FNAME: bytes . 00] [FCOMMENT: bytes . 00]
       [FHCRC: uint16, skipped, not checked] . raw deflate .
       crc32 uint32-le . size mod 2^32 uint32-le

   Zero bytes between and after members are skipped; the reserved flag bits are
   ignored; a name or comment without its zero runs to the end of the input (all as
   gzip.decompress and Java's GZIPInputStream, which Kafka uses).

   Why C: the reference walks members in Python, ~2.5 µs each with the GIL held; a
   1 MB batch of 21-byte members (50,000) held it ~125 ms in a pool thread, and the
   event loop waited for it (make fuzz's stalls over 50 ms). Here the whole walk runs
   without the GIL once the input is over ``release_above`` bytes, and the rest of it
   once the output passes RELEASE_GIL_OUTPUT bytes: the work follows the output, and a
   small input may inflate to the whole bound (py-spy --gil under make fuzz found
   worker threads inflating such bombs, up to 16 MiB from under 64 KiB, with the GIL
   held while the event loop stalled past 50 ms). A small input that stays small is
   inflated with the GIL kept (on the event loop, letting go and taking the GIL back
   would cost more than the work). Output grows by doubling up to max_size + 1 bytes (the first byte past the
   bound is the verdict TOO_LARGE), so a bomb allocates no more than the bound.
*/

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define RELEASE_GIL_BYTES 65536   /* inputs above this are inflated without the GIL */
#define RELEASE_GIL_OUTPUT 262144 /* and any input once its output buffer reaches this */
#define FIRST_OUT 65536           /* the output buffer's first size (or max_size + 1) */

enum { OK = 0, CORRUPT = 1, TOO_LARGE = 2, NO_MEMORY = 3 };

/* header flags; bits 5-7 are reserved and ignored */
#define FHCRC 2
#define FEXTRA 4
#define FNAME 8
#define FCOMMENT 16

static const char ENDED[] = "Compressed file ended before the end-of-stream marker was reached";

typedef struct {
    unsigned char *buf;
    size_t len, cap, limit;       /* limit = max_size + 1: never allocated beyond */
    int code;
    char message[256];
} output_t;

static int fail(output_t *out, int code, const char *message)
{
    out->code = code;
    snprintf(out->message, sizeof out->message, "%s", message);
    return code;
}

/* Room for more output: doubles the buffer up to the limit; 0 when at the limit. */
static int grow(output_t *out)
{
    if (out->cap >= out->limit)
        return 0;
    size_t cap = out->cap ? out->cap * 2 : FIRST_OUT;
    if (cap > out->limit || cap < out->cap)
        cap = out->limit;
    unsigned char *buf = realloc(out->buf, cap);
    if (buf == NULL)
        return fail(out, NO_MEMORY, "out of memory"), -1;
    out->buf = buf;
    out->cap = cap;
    return 1;
}

/* Where the member whose header starts at pos has its deflate data; -1 on a refusal. */
static long long header_end(const unsigned char *in, size_t n, size_t pos, output_t *out)
{
    if (pos + 2 > n || in[pos] != 0x1f || in[pos + 1] != 0x8b)
        return fail(out, CORRUPT, "Not a gzipped file"), -1;
    if (pos + 10 > n)
        return fail(out, CORRUPT, ENDED), -1;
    if (in[pos + 2] != 8)
        return fail(out, CORRUPT, "Unknown compression method"), -1;
    unsigned flags = in[pos + 3];
    size_t at = pos + 10;
    if (flags & FEXTRA) {
        if (at + 2 > n)
            return fail(out, CORRUPT, ENDED), -1;
        at += 2 + (in[at] | (size_t)in[at + 1] << 8);
        if (at > n)
            return fail(out, CORRUPT, ENDED), -1;
    }
    for (unsigned flag = FNAME; flag <= FCOMMENT; flag <<= 1) {
        if (flags & flag) {
            const unsigned char *zero = at < n ? memchr(in + at, 0, n - at) : NULL;
            at = zero == NULL ? n : (size_t)(zero - in) + 1;
        }
    }
    if (flags & FHCRC) {
        if (at + 2 > n)
            return fail(out, CORRUPT, ENDED), -1;
        at += 2;
    }
    return (long long)at;
}

static void zlib_failure(output_t *out, int err, const char *msg)
{
    /* as CPython's zlib module words it (zlibmodule.c: zlib_error) */
    if (msg == NULL) {
        if (err == Z_BUF_ERROR)
            msg = "incomplete or truncated stream";
        else if (err == Z_STREAM_ERROR)
            msg = "inconsistent stream state";
        else if (err == Z_DATA_ERROR)
            msg = "invalid input data";
    }
    out->code = CORRUPT;
    if (msg == NULL)
        snprintf(out->message, sizeof out->message, "Error %d while decompressing data", err);
    else
        snprintf(out->message, sizeof out->message, "Error %d while decompressing data: %s",
                 err, msg);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Whether the walk holds the GIL, and the thread state to take it back with. */
typedef struct {
    int holding;
    PyThreadState *saved;
} gil_t;

/* The walk, on C memory only; lets go of the GIL (if held) once the output buffer has
   grown to RELEASE_GIL_OUTPUT bytes. */
static int inflate_members(const unsigned char *in, size_t n, output_t *out, gil_t *gil)
{
    size_t pos = 0;
    while (pos < n) {
        long long start = header_end(in, n, pos, out);
        if (start < 0)
            return out->code;
        pos = (size_t)start;
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
            return fail(out, NO_MEMORY, "out of memory");
        size_t member_start = out->len;
        int err = Z_OK;
        for (;;) {
            /* the bound before the end of the input, as the reference checks them: a
               cut stream that already inflated past max_size is TOO_LARGE */
            if (out->len == out->cap) {
                int grew = grow(out);
                if (grew < 0) {
                    inflateEnd(&z);
                    return out->code;
                }
                if (grew == 0) {            /* max_size + 1 bytes out: past the bound */
                    inflateEnd(&z);
                    return fail(out, TOO_LARGE, "");
                }
                if (gil->holding && out->cap >= RELEASE_GIL_OUTPUT) {
                    gil->saved = PyEval_SaveThread();
                    gil->holding = 0;
                }
            }
            if (pos >= n) {
                inflateEnd(&z);
                return fail(out, CORRUPT, ENDED);
            }
            size_t in_left = n - pos, out_left = out->cap - out->len;
            z.next_in = (unsigned char *)in + pos;
            z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            z.next_out = out->buf + out->len;
            z.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
            uInt fed = z.avail_in, room = z.avail_out;
            err = inflate(&z, Z_SYNC_FLUSH);
            pos += fed - z.avail_in;
            out->len += room - z.avail_out;
            if (err == Z_STREAM_END)
                break;
            if (err == Z_BUF_ERROR && z.avail_out > 0) {
                /* no progress with room to write: the input ended inside the member */
                inflateEnd(&z);
                return fail(out, CORRUPT, ENDED);
            }
            if (err != Z_OK && err != Z_BUF_ERROR) {
                zlib_failure(out, err, z.msg);
                inflateEnd(&z);
                return out->code;
            }
        }
        inflateEnd(&z);
        if (out->len >= out->limit)
            return fail(out, TOO_LARGE, "");
        size_t produced = out->len - member_start;
        uLong crc = crc32(0L, Z_NULL, 0);
        const unsigned char *data = out->buf + member_start;
        for (size_t left = produced; left > 0;) {
            uInt chunk = left > UINT_MAX ? UINT_MAX : (uInt)left;
            crc = crc32(crc, data, chunk);
            data += chunk;
            left -= chunk;
        }
        if (pos + 8 > n)
            return fail(out, CORRUPT, ENDED);
        if (le32(in + pos) != (uint32_t)crc)
            return fail(out, CORRUPT, "CRC check failed");
        if (le32(in + pos + 4) != (uint32_t)(produced & 0xFFFFFFFFu))
            return fail(out, CORRUPT, "Incorrect length of data produced");
        pos += 8;
        while (pos < n && in[pos] == 0)
            pos++;
    }
    return OK;
}

PyDoc_STRVAR(inflate_doc,
"inflate(data, max_size, release_above=65536) -> bytes | (kind, message)\n\n"
"compression._gzip_decompress_bounded in C: every gzip member of ``data``, at most\n"
"``max_size`` bytes out. A refusal is returned as (TOO_LARGE, '') or (CORRUPT, message).\n"
"Runs without the GIL when len(data) > release_above, and from the point its output\n"
"reaches RELEASE_GIL_OUTPUT bytes otherwise.");

static PyObject *inflate_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 2 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "inflate() takes 2 or 3 arguments (%zd given)", nargs);
        return NULL;
    }
    long long max_size = PyLong_AsLongLong(args[1]);
    if (max_size == -1 && PyErr_Occurred())
        return NULL;
    if (max_size < 0 || (unsigned long long)max_size >= SIZE_MAX) {
        PyErr_SetString(PyExc_ValueError, "max_size out of range");
        return NULL;
    }
    long long release_above = RELEASE_GIL_BYTES;
    if (nargs == 3 && (release_above = PyLong_AsLongLong(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    output_t out = {NULL, 0, 0, (size_t)max_size + 1, OK, {0}};
    gil_t gil = {1, NULL};
    if (view.len > release_above) {
        gil.saved = PyEval_SaveThread();
        gil.holding = 0;
    }
    inflate_members(view.buf, (size_t)view.len, &out, &gil);
    if (!gil.holding)
        PyEval_RestoreThread(gil.saved);
    PyBuffer_Release(&view);
    PyObject *result;
    if (out.code == OK)
        result = PyBytes_FromStringAndSize((const char *)out.buf, (Py_ssize_t)out.len);
    else if (out.code == NO_MEMORY)
        result = PyErr_NoMemory();
    else
        result = Py_BuildValue("(is)", out.code, out.message);
    free(out.buf);
    return result;
}

static PyMethodDef methods[] = {
    {"inflate", (PyCFunction)(void (*)(void))inflate_py, METH_FASTCALL, inflate_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "protocol._gzip_members",
    .m_doc = "compression._gzip_decompress_bounded in C (see protocol/_gzip_members.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__gzip_members(void)
{
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddIntConstant(module, "RELEASE_GIL_BYTES", RELEASE_GIL_BYTES) < 0
            || PyModule_AddIntConstant(module, "RELEASE_GIL_OUTPUT", RELEASE_GIL_OUTPUT) < 0
            || PyModule_AddIntConstant(module, "CORRUPT", CORRUPT) < 0
            || PyModule_AddIntConstant(module, "TOO_LARGE", TOO_LARGE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
