"""Read a pickle of plain data without running it: dicts, lists, tuples, bytes,
strings, numbers, and uint8 numpy arrays, as Python 2 and Python 3 (any
protocol) write them.

A pickle is a program for a stack machine that may call any importable
function, and even numpy's own array constructors, given crafted arguments,
corrupt memory (an object array built from raw bytes). So the machine is not
run: its opcodes are read with `pickletools.genops` and interpreted here for
the plain-data subset only. An array is accepted in exactly the form numpy
writes a C-ordered uint8 array, and its bytes must match its shape; anything
else is refused before any of it is built.
"""

import math
import pickletools

import numpy as np

from clipeval.errors import ClipevalError

RECONSTRUCT = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")}
# Protocol 5 writes an array as _frombuffer(its bytes, dtype, shape, order).
FROMBUFFER = {("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer")}
NDARRAY, DTYPE = ("numpy", "ndarray"), ("numpy", "dtype")
# Python 3 writes bytes under protocols 0 to 2 as _codecs.encode(text, "latin1").
CODECS_ENCODE = ("_codecs", "encode")
ALLOWED_GLOBALS = RECONSTRUCT | FROMBUFFER | {NDARRAY, DTYPE, CODECS_ENCODE}
# The state numpy pickles for dtype('u1'): version, byte order ("|", a str
# written by Python 3 or bytes by Python 2), no subarray, names or fields,
# element size and alignment from the type, no flags.
UINT8_STATES = ((3, "|", None, None, None, -1, -1, 0), (3, b"|", None, None, None, -1, -1, 0))


class _Global(tuple):
    """(module, name) of an allowed global, not resolved."""


class _Uint8:
    """dtype('u1'), as a pickle names it; `built` once its state is checked."""

    built = False


class _Array:
    """An array whose bytes arrive with BUILD."""

    value = None


class _Mark:
    pass


STRING_OPS = {"STRING", "BINSTRING", "SHORT_BINSTRING"}  # Python 2 str: read as bytes, as pickle's encoding="bytes"
BYTES_OPS = {"BINBYTES", "SHORT_BINBYTES", "BINBYTES8"}
BYTEARRAY_OPS = {"BYTEARRAY8"}  # protocol 5's in-band buffer of an array's bytes: read as bytes
TEXT_OPS = {"UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"}
NUMBER_OPS = {"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT"}
CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
IGNORED = {"PROTO", "FRAME"}


def load_plain_pickle(path, handle):
    """The object a plain-data pickle holds; ClipevalError naming `path` for anything else."""
    stack, memo = [], {}

    def refuse(what):
        raise ClipevalError(f"{path}: {what}: a dataset pickle may hold plain data only")

    def pop_to_mark():
        for index in range(len(stack) - 1, -1, -1):
            if isinstance(stack[index], _Mark):
                items = stack[index + 1 :]
                del stack[index:]
                return items
        raise ValueError("no MARK on the stack")

    for opcode, arg, _ in pickletools.genops(handle):
        name = opcode.name
        if name in IGNORED:
            continue
        if name == "STOP":
            if len(stack) != 1:
                raise ValueError("the stack does not hold exactly one object at STOP")
            return _resolved(stack.pop(), refuse)
        if name in STRING_OPS:
            stack.append(arg.encode("latin-1") if isinstance(arg, str) else bytes(arg))
        elif name in BYTES_OPS or name in TEXT_OPS or name in NUMBER_OPS:
            stack.append(arg)
        elif name in BYTEARRAY_OPS:
            stack.append(bytes(arg))
        elif name in CONSTANTS:
            stack.append(CONSTANTS[name])
        elif name == "MARK":
            stack.append(_Mark())
        elif name == "EMPTY_DICT":
            stack.append({})
        elif name == "EMPTY_LIST":
            stack.append([])
        elif name == "EMPTY_TUPLE":
            stack.append(())
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            size = int(name[-1])
            items = tuple(stack[-size:])
            del stack[-size:]
            stack.append(items)
        elif name == "TUPLE":
            stack.append(tuple(pop_to_mark()))
        elif name == "LIST":
            stack.append(pop_to_mark())
        elif name == "DICT":
            items = pop_to_mark()
            stack.append(dict(zip(items[::2], items[1::2])))
        elif name == "APPEND":
            item = stack.pop()
            _container(stack[-1], list, refuse).append(item)
        elif name == "APPENDS":
            items = pop_to_mark()
            _container(stack[-1], list, refuse).extend(items)
        elif name == "SETITEM":
            value, key = stack.pop(), stack.pop()
            _container(stack[-1], dict, refuse)[_key(key, refuse)] = value
        elif name == "SETITEMS":
            items = pop_to_mark()
            target = _container(stack[-1], dict, refuse)
            for key, value in zip(items[::2], items[1::2]):
                target[_key(key, refuse)] = value
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[arg] = stack[-1]
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
        elif name == "POP":
            stack.pop()
        elif name == "POP_MARK":
            pop_to_mark()
        elif name == "DUP":
            stack.append(stack[-1])
        elif name in ("GLOBAL", "STACK_GLOBAL"):
            module, attribute = arg.split(" ", 1) if name == "GLOBAL" else _two_strings(stack)
            if (module, attribute) not in ALLOWED_GLOBALS:
                refuse(f"refusing to load {module}.{attribute}")
            stack.append(_Global((module, attribute)))
        elif name == "REDUCE":
            arguments, function = stack.pop(), stack.pop()
            stack.append(_call(function, arguments, refuse))
        elif name == "BUILD":
            state = stack.pop()
            _build(stack[-1], state, refuse)
        else:
            refuse(f"refusing the pickle opcode {name}")
    raise ValueError("the pickle ends before STOP")


