"""The fuzzer's structure-aware mutator (``bench/fuzz.py``): JSON documents, Kafka binary
and plain text edited the ways foreign writers get them wrong, plus libFuzzer-style byte edits."""

from __future__ import annotations

import json
import random
import re
import struct
from collections.abc import Sequence

from bench.fuzz_seeds import row_frame
from bench.fuzz_targets import Target

#: longest input the engines produce (libFuzzer -max_len; the mutate engine's cap)
MAX_LEN = 4096


_INTERESTING = (0, 1, -1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000)
_INTERESTING += (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63 - 1, 2**63, 2**64 - 1)
_VARINTS = (
    b"\x00",
    b"\x01",
    b"\x7f",
    b"\x80\x01",
    b"\xff\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x7f",
)
_VARINTS += (b"\x80" * 5 + b"\x01", b"\xff" * 6)
_TOKENS = (
    b"-",
    b"_",
    b"/",
    b"~",
    b".",
    b" ",
    b":",
    b"://",
    b"[",
    b"]",
    b"%",
    b"-1",
    b"0",
    b"9" * 25,
    b"\x00",
    b"\xc3\xa9",
    b"\xed\xa0\x80",  # a UTF-16 surrogate in UTF-8: invalid
    b"\xff",
    b"\xef\xbb\xbf",
    "\U0001f600".encode(),
    b"~~",
    b".0",
    b". 2f",
    b"~d800",
    b"\\",
)
_JSON_VALUES: tuple[object, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    1.5,
    -0.0,
    1e308,
    2**31,
    -(2**31) - 1,
    2**63,
    -(2**63) - 1,
    10**40,
    "",
    "x",
    "1",
    "-1",
    "9" * 25,
    "PLAINTEXT://h:9092",
    "static",
    "white_list",
    [],
    {},
    [1],
    [None],
    [1, 1],
    ["a"],
    {"a": 1},
    {"0": [1]},
    {"min_version": 1, "max_version": 0},
    [[[[]]]],
)
_JSON_TEXT_TRICKS = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"-0",
    b"1.0",
    b'"\\ud800"',
    b'"\\udfff\\ud800"',
    b'"\\u0000"',
    b"9" * 5000,
    b"[" * 2000 + b"]" * 2000,
    b'{"a":' * 1200 + b"1" + b"}" * 1200,
    b"true",
    b"null",
)


def _mutate_bytes(data: bytes, rng: random.Random, seeds: Sequence[bytes]) -> bytes:
    """One libFuzzer-style edit."""
    b = bytearray(data)
    op = rng.randrange(11)
    if op == 0 and b:  # flip a bit
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif op == 1 and b:  # a random byte
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 2:  # insert random bytes
        i = rng.randint(0, len(b))
        b[i:i] = rng.randbytes(rng.randint(1, 8))
    elif op == 3 and b:  # delete a range
        i = rng.randrange(len(b))
        del b[i : i + rng.randint(1, 16)]
    elif op == 4:  # truncate
        del b[rng.randint(0, len(b)) :]
    elif op == 5:  # a token
        i = rng.randint(0, len(b))
        tok = rng.choice(_TOKENS)
        if rng.random() < 0.5 and i < len(b):
            b[i : i + len(tok)] = tok
        else:
            b[i:i] = tok
    elif op == 6 and b:  # duplicate a chunk
        i = rng.randrange(len(b))
        j = min(len(b), i + rng.randint(1, 32))
        k = rng.randint(0, len(b))
        b[k:k] = b[i:j] * rng.choice((1, 2, 8, 64))
    elif op == 7 and seeds:  # splice with a seed
        other = rng.choice(seeds)
        i, j = rng.randint(0, len(b)), rng.randint(0, len(other))
        b = b[:i] + other[j:]
    elif op == 8 and b:  # an interesting integer, big-endian, 1/2/4/8 bytes
        width = rng.choice((1, 2, 4, 8))
        v = rng.choice(_INTERESTING) % (1 << (8 * width))
        i = rng.randrange(len(b))
        b[i : i + width] = v.to_bytes(width, "big")
    elif op == 9:  # swap two bytes / shuffle a short range
        if len(b) >= 2:
            i, j = rng.randrange(len(b)), rng.randrange(len(b))
            b[i], b[j] = b[j], b[i]
    else:  # append junk
        b += rng.randbytes(rng.randint(1, 4))
    return bytes(b)


def _mutate_binary(data: bytes, rng: random.Random, seeds: Sequence[bytes]) -> bytes:
    """Kafka-encoding-aware edits: versions, lengths, varints; else a byte edit."""
    b = bytearray(data)
    op = rng.randrange(6)
    if op == 0:  # another version in the int16 prefix
        v = rng.choice((-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x7FFF, -0x8000))
        b[0:2] = struct.pack(">h", v)
    elif op == 1 and b:  # a huge or negative int16/int32 length anywhere
        width = rng.choice((2, 4))
        v = rng.choice((-1, -2, 0x7FFF, -0x8000, 0x7FFFFFFF, -(2**31), len(b), len(b) + 1))
        v = max(-(2 ** (8 * width - 1)), min(v, 2 ** (8 * width - 1) - 1))
        i = rng.randrange(len(b))
        b[i : i + width] = v.to_bytes(width, "big", signed=True)
    elif op == 2:  # a varint (compact lengths, tagged field counts/tags/sizes)
        i = rng.randint(0, len(b))
        tok = rng.choice(_VARINTS)
        if rng.random() < 0.5:
            b[i : i + len(tok)] = tok
        else:
            b[i:i] = tok
    elif op == 3:  # cut anywhere (every field boundary of a valid record is hit eventually)
        del b[rng.randint(0, len(b)) :]
    else:
        return _mutate_bytes(data, rng, seeds)
    return bytes(b)


