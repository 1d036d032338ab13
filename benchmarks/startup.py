"""Start-up of the command line (issue 34): how long `import upstream.cli` takes, and a whole
`upstream --version`, against the CLI framework alone (`import typer`) and a bare interpreter
measured in the same run, so a busy machine shows in the baselines too. Typer coerces option
values through pydantic, which it imports on the first parse, so even a bare Typer
application's `--version` costs more than `import typer`: that is the baseline of a run.

Import times are Python's own (`-X importtime`, the cumulative time of the top module); each
case runs in a fresh interpreter `repetitions` times and the median is kept. The target is
0.3 s for `import upstream.cli` on an idle machine.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

TARGET_SECONDS = 0.3
#: What each import case imports.
_FRAMEWORK_IMPORT = "import typer"
_IMPORTS = {"import upstream.cli": "upstream.cli", _FRAMEWORK_IMPORT: "typer"}


def import_seconds(module: str) -> float:
    """Seconds `import module` takes in a fresh interpreter, as `-X importtime` counts them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in reversed(done.stderr.splitlines()):
        _, cumulative, name = (part.strip() for part in line.split("|"))
        if name == module:
            return int(cumulative) / 1e6
    raise RuntimeError(f"no import time for {module}")


def run_seconds(*args: str) -> float:
    """Wall seconds of a fresh interpreter running `args`, start to exit."""
    began = time.perf_counter()
    subprocess.run([sys.executable, *args], capture_output=True, check=True)
    return time.perf_counter() - began


#: A Typer application of one option asked for it: what the framework alone costs a run.
_BARE_APP = """
import typer
app = typer.Typer()
@app.callback(invoke_without_command=True)
def root(version: bool = typer.Option(False, "--version")) -> None:
    if version:
        print("0")
app()
"""
#: Each case, what it runs, and the case it is compared with (the framework doing as much).
_RUNS = {
    "upstream --version": (["-m", "upstream", "--version"], "bare Typer app --version"),
    "bare Typer app --version": (["-c", _BARE_APP, "--version"], "bare Typer app --version"),
    "python -c pass": (["-c", "pass"], "bare Typer app --version"),
}


def measure(repetitions: int = 7) -> list[dict[str, Any]]:
    """One row a case: its median seconds, and its ratio to the framework doing as much
    (its own import for an import, a bare Typer application for a whole run)."""
    times: dict[str, list[float]] = {name: [] for name in [*_IMPORTS, *_RUNS]}
    for _ in range(repetitions):  # interleaved, so load changes touch every case alike
        for name, module in _IMPORTS.items():
            times[name].append(import_seconds(module))
        for name, (args, _) in _RUNS.items():
            times[name].append(run_seconds(*args))
    median = {name: statistics.median(found) for name, found in times.items()}
    baseline = dict.fromkeys(_IMPORTS, _FRAMEWORK_IMPORT)
    baseline.update({name: compared for name, (_, compared) in _RUNS.items()})
    return [
        {
            "case": name,
            "seconds": median[name],
            "baseline": baseline[name],
            "ratio": median[name] / median[baseline[name]],
        }
        for name in times
    ]
