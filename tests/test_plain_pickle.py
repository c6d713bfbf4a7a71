"""The plain-data pickle reader (clipeval/data/plain_pickle.py): what it reads, what it refuses, and that
no mutation of a valid batch crashes it."""

import io
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sources import object_array_as_shape_pickle, python2_pickle

from clipeval.data.plain_pickle import load_plain_pickle
from clipeval.errors import ClipevalError

PIXELS = np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072)
BATCH = {
    b"batch_label": b"testing batch 1 of 1",
    b"labels": [3, 7],
    b"data": PIXELS,
    b"filenames": [b"a.png", b"b.png"],
}


def read(raw):
    return load_plain_pickle("batch", io.BytesIO(raw))


def same(first, second):
    if isinstance(first, np.ndarray):
        return isinstance(second, np.ndarray) and first.dtype == second.dtype and np.array_equal(first, second)
    if isinstance(first, dict):
        return (
            isinstance(second, dict) and first.keys() == second.keys() and all(same(first[k], second[k]) for k in first)
        )
    if isinstance(first, (list, tuple)):
        return type(first) is type(second) and len(first) == len(second) and all(map(same, first, second))
    return type(first) is type(second) and first == second


# CIFAR's files come from Python 2 (BINSTRING). Python 3 writes bytes under protocols 0-2 as calls of
# _codecs.encode(text, "latin1") and, from protocol 3, as BINBYTES; protocol 5 writes an array as
# numpy's _frombuffer of an in-band buffer. A batch re-saved by Python 3 may use any of them.
@pytest.mark.parametrize(
    "raw",
    [
        python2_pickle(BATCH),
        *(pickle.dumps(BATCH, protocol=protocol) for protocol in (2, 3, 4, 5)),
        pickle.dumps({"t": (1, -2.5, None, True), "n": [[], {}], "big": 2**70}, protocol=4),
    ],
    ids=["python2", "protocol2", "protocol3", "protocol4", "protocol5", "plain"],
)
def test_plain_data_reads_as_pickle_would(raw):
    assert same(read(raw), pickle.loads(raw, encoding="bytes"))


def test_an_array_is_a_read_only_view_of_the_pickles_bytes():
    loaded = read(python2_pickle(BATCH))[b"data"]
    assert not loaded.flags.writeable and not loaded.flags.owndata


def refusal(raw):
    with pytest.raises(ClipevalError) as error:
        read(raw)
    return str(error.value)


def test_the_forged_pointer_batch_is_refused():
    assert refusal(object_array_as_shape_pickle()) == (
        "batch: numpy dtype b'O8', not uint8: a dataset pickle may hold plain data only"
    )


@pytest.mark.parametrize(
    "value, message",
    [
        (np.zeros(3, dtype=np.int64), "numpy dtype 'i8', not uint8"),
        (np.zeros(3, dtype=object), "numpy dtype 'O8', not uint8"),
        (
            np.asfortranarray(np.zeros((2, 2), dtype=np.uint8)),
            "an array other than a C-ordered uint8 array with its bytes",
        ),
        (io.BytesIO(), "refusing to load _io.BytesIO"),
        (range(3), "refusing to load __builtin__.xrange"),
        ({1, 2}, "refusing to load __builtin__.set"),
    ],
)
def test_anything_but_plain_data_is_refused(value, message):
    assert refusal(python2_pickle({b"data": value})) == f"batch: {message}: a dataset pickle may hold plain data only"


@pytest.mark.parametrize(
    "value, message",
    [
        (np.zeros(3, dtype=np.int64), "numpy dtype 'i8', not uint8"),
        (
            np.asfortranarray(np.zeros((2, 2), dtype=np.uint8)),
            "an array other than a C-ordered uint8 array with its bytes",
        ),
    ],
)
def test_protocol_5_arrays_are_held_to_the_same_rule(value, message):
    assert refusal(pickle.dumps({"data": value}, protocol=5)) == (
        f"batch: {message}: a dataset pickle may hold plain data only"
    )


def test_codecs_encode_makes_latin1_bytes_only():
    raw = b"\x80\x02c_codecs\nencode\nX\x02\x00\x00\x00abX\x05\x00\x00\x00utf-8\x86R."
    assert refusal(raw) == (
        "batch: _codecs.encode with arguments ('ab', 'utf-8'): a dataset pickle may hold plain data only"
    )


def test_bytes_that_do_not_match_the_shape_are_refused():
    raw = python2_pickle({b"data": np.zeros((2, 4), dtype=np.uint8)})
    assert raw.count(b"K\x02K\x04\x86") == 1
    assert refusal(raw.replace(b"K\x02K\x04\x86", b"K\x03K\x04\x86")) == (
        "batch: an array of shape (3, 4) with 8 bytes: a dataset pickle may hold plain data only"
    )


def test_a_list_that_holds_itself_is_refused():
    looped = []
    looped.append(looped)
    assert (
        refusal(python2_pickle(looped))
        == "batch: a container that holds itself: a dataset pickle may hold plain data only"
    )


def test_a_truncated_pickle_is_an_error_not_a_result():
    with pytest.raises(ValueError):
        read(python2_pickle(BATCH)[:-1])


VALID_BATCH = {b"labels": [1, 2], b"data": np.zeros((2, 6), dtype=np.uint8)}


@pytest.mark.parametrize(
    "valid", [python2_pickle(VALID_BATCH), pickle.dumps(VALID_BATCH, protocol=5)], ids=["python2", "protocol5"]
)
@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_no_mutation_of_a_valid_batch_crashes_the_reader(valid, data):
    """Flipped, cut and inserted bytes: the reader returns plain data or raises, never crashes or runs anything."""
    raw = bytearray(valid)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(raw) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            raw[position] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "cut":
            del raw[position:]
            if not raw:
                raw.append(0)
        else:
            raw[position:position] = data.draw(st.binary(min_size=1, max_size=8))
    try:
        loaded = read(bytes(raw))
    except (
        ClipevalError,
        ValueError,
        KeyError,
        IndexError,
        TypeError,
        EOFError,
        UnicodeDecodeError,
        OverflowError,
        RecursionError,
    ):
        return
    assert all(not isinstance(item, np.ndarray) or item.dtype == np.uint8 for item in _walk(loaded))


def _walk(value):
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item)
