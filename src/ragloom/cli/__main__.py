"""``python -m ragloom.cli``: the ``ragloom`` command."""

from ragloom.cli import main

if __name__ == "__main__":  # pragma: no cover
    main()
