// cairn dashboard: the few things a server-rendered page cannot do.
// The API key lives in sessionStorage and is sent as the API wants it;
// pages that needed it are fetched again with it; a live run page
// follows the run's event stream, re-renders on a change and shows its
// steps' progress;
// values a client encrypted are decrypted here, with a keyring the reader
// gives the page, never on the server.
"use strict";
(function () {
  const KEY = "cairn.key";
  const REFRESH_MS = Number(document.body.dataset.refreshMs) || 5000;
  const api = () => document.body.dataset.api || "/v1/api";
  const key = () => sessionStorage.getItem(KEY);
  const auth = () => (key() ? { Authorization: "Bearer " + key() } : {});
  let generation = 0;

  async function load(url, push) {
    const gen = ++generation;
    const r = await fetch(url, { headers: auth(), cache: "no-store" });
    if (gen !== generation) return;
    const doc = new DOMParser().parseFromString(await r.text(), "text/html");
    const main = doc.getElementById("main");
    if (!main) return;
    if (r.status === 401 && key()) {
      sessionStorage.removeItem(KEY);
      main.insertAdjacentHTML("afterbegin", '<div class="banner" role="alert">That key was refused.</div>');
    }
    document.getElementById("main").replaceWith(main);
    const who = doc.querySelector("header .who");
    if (who) document.querySelector("header .who").replaceWith(who);
    document.title = main.dataset.title || document.title;
    if (push) history.pushState({}, "", url);
    shown = location.pathname + location.search;
    if (!push && location.hash) retarget();
    init();
  }

  // retarget points the URL's fragment (#step-…, #j…) at the element of
  // that id in the page just rendered again, where the old one was: the
  // browser matches :target to the element a fragment navigation found,
  // which the re-render replaced. Without a new history entry, and
  // without moving the page.
  function retarget() {
    const h = location.hash, y = window.scrollY;
    history.replaceState(history.state, "", location.pathname + location.search);
    location.replace(h);
    window.scrollTo(0, y);
  }

  function navigable(a) {
    if (a && a.hash && a.pathname === location.pathname) return false; // an anchor on this page
    return a && a.origin === location.origin && a.pathname.startsWith("/ui/") && !a.pathname.startsWith("/ui/assets/");
  }

  document.addEventListener("click", (ev) => {
    const a = ev.target.closest("a");
    if (!key() || !navigable(a) || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    ev.preventDefault();
    load(a.href, true);
  });
  document.addEventListener("submit", (ev) => {
    const f = ev.target;
    if (f.id === "key-form") {
      ev.preventDefault();
      sessionStorage.setItem(KEY, f.elements.key.value.trim());
      load(location.href, false);
    } else if (f.id === "event-form") {
      ev.preventDefault();
      sendEvent(f);
    } else if (f.id === "publish-form") {
      ev.preventDefault();
      publish(f);
    } else if (f.classList.contains("resume-step")) {
      ev.preventDefault();
      resumeStep(f);
    } else if (f.id === "start-form") {
      ev.preventDefault();
      startRun(f);
    } else if (f.method === "get" && key()) {
      ev.preventDefault();
      const u = new URL(f.action);
      for (const [k, v] of new FormData(f)) if (v) u.searchParams.set(k, v);
      load(u.href, true);
    }
  });
  // Back and forward to another page render it; a move between fragments
  // of this page (retarget's among them) does not.
  let shown = location.pathname + location.search;
  window.addEventListener("popstate", () => {
    if (location.pathname + location.search !== shown) load(location.href, false);
  });
  // An attempt's input is read when its details open (the lease keeps it;
  // the read is audited like the run's).
  document.addEventListener("toggle", async (ev) => {
    const d = ev.target;
    if (!(d instanceof HTMLDetailsElement) || !d.classList.contains("input") || !d.open || d.dataset.loaded) return;
    d.dataset.loaded = "true";
    const pre = d.querySelector("pre");
    const run = document.getElementById("run").dataset.run, step = d.closest("tr").dataset.step;
    const r = await fetch(api() + "/runs/" + encodeURIComponent(run) + "/steps/" + encodeURIComponent(step) + "/attempts/" + d.dataset.attempt + "/input",
      { headers: auth(), cache: "no-store" });
    if (!r.ok) { pre.textContent = "input: " + r.status; return; }
    const x = await r.json();
    if (!x.kept) pre.textContent = "not kept: " + x.bytes + " bytes, over 8 KiB";
    else if (x.input === undefined) pre.textContent = "no input";
    else { pre.textContent = ""; render(pre, x.input, "", false); decryptAll(); }
  }, true);

  // Encrypted values (sdk/codec's format): the server renders each as a
  // badge (span.enc) holding the encrypted value; given a keyring, this
  // page decrypts them itself with WebCrypto (AES-256-GCM, additional
  // data "cairn-codec-v1:" + the key id). The keyring is kept in this
  // tab's sessionStorage and in memory as keys that cannot be exported;
  // it is never part of a request: the panel is no form, and no fetch
  // reads it.
  const KEYRING = "cairn.keyring", MARKER = "$cairn_encrypted";
  let ring = null; // key id → CryptoKey
  const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  async function importRing(text) {
    if (!window.crypto || !crypto.subtle) throw new Error("this page cannot decrypt: WebCrypto needs a secure context (https, or http on localhost)");
    let j;
    try { j = JSON.parse(text); } catch (e) { throw new Error("not JSON: " + e.message); }
    if (!j || !Array.isArray(j.keys) || !j.keys.length) throw new Error('want {"keys":[{"id":"k2","key":"<base64 of 32 bytes>"}, …]}');
    const m = new Map();
    for (const k of j.keys) {
      if (!k || typeof k.id !== "string" || !k.id || typeof k.key !== "string") throw new Error("every key needs an id and a key");
      let raw;
      try { raw = unb64(k.key); } catch (e) { throw new Error("key " + k.id + ": not base64"); }
      if (raw.length !== 32) throw new Error("key " + k.id + ": " + raw.length + " bytes, want 32");
      m.set(k.id, await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["decrypt"]));
    }
    return m;
  }
  async function openEnvelope(e) {
    if (e.v !== 1 || e.alg !== "A256GCM") throw new Error("unknown format (v " + e.v + ", " + e.alg + ")");
    const k = ring && ring.get(e.kid);
    if (!k) throw new Error("the keyring has no key " + e.kid);
    const iv = unb64(e.nonce);
    if (iv.length !== 12) throw new Error("bad nonce");
    let pt;
    try {
      pt = await crypto.subtle.decrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode("cairn-codec-v1:" + e.kid), tagLength: 128 }, k, unb64(e.ct));
    } catch (err) { throw new Error("does not decrypt with key " + e.kid + " (wrong key, or the value was changed)"); }
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(pt));
  }
  function envelopeOf(x) {
    if (!x || typeof x !== "object" || Array.isArray(x)) return null;
    const ks = Object.keys(x), e = x[MARKER];
    return ks.length === 1 && ks[0] === MARKER && e && typeof e === "object" && !Array.isArray(e) ? e : null;
  }
  function badge(e, indent, brief) {
    const s = document.createElement("span");
    s.className = "enc";
    s.dataset.kid = e.kid || "";
    s.dataset.envelope = JSON.stringify(e);
    if (brief) s.dataset.brief = "true"; else s.dataset.indent = String(indent.length);
    s.textContent = e.kid ? "encrypted (key " + e.kid + ")" : "encrypted";
    return s;
  }
  // render appends the JSON value x to el: indented by two spaces (on one
  // line if brief), each encrypted value in it a badge.
  function render(el, x, indent, brief) {
    const e = envelopeOf(x);
    if (e) { el.append(badge(e, indent, brief)); return; }
    if (x === null || typeof x !== "object") { el.append(x === undefined ? "null" : JSON.stringify(x)); return; }
    const arr = Array.isArray(x), ks = arr ? x.map((_, i) => i) : Object.keys(x), inner = indent + "  ";
    if (!ks.length) { el.append(arr ? "[]" : "{}"); return; }
    el.append(arr ? "[" : "{");
    ks.forEach((k, i) => {
      el.append((i ? "," : "") + (brief ? "" : "\n" + inner) + (arr ? "" : JSON.stringify(k) + (brief ? ":" : ": ")));
      render(el, x[k], inner, brief);
    });
    el.append((brief ? "" : "\n" + indent) + (arr ? "]" : "}"));
  }
  // decryptAll replaces every badge on the page the keyring opens with its
  // value (and the badges inside that, in turn); a badge it cannot open
  // says why.
  async function decryptAll() {
    if (!ring) return;
    for (;;) {
      const pending = [...document.querySelectorAll("span.enc[data-envelope]:not([data-failed])")];
      if (!pending.length) break;
      for (const s of pending) {
        let x;
        try { x = await openEnvelope(JSON.parse(s.dataset.envelope)); } catch (err) {
          s.dataset.failed = "true";
          s.title = "cannot decrypt: " + err.message;
          continue;
        }
        const out = document.createElement("span");
        out.className = "dec";
        out.dataset.kid = s.dataset.kid;
        out.title = "decrypted in this page with key " + s.dataset.kid;
        const brief = s.dataset.brief === "true";
        render(out, x, " ".repeat(Number(s.dataset.indent) || 0), brief);
        if (brief && out.textContent.length > 120) out.textContent = out.textContent.slice(0, 120) + "…";
        s.replaceWith(out);
      }
    }
    const n = document.querySelectorAll("span.dec").length, bad = document.querySelectorAll("span.enc[data-failed]").length;
    keyringSay("keys " + [...ring.keys()].join(", ") + " in this tab; " + n + " value" + (n === 1 ? "" : "s") + " decrypted on this page" +
      (bad ? ", " + bad + " not (hover over one to see why)" : ""));
  }
  function keyringSay(text) {
    const el = document.getElementById("keyring-status");
    if (el) el.textContent = text;
  }
  async function useKeyring(text, remember) {
    try { ring = await importRing(text); } catch (err) { ring = null; keyringSay(err.message); return; }
    if (remember) sessionStorage.setItem(KEYRING, text);
    const panel = document.getElementById("keyring");
    panel.dataset.loaded = "true";
    document.getElementById("keyring-summary").textContent = "Keyring in use";
    document.getElementById("keyring-forget").hidden = false;
    for (const s of document.querySelectorAll("span.enc[data-failed]")) s.removeAttribute("data-failed");
    await decryptAll();
  }
  function initKeyring() {
    const text = document.getElementById("keyring-text"), file = document.getElementById("keyring-file");
    if (!text) return;
    document.getElementById("keyring-use").onclick = async () => {
      const t = text.value.trim();
      text.value = "";
      await useKeyring(t, true);
    };
    file.onchange = async () => {
      const f = file.files[0];
      file.value = "";
      if (f) await useKeyring((await f.text()).trim(), true);
    };
    document.getElementById("keyring-forget").onclick = () => { sessionStorage.removeItem(KEYRING); location.reload(); };
    const kept = sessionStorage.getItem(KEYRING);
    if (kept) useKeyring(kept, false);
  }

  // call POSTs body to an API operation: its status, its answer (j) and,
  // for a problem, what it says (msg).
  async function call(path, body) {
    const r = await fetch(api() + path, {
      method: "POST",
      headers: Object.assign({ "Content-Type": "application/json" }, auth()),
      body: JSON.stringify(body),
    });
    const text = await r.text();
    let j = null;
    try { j = JSON.parse(text); } catch (e) { /* not JSON */ }
    return { ok: r.ok, status: r.status, j, msg: (j && (j.detail || j.title)) || text };
  }
  function say(text) {
    const el = document.getElementById("action-result");
    if (el) el.textContent = text;
  }
  // cancel, pause or resume the run, then show it again.
  async function runAction(btn, action, body) {
    btn.disabled = true;
    const r = await call("/runs/" + encodeURIComponent(btn.dataset.run) + "/" + action, body);
    if (!r.ok) { say(action + ": " + r.status + " " + r.msg); btn.disabled = false; return; }
    load(location.href, false);
  }
  async function rerun(btn) {
    btn.disabled = true;
    const body = btn.dataset.step ? { from_step: btn.dataset.step } : {};
    const r = await call("/runs/" + encodeURIComponent(btn.dataset.run) + "/rerun", body);
    if (!r.ok) { say("rerun: " + r.status + " " + r.msg); btn.disabled = false; return; }
    load("/ui/runs/" + encodeURIComponent(r.j.run.id), true);
  }
  async function startRun(f) {
    const body = { workflow: f.elements.workflow.value };
    const p = f.elements.input.value.trim();
    if (p) {
      try { body.input = JSON.parse(p); } catch (e) { say("input is not JSON: " + e.message); return; }
    }
    const r = await call("/runs", body);
    if (!r.ok) { say("start: " + r.status + " " + r.msg); return; }
    load("/ui/runs/" + encodeURIComponent(r.j.run.id), true);
  }
  // A bulk action asks once more (the button says what it will do), then
  // starts a batch and shows its page.
  async function bulk(btn) {
    if (btn.dataset.armed !== "true") {
      btn.dataset.armed = "true";
      btn.textContent = "Confirm: " + btn.dataset.action + " every matching run";
      return;
    }
    btn.disabled = true;
    const filter = {};
    if (btn.dataset.status) filter.status = [btn.dataset.status];
    if (btn.dataset.workflow) filter.workflow = btn.dataset.workflow;
    if (btn.dataset.startedAfter) filter.started_after = btn.dataset.startedAfter;
    const r = await call("/batches", { action: btn.dataset.action, filter, reason: btn.dataset.action + " from the dashboard" });
    if (!r.ok) { say(btn.dataset.action + ": " + r.status + " " + r.msg); btn.disabled = false; return; }
    load("/ui/batches/" + encodeURIComponent(r.j.id), true);
  }
  // Answers an interrupted step: its body runs again with the value.
  async function resumeStep(f) {
    const body = {};
    const v = f.elements.value.value.trim();
    if (v) {
      try { body.value = JSON.parse(v); } catch (e) { say("answer is not JSON: " + e.message); return; }
    }
    const r = await call("/runs/" + encodeURIComponent(f.dataset.run) + "/steps/" + encodeURIComponent(f.dataset.step) + "/resume", body);
    if (!r.ok) { say("resume step: " + r.status + " " + r.msg); return; }
    load(location.href, false);
  }
  async function sendEvent(f) {
    const body = { name: f.elements.name.value };
    const p = f.elements.payload.value.trim();
    if (p) {
      try { body.payload = JSON.parse(p); } catch (e) { say("payload is not JSON: " + e.message); return; }
    }
    const r = await call("/runs/" + encodeURIComponent(f.dataset.run) + "/events", body);
    if (!r.ok) { say("event: " + r.status + " " + r.msg); return; }
    load(location.href, false);
  }

  // publish publishes an event and lists what it did: each run it
  // started (or had started: a retried id) and each run it cancelled, as
  // links made with the DOM, never markup.
  async function publish(f) {
    const body = { name: f.elements.name.value };
    if (f.elements.event_id.value.trim()) body.id = f.elements.event_id.value.trim();
    const p = f.elements.payload.value.trim();
    if (p) {
      try { body.payload = JSON.parse(p); } catch (e) { say("payload is not JSON: " + e.message); return; }
    }
    const r = await call("/events", body);
    if (!r.ok) { say("publish: " + r.status + " " + r.msg); return; }
    const runs = r.j.runs || [], cancelled = r.j.cancelled || [];
    say("event " + r.j.id + ": " + runs.length + " run(s), " + cancelled.length + " cancelled" + (r.j.truncated ? " (more workflows match than one publish starts)" : ""));
    const ul = document.getElementById("published");
    ul.textContent = "";
    const item = (run, text) => {
      const li = document.createElement("li"), a = document.createElement("a");
      a.href = "/ui/runs/" + encodeURIComponent(run);
      a.textContent = run;
      li.append(text + " ", a);
      ul.append(li);
    };
    for (const t of runs) item(t.run, (t.existed ? "had started " : "started ") + t.workflow + "@" + t.version + ":");
    for (const run of cancelled) item(run, "cancelled:");
  }

  // Follow a live run: hold a status request until the run's rev moves,
  // then render the page again (which starts the next wait).
  async function follow(gen, run, rev) {
    let delay = 1000;
    while (gen === generation) {
      try {
        const r = await fetch(api() + "/runs/" + encodeURIComponent(run) + "/status?after=" + rev + "&wait_ms=20000",
          { headers: auth(), cache: "no-store" });
        if (gen !== generation) return;
        if (r.ok) {
          const s = await r.json();
          // A new revision, or an ended run (the page shows it live): show
          // it. An ended run answers at once, so waiting on it would spin.
          if (s.rev !== rev || !["running", "paused"].includes(s.status)) { load(location.href, false); return; }
          delay = 1000;
          continue;
        }
      } catch (e) { /* the server went away: try again later */ }
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 30000);
    }
  }

  // A live run's page reads the run's event stream (GET /runs/{run}/stream,
  // Server-Sent Events) with fetch, which sends the key as the API wants
  // it (EventSource cannot). A status event newer than the page renders it
  // again; end renders the final page and closes the stream; progress
  // values are kept, the latest per step (a later attempt's replaces an
  // earlier one's), and shown in the step's row, again after each render.
  // A stream the server closes (they are bounded in time) or that breaks
  // is opened again with Last-Event-ID. A stream refused (an older server,
  // too many streams) leaves the page long-polling the status endpoint.
  // The page's #run says how many times its stream was opened (data-opens).
  let watch = null; // { run, ctrl, last, progress: Map step → {attempt, value, at, missed}, ended, polling, opens }

  function watchPage() {
    const el = document.getElementById("run");
    const run = el && el.dataset.run;
    if (watch && watch.run !== run) { watch.ctrl.abort(); watch = null; }
    if (el && el.dataset.live === "true") {
      if (!watch || watch.ended) {
        watch = { run, ctrl: new AbortController(), last: el.dataset.rev + "." + el.dataset.seq, progress: new Map(), ended: false, polling: false, opens: 0 };
        readStream(watch);
      }
      if (watch.polling) follow(generation, run, Number(el.dataset.rev));
    }
    if (watch && el && el.dataset.run === watch.run) el.dataset.opens = String(watch.opens);
    if (watch) showProgress(watch);
  }

  // sse parses Server-Sent Events: push takes the next piece of text and
  // returns the events it completed ({event, id, data}).
  function sse() {
    let buf = "", ev = { event: "", id: "", data: [] };
    return (text) => {
      buf += text;
      const out = [];
      for (let m; (m = /\r\n|\r|\n/.exec(buf));) {
        if (m[0] === "\r" && m.index === buf.length - 1) break; // maybe a \r\n cut in two
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === "") {
          if (ev.data.length) out.push({ event: ev.event || "message", id: ev.id, data: ev.data.join("\n") });
          ev = { event: "", id: "", data: [] };
          continue;
        }
        const i = line.indexOf(":");
        if (i === 0) continue; // a comment (keep-alive)
        const k = i < 0 ? line : line.slice(0, i), v = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
        if (k === "event") ev.event = v;
        else if (k === "id" && !v.includes("\0")) ev.id = v;
        else if (k === "data") ev.data.push(v);
      }
      return out;
    };
  }

  const pause = (ms, signal) => new Promise((res) => {
    const t = setTimeout(res, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); res(); }, { once: true });
  });

  async function readStream(w) {
    const signal = w.ctrl.signal;
    let fails = 0;
    while (!signal.aborted && !w.ended) {
      let got = false;
      try {
        const headers = Object.assign({ Accept: "text/event-stream" }, auth());
        if (w.last) headers["Last-Event-ID"] = w.last;
        const r = await fetch(api() + "/runs/" + encodeURIComponent(w.run) + "/stream", { headers, cache: "no-store", signal });
        if (!r.ok || !r.body) {
          if (r.status < 500 && r.status !== 429) { startPolling(w); return; }
          throw new Error("stream answered " + r.status);
        }
        w.opens++;
        const el = document.getElementById("run");
        if (watch === w && el && el.dataset.run === w.run) el.dataset.opens = String(w.opens);
        const parse = sse(), reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const ev of parse(value)) {
            got = true;
            if (ev.id) w.last = ev.id;
            onEvent(w, ev);
          }
          if (w.ended) { reader.cancel(); return; }
        }
      } catch (e) { /* the connection broke: open it again */ }
      fails = got ? 0 : fails + 1;
      if (fails) await pause(Math.min(1000 * 2 ** (fails - 1), 30000), signal);
    }
  }

  function startPolling(w) {
    w.polling = true;
    const el = document.getElementById("run");
    if (watch === w && el && el.dataset.run === w.run && el.dataset.live === "true") follow(generation, w.run, Number(el.dataset.rev));
  }

  function onEvent(w, ev) {
    let d;
    try { d = JSON.parse(ev.data); } catch (e) { return; }
    if (watch !== w || !d) return;
    const el = document.getElementById("run");
    const shown = el && el.dataset.run === w.run;
    if (ev.event === "progress") {
      const old = w.progress.get(d.step);
      if (old && old.attempt > d.attempt) return;
      w.progress.set(d.step, { attempt: d.attempt, value: d.value, at: d.at, missed: d.missed || 0 });
      if (shown) showProgress(w, d.step);
    } else if (ev.event === "end") {
      w.ended = true;
      if (shown) load(location.href, false);
    } else if (ev.event === "status" && shown && d.rev > Number(el.dataset.rev)) {
      load(location.href, false);
    }
  }

  // progressText says a progress value briefly: a percent (percent or pct,
  // 0–100; or done of total) and a message (message or msg) when the value
  // has them, else its JSON on one line. Always text, never markup.
  function progressText(v) {
    let pct = null, parts = [];
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const num = (x) => typeof x === "number" && isFinite(x);
      if (num(v.percent)) pct = v.percent;
      else if (num(v.pct)) pct = v.pct;
      else if (num(v.done) && num(v.total) && v.total > 0) { pct = 100 * v.done / v.total; parts.push(v.done + "/" + v.total); }
      const msg = typeof v.message === "string" ? v.message : typeof v.msg === "string" ? v.msg : "";
      if (pct !== null) parts.unshift(Math.round(Math.max(0, Math.min(100, pct))) + "%");
      if (msg) parts.push(msg);
    }
    let text = parts.length ? parts.join(" · ") : JSON.stringify(v === undefined ? null : v);
    if (text.length > 120) text = text.slice(0, 120) + "…";
    return { pct: pct === null ? null : Math.max(0, Math.min(100, pct)), text };
  }

  // showProgress shows the kept progress of step (or of every step) in
  // its row of the steps table.
  function showProgress(w, step) {
    for (const [s, p] of w.progress) {
      if (step !== undefined && s !== step) continue;
      const row = document.querySelector('#steps tr[data-step="' + CSS.escape(s) + '"]');
      if (!row || row.cells.length < 3) continue;
      let box = row.cells[2].querySelector("div.step-progress");
      if (!box) {
        box = document.createElement("div");
        box.className = "step-progress";
        box.setAttribute("role", "status");
        row.cells[2].append(box);
      }
      const { pct, text } = progressText(p.value);
      const bar = document.createElement("progress");
      bar.max = 100;
      if (pct !== null) bar.value = pct;
      const label = document.createElement("span");
      label.className = "progress-value";
      label.textContent = text;
      box.replaceChildren(...(pct !== null ? [bar, " "] : []), label);
      box.dataset.attempt = String(p.attempt);
      box.title = "progress of attempt " + p.attempt + (p.at ? ", sent " + p.at : "") +
        (p.missed ? "; " + p.missed + " earlier values missed" : "") + "\n" + JSON.stringify(p.value).slice(0, 2000);
    }
  }

  // Times: rendered in UTC (saying so); shown in the reader's local time
  // with its offset unless they chose UTC, a choice kept in localStorage.
  const TZ = "cairn.tz";
  const pad = (n, w) => String(n).padStart(w || 2, "0");
  function localStamp(d) {
    const off = -d.getTimezoneOffset();
    const zone = "UTC" + (off < 0 ? "−" : "+") + pad(Math.floor(Math.abs(off) / 60)) + ":" + pad(Math.abs(off) % 60);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" +
      pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + "." + pad(d.getMilliseconds(), 3) + " " + zone;
  }
  function utcStamp(d) { return d.toISOString().replace("T", " ").replace("Z", " UTC"); }
  function showTimes() {
    const utc = localStorage.getItem(TZ) === "utc";
    for (const el of document.querySelectorAll("time[datetime]")) {
      const d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) el.textContent = utc ? utcStamp(d) : localStamp(d);
    }
    const shown = document.getElementById("tz-shown"), btn = document.getElementById("tz-toggle");
    if (shown) shown.textContent = utc ? "times in UTC" : "times in local time (" + Intl.DateTimeFormat().resolvedOptions().timeZone + ")";
    if (btn) {
      btn.hidden = false;
      btn.textContent = utc ? "show local time" : "show UTC";
      btn.onclick = () => { localStorage.setItem(TZ, utc ? "local" : "utc"); showTimes(); };
    }
  }

  function init() {
    showTimes();
    const main = document.getElementById("main");
    if (main.dataset.auth === "required" && key()) { load(location.href, false); return; }
    const forget = document.getElementById("forget-key");
    if (forget) {
      forget.hidden = !key();
      forget.onclick = () => { sessionStorage.removeItem(KEY); location.reload(); };
    }
    const c = document.getElementById("cancel-run");
    if (c) c.onclick = () => runAction(c, "cancel", { reason: "cancelled from the dashboard" });
    const p = document.getElementById("pause-run");
    if (p) p.onclick = () => runAction(p, p.dataset.action);
    for (const b of document.querySelectorAll("#rerun-run, button.rerun-from")) b.onclick = () => rerun(b);
    for (const b of document.querySelectorAll("button.bulk")) b.onclick = () => bulk(b);
    watchPage();
    decryptAll();
  }
  // The runs list and the workers page refresh while they are open and
  // seen, unless the reader is typing in a form.
  setInterval(() => {
    const t = document.querySelector("[data-refresh=true]");
    const typing = document.activeElement && ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
    const armed = document.querySelector("[data-armed=true]");
    if (t && document.visibilityState === "visible" && !typing && !armed) load(location.href, false);
  }, REFRESH_MS);

  initKeyring();
  init();
})();
