"""A checkpoint series as a TensorBoard event file: each dataset's main metric at each step, the scalars
`tensorboard --logdir results/experiments/NAME/tensorboard` plots beside a training run's own curves.

Written by hand to TensorBoard's format, so that clipeval needs neither
TensorBoard nor TensorFlow, and the same results give the same bytes: the
file is a sequence of records (length, its masked CRC-32C, the data, its
masked CRC-32C), each an `Event` message in protocol-buffer encoding, the
first naming the file version. Wall times are 0: a wall clock would make
every run's file differ; TensorBoard plots these by step.
"""

import struct

FILE_VERSION = "brain.Event:2"
# The CRC-32C (Castagnoli) polynomial, reflected, and the mask TFRecord applies to each CRC.
_CASTAGNOLI = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CASTAGNOLI if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def record(data: bytes) -> bytes:
    """One TFRecord: the data framed by its length and both masked CRCs."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire_type) + payload


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _field(number, 2, _varint(len(payload)) + payload)


def event(step: int = 0, file_version: str | None = None, scalars=()) -> bytes:
    """An Event message: wall_time 0 (field 1, double), step (2, int64), file_version (3) or a summary (5) of
    (tag, value) scalars, each a Summary.Value of tag (1) and simple_value (2, float)."""
    message = _field(1, 1, struct.pack("<d", 0.0)) + _field(2, 0, _varint(step))
    if file_version is not None:
        message += _length_delimited(3, file_version.encode())
    values = b"".join(
        _length_delimited(1, _length_delimited(1, tag.encode()) + _field(2, 5, struct.pack("<f", value)))
        for tag, value in scalars
    )
    if values:
        message += _length_delimited(5, values)
    return message


def series_events(rows: list[dict]) -> bytes:
    """The event file of one series' rows (series_table.series_rows): per step, each dataset's main metric
    under the tag DATASET/METRIC; a step's undefined value is left out."""
    steps = {}
    for row in rows:
        if row["value"] is not None:
            steps.setdefault(row["step"], []).append((f"{row['dataset']}/{row['metric']}", row["value"]))
    records = [record(event(file_version=FILE_VERSION))]
    records += [record(event(step, scalars=scalars)) for step, scalars in sorted(steps.items())]
    return b"".join(records)
