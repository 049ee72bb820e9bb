#!/usr/bin/env python3
"""Independent reference for the lottery (src/admission/lottery.rs), written from the published
algorithms (PCG32 seed expansion as documented by rand_core 0.10, RFC 8439 ChaCha20 block
with a 64-bit counter and zero stream, as rand_chacha uses), not from the Rust code.

Usage: lottery_reference.py PERCENTAGE SEED...   prints the seeds that win.
PERCENTAGE may have up to four decimals (12.5, 0.0001); further digits are dropped.
"""
from decimal import ROUND_DOWN, Decimal
import struct
import sys

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


def pcg32_seed(state):
    """rand_core's seed_from_u64: eight PCG32 outputs, little-endian, into 32 bytes."""
    out = b""
    for _ in range(8):
        state = (state * 0x5851F42D4C957F2D + 0xA17654E46FBE17F3) & M64
        xorshifted = (((state >> 18) ^ state) >> 27) & M32
        rot = state >> 59
        out += struct.pack("<I", ((xorshifted >> rot) | (xorshifted << (32 - rot))) & M32)
    return out


def chacha20_first_word(key):
    """Word 0 of the ChaCha20 block 0 for `key`, counter 0, nonce 0."""
    def rotl(v, c):
        return ((v << c) | (v >> (32 - c))) & M32

    def quarter(s, a, b, c, d):
        s[a] = (s[a] + s[b]) & M32; s[d] = rotl(s[d] ^ s[a], 16)
        s[c] = (s[c] + s[d]) & M32; s[b] = rotl(s[b] ^ s[c], 12)
        s[a] = (s[a] + s[b]) & M32; s[d] = rotl(s[d] ^ s[a], 8)
        s[c] = (s[c] + s[d]) & M32; s[b] = rotl(s[b] ^ s[c], 7)

    init = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574]
    init += list(struct.unpack("<8I", key)) + [0, 0, 0, 0]
    s = list(init)
    for _ in range(10):
        quarter(s, 0, 4, 8, 12); quarter(s, 1, 5, 9, 13)
        quarter(s, 2, 6, 10, 14); quarter(s, 3, 7, 11, 15)
        quarter(s, 0, 5, 10, 15); quarter(s, 1, 6, 11, 12)
        quarter(s, 2, 7, 8, 13); quarter(s, 3, 4, 9, 14)
    return (s[0] + init[0]) & M32


def micros(text):
    """The percentage in millionths of the crowd: four decimals kept, clamped to 0..100."""
    p = Decimal(text).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
    return int(min(max(p, Decimal(0)), Decimal(100)) * 10000)


def wins(seed, p_micro):
    x = chacha20_first_word(pcg32_seed(seed))
    return x * 1_000_000 < p_micro << 32


if __name__ == "__main__":
    p = micros(sys.argv[1])
    print([s for s in map(int, sys.argv[2:]) if wins(s, p)])
