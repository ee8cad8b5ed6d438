/* ragfunnel web page: ask (streamed answer + cited scenes + trace), compare modes, evaluation plots.
   Plain JS, no build step, no network beyond this server. Every text from the server goes in via textContent. */
"use strict";

const EXAMPLES = [
  { q: "Who did Rachel dump at the altar?" },
  { q: "What is the name of Ross's pet monkey?" },
  { q: "What was the name of Joey's stuffed penguin?" },
  { q: "What song does Phoebe sing about a cat?" },
  { q: "What is the GDP of Luxembourg?", hint: "not in Friends: refused" },
  { q: "In which scenes does Ross say \"we were on a break\"?", hint: "every scene, each cited" },
];
const COMPARE_MODES = ["bm25", "vector", "hybrid", "accurate"];
const COMPARE_K = 10;
const ASK_K = 5;
const PALETTE = [
  "#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
  "#ca8a04", "#db2777", "#4b5563", "#65a30d", "#a16207", "#0d9488",
];

const $ = (sel, root = document) => root.querySelector(sel);

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "style") node.style.cssText = v;  // CSSOM: allowed by the page's CSP, a style attribute is not
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

const fmt = (v, d = 3) => (typeof v === "number" ? v.toFixed(d) : "–");
const ms = (v) => (typeof v === "number" ? (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(v < 10 ? 1 : 0)} ms`) : "–");

/* ---- API ------------------------------------------------------------------------------------------------------ */

const state = { mode: "fast", health: null, token: localStorage.getItem("ragfunnel-token") || "" };

// the API's errors are {"error": {"code", "message"}}
function errorMessage(error) {
  if (!error) return "";
  return typeof error === "string" ? error : (error.message || error.code || "");
}

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(json = true) {
  const out = json ? { "Content-Type": "application/json" } : {};
  if (state.token) out.Authorization = `Bearer ${state.token}`;
  return out;
}

async function failure(res) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    message = errorMessage(body.error) || body.detail || message;
  } catch (_) { /* not JSON */ }
  if (res.status === 401) showTokenBar(message);
  return new ApiError(res.status, message);
}

async function api(path, body) {
  const res = await fetch(path, body === undefined
    ? { headers: headers(false) }
    : { method: "POST", headers: headers(), body: JSON.stringify(body) });
  if (!res.ok) throw await failure(res);
  return res.json();
}

/* POST /ask and read its Server-Sent Events with fetch + ReadableStream; on(event, data) per event. */
async function streamAsk(body, on, signal) {
  const res = await fetch("/ask", { method: "POST", headers: headers(), body: JSON.stringify(body), signal });
  if (!res.ok) throw await failure(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const dispatch = (block) => {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const name = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? "" : line.slice(i + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (name === "event") event = value;
      else if (name === "data") data.push(value);
    }
    if (data.length) on(event, JSON.parse(data.join("\n")));
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      dispatch(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
    }
  }
  if (buffer.trim()) dispatch(buffer);
}

function showTokenBar(message) {
  const bar = $("#token-bar");
  bar.hidden = false;
  if (message) $("label", bar).textContent = message;
}

/* ---- rendering helpers ------------------------------------------------------------------------------------------ */

/* text with <mark> over spans ([start, end) pairs) and the first `bold` characters (the speaker) in <b> */
function marked(textStr, spans = [], bold = 0) {
  const frag = document.createDocumentFragment();
  const cuts = new Set([0, textStr.length, bold]);
  for (const [a, b] of spans) { cuts.add(a); cuts.add(b); }
  const points = [...cuts].filter((c) => c >= 0 && c <= textStr.length).sort((a, b) => a - b);
  for (let i = 0; i < points.length - 1; i++) {
    const [a, b] = [points[i], points[i + 1]];
    if (a === b) continue;
    let node = document.createTextNode(textStr.slice(a, b));
    if (spans.some(([s, e]) => a >= s && b <= e)) node = h("mark", {}, node);
    if (b <= bold) node = h("b", { class: "speaker" }, node);
    frag.appendChild(node);
  }
  return frag;
}

function speakerPrefix(line) {
  if (line.direction || !line.speakers || !line.speakers.length) return 0;
  const prefix = `${line.speakers.join(" & ")}:`;
  return line.rendered.startsWith(prefix) ? prefix.length : 0;
}

function setView(name) {
  for (const v of ["ask", "compare", "eval"]) {
    $(`#view-${v}`).hidden = v !== name;
    const tab = $(`#tab-${v}`);
    tab.classList.toggle("active", v === name);
    if (v === name) tab.setAttribute("aria-current", "page"); else tab.removeAttribute("aria-current");
  }
  if (name === "eval") Evaluation.load();
}

