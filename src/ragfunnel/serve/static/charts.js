/* Small SVG charts for the evaluation view: a line chart (recall@k curves) and a grouped bar chart.
   No dependencies; each function returns an <svg> sized to the width it is given (so text stays readable). */
"use strict";

const Charts = (() => {
  const NS = "http://www.w3.org/2000/svg";

  function el(name, attrs = {}, parent = null) {
    const node = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, str, attrs = {}) {
    const t = el("text", { x, y, ...attrs }, parent);
    t.textContent = str;
    return t;
  }

  function tip(node, str) {
    el("title", {}, node).textContent = str;
  }

  function niceMax(value) {
    if (!(value > 0)) return 1;
    return Math.min(1, Math.ceil((value + 0.04) * 10) / 10);
  }

  function frame(width, height, margin, yMax, yLabel) {
    const svg = el("svg", {
      viewBox: `0 0 ${width} ${height}`, width, height, class: "chart", role: "img",
    });
    const plotW = width - margin.left - margin.right;
    const plotH = height - margin.top - margin.bottom;
    const y = (v) => margin.top + plotH - (v / yMax) * plotH;
    const steps = yMax <= 0.5 ? 0.1 : 0.2;
    for (let v = 0; v <= yMax + 1e-9; v += steps) {
      el("line", { x1: margin.left, x2: margin.left + plotW, y1: y(v), y2: y(v), class: "grid" }, svg);
      text(svg, margin.left - 6, y(v) + 4, v.toFixed(1), { class: "tick", "text-anchor": "end" });
    }
    if (yLabel) {
      text(svg, 12, margin.top + plotH / 2, yLabel, {
        class: "axis-label", transform: `rotate(-90 12 ${margin.top + plotH / 2})`, "text-anchor": "middle",
      });
    }
    return { svg, plotW, plotH, y };
  }

  /* series: [{name, color, points: [[k, value]...], dashed}], ks: [1, 5, 10, 20, 50] */
  function lineChart({ series, ks, width, height = 300, yLabel = "recall", xLabel = "k (top-k scenes)" }) {
    width = Math.max(280, Math.round(width));
    const margin = { top: 14, right: 16, bottom: 40, left: 44 };
    const all = series.flatMap((s) => s.points.map((p) => p[1]));
    const yMax = niceMax(Math.max(0, ...all));
    const { svg, plotW, y } = frame(width, height, margin, yMax, yLabel);
    const lo = Math.log(ks[0]), hi = Math.log(ks[ks.length - 1]);
    const x = (k) => margin.left + ((Math.log(k) - lo) / (hi - lo || 1)) * plotW;
    for (const k of ks) {
      text(svg, x(k), height - margin.bottom + 16, String(k), { class: "tick", "text-anchor": "middle" });
    }
    text(svg, margin.left + plotW / 2, height - 6, xLabel, { class: "axis-label", "text-anchor": "middle" });
    for (const s of series) {
      if (!s.points.length) continue;
      const d = s.points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
      const g = el("g", { class: "series", "data-name": s.name }, svg);
      el("path", {
        d, fill: "none", stroke: s.color, "stroke-width": s.dashed ? 2 : 2.5,
        "stroke-dasharray": s.dashed ? "6 4" : "none", "stroke-linejoin": "round",
      }, g);
      for (const [k, v] of s.points) {
        const c = el("circle", { cx: x(k), cy: y(v), r: s.dashed ? 3 : 3.5, fill: s.color }, g);
        tip(c, `${s.name}: recall@${k} = ${v.toFixed(3)}`);
      }
    }
    return svg;
  }

  /* groups: [{label, bars: [{name, color, value}]}] */
  function barChart({ groups, width, height = 280, yLabel = "" }) {
    width = Math.max(280, Math.round(width));
    const margin = { top: 14, right: 12, bottom: 34, left: 44 };
    const all = groups.flatMap((g) => g.bars.map((b) => b.value).filter((v) => v != null));
    const yMax = niceMax(Math.max(0, ...all));
    const { svg, plotW, plotH, y } = frame(width, height, margin, yMax, yLabel);
    const groupW = plotW / Math.max(1, groups.length);
    groups.forEach((g, gi) => {
      const n = Math.max(1, g.bars.length);
      const inner = groupW * 0.8;
      const barW = inner / n;
      const x0 = margin.left + gi * groupW + (groupW - inner) / 2;
      g.bars.forEach((b, bi) => {
        if (b.value == null) return;
        const top = y(b.value);
        const rect = el("rect", {
          x: (x0 + bi * barW + 0.5).toFixed(1), y: top.toFixed(1), width: Math.max(1, barW - 1).toFixed(1),
          height: Math.max(0, margin.top + plotH - top).toFixed(1), fill: b.color, class: "bar",
        }, svg);
        tip(rect, `${g.label} · ${b.name}: ${b.value.toFixed(3)}`);
      });
      text(svg, margin.left + gi * groupW + groupW / 2, height - margin.bottom + 16, g.label, {
        class: "tick", "text-anchor": "middle",
      });
    });
    return svg;
  }

  return { lineChart, barChart };
})();
