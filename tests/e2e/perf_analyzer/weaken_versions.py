#!/usr/bin/env python3
"""Mark version requirements (Elf64 .gnu.version_r vernaux entries) as weak, so the
dynamic loader does not refuse to start when a library lacks that version node."""
import struct, sys

VER_FLG_WEAK = 0x2
SHT_GNU_verneed = 0x6ffffffe

def weaken(path, wanted):
    data = bytearray(open(path, "rb").read())
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "ELF64 little-endian only"
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        name, stype, flags, addr, offset, size, link, info = struct.unpack_from("<IIQQQQII", data, off)
        sections.append((stype, offset, size, link, info))
    done = []
    for stype, offset, size, link, info in sections:
        if stype != SHT_GNU_verneed:
            continue
        strtab_off = sections[link][1]
        def cstr(o):
            end = data.index(b"\0", strtab_off + o)
            return data[strtab_off + o:end].decode()
        pos = offset
        for _ in range(info):
            vn_version, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", data, pos)
            apos = pos + vn_aux
            for _ in range(vn_cnt):
                vna_hash, vna_flags, vna_other, vna_name, vna_next = struct.unpack_from("<IHHII", data, apos)
                name = cstr(vna_name)
                if name in wanted:
                    struct.pack_into("<H", data, apos + 4, vna_flags | VER_FLG_WEAK)
                    done.append(f"{cstr(vn_file)}:{name}")
                apos += vna_next
                if not vna_next:
                    break
            pos += vn_next
            if not vn_next:
                break
    open(path, "wb").write(data)
    return done

if __name__ == "__main__":
    print(weaken(sys.argv[1], set(sys.argv[2:])))
