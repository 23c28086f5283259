"""SipHash-2-4 of 64-bit words, vectorised with numpy: a keyed pseudorandom function for the ledger's cell hashes.

SipHash (Aumasson & Bernstein, "SipHash: a fast short-input PRF", INDOCRYPT 2012) maps a 128-bit key
(k0, k1) and a message to 64 bits; with c = 2 compression and d = 4 finalisation rounds it is the
standard PRF for short inputs (hash-flooding defence in Python, Rust, the Linux kernel). Here every
message is one 8-byte word m (little-endian), so the function is::

    v0, v1, v2, v3 = k0 ⊕ "somepseu", k1 ⊕ "dorandom", k0 ⊕ "lygenera", k1 ⊕ "tedbytes"
    v3 ⊕= m;  2 × SipRound;  v0 ⊕= m           # the message block
    b = 8 << 56;  v3 ⊕= b;  2 × SipRound;  v0 ⊕= b   # the final block: length 8, no tail bytes
    v2 ⊕= 0xff;  4 × SipRound;  return v0 ⊕ v1 ⊕ v2 ⊕ v3

which is SipHash-2-4 of the 8-byte string m (the paper's reference vector for key 00…0f and message
00…07 is 0x93f5f5799a932462). numpy evaluates it on whole arrays, in chunks small enough to stay in
cache; keys may differ per element (an array of k0 and of k1).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

_C0, _C1, _C2, _C3 = (np.uint64(0x736F6D6570736575), np.uint64(0x646F72616E646F6D), np.uint64(0x6C7967656E657261),
                      np.uint64(0x7465646279746573))
_LAST = np.uint64(8 << 56)
_FF = np.uint64(0xFF)
_CHUNK = 1 << 14
_R = {r: (np.uint64(r), np.uint64(64 - r)) for r in (13, 16, 17, 21, 32)}


def _rotl(x: NDArray[np.uint64], r: int, tmp: NDArray[np.uint64]) -> None:
    left, right = _R[r]
    np.left_shift(x, left, out=tmp)
    np.right_shift(x, right, out=x)
    np.bitwise_or(x, tmp, out=x)


def _round(v0: NDArray[np.uint64], v1: NDArray[np.uint64], v2: NDArray[np.uint64], v3: NDArray[np.uint64],
           tmp: NDArray[np.uint64]) -> None:
    """One SipRound, in place (additions wrap mod 2⁶⁴)."""
    v0 += v1
    _rotl(v1, 13, tmp)
    v1 ^= v0
    _rotl(v0, 32, tmp)
    v2 += v3
    _rotl(v3, 16, tmp)
    v3 ^= v2
    v0 += v3
    _rotl(v3, 21, tmp)
    v3 ^= v0
    v2 += v1
    _rotl(v1, 17, tmp)
    v1 ^= v2
    _rotl(v2, 32, tmp)


def siphash24(m: NDArray[np.uint64], k0: NDArray[np.uint64] | np.uint64,
              k1: NDArray[np.uint64] | np.uint64) -> NDArray[np.uint64]:
    """SipHash-2-4 of each 8-byte word ``m[i]`` under the key (k0, k1) (scalars, or arrays shaped like ``m``)."""
    m = np.ascontiguousarray(m, dtype=np.uint64).reshape(-1)
    n = m.size
    a0 = np.broadcast_to(np.asarray(k0, dtype=np.uint64), (n,))
    a1 = np.broadcast_to(np.asarray(k1, dtype=np.uint64), (n,))
    out = np.empty(n, dtype=np.uint64)
    size = min(n, _CHUNK)
    v0, v1, v2, v3, tmp = (np.empty(size, dtype=np.uint64) for _ in range(5))
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        b = stop - start
        w, x0, x1, y0, y1, y2, y3, t = (m[start:stop], a0[start:stop], a1[start:stop], v0[:b], v1[:b], v2[:b],
                                        v3[:b], tmp[:b])
        np.bitwise_xor(x0, _C0, out=y0)
        np.bitwise_xor(x1, _C1, out=y1)
        np.bitwise_xor(x0, _C2, out=y2)
        np.bitwise_xor(x1, _C3, out=y3)
        y3 ^= w
        _round(y0, y1, y2, y3, t)
        _round(y0, y1, y2, y3, t)
        y0 ^= w
        y3 ^= _LAST
        _round(y0, y1, y2, y3, t)
        _round(y0, y1, y2, y3, t)
        y0 ^= _LAST
        y2 ^= _FF
        for _ in range(4):
            _round(y0, y1, y2, y3, t)
        o = out[start:stop]
        np.bitwise_xor(y0, y1, out=o)
        o ^= y2
        o ^= y3
    return out
