"""Ways to damage a scenario file, the way a careless or hostile author would.

Each mutator takes a seeded ``random.Random`` and a shipped scenario file's bytes and
returns new bytes. They are plain functions of their random source, so the same seed
always makes the same file: the corpus run (``tests/scenario_corpus.py``) walks them
with ``random.Random(n)``, and the test suite lets hypothesis pick the seed file, the
mutator and the random source (``st.randoms``), so a failure is shrunk and replayable.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MUTATORS", "SEEDS", "Mutator", "mutate"]

SUITE = Path(__file__).parents[1] / "scenarios"
#: The shipped scenario files, in a stable order: the corpus is built from them.
SEEDS: list[Path] = sorted(SUITE.rglob("*.yaml"))

Mutator = Callable[[random.Random, bytes], bytes]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] = out[at] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data))]


def edit_lines(rng: random.Random, data: bytes) -> bytes:
    """Delete, repeat, swap or re-indent lines: mostly still YAML, often still valid."""
    lines = _lines(data)
    for _ in range(rng.randint(1, 3)):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        action = rng.choice(["delete", "repeat", "swap", "indent", "dedent"])
        if action == "delete" and len(lines) > 1:
            del lines[i]
        elif action == "repeat":
            lines.insert(i, lines[i])
        elif action == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        elif action == "indent":
            lines[i] = b"  " + lines[i]
        elif lines[i].startswith(b"  "):
            lines[i] = lines[i][2:]
    return b"".join(lines)


def alias_bomb(rng: random.Random, data: bytes) -> bytes:
    levels, width = rng.randint(2, 12), rng.randint(2, 12)
    bomb = [b"bomb0: &b0 [" + b", ".join([b'"lol"'] * width) + b"]\n"]
    for level in range(1, levels):
        items = b", ".join([b"*b%d" % (level - 1)] * width)
        bomb.append(b"bomb%d: &b%d [%s]\n" % (level, level, items))
    if rng.random() < 0.5:
        return data + b"".join(bomb)
    # the bomb goes off as `given`, whose content the schema leaves to the room
    renamed = re.sub(rb"(?m)^given:", b"old_given:", data, count=1)
    return b"".join(bomb) + renamed + b"given: *b%d\n" % (levels - 1)


def self_alias(rng: random.Random, data: bytes) -> bytes:
    shapes = [b"&r [*r]", b"&r {a: *r}", b"&r [1, [2, *r]]", b"&r\n  - *r", b"*nowhere"]
    lines = _lines(data)
    i = rng.randrange(len(lines))
    key = re.match(rb"^(\s*-?\s*[A-Za-z_]+:)", lines[i])
    if key is None:
        return data + b"x: " + rng.choice(shapes) + b"\n"
    lines[i] = key.group(1) + b" " + rng.choice(shapes) + b"\n"
    return b"".join(lines)


def nesting(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([rng.randint(20, 40), rng.randint(40, 3000)])
    if rng.random() < 0.5:
        deep = b"[" * depth + b"1" + b"]" * depth
    else:
        deep = b"{a: " * depth + b"1" + b"}" * depth
    return data + b"deep: " + deep + b"\n"


def size(rng: random.Random, data: bytes) -> bytes:
    kind = rng.choice(["description", "string", "list", "keys", "file", "near-file", "near-values"])
    if kind == "near-file":  # the costliest file the limits allow: a comment read char by char
        return data + b"# " + b"-" * (128 * 1024 - len(data) - rng.randint(10, 2000)) + b"\n"
    if kind == "near-values":  # just under the value limit, each value schema-checked
        return data + b"tags_: [" + b"a, " * rng.randint(1500, 1850) + b"a]\n"
    if kind == "description":
        body = b"x" * rng.choice([70_000, 300_000, 3_000_000])
        return re.sub(
            rb"^description:",
            b"description: '" + body + b"'\nold_description:",
            data,
            count=1,
            flags=re.M,
        )
    if kind == "string":
        return data.replace(b"title: ", b"title: " + b"t" * rng.randint(100, 70_000) + b" ", 1)
    if kind == "list":
        return data + b"tags_: [" + b"a, " * rng.randint(1000, 200_000) + b"a]\n"
    if kind == "keys":
        return data + b"".join(b"k%d: %d\n" % (i, i) for i in range(rng.randint(100, 30_000)))
    return data + b"# " + b"-" * rng.randint(200_000, 400_000) + b"\n"


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, path + (index,))
    return found


_ODD_VALUES: list[Any] = [
    5, -1, 0, 3.5, 2**53, 2**64, -(2**70), 1e308, float("nan"), float("inf"), True, None, "",
    "x" * 300, [], {}, [1, "a"], {"a": 1}, "a\0b", "\ud800", "../../etc/passwd", "/abs",
    "WOC-JOIN", "soo-x", "\u202e\u0000\x1b[31m", "0x" + "f" * 50,
]  # fmt: skip


def wrong_type(rng: random.Random, data: bytes) -> bytes:
    """Replace one value anywhere with an odd one, or with another value of its own type."""
    try:
        document = yaml.safe_load(data)
    except yaml.YAMLError:
        return flip_bytes(rng, data)
    if not isinstance(document, dict):
        return data
    target = rng.choice(_paths(document)[1:] or [()])
    parent: Any = document
    for key in target[:-1]:
        parent = parent[key]
    old = parent[target[-1]] if target else document
    if isinstance(old, bool) or rng.random() < 0.6:
        new = rng.choice(_ODD_VALUES)
    elif isinstance(old, int):
        new = rng.choice([old + 1, old - 1, 0, old * 1000, -old])
    elif isinstance(old, float):
        new = rng.choice([old * 2, old / 10, 0.0, 4.0, 1e-9])
    elif isinstance(old, str):
        new = rng.choice([old + old, old[:1], old.upper(), "", old + "\n", "é" + old])
    elif isinstance(old, list):
        new = old[::-1] if rng.random() < 0.5 else old + old[:1]
    else:
        new = rng.choice(_ODD_VALUES)
    if not target:
        return yaml.safe_dump(new).encode("utf-8", "surrogatepass")
    parent[target[-1]] = new
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return text.encode("utf-8", "surrogatepass")


_TAGS = [
    b"!!python/object/apply:os.system ['true']", b"!!python/name:os.system", b"!!binary aGk=",
    b"!!set {a: null}", b"!!omap [a: 1]", b"!!timestamp 2024-01-01", b"!mine 3", b"!!str 5",
    b"!!int '12'", b"!!float '1e999'", b"!!bool yes", b"!!null ''", b"!<tag:yaml.org,2002:str> x",
    b"!!int 0x" + b"f" * 60, b"2024-01-01", b"2024-01-01 10:00:00", b"<<: {a: 1}",
]  # fmt: skip


def tags(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines))
    key = re.match(rb"^(\s*-?\s*[A-Za-z_]+:)", lines[i])
    tag = rng.choice(_TAGS)
    if key is None:
        return data + b"tagged: " + tag + b"\n"
    lines[i] = key.group(1) + b" " + tag + b"\n"
    return b"".join(lines)


def encodings(rng: random.Random, data: bytes) -> bytes:
    text = data.decode("utf-8", "replace")
    kind = rng.choice(
        [
            "utf-16",
            "utf-16-le",
            "utf-32",
            "latin-1",
            "bom",
            "bad-bytes",
            "controls",
            "crlf",
            "breaks",
        ]
    )
    if kind in ("utf-16", "utf-16-le", "utf-32"):
        return text.encode(kind, "surrogatepass")
    if kind == "latin-1":
        return text.replace("title: ", "title: café ", 1).encode("latin-1", "replace")
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    at = rng.randrange(len(data))
    if kind == "bad-bytes":
        return (
            data[:at]
            + rng.choice([b"\xc0\x80", b"\xed\xa0\x80", b"\xff", b"\xf8\x88\x80\x80"])
            + data[at:]
        )
    if kind == "controls":
        return (
            data[:at]
            + rng.choice([b"\x00", b"\x07", b"\x1b", b"\x7f", b"\x0b", b"\x0c"])
            + data[at:]
        )
    if kind == "crlf":
        return data.replace(b"\n", rng.choice([b"\r\n", b"\r"]))
    return data[:at] + rng.choice(["\u2028", "\u2029", "\x85", "\ufeff"]).encode() + data[at:]


def numbers(rng: random.Random, data: bytes) -> bytes:
    extreme = [b"0", b"-1", b"9" * 25, b"1e999", b".nan", b"-.inf", b"1e-400", b"2147483648",
               b"9007199254740993", b"0o777", b"0b1", b"1_000", b"1:30", b"-0.0", b"4.0000001"]  # fmt: skip
    spots = [m.span() for m in re.finditer(rb"(?<=[\s\[:,])-?\d+(\.\d+)?(?=[\s,\]}])", data)]
    if not spots:
        return data + b"n: " + rng.choice(extreme) + b"\n"
    start, end = rng.choice(spots)
    return data[:start] + rng.choice(extreme) + data[end:]


def splice(rng: random.Random, data: bytes) -> bytes:
    """A top-level section from another shipped file: often another contract's vocabulary."""
    other = SEEDS[rng.randrange(len(SEEDS))].read_bytes()
    sections = re.split(rb"(?m)^(?=[a-z]+:)", other)
    section = rng.choice([s for s in sections if s] or [b""])
    key = section.split(b":", 1)[0]
    pieces = re.split(rb"(?m)^(?=[a-z]+:)", data)
    kept = [p for p in pieces if p.split(b":", 1)[0] != key]
    return b"".join(kept[:1] + [section] + kept[1:])


def rename_key(rng: random.Random, data: bytes) -> bytes:
    keys = list(re.finditer(rb"(?m)^(\s*-?\s*)([a-z_]+):", data))
    if not keys:
        return data
    match = rng.choice(keys)
    name = match.group(2)
    new = rng.choice([name[:-1], name + b"s", name.upper(), b"note", b"then", b"given", b"id"])
    return data[: match.start(2)] + new + data[match.end(2) :]


MUTATORS: dict[str, Mutator] = {
    "flip-bytes": flip_bytes,
    "truncate": truncate,
    "edit-lines": edit_lines,
    "alias-bomb": alias_bomb,
    "self-alias": self_alias,
    "nesting": nesting,
    "size": size,
    "wrong-type": wrong_type,
    "tags": tags,
    "encodings": encodings,
    "numbers": numbers,
    "splice": splice,
    "rename-key": rename_key,
}


def mutate(seed: Path, mutator: str, rng: random.Random) -> bytes:
    """``seed``'s bytes damaged by one mutator (once or twice: damage compounds)."""
    data = seed.read_bytes()
    for _ in range(1 if rng.random() < 0.8 else 2):
        data = MUTATORS[mutator](rng, data) if data else data
    return data
