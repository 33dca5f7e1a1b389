// hallumeasure run viewer. Plain JavaScript, no dependency. Every piece of run data reaches the page
// through textContent or a property that takes text (never an HTML-parsing sink), so hostile text stays text.
(function () {
  "use strict";

  var DATA = JSON.parse(document.getElementById("viewer-data").textContent);
  var PAGE = 200;  // list items rendered at once; "show more" adds another page
  var LONG_CONTEXT = 1500;  // characters; longer contexts are folded, with an excerpt around the evidence
  // Worst first: a stretch of response covered by several claims takes the colour of the worst.
  var SEVERITY = ["contradicted", "absent", "partially_supported", "error", "unevaluatable", "supported"];
  var UNSUPPORTED = { contradicted: 1, absent: 1, partially_supported: 1 };

  var state = {
    run: "", model: "", label: "", subtype: "", search: "", errors: false, changed: false, sort: "input",
    shown: PAGE, items: [], selected: null, claim: null
  };

  // --- small DOM helpers -------------------------------------------------------------------------

  function $(id) { return document.getElementById(id); }

  function el(tag, props) {
    var node = document.createElement(tag);
    if (props) {
      for (var key in props) {
        if (!Object.prototype.hasOwnProperty.call(props, key)) continue;
        var value = props[key];
        if (value === null || value === undefined) continue;
        if (key === "class") node.className = value;
        else if (key === "text") node.textContent = value;
        else if (key.indexOf("data-") === 0) node.setAttribute(key, String(value));
        else node[key] = value;
      }
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  // add(node, child, ...): appends children; strings and numbers become text nodes, arrays are flattened.
  function add(node) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) { add.apply(null, [node].concat(child)); continue; }
      node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }

  function num(value, digits) { return value === null || value === undefined ? "-" : Number(value).toFixed(digits === undefined ? 3 : digits); }

  function labelOf(claim) { return claim.label || "error"; }
  // The colour a claim is shown in: neutral when a keyless judge could not tell (its label is a guess).
  function colourOf(claim) { return claim.label && claim.confident === false ? "unsure" : labelOf(claim); }
  var UNSURE = "needs an LLM check (unsure)";  // the concepts page's word, core/certainty.py
  function pretty(label) { return String(label).replace(/_/g, " "); }

  // --- data indexes ------------------------------------------------------------------------------

  var byKey = {};
  DATA.responses.forEach(function (r) {
    byKey[r.key] = r;
    var parts = [r.sample_id, r.model, r.question || "", r.response, r.error || ""];
    r.claims.forEach(function (c) { parts.push(c.text, c.reason || "", c.subtype_reason || "", c.error || ""); });
    r._haystack = parts.join("\n").toLowerCase();
    r._hasError = !!r.error || r.claims.some(function (c) { return !c.label; });
    r._changed = !!r.diff || r.claims.some(function (c) { return !!c.change; });
  });
  var paired = !!DATA.pairing;
  var started = false;
  var anyUnsure = DATA.responses.some(function (r) { return r.claims.some(function (c) { return colourOf(c) === "unsure"; }); });

  function runName(r) { return DATA.runs[r.run].name; }
  function fragmentOf(r) { return encodeURIComponent(runName(r)) + "/" + encodeURIComponent(r.sample_id); }

  // --- header ------------------------------------------------------------------------------------

  var KEYLESS_TEXT = {
    offline: "the offline judge, a trained lexical/numeric model",
    nli: "the NLI judge, a local entailment model",
    "offline+nli": "the offline judge with an NLI check, two local models"
  };

  function renderHeader() {
    $("title").textContent = DATA.title;
    document.title = DATA.title;
    var notes = clear($("notes"));
    // One banner per kind of judge that is not an LLM, naming its runs.
    var groups = [];
    DATA.runs.forEach(function (run) {
      if (!run.banner) return;
      var kind = run.banner === "fake" ? "fake" : run.judge;
      var group = groups.filter(function (g) { return g.kind === kind; })[0];
      if (!group) groups.push(group = { kind: kind, banner: run.banner, names: [] });
      group.names.push(run.name);
    });
    groups.forEach(function (g) {
      var who = (g.names.length > 1 ? "Runs " : "Run ") + g.names.join(", ") + (g.names.length > 1 ? " were" : " was");
      if (g.banner === "fake") {
        add(notes, el("p", { "class": "banner fake", "data-judge": g.kind, text: who +
          " judged by the scripted fake model: the labels demonstrate the viewer, they are not a measurement." }));
        return;
      }
      // its measured quality: a link to the docs page
      var page = "'" + DATA.quality_page + "' in the hallumeasure docs";
      add(notes, el("p", { "class": "banner " + g.banner, "data-judge": g.kind },
        who + " judged by " + (KEYLESS_TEXT[g.kind] || "a keyless judge (" + g.kind + ")") +
        ", not an LLM: read the labels as a cheap first pass (its measured quality: ",
        el("a", { href: DATA.quality_url, text: page }), ")."));
    });
    // A judge that failed its own sanity checks: one red banner per check, before anything else is read.
    DATA.runs.forEach(function (run) {
      (run.judge_checks || []).forEach(function (c) {
        add(notes, el("p", { "class": "banner broken", "data-check": c.name, text: "Run " + run.name +
          ": the judge failed a sanity check (" + c.name + "): " + c.seen + ". It means " + c.means + " " + c.todo }));
      });
    });
    DATA.notes.forEach(function (n) { add(notes, el("p", { "class": "note", text: n })); });
    if (paired) {
      var p = DATA.pairing;
      add(notes, el("p", { "class": "note", text: "Side by side: " + DATA.runs[p.a].name + " and " + DATA.runs[p.b].name + ", " +
        p.n_shared + " shared samples (" + p.how + "); " + p.n_changed_claims + " claim(s) changed verdict or have no match in the other run, " +
        p.n_rewritten + " response(s) differ (shown as a word diff)." }));
    }
    // One compact table: a row per run and model, so that the context stays above the fold with several runs.
    var runs = clear($("runs"));
    var several = DATA.runs.length > 1;
    // A keyless judge's unsure claims: their bounds and the interval covering them, beside the rate, never in its place.
    var unsure = DATA.runs.some(function (run) { return run.models.some(function (m) { return m.unsure; }); });
    var table = el("table", { "class": "summary" }, el("thead", null, el("tr", null,
      (several ? ["run"] : []).concat(["model", "label mix", "responses", "claims", "mean unsupported rate [95% CI]",
        "hallucinated share [95% CI]"], unsure ? ["unsure-claim bounds [95% CI covering them]", "decided"] : [],
        ["error rows"]).map(function (h) { return el("th", { text: h }); }))));
    var body = el("tbody");
    DATA.runs.forEach(function (run) {
      run.models.forEach(function (m, i) {
        var subtypes = Object.keys(m.subtypes).filter(function (k) { return m.subtypes[k] > 0; })
          .sort(function (a, b) { return m.subtypes[b] - m.subtypes[a]; })
          .map(function (k) { return pretty(k) + " " + m.subtypes[k]; }).join(", ");
        var mix = labelMix(m);
        add(body, el("tr", { "data-run": run.name },
          several ? el("td", { "class": "run-name", text: i === 0 ? run.name : "" }) : null,
          el("td", { "class": "model", text: m.name }),
          el("td", { "class": "mix-cell", title: mix.words + (subtypes ? "\nsubtypes: " + subtypes : "") },
            el("div", { "class": "mix-line" }, mix.bar, el("span", { "class": "subtypes", text: mix.words }))),
          // data-label: a phone shows each number with its name instead of the header row (viewer.css).
          el("td", { "class": "num", "data-label": "responses", text: String(m.n_responses) }),
          el("td", { "class": "num", "data-label": "claims", text: String(m.n_claims) }),
          // Python writes the numbers (report/rates.py), so every view rounds them alike.
          el("td", { "class": "num rate", "data-label": "mean unsupported rate", text: m.rate_text }),
          el("td", { "class": "num rate", "data-label": "hallucinated share", text: m.share_text }),
          unsure ? el("td", { "class": "num rate unsure-bounds", "data-label": "unsure-claim bounds",
            text: m.unsure ? m.unsure["unsure-claim bounds"] + " " + m.unsure["95% CI covering the bounds"] : "-" }) : null,
          unsure ? el("td", { "class": "num", "data-label": "decided", text: m.unsure ? m.unsure["decided"] : "-" }) : null,
          el("td", { "class": "num", "data-label": "error rows", text: String(m.n_error_rows) })));
      });
    });
    add(table, body);
    add(runs, el("div", { "class": "summary-wrap" }, table));
    var settings = el("ul", { "class": "meta" });
    DATA.runs.forEach(function (run) {
      var meta = (several ? run.name + ": " : "") + "judge " + (run.judge || "?") + " (" + (run.mode || "?") + "), extractor " +
        (run.extractor || "?") + (run.detector && run.detector !== "claims" ? ", detector " + run.detector : "") +
        "; status " + (run.status || "?") + "; policy: " + run.policy +
        (run.n_shown < run.n_total ? "; showing " + run.n_shown + " of " + run.n_total + " responses" : "");
      add(settings, el("li", { text: meta }));
      run.notes.forEach(function (n) { add(settings, el("li", { text: n })); });
    });
    add(runs, el("details", { "class": "settings" }, el("summary", { text: "how " + (several ? "these runs were" : "this run was") + " measured" }), settings));
  }

  // The bar and words of a label mix; claims without a label (error rows) are counted too.
  function labelMix(m) {
    var counts = m.labels, labelled = 0;
    DATA.labels.forEach(function (l) { labelled += counts[l] || 0; });
    var errors = Math.max(0, m.n_claims - labelled);
    var total = labelled + errors;
    var bar = el("div", { "class": "mix" });
    var words = [];
    DATA.labels.concat(["error"]).forEach(function (l) {
      var n = l === "error" ? errors : counts[l] || 0;
      if (!n) return;
      var part = el("span", { "class": "lab-" + l, title: pretty(l) + ": " + n });
      part.style.width = (100 * n / total).toFixed(2) + "%";
      add(bar, part);
      words.push(pretty(l) + " " + n);
    });
    return { bar: bar, words: words.join(", ") || "no claims" };
  }

  // --- filters and the list ----------------------------------------------------------------------

  function option(value, text) { return el("option", { value: value, text: text }); }

  function fillFilters() {
    var runSel = $("f-run");
    add(runSel, option("", paired ? "both runs" : "all runs"));
    DATA.runs.forEach(function (run, i) { add(runSel, option(String(i), "run: " + run.name)); });
    if (DATA.runs.length < 2) runSel.hidden = true;
    var models = {};
    DATA.responses.forEach(function (r) { models[r.model] = 1; });
    add($("f-model"), option("", "all models"));
    Object.keys(models).sort().forEach(function (m) { add($("f-model"), option(m, "model: " + m)); });
    add($("f-label"), option("", "all labels"));
    DATA.labels.concat(["error"]).forEach(function (l) { add($("f-label"), option(l, "label: " + pretty(l))); });
    add($("f-subtype"), option("", "all subtypes"));
    DATA.subtypes.forEach(function (s) { add($("f-subtype"), option(s, "subtype: " + pretty(s))); });
    if (!paired) $("f-changed").parentNode.hidden = true;
    [["f-run", "run"], ["f-model", "model"], ["f-label", "label"], ["f-subtype", "subtype"], ["f-sort", "sort"]].forEach(function (pair) {
      $(pair[0]).addEventListener("change", function (event) { state[pair[1]] = event.target.value; refresh(); });
    });
    $("f-search").addEventListener("input", function (event) { state.search = event.target.value.trim().toLowerCase(); refresh(); });
    $("f-errors").addEventListener("change", function (event) { state.errors = event.target.checked; refresh(); });
    $("f-changed").addEventListener("change", function (event) { state.changed = event.target.checked; refresh(); });
    $("filters").addEventListener("submit", function (event) { event.preventDefault(); });
    $("more").addEventListener("click", function () { state.shown += PAGE; renderList(); });
  }

  function claimKindMatches(c) {
    return (!state.label || labelOf(c) === state.label) && (!state.subtype || c.subtype === state.subtype);
  }

  // A claim shown under its response in the list: of the chosen label and subtype, and holding the searched text.
  function claimMatches(c) {
    if (!claimKindMatches(c)) return false;
    if (state.search && (c.text + "\n" + (c.reason || "") + "\n" + (c.subtype_reason || "") + "\n" + (c.error || "")).toLowerCase().indexOf(state.search) < 0) return false;
    return true;
  }

  function responseMatches(r) {
    if (state.model && r.model !== state.model) return false;
    if (state.errors && !r._hasError) return false;
    if (state.label || state.subtype) {
      var wholeErrorRow = state.label === "error" && !state.subtype && !!r.error;
      if (!wholeErrorRow && !r.claims.some(claimKindMatches)) return false;
    }
    if (state.search && r._haystack.indexOf(state.search) < 0) return false;
    return true;
  }

  function visibleResponses() {
    var out = [];
    DATA.responses.forEach(function (r) {
      if (state.run !== "" && String(r.run) !== state.run) return;
      // Side by side, the second run's paired responses are shown through the first run's.
      if (paired && state.run === "" && r.run === DATA.pairing.b && r.pair) return;
      var other = paired && r.pair ? byKey[r.pair] : null;
      if (state.changed && !(r._changed || (other && other._changed))) return;
      if (!(responseMatches(r) || (other && state.run === "" && responseMatches(other)))) return;
      out.push(r);
    });
    if (state.sort !== "input") {
      var sign = state.sort === "rate-desc" ? -1 : 1;
      out = out.map(function (r, i) { return [r, i]; }).sort(function (x, y) {
        var a = x[0].rate, b = y[0].rate;
        if (a === null && b === null) return x[1] - y[1];
        if (a === null) return 1;  // unrated responses (error rows) last either way
        if (b === null) return -1;
        return sign * (a - b) || x[1] - y[1];
      }).map(function (pair) { return pair[0]; });
    }
    return out;
  }

  function refresh() {
    state.items = visibleResponses();
    state.shown = PAGE;
    renderList();
    // The detail pane never shows a response the filters removed: the first one listed takes its place.
    // (While the page starts, the link's fragment picks the response instead.)
    var listed = !started || state.items.some(function (r) { return r.key === state.selected; });
    if (!listed) {
      if (state.items.length) select(state.items[0].key);
      else { state.selected = null; state.claim = null; renderDetail(); }
    }
  }

  function filtering() { return !!(state.label || state.subtype || state.search); }

  function renderList() {
    var list = clear($("list"));
    var total = DATA.responses.length;
    $("count").textContent = state.items.length + " of " + total + " responses shown" + (paired ? " (pairs count once)" : "");
    state.items.slice(0, state.shown).forEach(function (r) {
      var rate = r.rate === null ? (r.error ? "error" : "-") : "rate " + num(r.rate, 2);
      var head = el("div", { "class": "head" },
        el("span", { "class": "id", text: r.sample_id }),
        el("span", { text: r.model + (DATA.runs.length > 1 && !paired ? " · " + runName(r) : "") }),
        el("span", { "class": "rate", text: rate + " · " + r.n_unsupported + "/" + r.n_evaluated }));
      var item = el("li", { "data-key": r.key, "class": state.selected === r.key ? "selected" : "" }, head,
        el("div", { "class": "snippet", text: r.response }));
      if (r._changed || (r.pair && byKey[r.pair]._changed)) add(head, el("span", { "class": "pill changed-pill", text: "changed" }));
      if (filtering()) {
        var sides = [r].concat(paired && r.pair && state.run === "" ? [byKey[r.pair]] : []);
        var hits = [];
        sides.forEach(function (side) {
          side.claims.forEach(function (c) { if (claimMatches(c)) hits.push([side, c]); });
        });
        if (hits.length) {
          var ul = el("ul", { "class": "hits" });
          hits.slice(0, 3).forEach(function (hit) {
            var li = el("li", { "class": "hit", "data-claim": hit[1].index, "data-side": hit[0].key },
              el("span", { "class": "pill lab-" + colourOf(hit[1]), text: pretty(labelOf(hit[1])) + (colourOf(hit[1]) === "unsure" ? "?" : "") }), " ", hit[1].text);
            li.addEventListener("click", function (event) { event.stopPropagation(); select(r.key, hit[0].key, hit[1].index); });
            add(ul, li);
          });
          if (hits.length > 3) add(ul, el("li", { text: "… and " + (hits.length - 3) + " more claim(s)" }));
          add(item, ul);
        }
      }
      item.addEventListener("click", function () { select(r.key); revealDetail(); });
      add(list, item);
    });
    $("more").hidden = state.items.length <= state.shown;
    if (state.items.length === 0) add(list, el("li", { "class": "empty", text: "No response matches these filters." }));
  }

  // --- the selected response ---------------------------------------------------------------------

  function select(key, sideKey, claimIndex, keepHash) {
    var r = byKey[key];
    if (!r) return;
    state.selected = key;
    var side = sideKey ? byKey[sideKey] : r;
    state.claim = claimIndex === undefined || claimIndex === null ? null : { side: side.key, index: claimIndex };
    if (state.claim === null) {
      // Select the first unsupported claim (else the first claim) so its evidence shows at once.
      var first = side.claims.filter(function (c) { return UNSUPPORTED[c.label] || !c.label; })[0] || side.claims[0];
      if (first) state.claim = { side: side.key, index: first.index };
    }
    var items = $("list").querySelectorAll("li[data-key]");
    for (var i = 0; i < items.length; i++) {
      var on = items[i].getAttribute("data-key") === key;
      items[i].className = on ? "selected" : "";
      if (on && items[i].scrollIntoView) items[i].scrollIntoView({ block: "nearest" });
    }
    renderDetail();
    if (!keepHash) writeHash();
  }

  // One column (a phone, a narrow window): the detail sits below the list, so a tap brings it into view.
  function revealDetail() {
    var single = window.matchMedia && window.matchMedia("(max-width: 900px)").matches;
    var detail = $("detail");
    if (single && detail.scrollIntoView) detail.scrollIntoView({ block: "start" });
  }

  function writeHash() {
    var r = byKey[state.selected];
    if (!r) return;
    var fragment = "#" + fragmentOf(r);
    if (state.claim) {
      var side = byKey[state.claim.side];
      fragment += "/c" + state.claim.index + (side !== r ? "@" + encodeURIComponent(runName(side)) : "");
    }
    try { history.replaceState(null, "", fragment); } catch (e) { location.hash = fragment; }
  }

  function readHash() {
    var text = location.hash.replace(/^#/, "");
    if (!text) return false;
    var parts = text.split("/");
    var run = decodeURIComponent(parts[0] || ""), sid = decodeURIComponent(parts[1] || "");
    var target = null;
    DATA.responses.forEach(function (r) { if (!target && runName(r) === run && r.sample_id === sid) target = r; });
    if (!target) return false;
    var claim, sideKey;
    var m = /^c(\d+)(?:@(.*))?$/.exec(parts[2] || "");
    if (m) {
      claim = Number(m[1]);
      sideKey = target.key;
      if (m[2] && target.pair && runName(byKey[target.pair]) === decodeURIComponent(m[2])) sideKey = target.pair;
    }
    // Side by side, the list holds the first run's response; open that one with the right side selected.
    var listed = paired && target.run === DATA.pairing.b && target.pair ? byKey[target.pair] : target;
    if (!sideKey && listed !== target) sideKey = target.key;
    select(listed.key, sideKey, claim, true);
    return true;
  }

  function activeClaim() {
    if (!state.claim) return null;
    var side = byKey[state.claim.side];
    var found = null;
    side.claims.forEach(function (c) { if (c.index === state.claim.index) found = c; });
    return found ? { side: side, claim: found } : null;
  }

  function renderDetail() {
    var detail = clear($("detail"));
    var r = byKey[state.selected];
    if (!r) { add(detail, el("p", { "class": "empty", text: "Select a response." })); return; }
    var sides = [r];
    if (r.pair) sides = r.run === DATA.pairing.a ? [r, byKey[r.pair]] : [byKey[r.pair], r];
    var title = el("h2", null, el("span", { text: r.sample_id }), " · ", el("span", { text: r.model }));
    add(detail, title);
    if (r.question) add(detail, el("p", null, el("strong", { text: "Question: " }), r.question));
    add(detail, legend());
    var grid = el("div", { "class": "sides" + (sides.length > 1 ? " two" : "") });
    sides.forEach(function (side) { add(grid, renderSide(side, sides.length > 1)); });
    add(detail, grid);
    var active = activeClaim();
    if (active) add(detail, renderClaimDetail(active.side, active.claim));
    add(detail, renderContext(r, active));
  }

  function legend() {
    var box = el("div", { "class": "legend" });
    DATA.labels.concat(["error"]).forEach(function (l) { add(box, el("span", { "class": "lab-" + l, text: pretty(l) })); });
    if (anyUnsure) add(box, el("span", { "class": "lab-unsure", text: UNSURE }));
    return box;
  }

  function renderSide(r, twoSides) {
    var box = el("div", { "class": "side", "data-run": runName(r) });
    var rate = r.rate === null ? "no rate" : "unsupported rate " + num(r.rate) + " (" + r.n_unsupported + " of " + r.n_evaluated + " evaluated claims)";
    if (twoSides) add(box, el("p", { "class": "side-title", text: runName(r) }));
    add(box, el("p", { "class": "meta", text: rate + (r.hallucinated ? " · hallucinated" : r.hallucinated === false ? " · not hallucinated" : "") }));
    if (r.error) add(box, el("p", { "class": "error-text", text: "error row: " + r.error }));
    if (r.shortened) add(box, el("p", { "class": "note shortened", text: r.shortened }));
    add(box, el("div", { "class": "response" }, highlighted(r)));
    if (r.n_unlocated) add(box, el("p", { "class": "meta unlocated", text: r.n_unlocated + " unsupported claim(s) could not be placed in the response, so are not highlighted" }));
    if (r.diff) {
      var diff = el("div", { "class": "diff" });
      r.diff.forEach(function (piece) {
        add(diff, piece[0] === "=" ? piece[1] : el(piece[0] === "-" ? "del" : "ins", { text: piece[1] }));
      });
      add(box, el("details", { open: true }, el("summary", { text: "word diff against " + runName(byKey[r.pair]) }), diff));
    }
    var list = el("ol", { "class": "claims" });
    r.claims.forEach(function (c) {
      var active = state.claim && state.claim.side === r.key && state.claim.index === c.index;
      var tag = pretty(labelOf(c)) + (c.subtype ? " · " + pretty(c.subtype) : "");
      var li = el("li", { "class": "lab-" + colourOf(c) + (active ? " active" : ""), "data-claim": c.index, "data-label": labelOf(c) },
        el("span", { "class": "claim-text", text: c.text }), el("span", { "class": "tag", text: tag }));
      if (colourOf(c) === "unsure") add(li, el("span", { "class": "tag unsure", text: UNSURE }));
      if (c.citation) add(li, el("span", { "class": "tag citation", text: "citation: " + pretty(c.citation) }));
      if (c.change === "changed") add(li, el("span", { "class": "tag changed", text: "changed (other run: " + pretty(c.was) + ")" }));
      if (c.change === "new") add(li, el("span", { "class": "tag changed", text: "new: not in the other run" }));
      if (c.change === "gone") add(li, el("span", { "class": "tag changed", text: "gone: not in the other run" }));
      li.addEventListener("click", function () { selectClaim(r.key, c.index); });
      add(list, li);
    });
    if (!r.claims.length) add(list, el("li", { "class": "empty", text: r.error ? "no claims (the whole response is an error row)" : "no claims" }));
    add(box, el("h3", { text: "claims (" + r.claims.length + ")" }), list);
    return box;
  }

  // The response with every claim's span marked; a stretch covered by several claims shows the worst label.
  function highlighted(r) {
    var text = r.response, points = { 0: 1 }, cuts;
    points[text.length] = 1;
    var unsupported = r.unsupported_spans || [];
    r.claims.forEach(function (c) {
      c.spans.forEach(function (s) { points[Math.max(0, Math.min(s[0], text.length))] = 1; points[Math.max(0, Math.min(s[1], text.length))] = 1; });
    });
    unsupported.forEach(function (s) { points[Math.max(0, Math.min(s[0], text.length))] = 1; points[Math.max(0, Math.min(s[1], text.length))] = 1; });
    cuts = Object.keys(points).map(Number).sort(function (a, b) { return a - b; });
    var out = [];
    for (var i = 0; i + 1 < cuts.length; i++) {
      var start = cuts[i], end = cuts[i + 1], piece = text.slice(start, end);
      var covering = r.claims.filter(function (c) {
        return c.spans.some(function (s) { return s[0] <= start && s[1] >= end; });
      });
      if (!covering.length) { out.push(piece); continue; }
      // Confident claims first, then by severity: a guess never paints over a decided label.
      covering.sort(function (a, b) {
        return (colourOf(a) === "unsure") - (colourOf(b) === "unsure") || SEVERITY.indexOf(labelOf(a)) - SEVERITY.indexOf(labelOf(b));
      });
      var worst = labelOf(covering[0]), paint = colourOf(covering[0]);
      var isActive = covering.some(function (c) { return state.claim && state.claim.side === r.key && state.claim.index === c.index; });
      // The merged unsupported span this stretch belongs to (what span tools and exports see), if any.
      var span = unsupported.filter(function (s) { return s[0] <= start && s[1] >= end; })[0];
      var seg = el("span", {
        "class": "seg lab-" + paint + (isActive ? " active" : "") + (span ? " unsupported" : ""), "data-label": worst,
        "data-span": span ? span[0] + "-" + span[1] : null, "data-span-label": span ? span[2] : null,
        title: covering.map(function (c) {
          return pretty(labelOf(c)) + (colourOf(c) === "unsure" ? " (" + UNSURE + ")" : "") + ": " + c.text + (c.reason ? "\n  why: " + c.reason : "");
        }).join("\n")
      }, piece);
      (function (claims) {
        seg.addEventListener("click", function () {
          // Clicking again cycles through the claims that share this stretch.
          var at = -1;
          claims.forEach(function (c, j) { if (state.claim && state.claim.side === r.key && state.claim.index === c.index) at = j; });
          selectClaim(r.key, claims[(at + 1) % claims.length].index);
        });
      })(covering);
      out.push(seg);
    }
    return out;
  }

  function selectClaim(sideKey, index) {
    state.claim = { side: sideKey, index: index };
    renderDetail();
    writeHash();
  }

  function renderClaimDetail(side, c) {
    var box = el("div", { "class": "claim-detail", id: "claim-detail" });
    add(box, el("h3", { text: "selected claim" + (side.pair ? " (" + runName(side) + ")" : "") }));
    var dl = el("dl");
    function row(name, value, cls) { if (value !== null && value !== undefined && value !== "") add(dl, el("dt", { text: name }), el("dd", { "class": cls || "", text: String(value) })); }
    row("claim", c.text);
    row("label", pretty(labelOf(c)) + (colourOf(c) === "unsure" ? " (a guess: " + UNSURE + ")" : ""), "lab-text");
    row("subtype", c.subtype ? pretty(c.subtype) : "");
    row("probability", c.probability === null ? "" : num(c.probability) + " (that the claim is unsupported)");
    row("reason", c.reason);
    row("subtype reason", c.subtype_reason);
    row("error", c.error, "error-text");
    if (c.change === "changed") row("change", "the other run labels the matching claim " + pretty(c.was));
    if (c.change === "new" || c.change === "gone") row("change", "no matching claim in the other run");
    if (c.citations && c.citations.length) row("cites", c.citations.map(function (id) { return passageName(side, id); }).join("; "));
    if (c.citation) row("citation finding", pretty(c.citation) + " (" + (CITATION[c.citation] || "") + ")");
    var context = DATA.contexts[side.context];
    var judged = c.evidence.filter(function (e) { return e.source === "judge"; });
    if (judged.length) {
      var items = el("ul", { "class": "evidence judge" });
      judged.forEach(function (e) {
        var where = e.passage ? passageName(side, e.passage, e.title) : "the context";
        var text = e.verified ? "verified in " + where : "not found in " + where + " (the quote could not be verified)";
        add(items, el("li", { "class": e.verified ? "verified" : "unverified" },
          el("q", { text: e.quote || textAt(side, e) }), el("span", { "class": "tag", text: text })));
      });
      add(dl, el("dt", { text: "judge's evidence" }), el("dd", null, items));
    } else {
      var ev = c.evidence.map(function (e) { return textAt(side, e); });
      row("closest sentence", ev.length ? ev.join("\n") + "\n(shares most words with the claim: a reading aid; the judge quoted nothing)"
        : "the judge quoted nothing, and no context sentence shares a content word with this claim");
    }
    add(box, dl);
    return box;
  }

  function passageOf(r, id) {
    var found = null;
    (r.passages || []).forEach(function (p) { if (p.id === id) found = p; });
    return found;
  }

  // What a source is called on the page: "passage 2", "tool result call_1 · lookup_order (failed call)",
  // "system prompt system", "user turn user-1".
  var SOURCE_KIND = { passage: "passage", tool_result: "tool result", user_turn: "user turn", system_prompt: "system prompt" };
  function sourceLabel(p, id) {
    if (!p) return "passage " + id;
    return (SOURCE_KIND[p.kind] || "passage") + " " + id + (p.tool ? " · " + p.tool : "") + (p.failed ? " (failed call)" : "");
  }

  // "passage 2 · Title" for a passage id, with the title when the passages have one; other sources say their kind.
  function passageName(r, id, title) {
    var p = passageOf(r, id);
    var t = title || (p && p.title);
    return sourceLabel(p, id) + (t ? " · " + t : "") + (p || !(r.passages || []).length ? "" : " (no such passage)");
  }

  // The source text an evidence item points at.
  function textAt(r, e) {
    if (e.start === null || e.start === undefined) return e.quote || "";
    var p = e.passage ? passageOf(r, e.passage) : null;
    var where = e.passage ? (p ? p.text : null) : DATA.contexts[r.context];
    return where === null ? (e.quote || "") : where.slice(e.start, e.end);
  }

  var CITATION = {
    correct: "a cited passage supports the claim",
    wrong_passage: "the cited passages do not support it, another passage does",
    uncited: "the response cites passages, but not in this claim's sentence",
    cited_contradicts: "a cited passage contradicts the claim",
    cited_unsupported: "it cites passages, but no passage supports it",
    unknown_passage: "it cites only ids that are not among the passages",
    unchecked: "supported, but no verified quote says which passage"
  };

  // The text with [start, end) ranges wrapped in <mark> (class says whose evidence).
  function marked(text, ranges) {
    ranges = ranges.filter(function (x) { return x.start !== null && x.start !== undefined && x.end > x.start; }).sort(function (a, b) { return a.start - b.start; });
    var out = [], cursor = 0;
    ranges.forEach(function (x) {
      var start = Math.max(x.start, cursor), end = Math.min(x.end, text.length);
      if (end <= start) return;
      out.push(text.slice(cursor, start));
      out.push(el("mark", { "class": x.source === "judge" ? "judge" : "overlap", text: text.slice(start, end) }));
      cursor = end;
    });
    out.push(text.slice(cursor));
    return out;
  }

  function renderContext(r, active) {
    var box = el("div", { "class": "context-box" });
    var evidence = active ? active.claim.evidence : [];
    var cited = active ? active.claim.citations || [] : [];
    // Side by side, the passages are the selected side's (the same sample, so the same passages).
    var source = active ? active.side : r;
    if (source.passages && source.passages.length) {
      add(box, el("h3", { text: "passages (" + source.passages.length + ")" }));
      source.passages.forEach(function (p) {
        var mine = evidence.filter(function (e) { return e.passage === p.id; });
        var body = el("div", { "class": "context" }, marked(p.text, mine));
        var head = el("summary", null, el("strong", { "class": "passage-id", text: sourceLabel(p, p.id) }),
          p.title ? " · " : "", p.title ? el("span", { "class": "passage-title", text: p.title }) : null,
          mine.length ? el("span", { "class": "tag", text: "judge's evidence" }) : null,
          cited.indexOf(p.id) >= 0 ? el("span", { "class": "tag", text: "cited by this claim" }) : null);
        add(box, el("details", { "class": "passage", "data-passage": p.id, open: mine.length > 0 || source.passages.length === 1 }, head, body));
      });
      return box;
    }
    var context = DATA.contexts[r.context];
    var ranges = evidence.filter(function (e) { return !e.passage; });
    add(box, el("h3", { text: "context (" + context.length + " characters)" }));
    if (context.length <= LONG_CONTEXT) {
      add(box, el("div", { "class": "context", id: "context" }, marked(context, ranges)));
      return box;
    }
    ranges = ranges.filter(function (e) { return e.start !== null && e.start !== undefined; });
    if (ranges.length) {
      var lo = Math.max(0, Math.min.apply(null, ranges.map(function (e) { return e.start; })) - 300);
      var hi = Math.min(context.length, Math.max.apply(null, ranges.map(function (e) { return e.end; })) + 300);
      var shifted = ranges.map(function (e) { return { start: e.start === null ? null : e.start - lo, end: e.end === null ? null : e.end - lo, source: e.source }; });
      add(box, el("div", { "class": "context excerpt" }, lo > 0 ? "… " : "", marked(context.slice(lo, hi), shifted), hi < context.length ? " …" : ""));
    }
    add(box, el("details", null, el("summary", { text: "whole context" }), el("div", { "class": "context", id: "context" }, marked(context, ranges))));
    return box;
  }

  // --- keyboard ----------------------------------------------------------------------------------

  function move(step) {
    if (!state.items.length) return;
    var keys = state.items.slice(0, state.shown).map(function (r) { return r.key; });
    var at = keys.indexOf(state.selected);
    var next = at < 0 ? (step > 0 ? 0 : keys.length - 1) : Math.max(0, Math.min(keys.length - 1, at + step));
    if (at === keys.length - 1 && step > 0 && state.items.length > state.shown) { state.shown += PAGE; renderList(); keys = state.items.slice(0, state.shown).map(function (r) { return r.key; }); next = at + 1; }
    select(keys[next]);
  }

  function moveClaim(step) {
    var r = byKey[state.selected];
    if (!r) return;
    var side = state.claim ? byKey[state.claim.side] : r;
    if (!side.claims.length) return;
    var at = -1;
    side.claims.forEach(function (c, i) { if (state.claim && c.index === state.claim.index) at = i; });
    var next = (at + step + side.claims.length) % side.claims.length;
    selectClaim(side.key, side.claims[next].index);
  }

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA");
    if (event.key === "Escape") {
      if (typing) target.blur();
      $("filters").reset();
      state.run = state.model = state.label = state.subtype = state.search = "";
      state.errors = state.changed = false; state.sort = "input";
      refresh();
      return;
    }
    if (typing || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); move(1); }
    else if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); move(-1); }
    else if (event.key === "n" || event.key === "ArrowRight") { event.preventDefault(); moveClaim(1); }
    else if (event.key === "p" || event.key === "ArrowLeft") { event.preventDefault(); moveClaim(-1); }
    else if (event.key === "/") { event.preventDefault(); $("f-search").focus(); }
  });

  window.addEventListener("hashchange", function () { readHash(); });

  renderHeader();
  fillFilters();
  refresh();
  if (!readHash() && state.items.length) select(state.items[0].key, undefined, undefined, true);
  started = true;
  document.body.setAttribute("data-ready", "1");
})();
