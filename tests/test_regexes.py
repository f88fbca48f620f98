"""No regular expression in ragloom takes super-linear time on any input.

A regex that backtracks can take quadratic (or worse) time on a crafted line: front matter
like ``title: a`` followed by 100,000 spaces took 70 s in one ingest, with no time limit. Python
cannot interrupt a regex, so each one must be linear in its input.

This test finds every compiled pattern that a ragloom module holds (module constants, and
those in module-level lists, tuples and dicts), and runs each the way the code uses it
(``match`` at a position, or a search over the whole text) on adversarial inputs of growing
size: runs of each character it names, pairs and triples of them pumped, and strings it
matches (drawn by hypothesis) with one character pumped and a tail that makes it fail. An input
eight times longer may take about eight times as long, not sixty-four.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import pkgutil
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragloom

try:
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse  # type: ignore[no-redef]

SMALL, LARGE = 600, 4800
#: Seconds below which the small input says nothing (any pattern is that fast on 600 characters).
FLOOR = 0.0002
#: Seconds that no linear pattern takes on SMALL characters.
SLOW = 0.05
#: LARGE / SMALL is 8: linear work takes about 8 times as long, quadratic 64.
RATIO = 20.0
COMMON = list(" \t\na1.-:*_#[]()|`!?/,'\"<>=@%~\\{}+$^&;")
#: Ways code applies a pattern at one position only (each call is one attempt).
AT_POSITION = {"match", "fullmatch"}


def _uses(module: Any, name: str) -> set[str]:  # noqa: ANN401 - a module
    """How the module calls ``name`` (``NAME.search(...)`` gives ``search``); empty if unknown."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return set()
    return {node.func.attr for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == name}


def _patterns_in(value: Any, depth: int = 0) -> Iterator[re.Pattern[str]]:  # noqa: ANN401
    if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
        yield value
    elif depth < 2 and isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _patterns_in(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _patterns_in(item, depth + 1)


_RE_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}


def _flags(node: ast.expr | None) -> int | None:
    """The value of a flags argument written as ``re.I``, ``re.IGNORECASE | re.MULTILINE`` or absent."""
    if node is None:
        return 0
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
        value = getattr(re, node.attr, None)
        return int(value) if isinstance(value, re.RegexFlag) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _flags(node.left), _flags(node.right)
        return None if left is None or right is None else left | right
    return None


