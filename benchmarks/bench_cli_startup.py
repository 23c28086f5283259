"""Benchmark: start-up of ``distpriv --help`` against ``python -c "import numpy"`` in the same run.

Each command runs in a fresh interpreter, interleaved, ``REPEAT`` times; the
report gives the median wall time of each and their ratio (target: ``--help``
within 3x ``import numpy``), plus the heavy modules ``--help`` imports (none
expected). Run: ``PYTHONPATH=src python benchmarks/bench_cli_startup.py``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

REPEAT = 7
HEAVY = ("scipy.stats", "matplotlib", "sklearn", "networkx", "pandas")
COMMANDS = {
    "import numpy": [sys.executable, "-c", "import numpy"],
    "distpriv --help": [sys.executable, "-m", "distpriv.cli", "--help"],
    "distpriv reproduce --help": [sys.executable, "-m", "distpriv.cli", "reproduce", "--help"],
    "import distpriv; dp.calibrate": [sys.executable, "-c", "import distpriv as dp; dp.calibrate"],
}


def _wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> dict:
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for _ in range(REPEAT):
        for name, cmd in COMMANDS.items():
            times[name].append(_wall(cmd))
    med = {k: statistics.median(v) for k, v in times.items()}
    trace = subprocess.run([sys.executable, "-X", "importtime", "-m", "distpriv.cli", "--help"],
                           capture_output=True, text=True, check=True).stderr
    loaded = {line.rsplit("|", 1)[1].strip() for line in trace.splitlines() if line.startswith("import time:")}
    report = {
        "median_seconds": med,
        "ratio_help_vs_numpy": med["distpriv --help"] / med["import numpy"],
        "ratio_reproduce_help_vs_numpy": med["distpriv reproduce --help"] / med["import numpy"],
        "ratio_calibrate_vs_numpy": med["import distpriv; dp.calibrate"] / med["import numpy"],
        "heavy_modules_loaded_by_help": sorted(m for m in HEAVY if m in loaded),
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
