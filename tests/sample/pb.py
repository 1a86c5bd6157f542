"""pb.py — the protobuf wire format, read by hand for the sampling tests' checks (samples.py,
shares_check.py): no generated code, so they read what the C side wrote as it is on disk."""


def varint(b, i):
    """(value, next index) of the varint at b[i]"""
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields_wt(b):
    """(field number, wire type, value) of a protobuf message; value: int or bytes"""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def fields(b):
    """(field number, value) of a protobuf message"""
    for f, _, v in fields_wt(b):
        yield f, v