def _inline(module: Any) -> Iterator[tuple[str, re.Pattern[str], bool]]:  # noqa: ANN401 - a module
    """Patterns written in place (``re.search(r"...", text)``) with a literal pattern."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError):
        return
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in _RE_CALLS and node.args and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            continue
        at = 1 if node.func.attr == "compile" else {"sub": 3, "subn": 3, "split": 3}.get(node.func.attr, 2)
        flag_node = node.args[at] if len(node.args) > at else next(
            (k.value for k in node.keywords if k.arg == "flags"), None)
        flags = _flags(flag_node)
        if flags is not None:
            yield (f"{module.__name__}:{node.lineno}", re.compile(node.args[0].value, flags),
                   node.func.attr in AT_POSITION)


def patterns() -> list[tuple[str, re.Pattern[str], bool]]:
    """(where, pattern, applied only at a position) for every pattern ragloom's modules hold,
    or write in place with a literal."""
    found: dict[tuple[str, int], tuple[str, re.Pattern[str], bool]] = {}
    for info in pkgutil.walk_packages(ragloom.__path__, "ragloom."):
        if info.name.startswith("ragloom.ui."):
            continue  # the Streamlit pages run on import
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for name, value in vars(module).items():
            if inspect.ismodule(value) or inspect.isclass(value) or inspect.isfunction(value):
                continue
            uses = _uses(module, name) if isinstance(value, re.Pattern) else set()
            for pattern in _patterns_in(value):
                key = (pattern.pattern, pattern.flags)
                found.setdefault(key, (f"{info.name}.{name}", pattern, bool(uses) and uses <= AT_POSITION))
        for where, pattern, at_position in _inline(module):
            found.setdefault((pattern.pattern, pattern.flags), (where, pattern, at_position))
    return sorted(found.values(), key=lambda item: item[0])


def _literals(pattern: re.Pattern[str]) -> list[str]:
    """Characters the pattern names: its literals and the first of each class range."""
    out: set[str] = set()

    def walk(ops: Any) -> None:  # noqa: ANN401 - sre_parse's op lists
        for op, av in ops:
            name = str(op)
            if name == "LITERAL":
                out.add(chr(av))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                walk(av[2])
            elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
                walk(av[-1] if name == "SUBPATTERN" else av)
            elif name == "BRANCH":
                for branch in av[1]:
                    walk(branch)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(av[1])
            elif name == "IN":
                for o, a in av:
                    if str(o) == "LITERAL":
                        out.add(chr(a))
                    elif str(o) == "RANGE":
                        out.add(chr(a[0]))

    walk(sre_parse.parse(pattern.pattern, pattern.flags))
    return sorted(out)


def _examples(pattern: re.Pattern[str]) -> list[str]:
    """Up to 20 short strings the pattern matches whole (none when hypothesis cannot draw any)."""
    drawn: list[str] = []

    @settings(max_examples=20, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.from_regex(pattern, fullmatch=True))
    def draw(text: str) -> None:
        drawn.append(text[:40])

    try:
        draw()
    except Exception:  # noqa: BLE001 - lookarounds and backreferences hypothesis cannot draw
        pass
    return sorted(set(drawn))


def inputs(pattern: re.Pattern[str]) -> Iterator[Callable[[int], str]]:
    """Adversarial inputs, each a function of its length."""
    alphabet = sorted(set(_literals(pattern)) | set(COMMON))
    for a in alphabet:
        yield lambda n, a=a: a * n
    for a, b in itertools.product(alphabet, repeat=2):
        yield lambda n, a=a, b=b: a + b * n + "\x00"
        yield lambda n, a=a, b=b: (a + b) * (n // 2)
    small = (_literals(pattern) + list(" \ta1.:-\n"))[:12]
    for a, b, c in itertools.product(small, repeat=3):
        yield lambda n, a=a, b=b, c=c: a + b * n + c
        yield lambda n, a=a, b=b, c=c: (a + b * 3 + c) * (n // 5)
    for example in _examples(pattern):
        for i in range(len(example)):
            for tail in ("", "\x00", "\n", "!"):
                yield lambda n, e=example, i=i, t=tail: e[:i] + e[i] * n + e[i + 1:] + t


def seconds(pattern: re.Pattern[str], at_position: bool, text: str, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        if at_position:
            pattern.match(text)
        else:
            for _ in pattern.finditer(text):
                pass
        best = min(best, time.perf_counter() - started)
    return best


def superlinear(pattern: re.Pattern[str], at_position: bool) -> str | None:
    """An input on which the pattern is super-linear, or None."""
    for make in inputs(pattern):
        small = make(SMALL)
        t_small = seconds(pattern, at_position, small)
        if t_small < FLOOR:
            continue
        # No need to wait for the large input (cubic ones take minutes); a busy machine can
        # stall one run, so a slow one is confirmed with the best of three.
        if t_small > SLOW and (t_small := seconds(pattern, at_position, small, 3)) > SLOW:
            return f"{small[:30]!r}... : {t_small * 1000:.0f} ms for {SMALL} characters"
        large = make(LARGE)
        if seconds(pattern, at_position, large) < RATIO * FLOOR:
            continue
        # Timing is noisy on a shared machine: confirm with the best of three.
        t_small, t_large = seconds(pattern, at_position, small, 3), seconds(pattern, at_position, large, 3)
        if t_large > RATIO * max(t_small, FLOOR / 4):
            return f"{small[:30]!r}... : {t_small * 1000:.1f} ms for {SMALL}, {t_large * 1000:.1f} ms for {LARGE}"
    return None


ALL = patterns()
#: Patterns only ever applied to a slice of bounded length: name -> the bound, and where it is cut.
BOUNDED = {
    "ragloom.enrich.entities._PERSON_CONTEXT": (40, "entities.py: after = text[end : end + 40]"),
}


def test_every_pattern_is_found() -> None:
    names = {where for where, _, _ in ALL}
    assert len(ALL) > 100
    assert {"ragloom.load.normalize._FM_LINE", "ragloom.parse.sections._INLINE",
            "ragloom.parse.sentences._TERMINAL"} <= names
    assert any(where.startswith("ragloom.enrich.quality:") for where in names)  # written in place


@pytest.mark.slow
@pytest.mark.parametrize(("where", "pattern", "at_position"), ALL, ids=[where for where, _, _ in ALL])
def test_no_pattern_is_superlinear(where: str, pattern: re.Pattern[str], at_position: bool) -> None:
    if where in BOUNDED:
        bound = BOUNDED[where][0]
        worst = max(seconds(pattern, at_position, make(bound)) for make in itertools.islice(inputs(pattern), 3000))
        assert worst < 0.005, f"{where} takes {worst * 1000:.1f} ms on {bound} characters"
        return
    found = superlinear(pattern, at_position)
    assert found is None, f"{where} /{pattern.pattern[:80]}/ is super-linear: {found}"


@pytest.mark.slow
def test_the_check_finds_the_patterns_it_is_for() -> None:
    """The check itself: patterns as they were before it (the front matter line took 70 s on a
    160 KB file; a heading of 2,000 backticks took 20 s) fail it."""
    for old in (r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)[ \t]*$", r"(?P<ticks>`+)(?P<code>.+?)(?<!`)(?P=ticks)(?!`)",
                r"[.!?…]+[\"'”’)\]]*(?=\s)"):
        assert superlinear(re.compile(old, re.MULTILINE), False) is not None, old
