"""The benchmark scripts still run against the package: what they import from ragloom exists
(``lens_balance.py`` imported a constant that a refactoring had removed, and ``make bench``
stopped there), and every script ``run_all.py`` names is there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"

# Each script imported as a module (its main() is behind ``if __name__ == "__main__"``), in a
# process of its own so that bench/common.py and the peers' libraries stay out of this one.
IMPORT_ALL = """
import importlib.util, pathlib, sys
bench = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(bench))
failed, modules = [], {}
for path in sorted(bench.glob("*.py")):
    spec = importlib.util.spec_from_file_location("bench_" + path.stem, path)
    modules[path.stem] = module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        failed.append(f"{path.name}: {exc!r}")
for name, command, _ in getattr(modules.get("run_all"), "BENCHMARKS", []):
    if command[0] != "-m" and not (bench.parent / command[0]).is_file():
        failed.append(f"run_all.py names {command[0]} ({name}), which is not there")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_benchmark_script_imports_and_run_all_names_real_ones() -> None:
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL, str(BENCH)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
