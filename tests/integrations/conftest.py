"""Each adapter's tests need its extra; without it they are not collected (the extra's name is
in the MissingExtraError the adapter raises)."""

from __future__ import annotations

from importlib.util import find_spec

collect_ignore = [name for name, module in (("test_langchain.py", "langchain_core"),
                                            ("test_langchain_standard.py", "langchain_tests"),
                                            ("test_llamaindex.py", "llama_index")) if not find_spec(module)]
