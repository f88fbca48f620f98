"""Structure of source code: the classes and functions enclosing a position.

A chunk of code says more about itself with its place in the file: ``impl DiffExecutor > fn
new`` is to a function what a heading path is to a paragraph. Definitions are found by regex
for the common languages; nesting comes from indentation (Python, YAML-like) or from brace
depth (C-like languages).
"""

from __future__ import annotations

import re

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".rs": "rust", ".go": "go", ".js": "js", ".jsx": "js", ".ts": "js",
    ".tsx": "js", ".java": "java", ".kt": "java", ".scala": "java", ".c": "c", ".h": "c", ".cc": "c", ".cpp": "c",
    ".hpp": "c", ".cs": "java", ".rb": "ruby", ".php": "js", ".swift": "java",
}

_DEFINITION = {
    "python": re.compile(r"^(?P<indent>[ \t]*)(?:async\s+)?(?P<kind>def|class)\s+(?P<name>\w+)", re.M),
    # The name ends with a non-blank (blanks after it are the separator's): "[\w:<>, ]+?\s*"
    # tried every split of a run of blanks, quadratic in a long line.
    "rust": re.compile(r"^(?P<indent>[ \t]*)(?:pub(?:\([^)\n]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*"
                       r"(?P<kind>fn|struct|enum|trait|impl|mod)\b(?:<[^>{\n]*>)?\s*"
                       r"(?P<name>[\w:<>,](?:[\w:<>, ]*?[\w:<>,])?)[ \t]*+(?:\(|\{|where|$|;|<)", re.M),
    "go": re.compile(r"^(?P<indent>[ \t]*)(?P<kind>func|type)\s+(?:\([^)]*\)\s*)?(?P<name>\w+)", re.M),
    "js": re.compile(r"^(?P<indent>[ \t]*)(?:export\s+)?(?:default\s+)?(?:async\s+)?"
                     r"(?P<kind>function|class|interface)\s+(?P<name>\w+)", re.M),
    "java": re.compile(r"^(?P<indent>[ \t]*)(?:(?:public|private|protected|static|final|abstract|override|open|"
                       r"internal|sealed|data)\s+)*(?P<kind>class|interface|enum|record|fun|object)\s+(?P<name>\w+)", re.M),
    "c": re.compile(r"^(?P<indent>[ \t]*)(?P<kind>struct|class|namespace|enum)\s+(?P<name>\w+)", re.M),
    "ruby": re.compile(r"^(?P<indent>[ \t]*)(?P<kind>def|class|module)\s+(?P<name>[\w.]+)", re.M),
}


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def enclosing_symbols(text: str, offset: int, language: str) -> tuple[str, ...]:
    """The definitions that enclose ``offset`` (outermost first), plus the one starting at it."""
    pattern = _DEFINITION.get(language)
    if pattern is None:
        return ()
    stack: list[tuple[int, str, int]] = []  # (nesting level, label, position)
    uses_braces = language not in ("python", "ruby")
    for m in pattern.finditer(text, 0, min(len(text), offset + 200)):
        if m.start() > offset and text[offset : m.start()].strip():
            break  # only a definition at the very start of the chunk counts, not later ones
        label = f"{m.group('kind')} {' '.join(m.group('name').split())}"
        if uses_braces:
            level = text.count("{", 0, m.start()) - text.count("}", 0, m.start())
        else:
            level = len(m.group("indent").expandtabs(4))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, label, m.start()))
    if uses_braces:
        depth = text.count("{", 0, offset) - text.count("}", 0, offset)
        # A definition whose braces have closed before the offset no longer encloses it.
        stack = [s for s in stack if s[2] >= offset or s[0] < depth]
    else:
        line = text[text.rfind("\n", 0, offset) + 1 : offset + 80]
        indent = len(line) - len(line.lstrip(" \t")) if line.strip() else 0
        stack = [s for s in stack if s[2] >= offset or s[0] < indent or (s[0] == indent and s[2] >= offset)]
    return tuple(label for _, label, _ in stack)