function route() {
  const name = (location.hash || "#ask").slice(1);
  setView(["ask", "compare", "eval"].includes(name) ? name : "ask");
}

/* ---- scenes (expandable cards) ------------------------------------------------------------------------------------ */

/* A card: <details> whose body fetches the full scene when first opened, highlighting `cited` line ids. */
function sceneCard({ id, label, title, badge, preview, question, cited = [], extra }) {
  const body = h("div", { class: "scene-body" }, h("p", { class: "meta" }, "loading the scene…"));
  const summary = h("summary", {},
    h("span", { class: "card-head" },
      badge ? h("span", { class: "badge" }, badge) : null,
      h("span", { class: "label" }, label),
      h("span", { class: "title" }, title),
      extra ? h("span", { class: "meta" }, extra) : null),
    preview && preview.length ? h("span", { class: "preview" }, preview.map((p) => h("q", {}, p))) : null);
  const card = h("details", { class: "card scene-card", dataset: { scene: id } }, summary, body);
  let loaded = false;
  card.addEventListener("toggle", async () => {
    if (!card.open || loaded) return;
    loaded = true;
    try {
      const q = question ? `?q=${encodeURIComponent(question)}` : "";
      const scene = await api(`/scenes/${encodeURIComponent(id)}${q}`);
      body.replaceChildren(renderScene(scene, new Set(cited)));
      const first = $(".cited", body);
      const box = $(".scene-lines", body);
      if (first && box) box.scrollTop = Math.max(0, first.offsetTop - box.offsetTop - 24);
    } catch (err) {
      loaded = false;
      body.replaceChildren(h("p", { class: "error" }, err.message));
    }
  });
  return card;
}

function renderScene(scene, cited) {
  const meta = scene.metadata || {};
  const info = [meta.episode_title && meta.episode_title !== scene.title ? meta.episode_title : null,
    `${scene.lines.length} lines`, scene.id].filter(Boolean).join(" · ");
  return h("div", {},
    h("p", { class: "meta" }, info),
    h("ol", { class: "scene-lines" }, scene.lines.map((line) =>
      h("li", {
        class: [line.direction ? "direction" : "", cited.has(line.id) ? "cited" : ""].join(" ").trim() || null,
        dataset: { unit: line.id },
        title: cited.has(line.id) ? "cited in the answer" : null,
      }, marked(line.rendered, line.spans, speakerPrefix(line))))));
}

/* ---- trace panel ---------------------------------------------------------------------------------------------------- */

