"""Each adapter's tests need its extra; without it they are not collected (the extra's name is
in the MissingExtraError the adapter raises)."""

from __future__ import annotations

from importlib.util import find_spec

collect_ignore = [] if find_spec("langchain_core") else ["test_langchain.py"]
