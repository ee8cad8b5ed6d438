"""Plot latency and memory against corpus size from `ragfunnel bench scale` tables (one SVG, no plotting library).

    python bench/serving/scale_plot.py docs/results/serving/scale_1m.md docs/results/serving/scale_300k.md ... \
        --out docs/results/serving/scale_1m.svg

Each table row gives one point (backend, chunks); when several tables hold the same point, the first file named
wins, so name the newest first. Left: hybrid p50 and p99 (ms, log scale); right: peak RSS (MB).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

COLOURS = {"embedded": "#1f77b4", "postgres": "#d62728"}


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the first Markdown table in `path` whose header names `backend` and `chunks`."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    for i, line in enumerate(lines):
        if line.startswith("| backend |") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, [c.strip() for c in row.strip("|").split("|")])))
            return rows
    return []


def points(paths: list[Path]) -> dict[tuple[str, int], dict[str, float]]:
    out: dict[tuple[str, int], dict[str, float]] = {}
    for path in paths:
        for row in read_rows(path):
            key = (row["backend"], int(row["chunks"].replace(",", "")))
            if key not in out:
                out[key] = {name: float(row[column]) for name, column in
                            (("p50", "hybrid p50"), ("p99", "hybrid p99"), ("rss", "peak RSS MB"))}
    return out


def panel(series: dict[str, list[tuple[int, float, str]]], x0: float, title: str, unit: str, log_y: bool,
          width: float = 330, height: float = 260, pad: float = 48) -> str:
    xs = [x for s in series.values() for x, _, _ in s]
    ys = [y for s in series.values() for _, y, _ in s]
    lo_x, hi_x = math.log10(min(xs)) - 0.1, math.log10(max(xs)) + 0.1
    if log_y:
        lo_y, hi_y = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
        ticks = [10 ** e for e in range(int(lo_y), int(hi_y) + 1)]
        to_y = lambda v: math.log10(v)  # noqa: E731
    else:
        step = 10 ** math.floor(math.log10(max(ys))) or 1
        lo_y, hi_y = 0.0, math.ceil(max(ys) * 1.1 / step) * step
        ticks = [lo_y + step * i for i in range(int((hi_y - lo_y) / step) + 1)]
        to_y = lambda v: v  # noqa: E731
    def px(x: float) -> float:
        return x0 + pad + (math.log10(x) - lo_x) / (hi_x - lo_x) * (width - pad - 10)

    def py(y: float) -> float:
        return height - pad + 10 - (to_y(y) - lo_y) / (hi_y - lo_y or 1) * (height - pad - 20)

    parts = [f'<text x="{x0 + pad}" y="16" font-size="13">{title}</text>',
             f'<line x1="{x0 + pad}" y1="{py(ticks[0])}" x2="{x0 + width - 10}" y2="{py(ticks[0])}" stroke="#888"/>']
    for t in ticks:
        label = f"{t:g}" if t < 10_000 else f"{t / 1000:g}k"
        parts.append(f'<line x1="{x0 + pad}" y1="{py(t):.1f}" x2="{x0 + width - 10}" y2="{py(t):.1f}" stroke="#eee"/>'
                     f'<text x="{x0 + pad - 4}" y="{py(t) + 4:.1f}" font-size="10" text-anchor="end">{label}</text>')
    for n in sorted({x for x in xs}):
        size = f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1000:g}k"
        parts.append(f'<text x="{px(n):.1f}" y="{height - pad + 24}" font-size="10" text-anchor="middle">{size}</text>')
    parts.append(f'<text x="{x0 + pad + (width - pad) / 2}" y="{height - 6}" font-size="11" text-anchor="middle">chunks (log)</text>'
                 f'<text x="{x0 + 12}" y="{height / 2}" font-size="11" transform="rotate(-90 {x0 + 12} {height / 2})" text-anchor="middle">{unit}</text>')
    for name, pts in series.items():
        colour = COLOURS.get(name.split()[0], "#555")
        dash = ' stroke-dasharray="5 3"' if name.endswith("p99") else ""
        pts = sorted(pts)
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _ in pts)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{line}"/>')
        for x, y, text in pts:
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>'
                         f'<text x="{px(x) + 5:.1f}" y="{py(y) - 5:.1f}" font-size="9" fill="{colour}">{text}</text>')
    return "".join(parts)


def svg(data: dict[tuple[str, int], dict[str, float]]) -> str:
    latency: dict[str, list[tuple[int, float, str]]] = {}
    memory: dict[str, list[tuple[int, float, str]]] = {}
    for (backend, n), v in data.items():
        for q in ("p50", "p99"):
            latency.setdefault(f"{backend} {q}", []).append((n, v[q], f"{v[q]:.3g}"))
        memory.setdefault(backend, []).append((n, v["rss"], f"{v['rss']:.0f}"))
    legend = "".join(
        f'<line x1="{20 + 150 * i}" y1="290" x2="{45 + 150 * i}" y2="290" stroke="{colour}" stroke-width="2"/>'
        f'<text x="{50 + 150 * i}" y="294" font-size="11">{name}</text>'
        for i, (name, colour) in enumerate(COLOURS.items()) if any(k[0] == name for k in data))
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="700" height="305" font-family="sans-serif">'
            '<rect width="700" height="305" fill="white"/>'
            + panel(latency, 0, "hybrid p50 (solid) / p99 (dashed)", "ms", log_y=True)
            + panel(memory, 350, "peak RSS of the build", "MB", log_y=False)
            + legend + '<text x="380" y="294" font-size="11">PostgreSQL: server and client together</text></svg>\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+", type=Path, help="bench scale tables, newest first")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    data = points(args.tables)
    if not data:
        raise SystemExit("no bench scale rows in those files")
    args.out.write_text(svg(data))
    for (backend, n), v in sorted(data.items()):
        print(f"{backend:9} {n:>9,}  hybrid p50 {v['p50']:8.2f}  p99 {v['p99']:8.2f}  peak RSS {v['rss']:6.0f} MB")


if __name__ == "__main__":
    main()
