"""numba helpers the compiled kernels share: the buffers' regrowth
(:mod:`connector.formats.core._colbuf`), the JSON kernel's value write :func:`emit` (Avro's
handlers write through their own inlined ``_slot``, which notes an overflow in the kernel's
scratch), the LEB128 :func:`varint` reader, ``voidptr``, ``memcpy``, ``load_*``, ``store_u8``
(addresses in compiled code: kernels read Arrow buffers in place), :data:`helper` (a kernel's
small compiled helpers) and :func:`kernel` (a kernel assembled from its inlined handlers).
Imported lazily (numba is slow to import); compiled once, cached on disk."""
import numpy as np

from connector.formats.core._inline import dispatch, expand, inline  # noqa: F401 - the kernels' API
from connector.formats.core._jit import njit
from connector.formats.core._json_text import HEX_DIGITS as _HEX

# A kernel's small helper (called with a few arrays and numbers, in expressions): it allocates
# nothing, so it is compiled without reference counting, and LLVM inlines it. Either reference
# counting or numba's own inlining (``inline="always"``, at the IR level) costs about 10 ns per
# call that passes an array, measured: most of a kernel's time. Handlers that take a kernel's
# named structures are ``inline`` (pasted into the kernel: see ``_inline``) instead.
helper = njit(nogil=True, _nrt=False)


@njit(nogil=True)
def _bases(newcap):
    """(first slot of each column's region, total) of regions of capacities ``newcap``."""
    nb = np.empty(len(newcap), np.int64)
    total = 0
    for c in range(len(newcap)):
        nb[c] = total
        total += newcap[c]
    return nb, total


@njit(nogil=True)
def regrow(cbase, cnt, cval, cvalid, clen, newcap):
    """Value regions with capacities ``newcap`` (each ≥ its count), values kept, plus a sink."""
    ncols = len(cbase)
    nb, total = _bases(newcap)
    v2 = np.empty(total + 1, np.int64)
    d2 = np.empty(total + 1, np.uint8)
    l2 = np.empty(total + 1, np.int64)
    for c in range(ncols):
        a, b, k = cbase[c], nb[c], cnt[c]
        v2[b:b + k] = cval[a:a + k]
        d2[b:b + k] = cvalid[a:a + k]
        l2[b:b + k] = clen[a:a + k]
    return nb, v2, d2, l2


@njit(nogil=True)
def regrow_bytes(bbase, bcnt, bdata, newcap):
    """Byte regions with capacities ``newcap`` (each ≥ its count), bytes kept."""
    ncols = len(bbase)
    nb, total = _bases(newcap)
    d2 = np.empty(total, np.uint8)
    for c in range(ncols):
        a, b, k = bbase[c], nb[c], bcnt[c]
        d2[b:b + k] = bdata[a:a + k]
    return nb, d2


@njit(nogil=True, _nrt=False)
def emit(c, valid, v, ln, cbase, ccap, cnt, cval, cvalid, clen, sink, ovc):
    """One value into column ``c`` of the buffers (the kernels' shared write); returns the
    overflowed column (or ``ovc``)."""
    i = cnt[c]
    j = cbase[c] + i
    if i >= ccap[c]:
        j = sink
        ovc = c
    cval[j] = v
    cvalid[j] = valid
    clen[j] = ln
    cnt[c] = i + 1
    return ovc


VARINT_TRUNCATED, VARINT_OVERFLOW, VARINT_TOO_LONG = 1, 2, 3  # faults of a varint


@helper
def varint(buf, pos, end):
    """The LEB128 varint at ``buf[pos:end]``: (raw unsigned value, new position, fault): 0,
    :data:`VARINT_TRUNCATED` (the end comes first), :data:`VARINT_OVERFLOW` (a tenth byte with
    bits beyond the 64th, which every parser but protobuf's refuses) or :data:`VARINT_TOO_LONG`
    (more than ten bytes). Each format maps the fault to its own row error."""
    u = np.uint64(0)
    for k in range(10):
        if pos >= end:
            return u, pos, VARINT_TRUNCATED
        b = buf[pos]
        pos += 1
        if k == 9 and b > 1:
            return u, pos, VARINT_OVERFLOW
        u |= np.uint64(b & 0x7F) << np.uint64(7 * k)
        if b < 0x80:
            return u, pos, 0
    return u, pos, VARINT_TOO_LONG


def kernel(**options):
    """A kernel's decorator: the function with the handlers and helpers it calls that are marked
    :func:`~connector.formats.core._inline.inline` pasted in (``_inline.expand``: one function,
    the fastest to compile and to run), compiled by numba without reference counting (a kernel
    allocates nothing: its output and scratch come from its caller), cached on disk with its
    module. Define it after everything it calls."""
    import sys

    def wrap(fn):
        return njit(nogil=True, _nrt=False, **options)(expand(fn, sys.modules[fn.__module__].__dict__))
    return wrap


def _make_intrinsics():
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def voidptr(typingctx, addr):
        """An int64 address as ``void *`` (compiled code only): with ``numba.carray`` it reads
        an Arrow buffer in place, so a kernel walks any nesting of columns without a copy."""
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(types.voidptr))
        return types.voidptr(addr), codegen

    @intrinsic
    def memcpy(typingctx, dst, src, n):
        """Copy ``n`` bytes from address ``src`` to address ``dst`` (compiled code only; a
        slice assignment between arrays is a loop over items, several times slower)."""
        def codegen(context, builder, signature, args):
            ptr = context.get_value_type(types.voidptr)
            cgutils.raw_memcpy(builder, builder.inttoptr(args[0], ptr), builder.inttoptr(args[1], ptr),
                               args[2], 1)
            return context.get_dummy_value()
        return types.none(dst, src, n), codegen

    def loader(nbty):
        @intrinsic
        def load(typingctx, addr):
            """The value at an address (compiled code only; no array object, so no reference
            counting, unlike a ``numba.carray`` per read)."""
            def codegen(context, builder, signature, args):
                ptr = builder.inttoptr(args[0], context.get_value_type(nbty).as_pointer())
                return builder.load(ptr, align=1)
            return nbty(addr), codegen
        return load

    @intrinsic
    def store_u8(typingctx, addr, value):
        """Write ``value`` as one byte at an address (compiled code only)."""
        def codegen(context, builder, signature, args):
            v = context.cast(builder, args[1], signature.args[1], types.uint8)
            builder.store(v, builder.inttoptr(args[0], context.get_value_type(types.uint8).as_pointer()))
            return context.get_dummy_value()
        return types.none(addr, value), codegen
    return (voidptr, memcpy, loader(types.uint8), loader(types.int32), loader(types.uint32),
            loader(types.int64), store_u8)


voidptr, memcpy, load_u8, load_i32, load_u32, load_i64, store_u8 = _make_intrinsics()


@helper
def put_escaped(dst, at, c, x):
    """The JSON escape of byte ``c`` at ``dst[at]`` — ``x`` is its letter in
    :data:`~connector.formats.core.JSON_ESCAPES` (``u``: ``\\u00XX``); the position after it.
    The one writer of escapes for the kernels that write JSON text."""
    dst[at] = 92
    if x == 117:
        dst[at + 1] = 117
        dst[at + 2] = 48
        dst[at + 3] = 48
        dst[at + 4] = _HEX[c >> 4]
        dst[at + 5] = _HEX[c & 15]
        return at + 6
    dst[at + 1] = x
    return at + 2
