"""The first ten minutes (issue 35): `bash scripts/quickstart.sh` as a new user runs it, from a fresh clone of this
repository, with no pip cache and an empty RAGFUNNEL_HOME, timed step by step (the script prints each step's time).

    python bench/first_stage/quickstart_time.py --work /tmp/qs --out docs/results/first_stage/quickstart.md

The clone is made from the committed HEAD (`git clone`), beside the data (`RAGFUNNEL_DATA`, default ../shared/data);
pip downloads every package (PIP_NO_CACHE_DIR=1). The table gives the seconds at which each step ended, then what
the search and the answer printed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from ragfunnel.evaluate.report import header, markdown_table, write_report

REPO = Path(__file__).resolve().parents[2]
STEP = re.compile(r"^\[quickstart\] (.+?) \((\d+) s\)$")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/qs"))
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    clone, home = args.work / "ragfunnel", args.work / "home"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON", "RAGFUNNEL"))}
    env.update({"RAGFUNNEL_HOME": str(home), "RAGFUNNEL_DATA": str(args.data.resolve()), "PIP_NO_CACHE_DIR": "1",
                "PATH": ":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p)})
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(["bash", "scripts/quickstart.sh"], cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    (args.work / "stdout.txt").write_text(proc.stdout)
    (args.work / "stderr.txt").write_text(proc.stderr)
    steps = [m.groups() for line in proc.stderr.splitlines() if (m := STEP.match(line.strip()))]
    rows = [[name, seconds, f"{int(seconds) / 60:.1f}"] for name, seconds in steps]
    doc = header("The quickstart from a fresh clone, no pip cache, an empty index home: seconds to each step")
    doc += (f"\nLoad average at start {load:.2f}; rc {proc.returncode}; {wall / 60:.1f} min in all. The script's own "
            "step lines (seconds since it started, after its setup check):\n\n")
    doc += markdown_table(["step", "seconds", "minutes"], rows)
    doc += "\nWhat it printed (stdout: the search, then the answer):\n\n```text\n" + proc.stdout.strip() + "\n```\n"
    write_report(args.out, doc)


if __name__ == "__main__":
    main()