function renderTrace(trace, timings) {
  const stages = trace ? trace.stages : [];
  const max = Math.max(1, ...stages.map((s) => s.ms || 0));
  const total = stages.reduce((a, s) => a + (s.ms || 0), 0);
  $("#trace-summary").textContent = `${stages.length} stages · ${ms(total)}`;
  const skip = new Set(["name", "ms", "top"]);
  const rows = stages.map((s) => {
    const facts = Object.entries(s).filter(([k, v]) => !skip.has(k) && v != null && typeof v !== "object")
      .map(([k, v]) => `${k}: ${typeof v === "number" && !Number.isInteger(v) ? v.toFixed(3) : v}`);
    const lists = Object.entries(s).filter(([k, v]) => !skip.has(k) && Array.isArray(v) && v.length)
      .map(([k, v]) => `${k}: ${v.length}`);
    const top = Array.isArray(s.top) && s.top.length
      ? h("details", { class: "stage-top" }, h("summary", {}, `top ${s.top.length} candidates`),
        h("div", { class: "table-wrap" }, h("table", { class: "mini" },
          h("thead", {}, h("tr", {}, h("th", {}, "rank"), h("th", {}, "scene"), h("th", {}, "score"))),
          h("tbody", {}, s.top.map((c) => h("tr", {}, h("td", {}, c.rank), h("td", {}, c.id), h("td", {}, fmt(c.score, 4))))))))
      : null;
    return h("li", { class: "stage", dataset: { stage: s.name } },
      h("div", { class: "stage-head" },
        h("span", { class: "stage-name" }, s.name),
        h("span", { class: "stage-bar" }, h("span", { style: `width:${(100 * (s.ms || 0)) / max}%` })),
        h("span", { class: "stage-ms" }, ms(s.ms))),
      facts.length || lists.length ? h("div", { class: "meta" }, [...facts, ...lists].join(" · ")) : null,
      top);
  });
  const timingLine = timings
    ? h("p", { class: "meta" }, Object.entries(timings).map(([k, v]) => `${k.replace(/_/g, " ")} ${ms(v)}`).join(" · "))
    : null;
  const notes = trace && trace.notes && trace.notes.length ? h("ul", { class: "notes" }, trace.notes.map((n) => h("li", {}, n))) : null;
  $("#trace-body").replaceChildren(timingLine || "", h("ol", { class: "stages" }, rows), notes || "");
  $("#trace").hidden = false;
}

/* ---- ask view ------------------------------------------------------------------------------------------------------- */

