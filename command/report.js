// report.js — the script of `dlhook report` pages (inlined by report.c into the page; the
// page loads nothing from the network). Reads the data block (id "dlh-data") and draws:
// the timeline on a canvas (time axis, wheel zoom, box zoom with shift+drag or a drag on the
// axis, pan by dragging, tooltips, click a call to highlight the GPU work it launched, level of
// detail: events under a pixel are merged per pixel column; kernels by their short names, the
// full name in the tooltip), the first screen (findings, the step breakdown, top operators), the
// step view, and sortable tables.
// window.dlhReport exposes the view for tests: zoom(a, b), view(), find(name), click(lane, i).
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('dlh-data').textContent);
  var S = D.str, SHORT = D['short'] || {};
  function shortName(i) { return SHORT[i] !== undefined ? SHORT[i] : S[i]; }
  function fmt(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(2) + ' us';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function bytes(b) {
    if (b < 1024) return b + ' B';
    if (b < 1048576) return (b / 1024).toFixed(1) + ' KiB';
    if (b < 1073741824) return (b / 1048576).toFixed(1) + ' MiB';
    return (b / 1073741824).toFixed(2) + ' GiB';
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  // ------------------------------------------------------------ lanes: decode, NVTX levels
  var lanes = [], linkIndex = {};
  D.lanes.forEach(function (L) {
    var n = L.d.length, s = new Float64Array(n), t = 0;
    for (var i = 0; i < n; i++) { t += L.s[i]; s[i] = t; }
    var base = {g: L.g, kind: L.kind, label: L.label, pid: D.groups[L.g].pid};
    function mk(idx, level) {
      var m = idx.length, o = Object.assign({}, base, {
        s: new Float64Array(m), e: new Float64Array(m), n: new Int32Array(m),
        i: new Int32Array(m), k: new Int32Array(m), c: new Float64Array(m), maxd: 0, level: level
      });
      for (var j = 0; j < m; j++) {
        var q = idx[j];
        o.s[j] = s[q]; o.e[j] = s[q] + L.d[q]; o.n[j] = L.n[q]; o.i[j] = L.i[q];
        o.k[j] = L.k[q]; o.c[j] = L.c[q];
        if (L.d[q] > o.maxd) o.maxd = L.d[q];
      }
      if (level > 0) o.label = '';
      return o;
    }
    if (L.kind === 1 || L.kind === 3) { // NVTX, PyTorch modules and ops: one row per nesting level
      var stack = [], rows = [];
      for (var i = 0; i < n; i++) {
        while (stack.length && stack[stack.length - 1] <= s[i]) stack.pop();
        var lv = stack.length;
        (rows[lv] = rows[lv] || []).push(i);
        stack.push(s[i] + L.d[i]);
      }
      rows.forEach(function (r, lv) { lanes.push(mk(r, lv)); });
    } else {
      var all = new Array(n);
      for (var i = 0; i < n; i++) all[i] = i;
      lanes.push(mk(all, 0));
    }
  });
  lanes.forEach(function (L, li) {
    for (var j = 0; j < L.c.length; j++) {
      if (!L.c[j]) continue;
      var key = L.pid + ':' + L.c[j];
      (linkIndex[key] = linkIndex[key] || []).push([li, j]);
    }
  });

  // ------------------------------------------------------------ timeline canvas
  var box = document.getElementById('tl'), cv = document.getElementById('tl-canvas');
  var tip = document.getElementById('tl-tip'), selbox = document.getElementById('tl-selection');
  var ctx = cv.getContext('2d');
  var LABEL = 190, AXIS = 24, LH = 16, GH = 18, MEMH = 36;
  var v0 = 0, v1 = Math.max(D.span, 1), W = 800, sel = null, hl = [];
  var COLORS = ['#3b6fb6', '#8a5cc2', '#2e9e4f', '#c0392b', '#16a085'];
  // layout: group header, then its lanes, then its memory counter
  var rows = [], y = AXIS;
  D.groups.forEach(function (G, gi) {
    rows.push({type: 'group', y: y, label: G.label}); y += GH;
    lanes.forEach(function (L, li) {
      if (L.g !== gi) return;
      rows.push({type: 'lane', y: y, lane: li}); L.y = y; y += LH;
    });
    (D.mem || []).forEach(function (M) {
      if (M.g !== gi) return;
      rows.push({type: 'mem', y: y, mem: M}); y += MEMH;
    });
  });
  var H = y + 4;
  function x(t) { return LABEL + (t - v0) * (W - LABEL) / (v1 - v0); }
  function tAt(px) { return v0 + (px - LABEL) * (v1 - v0) / (W - LABEL); }
  function lower(a, t) { var lo = 0, hi = a.length; while (lo < hi) { var m = (lo + hi) >> 1; if (a[m] < t) lo = m + 1; else hi = m; } return lo; }
  function niceStep(span, px) {
    var raw = span / Math.max(px / 110, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  function isLinked(li, j) {
    for (var q = 0; q < hl.length; q++) if (hl[q][0] === li && hl[q][1] === j) return true;
    return false;
  }
  function draw() {
    W = Math.max(box.clientWidth, 600);
    var dpr = window.devicePixelRatio || 1;
    if (cv.width !== W * dpr || cv.height !== H * dpr) {
      cv.width = W * dpr; cv.height = H * dpr; cv.style.width = W + 'px'; cv.style.height = H + 'px';
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, W, H);
    ctx.font = '11px monospace'; ctx.textBaseline = 'middle';
    // capture windows
    ctx.fillStyle = '#fff3c4';
    (D.win || []).forEach(function (w) {
      var a = Math.max(x(w[0]), LABEL), b = Math.min(x(w[1]), W);
      if (b > a) ctx.fillRect(a, AXIS, b - a, H - AXIS);
    });
    // axis and grid
    var step = niceStep(v1 - v0, W - LABEL);
    ctx.fillStyle = '#f1f3f7'; ctx.fillRect(0, 0, W, AXIS);
    ctx.fillStyle = '#333'; ctx.strokeStyle = '#e4e4e4';
    // the first tick is labelled with its time, the others with their distance from it
    var origin = Math.ceil(v0 / step) * step;
    for (var t = origin; t <= v1; t += step) {
      var px = Math.round(x(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(px, AXIS - 5); ctx.lineTo(px, H); ctx.stroke();
      ctx.fillText(t === origin ? fmt(t) : '+' + fmt(t - origin), px + 3, AXIS / 2);
    }
    ctx.fillStyle = '#555'; ctx.fillText('window ' + fmt(v1 - v0), 4, AXIS / 2);
    rows.forEach(function (r) {
      if (r.type === 'group') {
        ctx.fillStyle = '#e9edf5'; ctx.fillRect(0, r.y, W, GH - 2);
        ctx.fillStyle = '#111'; ctx.font = 'bold 12px sans-serif';
        ctx.fillText(r.label, 4, r.y + GH / 2 - 1); ctx.font = '11px monospace';
      } else if (r.type === 'lane') {
        drawLane(lanes[r.lane], r.lane, r.y);
      } else {
        drawMem(r.mem, r.y);
      }
    });
    // the link from the selected call to the GPU work it launched
    if (sel && hl.length) {
      var A = lanes[sel[0]], ax = Math.max(x(A.s[sel[1]]), LABEL), ay = A.y + LH / 2;
      ctx.strokeStyle = '#e67e22'; ctx.lineWidth = 1.5;
      hl.forEach(function (h) {
        var B = lanes[h[0]], bx = Math.max(x(B.s[h[1]]), LABEL);
        ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, B.y + LH / 2); ctx.stroke();
      });
      ctx.lineWidth = 1;
    }
    if (boxSel) {
      ctx.fillStyle = 'rgba(59,111,182,0.15)';
      ctx.fillRect(Math.min(boxSel[0], boxSel[1]), AXIS, Math.abs(boxSel[1] - boxSel[0]), H - AXIS);
    }
  }
  function drawLane(L, li, ry) {
    ctx.fillStyle = '#333';
    if (L.label) ctx.fillText(L.label.length > 27 ? L.label.slice(0, 26) + '…' : L.label, 8, ry + LH / 2);
    ctx.save(); ctx.beginPath(); ctx.rect(LABEL, ry, W - LABEL, LH); ctx.clip();
    var base = COLORS[L.kind], nsPerPx = (v1 - v0) / (W - LABEL);
    var j = lower(L.s, v0 - L.maxd), n = L.s.length;
    // level of detail: many events in view and a coverage level at least as fine as a pixel
    if (lower(L.s, v1) - j > 4 * (W - LABEL)) {
      var lv = null;
      for (var q = 0; q < LOD.length; q++) if (D.span / LOD[q] <= nsPerPx) { lv = coverage(L, q); break; }
      if (lv) { drawCoverage(L, lv, ry, base); j = n; }
    }
    var runX = -1, runEnd = -1, runCount = 0;
    function flush() {
      if (runX < 0) return;
      ctx.globalAlpha = Math.min(1, 0.35 + 0.15 * runCount);
      ctx.fillStyle = base; ctx.fillRect(runX, ry + 1, Math.max(runEnd - runX, 1), LH - 2);
      ctx.globalAlpha = 1; runX = -1; runCount = 0;
    }
    for (; j < n && L.s[j] <= v1; j++) {
      if (L.e[j] < v0) continue;
      var a = x(L.s[j]), b = x(L.e[j]);
      if (b - a < 1) { // below a pixel: merged into the pixel column run
        var col = Math.floor(a);
        if (runX >= 0 && col <= runEnd) { runEnd = Math.max(runEnd, col + 1); runCount++; continue; }
        flush(); runX = col; runEnd = col + 1; runCount = 1; continue;
      }
      flush();
      ctx.fillStyle = L.kind === 1 ? ['#8a5cc2', '#a07ad0', '#b698dc', '#ccb6e8'][L.level % 4]
        : L.kind === 3 ? ['#c0392b', '#d35400', '#e67e22', '#b9770e'][L.level % 4]
        : L.kind === 4 && /^wait/.test(S[L.i[j]]) ? '#95a5b8' : base; // host samples: waits grey
      ctx.fillRect(a, ry + 1, b - a, LH - 2);
      if (b - a > 40) {
        ctx.fillStyle = '#fff';
        var nm = shortName(L.n[j]), room = Math.floor((b - Math.max(a, LABEL) - 4) / 6.6);
        if (room > 2) ctx.fillText(nm.length > room ? nm.slice(0, room - 1) + '…' : nm, Math.max(a, LABEL) + 2, ry + LH / 2);
      }
    }
    flush();
    // highlights: the selected event and what it is linked with
    var marks = hl.slice(); if (sel) marks.push(sel);
    marks.forEach(function (h) {
      if (h[0] !== li) return;
      var a = x(L.s[h[1]]), b = Math.max(x(L.e[h[1]]), a + 3);
      ctx.strokeStyle = '#8a3c00'; ctx.lineWidth = 2; ctx.fillStyle = '#e67e22';
      ctx.fillRect(a - 1, ry, b - a + 2, LH); ctx.strokeRect(a - 1, ry + 1, b - a + 2, LH - 2);
      ctx.lineWidth = 1;
    });
    ctx.restore();
  }
  // coverage levels: busy ns per bin over the whole span, LOD[q] bins, made on first use
  var LOD = [4096, 65536];
  function coverage(L, q) {
    L.cov = L.cov || [];
    if (L.cov[q]) return L.cov[q];
    var nb = LOD[q], bw = Math.max(D.span, 1) / nb, c = new Float32Array(nb);
    for (var j = 0; j < L.s.length; j++) {
      var a = Math.max(L.s[j], 0), b = Math.min(L.e[j], D.span);
      for (var k = Math.floor(a / bw); k < nb && k * bw < b; k++)
        c[k] += Math.min(b, (k + 1) * bw) - Math.max(a, k * bw);
    }
    return (L.cov[q] = {c: c, bw: bw});
  }
  function drawCoverage(L, lv, ry, color) {
    ctx.fillStyle = color;
    for (var px = LABEL; px < W; px++) {
      var a = tAt(px), b = tAt(px + 1), k0 = Math.max(0, Math.floor(a / lv.bw)), k1 = Math.min(lv.c.length, Math.ceil(b / lv.bw));
      var busy = 0;
      for (var k = k0; k < k1; k++) busy += lv.c[k];
      if (busy <= 0) continue;
      ctx.globalAlpha = 0.35 + 0.65 * Math.min(1, busy / (b - a));
      ctx.fillRect(px, ry + 1, 1, LH - 2);
    }
    ctx.globalAlpha = 1;
  }
  function drawMem(M, ry) {
    ctx.fillStyle = '#333'; ctx.fillText('GPU memory', 8, ry + 10);
    ctx.fillStyle = '#888'; ctx.fillText('peak ' + bytes(M.peak), 8, ry + 24);
    ctx.save(); ctx.beginPath(); ctx.rect(LABEL, ry, W - LABEL, MEMH); ctx.clip();
    ctx.strokeStyle = '#c0392b'; ctx.beginPath();
    var prev = 0, top = ry + 3, h = MEMH - 6, pk = Math.max(M.peak, 1);
    ctx.moveTo(LABEL, top + h);
    for (var i = 0; i < M.t.length; i++) {
      var px = x(M.t[i]);
      ctx.lineTo(px, top + h - prev * h / pk); ctx.lineTo(px, top + h - M.v[i] * h / pk);
      prev = M.v[i];
    }
    ctx.lineTo(W, top + h - prev * h / pk); ctx.stroke(); ctx.restore();
  }
  // event under the pointer: in its lane, the event containing t, else the nearest within 3 px
  function hit(mx, my) {
    var r = null;
    for (var q = 0; q < rows.length; q++)
      if (rows[q].type === 'lane' && my >= rows[q].y && my < rows[q].y + LH) r = rows[q];
    if (!r || mx < LABEL) return null;
    var L = lanes[r.lane], t = tAt(mx), tol = 3 * (v1 - v0) / (W - LABEL);
    var j = lower(L.s, t - L.maxd - tol), best = -1, bd = Infinity;
    for (; j < L.s.length && L.s[j] <= t + tol; j++) {
      var d = t < L.s[j] ? L.s[j] - t : t > L.e[j] ? t - L.e[j] : 0;
      if (d < bd || (d === bd && d === 0)) { bd = d; best = j; }
    }
    return best >= 0 && bd <= tol ? [r.lane, best] : null;
  }
  function linked(li, j) {
    var L = lanes[li];
    if (!L.c[j]) return [];
    return (linkIndex[L.pid + ':' + L.c[j]] || []).filter(function (h) { return h[0] !== li || h[1] !== j; });
  }
  function describe(li, j) {
    var L = lanes[li], h = '<b>' + esc(shortName(L.n[j])) + '</b><br>';
    if (SHORT[L.n[j]] !== undefined) h += '<span class="full">' + esc(S[L.n[j]]) + '</span><br>';
    h += 'duration ' + fmt(L.e[j] - L.s[j]) + ', at ' + fmt(L.s[j]) + '<br>';
    h += '<span class="muted">' + esc(D.groups[L.g].label + ' · ' + (L.label || 'nested range')) + '</span><br>';
    if (L.i[j] > 0) h += esc(S[L.i[j]]) + '<br>';
    var ln = linked(li, j);
    if (ln.length) {
      h += (L.kind === 0 ? 'launched: ' : 'launched by: ');
      h += ln.slice(0, 4).map(function (q) {
        var B = lanes[q[0]];
        return esc(S[B.n[q[1]]]) + ' (' + fmt(B.e[q[1]] - B.s[q[1]]) + ')';
      }).join(', ') + (ln.length > 4 ? ', …' : '') + '<br>';
    }
    if (L.k[j] > 0) h += '<pre>' + esc(S[L.k[j]]) + '</pre>';
    return h;
  }
  function zoom(a, b) {
    if (b - a < 100) { var m = (a + b) / 2; a = m - 50; b = m + 50; }
    v0 = Math.max(a, -0.05 * D.span); v1 = Math.min(b, D.span * 1.05);
    draw();
  }
  var drag = null, boxSel = null;
  cv.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var r = cv.getBoundingClientRect(), mx = ev.clientX - r.left;
    if (mx < LABEL) return;
    var t = tAt(mx), f = Math.exp((ev.deltaY || 0) * 0.002);
    if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) { // horizontal: pan
      var d = (ev.deltaX || ev.deltaY) * (v1 - v0) / (W - LABEL); zoom(v0 + d, v1 + d); return;
    }
    zoom(t - (t - v0) * f, t + (v1 - t) * f);
  }, {passive: false});
  cv.addEventListener('mousedown', function (ev) {
    var r = cv.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    drag = {x: mx, v0: v0, v1: v1, box: ev.shiftKey || my < AXIS, moved: false};
    if (drag.box) boxSel = [mx, mx];
  });
  window.addEventListener('mousemove', function (ev) {
    var r = cv.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
    if (drag) {
      if (Math.abs(mx - drag.x) > 2) drag.moved = true;
      if (drag.box) { boxSel[1] = mx; draw(); return; }
      var d = (drag.x - mx) * (drag.v1 - drag.v0) / (W - LABEL);
      v0 = drag.v0 + d; v1 = drag.v1 + d; draw(); return;
    }
    var h = (mx >= 0 && my >= 0 && mx < W && my < H) ? hit(mx, my) : null;
    if (!h) { tip.style.display = 'none'; return; }
    tip.innerHTML = describe(h[0], h[1]);
    tip.style.display = 'block';
    var br = box.getBoundingClientRect();
    var tx = ev.clientX - br.left + 14, ty = ev.clientY - br.top + 14;
    if (tx + tip.offsetWidth > br.width) tx = Math.max(0, ev.clientX - br.left - tip.offsetWidth - 14);
    if (ev.clientY + 14 + tip.offsetHeight > window.innerHeight) ty = Math.max(0, ev.clientY - br.top - tip.offsetHeight - 14);
    tip.style.left = tx + 'px';
    tip.style.top = ty + 'px';
  });
  window.addEventListener('mouseup', function (ev) {
    if (!drag) return;
    var d = drag; drag = null;
    if (d.box && boxSel && Math.abs(boxSel[1] - boxSel[0]) > 3) {
      var a = tAt(Math.max(Math.min(boxSel[0], boxSel[1]), LABEL)), b = tAt(Math.max(boxSel[0], boxSel[1]));
      boxSel = null; zoom(a, b); return;
    }
    boxSel = null;
    if (!d.moved) {
      var r = cv.getBoundingClientRect();
      select(hit(ev.clientX - r.left, ev.clientY - r.top));
    } else draw();
  });
  function select(h) {
    sel = h; hl = h ? linked(h[0], h[1]) : [];
    selbox.innerHTML = h ? describe(h[0], h[1]) : '<span class="muted">click a call or a kernel to see what it is linked with</span>';
    draw();
  }
  document.getElementById('tl-reset').onclick = function () { zoom(0, D.span); };
  window.addEventListener('resize', draw);
  select(null);

  // ------------------------------------------------------------ sortable tables
  function sortable(t) {
    var ths = t.querySelectorAll('th');
    ths.forEach(function (th, col) {
      th.title = 'click to sort';
      th.addEventListener('click', function () {
        var body = t.tBodies[0], rs = Array.prototype.slice.call(body.rows);
        var dir = th.dataset.dir === 'desc' ? 1 : -1;
        ths.forEach(function (o) { delete o.dataset.dir; });
        th.dataset.dir = dir < 0 ? 'desc' : 'asc';
        rs.sort(function (p, q) {
          var a = p.cells[col], b = q.cells[col];
          var x1 = a.dataset.v !== undefined ? +a.dataset.v : a.textContent;
          var x2 = b.dataset.v !== undefined ? +b.dataset.v : b.textContent;
          return (x1 < x2 ? -1 : x1 > x2 ? 1 : 0) * dir;
        });
        rs.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  function cell(k, v) {
    if (typeof v === 'number') {
      var s = /_ns$/.test(k) ? fmt(v) : /bytes$/.test(k) ? bytes(v) : /pct$/.test(k) ? v.toFixed(1) + ' %'
            : Number.isInteger(v) ? String(v) : v.toFixed(3);
      return '<td data-v="' + v + '">' + esc(s) + '</td>';
    }
    if (v && typeof v === 'object') v = JSON.stringify(v);
    return '<td class="n" title="' + esc(v) + '">' + esc(v === undefined || v === null ? '' : v) + '</td>';
  }
  function objTable(id, title, arr, limit) {
    if (!arr || !arr.length) return '';
    var keys = Object.keys(arr[0]).filter(function (k) { return k !== 'stack' && k !== 'live'; });
    var h = '<h3>' + esc(title) + '</h3><table class="sortable" id="' + id + '"><thead><tr>' +
      keys.map(function (k) { return '<th>' + esc(k.replace(/_ns$/, '').replace(/_/g, ' ')) + '</th>'; }).join('') +
      '</tr></thead><tbody>';
    arr.slice(0, limit || 200).forEach(function (o) {
      h += '<tr>' + keys.map(function (k) { return cell(k, o[k]); }).join('') + '</tr>';
    });
    h += '</tbody></table>';
    if (arr.length > (limit || 200)) h += '<div class="muted">' + (arr.length - (limit || 200)) + ' more rows (dlhook stats --json has all)</div>';
    return h;
  }

  // ------------------------------------------------------------ findings (dlhook advise)
  // the first screen: each finding's headline (class, cost, place) and fix; its evidence and
  // how the cost was estimated fold under it
  var fd = D.stats && D.stats.findings, fv = document.getElementById('findings');
  if (fv) {
    if (!fd || !fd.length) fv.innerHTML = '<p>no findings above the thresholds</p>';
    else fv.innerHTML = '<ol>' + fd.map(function (f) {
      return '<li><b>' + esc(f['class']) + '</b> ' + (+f.cost_ms_per_step).toFixed(3) + ' ms/step (' +
        (+f.cost_pct).toFixed(1) + '%) at <code>' + esc(f.place) + '</code><div class="fix">fix: ' +
        esc(f.fix) + '</div><details><summary>evidence</summary>' + f.evidence.calls + ' calls of ' +
        esc(f.evidence.functions) + '<br>estimated: ' + esc(f.estimate) + '</details></li>';
    }).join('') + '</ol>';
  }

  // ------------------------------------------------------------ step view
  var st = D.stats && D.stats.steps, sv = document.getElementById('steps');
  var CAT = [['compute_ns', 'compute', '#2e9e4f'], ['comm_ns', 'communication', '#d35400'],
             ['copy_ns', 'copies', '#2980b9'], ['host_ns', 'host overhead', '#8e44ad'],
             ['idle_ns', 'idle', '#bdc3c7']];
  if (st && st.rows && st.rows.length) {
    var h = '';
    var ss = st.slowest_step, sr = st.slowest_rank, sg = D.stats.straggler;
    var SRC = {optimizer: 'one per Optimizer.step call', backward: 'one per backward() call',
               training_step: 'one per training_step call', detected: 'found from the repeating calls'};
    h += '<p id="step-summary">' + (SRC[st.rows[0].steps_from] ? 'Steps: ' + SRC[st.rows[0].steps_from] +
      ' (no NVTX step ranges). ' : '') + 'Slowest step: <b>step ' + ss.step + '</b> (' + fmt(ss.dur_ns) +
      (ss.rank >= 0 ? ' on rank ' + ss.rank : '') + '). ';
    if (sr && sr.rank >= 0) h += 'Slowest rank (longest own work, i.e. step minus communication): <b>rank ' + sr.rank + '</b> (' + fmt(sr.mean_own_ns) + ' per step). ';
    if (sg) h += 'Straggler: <b>rank ' + sg.rank + '</b> arrived last at ' + sg.arrived_last + ' of ' + sg.collectives +
      ' collectives, ' + fmt(sg.mean_delay_ns) + ' after the last of the others (trimmed mean).';
    h += '</p><div class="legend">' + CAT.map(function (c) { return '<span><i style="background:' + c[2] + '"></i>' + c[1] + '</span>'; }).join('') + '</div>';
    // per rank means
    var byRank = {};
    st.rows.forEach(function (r) {
      var q = byRank[r.rank] = byRank[r.rank] || {rank: r.rank, steps: 0, mean_step_ns: 0};
      q.steps++; q.mean_step_ns += r.dur_ns;
      CAT.forEach(function (c) { q[c[0]] = (q[c[0]] || 0) + r[c[0]]; });
    });
    var rk = Object.keys(byRank).map(function (k) {
      var q = byRank[k], o = {rank: q.rank, steps: q.steps, mean_step_ns: Math.round(q.mean_step_ns / q.steps)};
      CAT.forEach(function (c) { o['mean_' + c[0]] = Math.round(q[c[0]] / q.steps); });
      return o;
    });
    h += objTable('rank-table', 'Per rank (means per step)', rk);
    h += '<h3>Per step and rank</h3><div class="steps-scroll"><table class="sortable" id="step-table"><thead><tr><th>rank</th><th>step</th><th>duration</th>' +
      CAT.map(function (c) { return '<th>' + c[1] + '</th>'; }).join('') + '<th>breakdown</th></tr></thead><tbody>';
    st.rows.forEach(function (r, i) {
      h += '<tr data-row="' + i + '" title="click: zoom the timeline to this step"><td data-v="' + r.rank + '">' + r.rank +
        '</td><td data-v="' + r.step + '">' + r.step + '</td>' + cell('dur_ns', r.dur_ns);
      CAT.forEach(function (c) {
        h += '<td data-v="' + r[c[0]] + '" class="' + c[0] + '">' + fmt(r[c[0]]) + ' <small>' + (100 * r[c[0]] / Math.max(r.dur_ns, 1)).toFixed(0) + '%</small></td>';
      });
      h += '<td class="bar">' + CAT.map(function (c) {
        return '<i style="width:' + (100 * r[c[0]] / Math.max(r.dur_ns, 1)).toFixed(2) + '%;background:' + c[2] + '"></i>';
      }).join('') + '</td></tr>';
    });
    h += '</tbody></table></div>';
    sv.innerHTML = h;
    sv.querySelectorAll('#step-table tbody tr').forEach(function (tr) {
      tr.addEventListener('click', function () {
        var r = st.rows[+tr.dataset.row];
        var a = r.start_ns - D.t0, pad = r.dur_ns * 0.02;
        zoom(a - pad, a + r.dur_ns + pad);
        box.scrollIntoView();
      });
    });
  } else {
    sv.innerHTML = '<p class="muted">No steps: mark each training step with an NVTX range named ' +
      '"ProfilerStep#N" or "step N" (torch.profiler and the bundled example do).</p>';
  }

  // ------------------------------------------------------------ first screen: breakdown, top ops
  // The step line of `dlhook stats`: the steps of every rank together, their median, and how
  // the step time splits (its parts add up to it); then the top operators by GPU time (a trace
  // without PyTorch: the API functions with the most host time).
  var bd = document.getElementById('step-breakdown');
  if (bd && st && st.rows && st.rows.length) {
    var tot = 0, part = {}, durs = [], seen = {};
    st.rows.forEach(function (r) {
      tot += r.dur_ns; durs.push(r.dur_ns); seen[r.pid + ':' + r.rank] = 1;
      CAT.forEach(function (c) { part[c[0]] = (part[c[0]] || 0) + r[c[0]]; });
    });
    durs.sort(function (a, b) { return a - b; });
    var FROM = {nvtx: 'NVTX ranges', optimizer: 'one per Optimizer.step', backward: 'one per backward()',
                training_step: 'one per training_step', detected: 'detected from the repeating calls'};
    var pc = function (k) { return 100 * part[k] / Math.max(tot, 1); };
    var from = FROM[st.rows[0].steps_from] || st.rows[0].steps_from;
    var bh = '<p id="step-line"><b>' + st.rows.length + '</b> steps (' + esc(from) +
      (Object.keys(seen).length > 1 ? ', all processes' : '') + '), median <b>' + fmt(durs[durs.length >> 1]) +
      '</b>; GPU busy <b>' + (pc('compute_ns') + pc('comm_ns') + pc('copy_ns')).toFixed(1) + ' %</b> of the steps</p>';
    bh += '<div id="step-bar">' + CAT.map(function (c) {
      return '<i style="width:' + pc(c[0]).toFixed(3) + '%;background:' + c[2] + '" title="' + c[1] + ': ' +
        fmt(part[c[0]]) + ' of ' + fmt(tot) + '"></i>';
    }).join('') + '</div><div class="legend">' + CAT.map(function (c) {
      return '<span data-cat="' + c[0] + '" data-pct="' + pc(c[0]) + '"><i style="background:' + c[2] + '"></i>' +
        c[1] + ' <b>' + pc(c[0]).toFixed(1) + ' %</b></span>';
    }).join('') + '</div>';
    bd.innerHTML = bh;
  } else if (bd) {
    var dv = (D.stats && D.stats.gpu && D.stats.gpu.devices) || [], busy = 0, span = 0;
    dv.forEach(function (d) { busy += d.busy_ns || 0; span += d.span_ns || 0; });
    bd.innerHTML = '<p id="step-line">No steps found (docs/steps.md: NVTX ranges "ProfilerStep#N" or ' +
      '"step N", or a PyTorch loop); GPU busy <b>' + (100 * busy / Math.max(span, 1)).toFixed(1) +
      ' %</b> of ' + fmt(span) + '</p>';
  }
  var tv = document.getElementById('top-ops');
  if (tv && D.stats) {
    var ops = ((D.stats.pytorch || {}).operators || []).slice();
    var oh = '';
    if (ops.length) {
      ops.sort(function (a, b) { return b.gpu_ns - a.gpu_ns || b.host_ns - a.host_ns; });
      oh = '<table id="top-ops-table"><thead><tr><th>operator</th><th>count</th><th>GPU</th><th>host</th>' +
        '<th>host self</th></tr></thead><tbody>' + ops.slice(0, 5).map(function (o) {
          return '<tr>' + cell('name', o.name) + cell('instances', o.instances) + cell('gpu_ns', o.gpu_ns) +
            cell('host_ns', o.host_ns) + cell('self_host_ns', o.self_host_ns) + '</tr>';
        }).join('') + '</tbody></table>';
      var byHost = ops.slice().sort(function (a, b) { return b.self_host_ns - a.self_host_ns; }).slice(0, 3);
      oh += '<p class="muted" id="top-ops-host">Most host time (self): ' + byHost.map(function (o) {
        return esc(o.name) + ' ' + fmt(o.self_host_ns);
      }).join(', ') + ' (all operators and modules: Tables)</p>';
    } else {
      document.getElementById('top-ops-title').textContent = 'Top API calls (host time)';
      oh = '<table id="top-ops-table"><thead><tr><th>function</th><th>calls</th><th>total</th><th>mean</th>' +
        '</tr></thead><tbody>' + (D.stats.api || []).filter(function (a) { return a.domain !== 'nvtx'; })
        .slice(0, 5).map(function (a) {
          return '<tr>' + cell('name', a.name) + cell('calls', a.calls) + cell('total_ns', a.total_ns) +
            cell('mean_ns', a.mean_ns) + '</tr>';
        }).join('') + '</tbody></table>';
    }
    tv.innerHTML = oh;
  }

  // ------------------------------------------------------------ tables from dlhook stats --json
  var T = D.stats || {}, M = D.memory || {}, th = '';
  var P = T.pytorch || {};
  var topShape = function (arr) {
    return (arr || []).map(function (o) {
      var c = {}; Object.keys(o).forEach(function (k) { if (k !== 'shapes') c[k] = o[k]; });
      c.top_shape = o.shapes && o.shapes.length ? o.shapes[0].shape : '';
      return c;
    });
  };
  if (P.none) th += '<p class="muted" id="pytorch-none">PyTorch operators: ' + esc(P.none) + '</p>';
  th += objTable('pytorch-ops', 'PyTorch operators (innermost op of each call; GPU time of the work it launched)', topShape(P.operators), 100);
  th += objTable('pytorch-modules', 'PyTorch modules (forward() frames)', P.modules, 100);
  th += objTable('pytorch-lines', 'Source lines (the innermost frame of your code)', P.lines, 100);
  var SM = T.samples || {};
  if (SM.cpu || SM.wait) {
    th += '<p class="muted">Host samples at ' + SM.hz + ' Hz: ' + SM.cpu + ' on-CPU (' + fmt(SM.cpu_ns) + '), ' +
      SM.wait + ' wait (' + fmt(SM.wait_ns) + '), ' + SM.lost + ' lost. Share: of all sampled time.</p>';
    th += objTable('samples-threads', 'Host time by thread (samples)', SM.by_thread, 100);
    th += objTable('samples-lines', 'Host time by function and line (the innermost frame of your code)', SM.by_line, 100);
    th += objTable('samples-ops', 'Sampled CPU time by operator', SM.by_op, 100);
    th += objTable('samples-waits', 'Waiting in', SM.by_wait, 100);
  }
  th += objTable('gemms', 'GEMMs (by shape)', T.gemms);
  th += objTable('convs', 'Convolutions (by shape)', T.convs);
  th += objTable('collectives', 'Collectives', T.collectives);
  th += objTable('ranks', 'Ranks: arrival at collectives', T.ranks);
  th += objTable('gpu-devices', 'GPU busy time per device', T.gpu && T.gpu.devices);
  th += objTable('memcpy', 'Copies', T.gpu && T.gpu.memcpy);
  th += objTable('api', 'All API functions', T.api, 100);
  document.getElementById('stats').innerHTML = th || '<p class="muted">(no statistics)</p>';
  var mh = '';
  if (M.traces) mh += objTable('memory-traces', 'Per process', M.traces);
  mh += objTable('memory-leaks', 'Still allocated at exit', M.leaks, 50);
  document.getElementById('memory').innerHTML = mh || '<p class="muted">(no device allocations recorded)</p>';
  document.querySelectorAll('table.sortable').forEach(sortable);

  // ------------------------------------------------------------ test hooks
  window.dlhReport = {
    zoom: zoom,
    view: function () { return [v0, v1]; },
    // the lane and index of the first event named name (substring), or null
    find: function (name, kind) {
      for (var li = 0; li < lanes.length; li++) {
        if (kind !== undefined && lanes[li].kind !== kind) continue;
        for (var j = 0; j < lanes[li].n.length; j++) if (S[lanes[li].n[j]].indexOf(name) >= 0) return [li, j];
      }
      return null;
    },
    // viewport coordinates of the middle of an event, after scrolling its lane into view
    point: function (li, j) {
      var L = lanes[li], r0 = cv.getBoundingClientRect();
      window.scrollTo(0, Math.max(0, r0.top + window.scrollY + L.y - window.innerHeight / 2));
      var r = cv.getBoundingClientRect();
      var a = Math.max(x(L.s[j]), LABEL), b = Math.min(Math.max(x(L.e[j]), a + 1), W);
      return [r.left + (a + b) / 2, r.top + L.y + LH / 2];
    },
    // [li, j] of the events of kind (0 API, 1 NVTX, 2 GPU) in group g at least px pixels wide
    visible: function (kind, g, px) {
      var out = [];
      lanes.forEach(function (L, li) {
        if (L.kind !== kind || (g !== undefined && D.groups[L.g].label.indexOf(g) !== 0)) return;
        for (var j = 0; j < L.s.length; j++)
          if (L.s[j] >= v0 && L.e[j] <= v1 && x(L.e[j]) - x(L.s[j]) >= px) out.push([li, j]);
      });
      return out;
    },
    name: function (li, j) { return S[lanes[li].n[j]]; },
    span: function (li, j) { return [lanes[li].s[j], lanes[li].e[j]]; },
    // the colour of the canvas pixel at viewport coordinates
    pixel: function (cx, cy) {
      var r = cv.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
      return Array.prototype.slice.call(ctx.getImageData(Math.round((cx - r.left) * dpr), Math.round((cy - r.top) * dpr), 1, 1).data);
    },
    linked: function (li, j) { return linked(li, j); },
    highlighted: function () { return hl.map(function (h) { return S[lanes[h[0]].n[h[1]]]; }); },
    selected: function () { return sel ? S[lanes[sel[0]].n[sel[1]]] : null; },
    laneInfo: function (li) { return {kind: lanes[li].kind, label: lanes[li].label, group: D.groups[lanes[li].g].label}; },
    events: function () { var n = 0; lanes.forEach(function (L) { n += L.s.length; }); return n; }
  };
  draw();
})();
