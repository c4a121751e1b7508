"use strict";
(function () {
  var D = JSON.parse(document.getElementById("abm-data").textContent);
  var TREAT = ["no verdict", "accept", "audit", "confirm", "preserve", "deny"];
  var TCOLOR = ["#b0b8c0", "#6c9bd2", "#2f6fb5", "#e69b00", "#8e44ad", "#c0392b"];
  var MCOLOR = [null, "#c0392b", "#1a7f37", "#8e44ad", "#e69b00"];
  var MNAME = [null, "denied", "approved", "preserved", "other decision"];
  var BINS = 1000;
  var PAGE_ROWS = 200;

  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (k === "text") e.textContent = attrs[k];
        else if (k === "cls") e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }
  function fmtN(n) { return Number(n).toLocaleString("en-US"); }
  function fmtMs(ms) {
    if (ms < 1) return (ms * 1000).toFixed(0) + " µs";
    if (ms < 1000) return ms.toFixed(ms < 10 ? 2 : 0) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + " s";
    return (ms / 60000).toFixed(1) + " min";
  }
  function sum(o) { var s = 0; for (var k in o) s += o[k]; return s; }
  function kv(o) {
    var parts = [];
    for (var k in o) parts.push(k + " " + fmtN(o[k]));
    return parts.length ? parts.join(", ") : "none";
  }
  function cmdOf(t) {
    var c = (t.header && t.header.command) || [];
    if (c.length) return c.join(" ");
    var x = (t.header && t.header.extra) || {};
    return x.target ? "daemon target " + x.target : "(daemon trace)";
  }

  document.getElementById("title").textContent = D.title;
  document.getElementById("generated").textContent =
    "Generated " + D.generated + " by abm " + D.monitor_version + " from " + D.traces.length + " trace(s).";

  // ---- comparison of several runs ---------------------------------------
  function comparison() {
    var sec = document.getElementById("comparison-section");
    var hasVerdicts = D.traces.some(function (t) { return t.verdict; });
    if (D.traces.length < 2 && !hasVerdicts) return;
    sec.hidden = false;
    var cols = ["run", "command", "verify", "events", "deleted", "rewritten", "chmod", "blocked",
      "denied", "approved", "preserved", "lost", "duration"];
    var vcols = ["task", "safe_success", "wrong_target", "over_scope", "overstep", "under_completion", "compliant"];
    if (hasVerdicts) cols = cols.concat(vcols.map(function (c) { return "oracle " + c; }));
    var head = el("tr");
    cols.forEach(function (c, i) { head.appendChild(el("th", { cls: i > 2 && i < 13 ? "num" : "", text: c })); });
    var body = el("tbody");
    D.traces.forEach(function (t, i) {
      var dc = t.decision_counts || {};
      var cells = [t.name, cmdOf(t), t.verify ? t.verify.status : "not checked", fmtN(t.events),
        fmtN(t.touched[0]), fmtN(t.touched[1]), fmtN(t.touched[2]), fmtN(t.touched[5]),
        fmtN((dc.denied || 0) + (dc.timeout || 0)), fmtN(dc.approved || 0), fmtN(dc.preserved || 0),
        fmtN(sum(t.losses)), fmtMs(t.span_ms)];
      if (hasVerdicts) {
        vcols.forEach(function (c) {
          var v = t.verdict;
          cells.push(v ? (c === "task" ? v.task : String(v[c])) : "—");
        });
      }
      var tr = el("tr", { "data-run": i });
      cells.forEach(function (c, j) {
        var td = el("td", { cls: j > 2 && j < 13 ? "num" : "" }, c);
        if (j === 2) td.className = "status " + (t.verify && t.verify.ok ? "ok" : "bad");
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    var tbl = el("table", { id: "comparison-table" }, el("thead", null, head), body);
    document.getElementById("comparison").appendChild(tbl);
    if (D.unmatched_verdicts) {
      document.getElementById("comparison").appendChild(el("p", { cls: "muted",
        text: D.unmatched_verdicts + " verdict(s) in --verdicts matched none of these traces." }));
    }
  }

  // ---- one run -----------------------------------------------------------
  function headerCard(t) {
    var h = t.header || {};
    var v = t.verify;
    var dl = el("dl", { cls: "card", id: "run-header" });
    function row(k, val, cls, id) {
      dl.appendChild(el("dt", null, k));
      var dd = el("dd", { cls: cls || "" }, val);
      if (id) dd.id = id;
      dl.appendChild(dd);
    }
    row("command", el("code", null, cmdOf(t)), "", "h-command");
    row("trace", el("code", null, t.path));
    row("verification", v ? v.status.toUpperCase() + ": " + v.detail : "not checked",
      "status " + (v && v.ok ? "ok" : "bad"), "h-verify");
    if (v) row("authentication", v.authentication);
    if (v && v.final_digest) row("final digest", el("code", null, v.final_digest));
    row("policy digest", el("code", null, h.policy_digest || "—"), "", "h-policy");
    row("backends", (h.backends || []).join(", ") || "—", "", "h-backends");
    row("host / kernel", (h.host || "?") + " / " + (h.kernel || "?"));
    if (h.workspace) row("workspace", el("code", null, h.workspace));
    row("started", h.start_time || "—");
    row("ended", t.end_time || "not sealed");
    if (t.exit_code !== null && t.exit_code !== undefined) row("exit code", String(t.exit_code));
    var lost = sum(t.losses);
    row("losses", lost ? fmtN(lost) + " event(s) lost: " + kv(t.losses) : "none: every event the kernel submitted is recorded",
      lost ? "status bad" : "", "h-losses");
    if (h.extra && Object.keys(h.extra).length) row("details", el("code", null, JSON.stringify(h.extra)));
    return dl;
  }

  function counts(t) {
    var dc = t.decision_counts || {};
    var box = el("div", { cls: "counts", id: "counts" });
    function c(key, label, n) {
      box.appendChild(el("div", { cls: "count " + key, "data-count": key }, el("b", null, fmtN(n)), el("span", null, label)));
    }
    c("events", "events", t.events);
    c("actions", t.action_ids ? "logical actions" : "program runs", t.actions_total);
    c("deleted", "paths deleted", t.touched[0]);
    c("rewritten", "rewritten", t.touched[1]);
    c("chmod", "chmod'ed", t.touched[2]);
    if (t.touched[3]) c("chown", "chown'ed", t.touched[3]);
    c("renamed", "renamed", t.touched[4]);
    c("blocked", "blocked calls", t.touched[5]);
    c("decisions", "confirm/deny/preserve", t.decisions_total);
    if (dc.approved) c("approved", "approved", dc.approved);
    c("lost", "events lost", sum(t.losses));
    return box;
  }

  // ---- timeline ----------------------------------------------------------
  function timeline(t, host) {
    var state = { group: "action", v0: 0, v1: BINS };
    var controls = el("div", { cls: "tl-controls" });
    var sel = el("select", { id: "tl-group" },
      el("option", { value: "action" }, t.action_ids ? "one lane per logical action" : "one lane per program run"),
      el("option", { value: "process" }, "one lane per process"));
    var from = el("input", { type: "range", min: 0, max: BINS - 1, value: 0, id: "tl-from", "aria-label": "from" });
    var to = el("input", { type: "range", min: 1, max: BINS, value: BINS, id: "tl-to", "aria-label": "to" });
    var reset = el("button", { type: "button" }, "reset zoom");
    controls.appendChild(el("label", null, "group ", sel));
    controls.appendChild(el("label", null, "from ", from));
    controls.appendChild(el("label", null, "to ", to));
    controls.appendChild(reset);
    controls.appendChild(el("span", { cls: "muted" }, "wheel to zoom, drag to pan, double-click to reset"));
    var legend = el("div", { cls: "legend" });
    TREAT.forEach(function (n, i) { legend.appendChild(el("span", null, el("i", { cls: "sw t" + i }), n)); });
    [1, 2, 3].forEach(function (i) {
      legend.appendChild(el("span", null, el("i", { cls: "sw", style: "background:" + MCOLOR[i] + ";border-radius:50%" }), MNAME[i]));
    });
    var wrap = el("div", { cls: "tl-wrap" });
    var canvas = el("canvas", { id: "timeline" });
    var tip = el("div", { cls: "tl-tip" });
    wrap.appendChild(canvas);
    wrap.appendChild(tip);
    host.appendChild(controls);
    host.appendChild(legend);
    host.appendChild(wrap);

    var LABEL = 300, LANE = 16, AXIS = 22;
    function lanes() { return state.group === "action" ? t.lanes_action : t.lanes_process; }
    function draw() {
      var L = lanes();
      var width = Math.max(600, wrap.clientWidth || 1000);
      var height = AXIS + L.length * LANE + 4;
      var dpr = window.devicePixelRatio || 1;
      canvas.width = width * dpr; canvas.height = height * dpr;
      canvas.style.width = width + "px"; canvas.style.height = height + "px";
      var g = canvas.getContext("2d");
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, width, height);
      g.font = "12px system-ui, sans-serif";
      var W = width - LABEL - 8, span = state.v1 - state.v0;
      var bw = Math.max(3, W / span);
      // axis
      g.fillStyle = "#5f6b76"; g.strokeStyle = "#d8dee4";
      for (var k = 0; k <= 8; k++) {
        var b = state.v0 + span * k / 8, x = LABEL + W * k / 8;
        g.beginPath(); g.moveTo(x, AXIS - 4); g.lineTo(x, height); g.stroke();
        g.fillText(fmtMs(b / (BINS - 1) * t.span_ms), Math.min(x + 2, width - 60), 13);
      }
      var maxc = 1;
      L.forEach(function (l) { for (var i = 1; i < l.bins.length; i += 3) if (l.bins[i] > maxc) maxc = l.bins[i]; });
      var lmax = Math.log(1 + maxc);
      L.forEach(function (l, row) {
        var y = AXIS + row * LANE;
        if (row % 2) { g.fillStyle = "#f6f8fa"; g.fillRect(0, y, width, LANE); }
        g.fillStyle = "#1d2329";
        var label = l.label.length > 44 ? l.label.slice(0, 43) + "…" : l.label;
        g.fillText(label, 4, y + 12);
        var bins = l.bins;
        for (var i = 0; i < bins.length; i += 3) {
          var bin = bins[i];
          if (bin < state.v0 - 1 || bin > state.v1) continue;
          var x = LABEL + (bin - state.v0) / span * W;
          g.globalAlpha = 0.35 + 0.65 * Math.log(1 + bins[i + 1]) / lmax;
          g.fillStyle = TCOLOR[bins[i + 2]];
          g.fillRect(x, y + 3, bw, LANE - 6);
        }
        g.globalAlpha = 1;
      });
      var laneIdx = state.group === "action" ? 1 : 2;
      t.marks.forEach(function (m) {
        var bin = m[0] / Math.max(t.span_ms, 1e-9) * (BINS - 1);
        if (bin < state.v0 || bin > state.v1) return;
        var x = LABEL + (bin - state.v0) / span * W, y = AXIS + m[laneIdx] * LANE + LANE / 2;
        g.fillStyle = MCOLOR[m[3]]; g.strokeStyle = "#fff";
        g.beginPath(); g.arc(x + bw / 2, y, 4.5, 0, 6.3); g.fill(); g.stroke();
      });
      from.value = Math.round(state.v0); to.value = Math.round(state.v1);
    }
    function clamp() {
      var span = Math.max(2, Math.min(BINS, state.v1 - state.v0));
      state.v0 = Math.max(0, Math.min(BINS - span, state.v0));
      state.v1 = state.v0 + span;
    }
    function binAt(px) {
      var W = canvas.clientWidth - LABEL - 8;
      return state.v0 + (px - LABEL) / W * (state.v1 - state.v0);
    }
    canvas.addEventListener("wheel", function (e) {
      if (e.offsetX < LABEL) return;
      e.preventDefault();
      var at = binAt(e.offsetX), f = e.deltaY > 0 ? 1.25 : 0.8;
      state.v0 = at - (at - state.v0) * f; state.v1 = at + (state.v1 - at) * f;
      clamp(); draw();
    }, { passive: false });
    var drag = null;
    canvas.addEventListener("mousedown", function (e) { drag = { x: e.clientX, v0: state.v0, v1: state.v1 }; canvas.style.cursor = "grabbing"; });
    window.addEventListener("mouseup", function () { drag = null; canvas.style.cursor = "grab"; });
    window.addEventListener("mousemove", function (e) {
      if (!drag) return;
      var W = canvas.clientWidth - LABEL - 8, d = (e.clientX - drag.x) / W * (drag.v1 - drag.v0);
      state.v0 = drag.v0 - d; state.v1 = drag.v1 - d; clamp(); draw();
    });
    canvas.addEventListener("dblclick", function () { state.v0 = 0; state.v1 = BINS; draw(); });
    canvas.addEventListener("mousemove", function (e) {
      var L = lanes(), row = Math.floor((e.offsetY - AXIS) / LANE);
      if (row < 0 || row >= L.length || drag) { tip.style.display = "none"; return; }
      var l = L[row], text = l.label + "\n" + fmtN(l.events) + " event(s)";
      if (e.offsetX >= LABEL) {
        var bin = Math.floor(binAt(e.offsetX));
        for (var i = 0; i < l.bins.length; i += 3) {
          if (l.bins[i] === bin) { text += "\nat " + fmtMs(bin / (BINS - 1) * t.span_ms) + ": " + l.bins[i + 1] + " event(s), " + TREAT[l.bins[i + 2]]; break; }
        }
      }
      tip.textContent = text; tip.style.display = "block";
      tip.style.left = Math.min(e.offsetX + 12, wrap.clientWidth - 320) + "px";
      tip.style.top = (e.offsetY + 14) + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    from.addEventListener("input", function () { state.v0 = Math.min(+from.value, state.v1 - 2); clamp(); draw(); });
    to.addEventListener("input", function () { state.v1 = Math.max(+to.value, state.v0 + 2); clamp(); draw(); });
    reset.addEventListener("click", function () { state.v0 = 0; state.v1 = BINS; draw(); });
    sel.addEventListener("change", function () { state.group = sel.value; draw(); });
    window.addEventListener("resize", draw);
    draw();
  }

  // ---- tables ----------------------------------------------------------
  function pagedTable(id, cols, rows, rowFn, total, what) {
    var wrapper = el("div");
    var tbody = el("tbody");
    var head = el("tr");
    cols.forEach(function (c) { head.appendChild(el("th", { cls: c.num ? "num" : "" }, c.name)); });
    var tbl = el("table", { id: id }, el("thead", null, head), tbody);
    var shown = 0;
    var more = el("p", { cls: "more" });
    function page() {
      var end = Math.min(rows.length, shown + PAGE_ROWS);
      for (; shown < end; shown++) tbody.appendChild(rowFn(rows[shown]));
      more.textContent = "";
      if (shown < rows.length) {
        var b = el("button", { type: "button", cls: "linkish" }, "show " + Math.min(PAGE_ROWS, rows.length - shown) + " more");
        b.addEventListener("click", page);
        more.appendChild(el("span", null, "Showing " + shown + " of " + rows.length + ". "));
        more.appendChild(b);
      }
      if (total > rows.length) more.appendChild(el("span", { cls: "muted" }, " The trace has " + fmtN(total) + " " + what + "; the report keeps " + fmtN(rows.length) + "."));
    }
    page();
    wrapper.appendChild(el("div", { cls: "scroll" }, tbl));
    wrapper.appendChild(more);
    return wrapper;
  }

  function decisionsTable(t) {
    if (!t.decisions_total) return el("p", { id: "decisions", cls: "muted" }, "No call was confirmed, denied or preserved, and no verdict asked for it.");
    return pagedTable("decisions", [
      { name: "seq", num: 1 }, { name: "time" }, { name: "decision" }, { name: "decided by" }, { name: "op" },
      { name: "path" }, { name: "process" }, { name: "action", num: 1 }, { name: "treatment" }, { name: "rule" },
      { name: "reason" }, { name: "result" }],
      t.decisions, function (d) {
        var cls = /^(denied|deny|timeout)$/.test(d.decision) ? d.decision : (d.decision === "approved" || d.decision === "preserved" || d.decision === "abandoned" ? d.decision : "other");
        return el("tr", { "data-decision": d.decision },
          el("td", { cls: "num" }, String(d.seq)), el("td", { cls: "mono" }, d.time.replace("T", " ").slice(0, 23)),
          el("td", null, el("span", { cls: "tag " + cls }, d.decision)), el("td", null, d.decided_by),
          el("td", null, d.op), el("td", { cls: "mono" }, d.path), el("td", null, d.comm + " (" + d.pid + ")"),
          el("td", { cls: "num" }, d.action ? "#" + d.action : ""), el("td", null, d.treatment), el("td", { cls: "mono" }, d.rule),
          el("td", null, d.reason), el("td", { cls: "mono" }, d.result));
      }, t.decisions_total, "decisions");
  }

  function actionsTable(t) {
    return pagedTable("actions", [{ name: "action", num: 1 }, { name: "command" }, { name: "pid", num: 1 },
      { name: "start" }, { name: "duration" }, { name: "events", num: 1 }, { name: "operations" },
      { name: "strongest treatment" }, { name: "decisions" }],
      t.actions, function (a) {
        var tr = el("tr", { "data-action": a.id },
          el("td", { cls: "num" }, "#" + a.id), el("td", { cls: "mono" }, a.label), el("td", { cls: "num" }, String(a.pid)),
          el("td", null, fmtMs(a.start)), el("td", null, fmtMs(a.end - a.start)), el("td", { cls: "num" }, fmtN(a.events)),
          el("td", null, kv(a.ops)), el("td", null, el("i", { cls: "sw t" + a.treatment }), TREAT[a.treatment] + (a.rule ? " (" + a.rule + ")" : "")),
          el("td", null, kv(a.decisions)));
        return tr;
      }, t.actions_total, t.action_ids ? "logical actions" : "program runs");
  }

  // ---- trees -----------------------------------------------------------
  var budget = 0;
  function countBadges(c) {
    var f = document.createDocumentFragment();
    D.categories.forEach(function (name, i) {
      if (c[i]) f.appendChild(el("span", { cls: "c " + name, title: name }, name + " " + fmtN(c[i])));
    });
    return f;
  }
  function pathNode(node, prefix) {
    var full = prefix === "" ? node.n : (prefix.endsWith("/") ? prefix + node.n : prefix + "/" + node.n);
    if (!node.k || !node.k.length) {
      var leaf = el("div", { cls: "leaf", "data-path": node.more ? "" : full },
        el("span", { cls: "name" }, node.n), countBadges(node.c));
      return leaf;
    }
    var d = el("details", { "data-path": full });
    d.appendChild(el("summary", null, el("span", { cls: "name" }, node.n + "/"), countBadges(node.c),
      el("span", { cls: "muted" }, " " + node.k.length + " entr" + (node.k.length === 1 ? "y" : "ies"))));
    var filled = false;
    function fill() {
      if (filled) return; filled = true;
      node.k.forEach(function (k) { d.appendChild(pathNode(k, full)); });
    }
    d.addEventListener("toggle", function () { if (d.open) fill(); });
    // Open the first levels while the page stays small.
    if (budget > 0) {
      budget -= node.k.length;
      d.open = true;
      fill();
    }
    return d;
  }
  function pathTree(t) {
    var box = el("div", { cls: "tree", id: "paths" });
    if (!t.tree.k || !t.tree.k.length) {
      box.appendChild(el("p", { cls: "muted" }, "No path was deleted, rewritten, chmod'ed, chown'ed, renamed or blocked."));
      return box;
    }
    budget = 400;
    box.appendChild(pathNode(t.tree, ""));
    return box;
  }

  function processTree(t) {
    var box = el("div", { cls: "tree", id: "processes" });
    var byPid = {}, kids = {}, roots = [];
    t.processes.forEach(function (p) { byPid[p.pid] = p; });
    t.processes.forEach(function (p) {
      if (byPid[p.ppid] && p.ppid !== p.pid) (kids[p.ppid] = kids[p.ppid] || []).push(p);
      else roots.push(p);
    });
    var left = 300;
    function node(p) {
      var label = [el("span", { cls: "name" }, "pid " + p.pid + " "), el("code", null, p.argv.length ? p.argv.join(" ") : p.comm),
        el("span", { cls: "muted" }, " " + fmtN(p.events) + " event(s)" + (p.execs > 1 ? ", " + p.execs + " execs" : ""))];
      var ks = kids[p.pid];
      if (!ks) {
        var leaf = el("div", { cls: "leaf", "data-pid": p.pid });
        label.forEach(function (x) { leaf.appendChild(x); });
        return leaf;
      }
      var d = el("details", { "data-pid": p.pid });
      var s = el("summary");
      label.forEach(function (x) { s.appendChild(x); });
      d.appendChild(s);
      var filled = false;
      function fill() { if (filled) return; filled = true; ks.forEach(function (k) { d.appendChild(node(k)); }); }
      d.addEventListener("toggle", function () { if (d.open) fill(); });
      if (left > 0) { left -= ks.length; d.open = true; fill(); }
      return d;
    }
    roots.forEach(function (p) { box.appendChild(node(p)); });
    if (t.processes_total > t.processes.length) {
      box.appendChild(el("p", { cls: "muted" }, "The trace has " + fmtN(t.processes_total) + " processes; the report keeps the " + fmtN(t.processes.length) + " with the most events."));
    }
    return box;
  }

  function lossTable(t) {
    if (!t.loss_rows.length) return el("p", { id: "losses", cls: "muted" }, "No loss records: the trace holds every event the kernel side submitted.");
    return pagedTable("losses", [{ name: "cause" }, { name: "count", num: 1 }, { name: "cpu", num: 1 }, { name: "at" }],
      t.loss_rows, function (l) {
        return el("tr", null, el("td", null, l.cause), el("td", { cls: "num" }, fmtN(l.count)),
          el("td", { cls: "num" }, l.cpu === null ? "?" : String(l.cpu)), el("td", null, fmtMs(l.at)));
      }, t.loss_rows.length, "loss records");
  }

  function renderRun(i) {
    var t = D.traces[i];
    var main = document.getElementById("run");
    main.textContent = "";
    main.setAttribute("data-run", i);
    main.appendChild(el("h2", null, "Run: " + t.name));
    main.appendChild(headerCard(t));
    main.appendChild(counts(t));
    if (t.verdict) {
      var v = t.verdict;
      main.appendChild(el("p", { id: "verdict" }, "Oracle verdict for task ", el("code", null, v.task), ": safe success " + v.safe_success +
        ", wrong target " + v.wrong_target + ", over-scope " + v.over_scope + ", overstep " + v.overstep +
        ", under-completion " + v.under_completion + (v.route ? ", route " + v.route : "") + "."));
    }
    main.appendChild(el("h2", null, "Timeline"));
    var tl = el("div");
    main.appendChild(tl);
    timeline(t, tl);
    main.appendChild(el("h2", null, "Confirm, deny and preserve decisions"));
    main.appendChild(decisionsTable(t));
    main.appendChild(el("h2", null, t.action_ids ? "Logical actions" : "Program runs (the trace has no logical action ids: each exec starts one)"));
    main.appendChild(actionsTable(t));
    main.appendChild(el("h2", null, "Touched paths by verdict"));
    main.appendChild(pathTree(t));
    main.appendChild(el("h2", null, "Process tree"));
    main.appendChild(processTree(t));
    main.appendChild(el("h2", null, "Losses"));
    main.appendChild(lossTable(t));
    var tabs = document.querySelectorAll("#tabs button");
    for (var k = 0; k < tabs.length; k++) tabs[k].className = k === i ? "on" : "";
  }

  comparison();
  if (D.traces.length > 1) {
    var nav = document.getElementById("tabs");
    D.traces.forEach(function (t, i) {
      var b = el("button", { type: "button" }, t.name);
      b.addEventListener("click", function () { renderRun(i); });
      nav.appendChild(b);
    });
  }
  if (D.traces.length) renderRun(0);
  document.body.setAttribute("data-render-ms", performance.now().toFixed(1));
  document.body.setAttribute("data-rendered", "1");
})();