const Ask = (() => {
  let controller = null;
  let last = null;  // the turn shown in the answer panel; it joins the thread when the next question is asked
  let thread = [];  // earlier turns: {question, result}; sent as `history`, shown above the current answer

  function history() {
    return thread.flatMap((t) => [{ role: "user", content: t.question }, { role: "assistant", content: t.result.answer }]);
  }

  function renderThread() {
    const list = $("#thread");
    list.replaceChildren(...thread.map((t) => h("li", { class: "turn" },
      h("p", { class: "turn-q" }, t.question),
      t.result.rewrite && t.result.rewrite.searched !== t.result.rewrite.asked
        ? h("p", { class: "rewrite" }, `read as: ${t.result.rewrite.searched} (rewritten by ${t.result.rewrite.by})`) : null,
      h("p", { class: `turn-a${t.result.refused ? " refused" : ""}` }, answerWithRefs(t.result.answer, [])),
      t.result.citations.length ? h("p", { class: "meta" }, "cited: " + t.result.citations.map((c) => `[${c.source_id}] ${c.label}`).join(" · ")) : null,
    )));
    list.hidden = !thread.length;
    $("#ask-new").hidden = !thread.length;
  }

  function reset() {
    $("#ask-error").hidden = true;
    $("#answer").hidden = false;
    $("#answer-drafts").replaceChildren();
    $("#answer-text").replaceChildren(h("span", { class: "cursor" }));
    $("#answer-text").classList.remove("refused", "failed");
    $("#answer-notes").replaceChildren();
    $("#answer-rewrite").hidden = true;
    $("#answer-meta").textContent = `mode ${state.mode}`;
    for (const id of ["#items", "#citations", "#retrieved", "#trace"]) $(id).hidden = true;
    setState("retrieving…", "busy");
  }

  function setState(text, kind) {
    const pill = $("#answer-state");
    pill.textContent = text;
    pill.className = `pill ${kind || ""}`;
  }

  function appendToken(str) {
    const box = $("#answer-text");
    const cursor = $(".cursor", box);
    box.insertBefore(document.createTextNode(str), cursor);
    setState("answering…", "busy");
  }

  function answerWithRefs(answer, citations) {
    const ids = new Set(citations.map((c) => String(c.source_id)));
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of answer.matchAll(/\[(\d+)\]/g)) {
      frag.appendChild(document.createTextNode(answer.slice(last, m.index)));
      frag.appendChild(ids.has(m[1])
        ? h("a", { class: "ref", href: `#cite-${m[1]}`, onclick: (e) => { e.preventDefault(); openCitation(m[1]); } }, `[${m[1]}]`)
        : document.createTextNode(m[0]));
      last = m.index + m[0].length;
    }
    frag.appendChild(document.createTextNode(answer.slice(last)));
    return frag;
  }

  function openCitation(n) {
    const card = document.getElementById(`cite-${n}`);
    if (!card) return;
    card.open = true;
    card.scrollIntoView({ behavior: "smooth", block: "start" });
  }

  function done(result, question) {
    const rw = result.rewrite;
    $("#answer-rewrite").textContent = rw && rw.searched !== rw.asked ? `read as: ${rw.searched} (rewritten by ${rw.by})` : "";
    $("#answer-rewrite").hidden = !(rw && rw.searched !== rw.asked);
    const box = $("#answer-text");
    const streamed = box.textContent.trim();
    const replaced = result.reader === "evidence" || result.reader === "extractive" ||
      (result.refused && !streamed.startsWith(result.answer.slice(0, 24)));
    if (streamed && replaced && (result.drafts || []).length) {
      // the last draft failed validation too: it stays visible, struck through, above what replaced it
      $("#answer-drafts").appendChild(h("p", { class: "withdrawn", title: "withdrawn: it could not be verified against the scenes" }, streamed));
    }
    const items = result.items || [];
    if (result.reader === "aggregate") {
      box.replaceChildren(result.answer.split("\n")[0]);  // the summary line; the items are listed below
      setState(`${items.length} item${items.length === 1 ? "" : "s"}${result.count != null ? ` · count ${result.count}` : ""}`, "ok");
    } else if (result.refused) {
      box.replaceChildren(result.answer);
      box.classList.add("refused");
      setState("refused", "warn");
    } else if (!result.answer) {
      box.replaceChildren("No answer: the LLM failed (see the note below). The retrieved scenes are listed.");
      box.classList.add("failed");
      setState("no answer", "bad");
    } else {
      box.replaceChildren(answerWithRefs(result.answer, result.citations));
      setState(`${result.citations.length} citation${result.citations.length === 1 ? "" : "s"}`, "ok");
    }
    const t = result.timings || {};
    const info = result.route_info;
    $("#answer-meta").textContent = [info ? `route ${info.route} (${info.source}: ${info.reason})` : null,
      `mode ${result.mode}`, `llm ${result.llm}`, `retrieval ${ms(t.retrieval)}`,
      t.llm_first_token != null ? `first token ${ms(t.llm_first_token)}` : null, `total ${ms(t.total)}`].filter(Boolean).join(" · ");
    $("#answer-notes").replaceChildren(...result.notes.map((n) => h("li", {}, n)));

    $("#item-cards").replaceChildren(...items.map((item, i) => itemCard(item, i + 1, question)));
    $("#items-title").textContent = result.exhaustive === false
      ? `Nothing matched exactly: the ${items.length} best-ranked, not an exhaustive list`
      : result.count != null
        ? `Count: ${result.count} · ${items.length} item${items.length === 1 ? "" : "s"}, each with its lines`
        : `${items.length} item${items.length === 1 ? "" : "s"}, each with its lines`;
    $("#items").hidden = !items.length;

    const cited = new Set(result.citations.map((c) => c.id));
    $("#citation-cards").replaceChildren(...result.citations.map((c) => {
      const card = sceneCard({
        id: c.id, label: c.label, title: c.title, badge: `[${c.source_id}]`, preview: c.lines, question,
        cited: c.unit_ids,
      });
      card.id = `cite-${c.source_id}`;
      return card;
    }));
    $("#citations").hidden = !result.citations.length;

    const unitsOf = {};
    for (const c of result.citations) unitsOf[c.id] = [...(unitsOf[c.id] || []), ...c.unit_ids];
    $("#retrieved-cards").replaceChildren(...result.scenes.map((s) => sceneCard({
      id: s.id, label: s.label, title: s.title, badge: `#${s.rank}`, question, cited: unitsOf[s.id] || [],
      extra: `score ${fmt(s.score, 4)}${cited.has(s.id) ? " · cited" : ""}${s.source_id == null ? " · not in the prompt" : ""}`,
    })));
    $("#retrieved").hidden = !result.scenes.length;
    renderTrace(result.trace, result.timings);
  }

  /* One item of an aggregation answer: expands to its citations, one scene card per scene (its lines highlighted). */
  function itemCard(item, n, question) {
    const byScene = new Map();
    for (const c of item.citations) byScene.set(c.id, [...(byScene.get(c.id) || []), c]);
    const scenes = [...byScene.entries()].map(([id, cs]) => sceneCard({
      id, label: cs[0].label, title: "", question, preview: cs.map((c) => c.quote),
      cited: cs.flatMap((c) => c.unit_ids), extra: cs.some((c) => c.how === "dense") ? "similar line" : null,
    }));
    const more = item.matches > item.citations.length ? h("p", { class: "meta" }, `${item.matches - item.citations.length} more line(s) not shown`) : null;
    return h("details", { class: "card item-card", id: `item-${n}`, dataset: { item: item.id } },
      h("summary", {}, h("span", { class: "card-head" },
        h("span", { class: "badge" }, String(n)), h("span", { class: "label" }, item.text),
        h("span", { class: "meta" }, `${item.matches} line${item.matches === 1 ? "" : "s"}`))),
      h("div", { class: "item-citations" }, ...scenes, more));
  }

  async function run(question) {
    question = question.trim();
    if (!question) return;
    if (controller) controller.abort();
    controller = new AbortController();
    const mine = controller;
    reset();
    $("#ask-btn").disabled = true;
    let finished = false;
    let pending = null;
    let phrasing = false;
    if (last) { thread.push(last); last = null; renderThread(); }  // the answer shown so far joins the thread
    const earlier = history();
    try {
      const body = { question, mode: state.mode, k: ASK_K };
      if (earlier.length) body.history = earlier;
      await streamAsk(body, (event, data) => {
        if (mine.signal.aborted) return;
        if (event === "extractive") {
          // the reader's answer and the retrieved scenes at once; an LLM's phrasing, if any, streams after it
          done(data, question);
          phrasing = !data.refused && data.llm !== "none";
          if (phrasing) setState("reader's answer · phrasing…", "busy");
        } else if (event === "token") {
          if (phrasing) {
            phrasing = false;
            const box = $("#answer-text");
            $("#answer-drafts").appendChild(h("p", { class: "reader-answer", title: "the extractive reader's answer, copied from the cited line" },
              `reader: ${box.textContent.trim()}`));
            box.classList.remove("refused", "failed");
            box.replaceChildren(h("span", { class: "cursor" }));
          }
          appendToken(data.text);
        }
        else if (event === "retry") {
          const box = $("#answer-text");
          const draft = box.textContent.trim();
          if (draft) $("#answer-drafts").appendChild(h("p", { class: "withdrawn", title: "withdrawn: it could not be verified against the scenes" }, draft));
          box.replaceChildren(h("span", { class: "cursor" }));
          setState("asking again…", "busy");
        } else if (event === "done") {
          finished = true;
          done(data, question);
          pending = { question, result: data };
        }
        else if (event === "error") { finished = true; throw new ApiError(500, errorMessage(data.error)); }
      }, mine.signal);
      if (!finished && !mine.signal.aborted) throw new Error("the answer stream ended early");
      last = pending;
      $("#ask-new").hidden = !(thread.length || last);
    } catch (err) {
      if (err.name === "AbortError") return;
      $("#answer").hidden = true;
      const box = $("#ask-error");
      box.textContent = err.message;
      box.hidden = false;
    } finally {
      if (controller === mine) $("#ask-btn").disabled = false;
    }
  }

  function init() {
    const examples = $("#ask-examples");
    for (const ex of EXAMPLES) {
      examples.appendChild(h("button", {
        type: "button", class: "chip", title: ex.hint || "ask this",
        onclick: () => { $("#ask-q").value = ex.q; run(ex.q); },
      }, ex.q, ex.hint ? h("small", {}, ` (${ex.hint})`) : null));
    }
    $("#ask-form").addEventListener("submit", (e) => { e.preventDefault(); run($("#ask-q").value); });
    $("#ask-new").addEventListener("click", () => {
      thread = []; last = null; renderThread();
      $("#answer").hidden = true;
      for (const id of ["#citations", "#retrieved", "#trace"]) $(id).hidden = true;
      $("#ask-q").value = ""; $("#ask-q").focus();
    });
    for (const b of document.querySelectorAll("#mode-toggle button")) {
      b.addEventListener("click", () => {
        state.mode = b.dataset.mode;
        for (const o of document.querySelectorAll("#mode-toggle button")) {
          o.classList.toggle("on", o === b);
          o.setAttribute("aria-checked", String(o === b));
        }
      });
    }
  }

  return { init, run };
})();

