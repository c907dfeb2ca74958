"""numba helpers the compiled kernels share: the buffers' regrowth
(:mod:`connector.formats.core._colbuf`) and the one value write of the Avro and JSON kernels.
Imported lazily (numba is slow to import); compiled once, cached on disk."""
import numpy as np

from connector.formats.core._jit import njit


@njit(nogil=True)
def regrow(cbase, cnt, cval, cvalid, clen, newcap):
    """Value regions with capacities ``newcap`` (each ≥ its count), values kept, plus a sink."""
    ncols = len(cbase)
    nb = np.empty(ncols, np.int64)
    total = 0
    for c in range(ncols):
        nb[c] = total
        total += newcap[c]
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
    nb = np.empty(ncols, np.int64)
    total = 0
    for c in range(ncols):
        nb[c] = total
        total += newcap[c]
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