def _two_strings(stack):
    attribute, module = stack.pop(), stack.pop()
    if not isinstance(module, str) or not isinstance(attribute, str):
        raise ValueError("STACK_GLOBAL needs two strings")
    return module, attribute


def _container(target, kind, refuse):
    if type(target) is not kind:
        refuse(f"adding items to a {type(target).__name__}")
    return target


def _key(key, refuse):
    if not isinstance(key, (bytes, str, int)) or isinstance(key, bool):
        refuse(f"a dict key of type {type(key).__name__}")
    return key


def _call(function, arguments, refuse):
    if not isinstance(function, _Global) or type(arguments) is not tuple:
        refuse("calling something other than numpy's array constructors")
    if tuple(function) in RECONSTRUCT:
        if not (
            len(arguments) == 3
            and arguments[0] == _Global(NDARRAY)
            and arguments[1] == (0,)
            and arguments[2] in (b"b", "b")
        ):
            refuse(f"numpy array reconstruction with arguments {arguments!r}")
        return _Array()
    if tuple(function) == DTYPE:
        if arguments not in (("u1", False, True), (b"u1", False, True)):
            refuse(f"numpy dtype {arguments[0]!r}, not uint8" if arguments else "numpy dtype without arguments")
        return _Uint8()
    if tuple(function) == CODECS_ENCODE:
        if not (len(arguments) == 2 and isinstance(arguments[0], str) and arguments[1] in ("latin1", "latin-1")):
            refuse(f"_codecs.encode with arguments {arguments!r}")
        return arguments[0].encode("latin-1")
    if tuple(function) in FROMBUFFER:
        if not (
            len(arguments) == 4
            and isinstance(arguments[0], bytes)
            and isinstance(arguments[1], _Uint8)
            and arguments[1].built
            and arguments[3] in ("C", b"C")
        ):
            refuse("an array other than a C-ordered uint8 array with its bytes")
        return _uint8_array(arguments[2], arguments[0], refuse)
    refuse(f"calling {'.'.join(function)}")


def _build(target, state, refuse):
    if isinstance(target, _Uint8):
        if state not in UINT8_STATES:
            refuse(f"a uint8 dtype with state {state!r}")
        target.built = True
        return
    if not isinstance(target, _Array) or target.value is not None:
        refuse(f"setting the state of a {type(target).__name__}")
    if not (
        type(state) is tuple
        and len(state) == 5
        and state[0] == 1
        and isinstance(state[2], _Uint8)
        and state[3] is False
        and isinstance(state[4], bytes)
    ):
        refuse("an array other than a C-ordered uint8 array with its bytes")
    target.value = _uint8_array(state[1], state[4], refuse)


def _uint8_array(shape, raw, refuse):
    if type(shape) is not tuple or not all(type(n) is int and n >= 0 for n in shape):
        refuse(f"an array shape {shape!r}")
    if math.prod(shape) != len(raw):
        refuse(f"an array of shape {shape} with {len(raw)} bytes")
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)


def _resolved(value, refuse, open_containers=frozenset()):
    """The object with each array in place of its placeholder (dicts and lists hold them)."""
    if id(value) in open_containers:
        refuse("a container that holds itself")
    inside = open_containers | {id(value)}
    if isinstance(value, _Array):
        if value.value is None:
            refuse("an array without its data")
        return value.value
    if isinstance(value, (_Uint8, _Global, _Mark)):
        refuse(f"a bare {type(value).__name__.strip('_')}")
    if type(value) is dict:
        return {key: _resolved(item, refuse, inside) for key, item in value.items()}
    if type(value) is list:
        return [_resolved(item, refuse, inside) for item in value]
    if type(value) is tuple:
        return tuple(_resolved(item, refuse, inside) for item in value)
    return value