/* ---- compare view ---------------------------------------------------------------------------------------------------- */

const Compare = (() => {
  function column(mode) {
    return h("section", { class: "col", dataset: { mode } },
      h("header", {}, h("h3", {}, mode), h("span", { class: "meta col-meta" }, "searching…")),
      h("ol", { class: "hits" }));
  }

  function fill(col, data, question) {
    $(".col-meta", col).textContent = `${data.mode !== data.requested_mode ? `${data.mode} · ` : ""}${ms(data.took_ms)}`;
    $(".hits", col).replaceChildren(...data.results.map((r) => {
      const line = r.lines[0];
      return h("li", { class: "hit", dataset: { scene: r.id } },
        h("details", {},
          h("summary", {},
            h("span", { class: "rank" }, r.rank),
            h("span", { class: "hit-main" },
              h("span", { class: "label" }, r.label),
              h("span", { class: "title" }, r.title),
              line ? h("span", { class: "snippet" }, marked(line.text, line.spans)) : null),
            h("span", { class: "agree-slot" })),
          h("div", { class: "hit-body" },
            h("p", { class: "meta" }, `score ${fmt(r.score, 4)} · ${Object.entries(r.sources).map(([k, v]) => `${k} #${v.rank}`).join(", ")}`),
            h("ul", { class: "lines" }, r.lines.map((l) => h("li", {}, marked(l.text, l.spans))))),
        ));
    }));
    if (!data.results.length) $(".hits", col).appendChild(h("li", { class: "meta" }, "no scenes found"));
  }

  function fail(col, err) {
    col.classList.add("failed");
    $(".col-meta", col).textContent = err.status ? `HTTP ${err.status}` : "failed";
    $(".hits", col).replaceChildren(h("li", { class: "col-error" }, err.message));
  }

  function markAgreement(grid, found) {
    const modesOf = {};
    for (const [mode, ids] of Object.entries(found)) for (const id of ids) (modesOf[id] = modesOf[id] || []).push(mode);
    for (const li of grid.querySelectorAll(".hit")) {
      const modes = modesOf[li.dataset.scene] || [];
      const slot = $(".agree-slot", li);
      slot.replaceChildren();
      li.classList.remove("agree");
      if (modes.length >= 2) {
        li.classList.add("agree");
        slot.appendChild(h("span", {
          class: `agree-badge agree-${Math.min(modes.length, 4)}`, title: `in the top ${COMPARE_K} of ${modes.join(", ")}`,
        }, String(modes.length)));
      }
    }
  }

  async function run(question) {
    question = question.trim();
    if (!question) return;
    const grid = $("#compare-grid");
    const cols = Object.fromEntries(COMPARE_MODES.map((m) => [m, column(m)]));
    grid.replaceChildren(...Object.values(cols));
    const found = {};
    $("#compare-btn").disabled = true;
    await Promise.allSettled(COMPARE_MODES.map(async (mode) => {
      try {
        const data = await api("/search", { question, mode, k: COMPARE_K });
        found[mode] = data.results.map((r) => r.id);
        fill(cols[mode], data, question);
      } catch (err) {
        fail(cols[mode], err);
      }
      markAgreement(grid, found);
    }));
    grid.dataset.done = "1";
    $("#compare-btn").disabled = false;
  }

  function hover(e) {
    const hit = e.target.closest && e.target.closest(".hit");
    const id = hit ? hit.dataset.scene : null;
    for (const li of document.querySelectorAll("#compare-grid .hit")) li.classList.toggle("hl", !!id && li.dataset.scene === id);
  }

  function init() {
    const examples = $("#compare-examples");
    for (const ex of EXAMPLES.slice(0, 3)) {
      examples.appendChild(h("button", {
        type: "button", class: "chip", onclick: () => { $("#compare-q").value = ex.q; run(ex.q); },
      }, ex.q));
    }
    $("#compare-form").addEventListener("submit", (e) => { e.preventDefault(); run($("#compare-q").value); });
    $("#compare-grid").addEventListener("mouseover", hover);
    $("#compare-grid").addEventListener("focusin", hover);
  }

  return { init, run };
})();

/* ---- evaluation view ------------------------------------------------------------------------------------------------- */

const Evaluation = (() => {
  const KS = [1, 5, 10, 20, 50];
  const METRICS = ["recall@1", "recall@5", "recall@10", "recall@20", "recall@50", "mrr@10", "ndcg@10"];
  const DEFAULT_MODES = ["bm25", "bm25_window", "vector", "rrf_naive", "hybrid"];
  let data = null, loading = null, set = null, metric = "recall@5", chosen = null, colors = {};

  function modesOf(d) {
    return Object.keys(d[Object.keys(d)[0]] || {}).filter((m) => !m.startsWith("_"));
  }

  async function load() {
    if (data || loading) return;
    loading = api("/results/first_stage").then((d) => {
      data = d;
      const modes = modesOf(d);
      // the modes shown first get the most distinct colours
      const order = [...DEFAULT_MODES.filter((m) => modes.includes(m)), ...modes.filter((m) => !DEFAULT_MODES.includes(m))];
      order.forEach((m, i) => { colors[m] = PALETTE[i % PALETTE.length]; });
      set = Object.keys(d)[0];
      chosen = new Set(DEFAULT_MODES.filter((m) => modes.includes(m)));
      if (!chosen.size) modes.slice(0, 5).forEach((m) => chosen.add(m));
      render();
    }).catch((err) => {
      loading = null;
      $("#eval-body").replaceChildren(h("div", { class: "notice" },
        h("p", {}, "No evaluation results to show."), h("p", { class: "meta" }, err.message),
        h("p", { class: "meta" }, "They come from `ragfunnel eval table --out docs/results/first_stage/first_stage.md`.")));
    });
  }

  function width(node) {
    return Math.max(280, (node.clientWidth || document.body.clientWidth) - 2);
  }

  function render() {
    if (!data) return;
    const body = $("#eval-body");
    const sets = Object.keys(data);
    const modes = modesOf(data);
    const rows = data[set];
    const n = (rows[modes[0]] || {}).n;

    const setTabs = h("div", { class: "seg", role: "radiogroup", "aria-label": "question set" }, sets.map((s) =>
      h("button", { type: "button", role: "radio", "aria-checked": String(s === set), class: s === set ? "on" : null,
        onclick: () => { set = s; render(); } }, s)));
    const picker = h("div", { class: "mode-picker" }, modes.map((m) =>
      h("label", { class: "mode-check" },
        h("input", { type: "checkbox", checked: chosen.has(m), onchange: (e) => { e.target.checked ? chosen.add(m) : chosen.delete(m); render(); } }),
        h("span", { class: "swatch", style: `background:${colors[m]}` }), m)));

    const lineBox = h("div", { class: "chart-box" });
    const barBox = h("div", { class: "chart-box" });
    const metricPick = h("select", { "aria-label": "metric", onchange: (e) => { metric = e.target.value; render(); } },
      METRICS.map((m) => h("option", { value: m, selected: m === metric }, m)));

    const best = {};
    for (const m of METRICS) best[m] = Math.max(...modes.map((mode) => (rows[mode] || {})[m] ?? -1));
    const table = h("div", { class: "table-wrap" }, h("table", { class: "results" },
      h("thead", {}, h("tr", {}, h("th", {}, "mode"), METRICS.map((m) => h("th", {}, m)), h("th", {}, "mean ms"))),
      h("tbody", {}, modes.map((mode) => h("tr", {},
        h("td", {}, h("span", { class: "swatch", style: `background:${colors[mode]}` }), mode),
        METRICS.map((m) => h("td", { class: (rows[mode] || {})[m] === best[m] ? "best" : null }, fmt((rows[mode] || {})[m]))),
        h("td", {}, fmt(((rows._mean_ms || {})[mode]), 1)))))));

    body.replaceChildren(
      h("div", { class: "eval-head" }, h("h2", {}, "First-stage retrieval on Friends"), setTabs),
      h("p", { class: "meta" }, `Committed results (docs/results/first_stage/first_stage.json): set “${set}”${n ? `, ${n} questions` : ""}. `
        + "Recall@k: the gold scene is in the top k. The dashed line is the ceiling: the gold scene is in the top k of at least one retriever."),
      picker,
      h("figure", { class: "figure", id: "recall-chart" }, h("figcaption", {}, `Recall@k — ${set}`), lineBox, legend()),
      h("figure", { class: "figure", id: "bars-chart" },
        h("figcaption", {}, "Per question set: ", metricPick), barBox, legend(false)),
      h("h3", {}, `All modes — ${set}`),
      table);

    const series = [...chosen].map((m) => ({
      name: m, color: colors[m],
      points: KS.filter((k) => rows[m] && rows[m][`recall@${k}`] != null).map((k) => [k, rows[m][`recall@${k}`]]),
    }));
    const ceiling = (rows._ceilings || {})["union of all"];
    if (ceiling) {
      series.push({ name: "ceiling (union of all retrievers)", color: "#111827", dashed: true,
        points: KS.filter((k) => ceiling[`@${k}`] != null).map((k) => [k, ceiling[`@${k}`]]) });
    }
    lineBox.appendChild(Charts.lineChart({ series, ks: KS, width: width(lineBox) }));
    barBox.appendChild(Charts.barChart({
      width: width(barBox), yLabel: metric,
      groups: sets.map((s) => ({ label: s, bars: [...chosen].map((m) => ({ name: m, color: colors[m], value: (data[s][m] || {})[metric] })) })),
    }));
  }

  function legend(withCeiling = true) {
    const items = [...chosen].map((m) => h("span", { class: "legend-item" }, h("span", { class: "swatch", style: `background:${colors[m]}` }), m));
    if (withCeiling && (data[set]._ceilings || {})["union of all"]) {
      items.push(h("span", { class: "legend-item" }, h("span", { class: "swatch dashed" }), "ceiling"));
    }
    return h("div", { class: "legend" }, items);
  }

  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { if (!$("#view-eval").hidden) render(); }, 150);
  });

  return { load };
})();

/* ---- start ------------------------------------------------------------------------------------------------------------ */

async function health() {
  try {
    const res = await fetch("/health");
    const hl = await res.json();
    state.health = hl;
    const dot = $("#status .dot");
    dot.className = `dot ${hl.status === "ok" ? "ok" : "warn"}`;
    const parts = hl.index_loaded ? [`${hl.documents.toLocaleString("en")} scenes`] : ["index not loaded"];
    parts.push(hl.llm ? `LLM ${hl.llm}` : "no LLM");
    $("#status-text").textContent = parts.join(" · ");
    $("#status").title = [hl.index_error, hl.llm_error].filter(Boolean).join("\n") || "ready";
    $("#version").textContent = `v${hl.version}`;
    if (hl.auth_required && !state.token) showTokenBar();
  } catch (err) {
    $("#status-text").textContent = "server unreachable";
  }
}

function init() {
  $("#token").value = state.token;
  $("#token-bar").addEventListener("submit", (e) => {
    e.preventDefault();
    state.token = $("#token").value.trim();
    localStorage.setItem("ragfunnel-token", state.token);
    $("#token-bar").hidden = true;
  });
  Ask.init();
  Compare.init();
  window.addEventListener("hashchange", route);
  route();
  health();
}

init();
