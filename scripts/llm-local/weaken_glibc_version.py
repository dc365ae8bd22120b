"""Mark the GLIBC_2.38 version requirement weak (VER_FLG_WEAK) so glibc 2.36's loader accepts the
library; the four C23 symbols that needed it come from the shim library."""

import struct
import sys


def weaken(path, want=b"GLIBC_2.38"):
    b = bytearray(open(path, "rb").read())
    (shoff,) = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    secs = [
        struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize)
        for i in range(shnum)
    ]
    n = 0
    for s in secs:
        if s[1] != 0x6FFFFFFE:  # SHT_GNU_verneed
            continue
        off, strtab = s[4], secs[s[6]][4]
        pos = off
        while True:
            vn_version, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from(
                "<HHIII", b, pos
            )
            apos = pos + vn_aux
            for _ in range(vn_cnt):
                vna_hash, vna_flags, vna_other, vna_name, vna_next = struct.unpack_from(
                    "<IHHII", b, apos
                )
                name = bytes(b[strtab + vna_name : b.index(0, strtab + vna_name)])
                if name == want:
                    struct.pack_into("<H", b, apos + 4, vna_flags | 0x2)
                    n += 1
                if not vna_next:
                    break
                apos += vna_next
            if not vn_next:
                break
            pos += vn_next
    open(path, "wb").write(b)
    return n


for p in sys.argv[1:]:
    print(p, weaken(p))