def _random_json(rng: random.Random, keys: Sequence[str], depth: int = 0) -> object:
    r = rng.random()
    if depth > 2 or r < 0.6:
        return rng.choice(_JSON_VALUES)
    if r < 0.8:
        return [_random_json(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))]
    pool = list(keys) or ["a"]
    return {rng.choice(pool): _random_json(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))}


def _containers(doc: object, out: list) -> list:
    if isinstance(doc, dict | list):
        out.append(doc)
        for v in doc.values() if isinstance(doc, dict) else doc:
            _containers(v, out)
    return out


def _edit_json(doc: object, op: int, rng: random.Random, target: Target) -> object:
    """Edit ``op`` of the parsed document: replace or delete a field or element (0-4),
    another version (5), an added key or elements (6), another top-level type (7)."""
    nodes = _containers(doc, [])
    if op <= 4 and nodes:  # replace or delete a field / element
        node = rng.choice(nodes)
        if isinstance(node, dict) and node:
            k = rng.choice(list(node))
            if op == 0:
                del node[k]
            else:
                node[k] = _random_json(rng, target.keys)
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if op == 0:
                del node[i]
            else:
                node[i] = _random_json(rng, target.keys)
        elif isinstance(node, dict):
            node[rng.choice(target.keys or ("a",))] = _random_json(rng, target.keys)
        else:
            node.append(_random_json(rng, target.keys))
    elif op == 5 and isinstance(doc, dict):  # another version, of any type
        doc["version"] = rng.choice((0, 1, 2, 3, 4, 5, 6, -1, "1", "2", 1.0, True, None, 2**64))
    elif op == 6 and nodes:  # add a (known) key
        node = rng.choice(nodes)
        if isinstance(node, dict):
            node[rng.choice((*target.keys, "", "x", "0", "\u00e9"))] = _random_json(
                rng, target.keys
            )
        else:
            node.extend([rng.choice(_JSON_VALUES)] * rng.choice((1, 2, 50)))
    elif op == 7:  # another top-level type
        doc = _random_json(rng, target.keys)
    return doc


def _json_text_trick(text: bytes, rng: random.Random, target: Target) -> bytes:
    """Textual tricks JSON libraries disagree on: a literal json.dumps cannot write, a
    duplicate key, invalid UTF-8 / BOM / NUL, or a byte-level mutation."""
    trick = rng.random()
    if trick < 0.5:
        # a scalar replaced with a literal json.dumps cannot write
        spots = [m.span() for m in re.finditer(rb'-?[0-9][0-9.eE+-]*|"[^"\\]*"', text)]
        if spots:
            i, j = rng.choice(spots)
            text = text[:i] + rng.choice(_JSON_TEXT_TRICKS) + text[j:]
    elif trick < 0.7 and text.startswith(b"{") and len(text) > 2:  # a duplicate key
        k = rng.choice(target.keys or ("a",))
        text = b'{"' + k.encode() + b'":1,' + text[1:]
    elif trick < 0.85:  # invalid UTF-8 / BOM / NUL somewhere
        i = rng.randint(0, len(text))
        text = (
            text[:i] + rng.choice((b"\xff", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00")) + text[i:]
        )
    else:
        text = _mutate_bytes(text, rng, target.seeds)
    return text


def _mutate_json(data: bytes, rng: random.Random, target: Target) -> bytes:
    """A JSON-aware edit: the document still parses (mostly), with something wrong in it."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        if rng.random() < 0.5:
            return _mutate_bytes(data, rng, target.seeds)
        doc = json.loads(rng.choice(target.seeds))
    op = rng.randrange(10)
    doc = _edit_json(doc, op, rng, target)
    indent = rng.choice((None, None, None, 0, 1))
    text = json.dumps(doc, indent=indent, ensure_ascii=rng.random() < 0.3)
    text = text.encode("utf-8", "surrogatepass")  # lone surrogates from a \\ud800 input
    if op in (8, 9) or rng.random() < 0.1:  # textual tricks JSON libraries disagree on
        text = _json_text_trick(text, rng, target)
    return text


def mutate(target: Target, data: bytes, rng: random.Random, max_len: int = MAX_LEN) -> bytes:
    """1-4 stacked structure-aware edits of ``data`` (a seed or a corpus entry)."""
    out = data
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        if target.shape == "json" and rng.random() < 0.7:
            out = _mutate_json(out, rng, target)
        elif target.shape in ("binary", "row") and rng.random() < 0.6:
            if target.shape == "row" and len(out) >= 2 and rng.random() < 0.5:
                # edit the key or the value inside the frame, keeping the frame
                n = int.from_bytes(out[:2], "big")
                key, value = out[2 : 2 + n], out[2 + n :]
                if rng.random() < 0.5:
                    key = _mutate_binary(key, rng, target.seeds)
                else:
                    value = _mutate_binary(value, rng, target.seeds)
                out = row_frame(key[:0xFFFF], value or None)
            else:
                out = _mutate_binary(out, rng, target.seeds)
        else:
            out = _mutate_bytes(out, rng, target.seeds)
    return out[:max_len]
