"""Progress on long work: bars on a terminal, a plain line every few seconds in a log."""

import io

from ragfunnel.cli_options import ProgressLines


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_log_gets_a_line_every_few_seconds_and_one_when_a_task_finishes():
    out, clock = io.StringIO(), FakeClock()
    progress = ProgressLines(out, every_s=5, clock=clock)
    for done in range(0, 101):
        clock.now += 0.2  # 100 updates over 20 s
        progress("embed w3s1", done, 100)
    progress("embed w3s1", 100, 100)  # repeated completion reports once
    lines = out.getvalue().splitlines()
    assert 3 <= len(lines) <= 6, lines
    assert lines[-1].startswith("embed w3s1: 100/100 (100%)") and lines[-1].endswith("done")
    assert all(line.startswith("embed w3s1: ") for line in lines)
    assert sum(line.endswith("done") for line in lines) == 1


def test_each_task_keeps_its_own_clock():
    out, clock = io.StringIO(), FakeClock()
    progress = ProgressLines(out, every_s=5, clock=clock)
    progress("parse", 1, 10)
    progress("embed", 1, 10)
    clock.now += 6
    progress("parse", 5, 10)
    progress("embed", 2, 10)
    assert out.getvalue().splitlines() == ["parse: 5/10 (50%), 6 s", "embed: 2/10 (20%), 6 s"]


def test_unknown_totals_still_report():
    out, clock = io.StringIO(), FakeClock()
    progress = ProgressLines(out, every_s=1, clock=clock)
    progress("scan", 0, 0)
    clock.now += 2
    progress("scan", 7, 0)
    assert out.getvalue() == "scan: 7/0, 2 s\n"
