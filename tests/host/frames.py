# Lists the zstd frames of a dlhook trace (16-byte header, then frames): prints the compressed
# size of each frame, one per line. Walks frame headers and block headers (RFC 8878), no zstd
# library needed. Exit 1 if the file does not parse to its end.
#   python3 frames.py TRACE
import struct, sys

data = open(sys.argv[1], "rb").read()
pos = 16
while pos < len(data):
    start = pos
    magic = struct.unpack_from("<I", data, pos)[0]
    if 0x184D2A50 <= magic <= 0x184D2A5F:  # skippable frame
        pos += 8 + struct.unpack_from("<I", data, pos + 4)[0]
        print(pos - start)
        continue
    if magic != 0xFD2FB528:
        sys.exit(f"no zstd frame at offset {pos}")
    fhd = data[pos + 4]
    fcs_flag, single, checksum, dict_flag = fhd >> 6, (fhd >> 5) & 1, (fhd >> 2) & 1, fhd & 3
    pos += 5 + (0 if single else 1) + [0, 1, 2, 4][dict_flag]
    pos += [1 if single else 0, 2, 4, 8][fcs_flag]
    while True:
        b = int.from_bytes(data[pos:pos + 3], "little")
        last, btype, bsize = b & 1, (b >> 1) & 3, b >> 3
        pos += 3 + (1 if btype == 1 else bsize)
        if last:
            break
    pos += 4 if checksum else 0
    if pos > len(data):
        sys.exit(f"frame at {start} runs past the end")
    print(pos - start)
