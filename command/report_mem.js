// report_mem.js — the memory section of `dlhook report` pages (inlined by report.c after
// report.js; the page loads nothing from the network). Reads its own data block (id
// "dlh-memtl": memtl.c's timelines, one per process) and draws, per process: live device memory
// over time as stacked areas by user line, module or operator (a selector), on a canvas that
// shows per pixel column the bin with the highest total in it (so the peak never disappears
// however many allocations a pixel holds); wheel zoom, drag to pan, double-click to reset, a
// tooltip with the places at the pointer; the peak marked; under it what was live at the peak
// by place and the allocation stacks that held the most then.
// window.dlhMemory exposes it for tests: drawnAt (performance.now() after the first drawing),
// traces[i].zoom(a, b), view(), keys(), group(name), at(t), columns().
(function () {
  'use strict';
  var el = document.getElementById('dlh-memtl'), box = document.getElementById('memtl');
  var api = {traces: [], drawnAt: null};
  window.dlhMemory = api;
  if (!el || !box) return;
  var M = JSON.parse(el.textContent);
  var COL = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
             '#ff9da7', '#9c755f', '#86bcb6', '#bab0ac'];
  function fmt(ns) {
    var a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + ' ns';
    if (a < 1e6) return (ns / 1e3).toFixed(2) + ' us';
    if (a < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
    return (ns / 1e9).toFixed(3) + ' s';
  }
  function bytes(b) {
    if (b < 1024) return b.toFixed(0) + ' B';
    if (b < 1048576) return (b / 1024).toFixed(1) + ' KiB';
    if (b < 1073741824) return (b / 1048576).toFixed(1) + ' MiB';
    return (b / 1073741824).toFixed(2) + ' GiB';
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }
  if (!M.traces.length) {
    box.innerHTML = '<p class="muted">No device allocations recorded.</p>';
    api.drawnAt = performance.now();
    return;
  }
  box.innerHTML = '<div class="muted">Live device memory by place (record with <code>dlhook record ' +
    '--torch-memory</code> to see every PyTorch tensor, not only the segments of the caching allocator). ' +
    'Wheel: zoom; drag: pan; double-click: reset. A pixel column shows the moment of its highest total.</div>';
  M.traces.forEach(function (E, ti) { api.traces.push(build(E.label, E.tl, ti)); });
  api.drawnAt = performance.now();

  function build(label, T, ti) {
    var div = document.createElement('div');
    var gnames = Object.keys(T.groups).filter(function (g) { return T.groups[g].keys.length; });
    var names = {line: 'user line', module: 'module', op: 'operator'};
    div.innerHTML = '<h3>' + esc(label) + ': peak ' + bytes(T.peak) + ' at ' + fmt(T.base - M.t0 + T.peak_t) +
      ' (' + T.samples + ' allocations and frees)</h3>' +
      '<div>by <select class="mem-group">' + gnames.map(function (g) {
        return '<option value="' + g + '">' + names[g] + '</option>';
      }).join('') + '</select> <button class="mem-reset">reset zoom</button></div>' +
      '<div class="mem-box" style="position:relative;border:1px solid #ddd">' +
      '<canvas class="mem-canvas" style="display:block;cursor:crosshair"></canvas>' +
      '<div class="mem-tip" style="position:absolute;display:none;z-index:10;max-width:520px;background:#fffef5;' +
      'border:1px solid #bbb;padding:6px 8px;font-size:12px;pointer-events:none"></div></div>' +
      '<div class="legend mem-legend"></div><div class="mem-peak"></div>';
    box.appendChild(div);
    var cv = div.querySelector('canvas'), ctx = cv.getContext('2d'), tip = div.querySelector('.mem-tip');
    var sel = div.querySelector('select'), legend = div.querySelector('.mem-legend');
    var n = T.t.length, t = new Float64Array(T.t), U = T.unit || 1;
    var off = T.base - M.t0;            // the page's time of this trace's first sample
    var series = {}, totals = {};
    gnames.forEach(function (g) {
      var V = T.v[g].map(function (a) { return Float64Array.from(a); }), tot = new Float64Array(n);
      V.forEach(function (a) { for (var b = 0; b < n; b++) tot[b] += a[b]; });
      series[g] = V; totals[g] = tot;
    });
    var grp = gnames[0], v0 = 0, v1 = Math.max(T.end, 1), W = 800, H = 260;
    var LEFT = 70, RIGHT = 10, TOP = 8, BOTTOM = 22, cols = null;
    function x(tt) { return LEFT + (tt - v0) * (W - LEFT - RIGHT) / (v1 - v0); }
    function tAt(px) { return v0 + (px - LEFT) * (v1 - v0) / (W - LEFT - RIGHT); }
    function binAt(tt) { // the last bin starting at or before tt, -1 before the first
      var lo = 0, hi = n;
      while (lo < hi) { var m = (lo + hi) >> 1; if (t[m] <= tt) lo = m + 1; else hi = m; }
      return lo - 1;
    }
    function niceStep(span, px) {
      var raw = span / Math.max(px / 110, 1), p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
      return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
    }
    function draw() {
      W = Math.max(div.clientWidth || box.clientWidth, 600);
      var dpr = window.devicePixelRatio || 1;
      if (cv.width !== W * dpr || cv.height !== H * dpr) {
        cv.width = W * dpr; cv.height = H * dpr; cv.style.width = W + 'px'; cv.style.height = H + 'px';
      }
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = '#fff'; ctx.fillRect(0, 0, W, H);
      ctx.font = '11px monospace'; ctx.textBaseline = 'middle';
      var V = series[grp], tot = totals[grp], npx = W - LEFT - RIGHT;
      var top = T.peak / U * 1.05 || 1, ph = H - TOP - BOTTOM, k = ph / top, base = TOP + ph;
      // per pixel column: the bin with the highest total among those it covers
      cols = new Int32Array(npx);
      for (var px = 0; px < npx; px++) {
        var b0 = binAt(tAt(LEFT + px)), b1 = binAt(tAt(LEFT + px + 1) - 1e-9);
        if (b1 < 0 || b0 >= n - 1 && tAt(LEFT + px) > T.end) { cols[px] = -1; continue; }
        if (b0 < 0) b0 = 0;
        var best = b0;
        for (var b = b0 + 1; b <= b1; b++) if (tot[b] > tot[best]) best = b;
        cols[px] = best;
      }
      var acc = new Float64Array(npx);
      V.forEach(function (a, s) {
        ctx.beginPath();
        for (var px = 0; px < npx; px++) {
          var c = cols[px];
          if (c < 0 || !a[c]) continue;
          ctx.rect(LEFT + px, base - (acc[px] + a[c]) * k, 1, a[c] * k);
          acc[px] += a[c];
        }
        ctx.fillStyle = COL[s % COL.length]; ctx.fill();
      });
      // axes: bytes on the left, the page's time below
      ctx.strokeStyle = '#ddd'; ctx.fillStyle = '#333';
      var ys = niceStep(top * U, ph * 1.5) / U;
      for (var yv = 0; yv <= top; yv += ys) {
        var yy = Math.round(base - yv * k) + 0.5;
        ctx.beginPath(); ctx.moveTo(LEFT, yy); ctx.lineTo(W - RIGHT, yy); ctx.stroke();
        ctx.fillText(bytes(yv * U), 2, yy);
      }
      var step = niceStep(v1 - v0, npx), origin = Math.ceil((v0 + off) / step) * step;
      for (var tt = origin; tt <= v1 + off; tt += step) {
        var xx = Math.round(x(tt - off)) + 0.5;
        ctx.beginPath(); ctx.moveTo(xx, base); ctx.lineTo(xx, base + 4); ctx.stroke();
        ctx.fillText(tt === origin ? fmt(tt) : '+' + fmt(tt - origin), xx + 2, base + 12);
      }
      var pkx = x(T.peak_t);
      if (pkx >= LEFT && pkx <= W - RIGHT) {
        ctx.strokeStyle = '#c0392b'; ctx.setLineDash([4, 3]);
        ctx.beginPath(); ctx.moveTo(pkx + 0.5, TOP); ctx.lineTo(pkx + 0.5, base); ctx.stroke();
        ctx.setLineDash([]); ctx.fillStyle = '#c0392b';
        ctx.fillText('peak ' + bytes(T.peak), Math.min(pkx + 4, W - 110), TOP + 6);
      }
    }
    function legendHtml() {
      legend.innerHTML = T.groups[grp].keys.map(function (key, s) {
        return '<span><i style="background:' + COL[s % COL.length] + '"></i>' + esc(key) + '</span>';
      }).join('');
    }
    function peakHtml() {
      var P = T.at_peak[grp] || [], h = '<h3>Live at the peak (' + bytes(T.peak) + '), by ' + names[grp] + '</h3>';
      h += '<table class="sortable mem-at-peak"><thead><tr><th>' + names[grp] + '</th><th>bytes</th><th>allocations</th>' +
        '<th>allocated in all</th></tr></thead><tbody>' + P.map(function (r) {
          return '<tr><td class="n" title="' + esc(r.name) + '">' + esc(r.name) + '</td><td data-v="' + r.bytes + '">' +
            bytes(r.bytes) + '</td><td data-v="' + r.allocations + '">' + r.allocations + '</td><td data-v="' +
            r.allocated_in_all + '">' + bytes(r.allocated_in_all) + '</td></tr>';
        }).join('') + '</tbody></table>';
      h += '<h3>Allocation stacks at the peak (the stacks that held the most)</h3>' + (T.peak_stacks || []).map(function (s) {
        return '<details class="mem-stack"><summary>' + bytes(s.bytes) + ' in ' + s.allocations + ' allocation' +
          (s.allocations === 1 ? '' : 's') + ' by ' + esc(s['function']) + ' at <code>' + esc(s.place) +
          '</code></summary><pre>' + esc(s.stack) + '</pre></details>';
      }).join('');
      div.querySelector('.mem-peak').innerHTML = h;
    }
    function zoom(a, b) {
      if (b - a < 100) { var m = (a + b) / 2; a = m - 50; b = m + 50; }
      v0 = Math.max(a, -0.05 * T.end); v1 = Math.min(b, T.end * 1.05 + 100); draw();
    }
    function at(tt) { // the values of the bin drawn at page time tt
      var b = binAt(tt - off), V = series[grp], o = {total: 0, by: {}};
      if (b < 0) return o;
      T.groups[grp].keys.forEach(function (key, s) { o.by[key] = V[s][b] * U; o.total += V[s][b] * U; });
      return o;
    }
    sel.onchange = function () { grp = sel.value; legendHtml(); peakHtml(); draw(); };
    div.querySelector('.mem-reset').onclick = function () { zoom(0, T.end); };
    cv.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var r = cv.getBoundingClientRect(), tt = tAt(ev.clientX - r.left), f = Math.exp((ev.deltaY || 0) * 0.002);
      zoom(tt - (tt - v0) * f, tt + (v1 - tt) * f);
    }, {passive: false});
    var drag = null;
    cv.addEventListener('mousedown', function (ev) { drag = {x: ev.clientX, v0: v0, v1: v1}; });
    window.addEventListener('mouseup', function () { drag = null; });
    cv.addEventListener('dblclick', function () { zoom(0, T.end); });
    cv.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
    cv.addEventListener('mousemove', function (ev) {
      var r = cv.getBoundingClientRect(), mx = ev.clientX - r.left;
      if (drag) {
        var d = (drag.x - ev.clientX) * (drag.v1 - drag.v0) / (W - LEFT - RIGHT);
        v0 = drag.v0 + d; v1 = drag.v1 + d; draw(); return;
      }
      var px = Math.floor(mx - LEFT);
      if (!cols || px < 0 || px >= cols.length || cols[px] < 0) { tip.style.display = 'none'; return; }
      var b = cols[px], V = series[grp], keys = T.groups[grp].keys, rows = [];
      keys.forEach(function (key, s) { if (V[s][b]) rows.push([V[s][b] * U, key, s]); });
      rows.sort(function (p, q) { return q[0] - p[0]; });
      tip.innerHTML = '<b>' + bytes(totals[grp][b] * U) + '</b> live at ' + fmt(off + t[b]) + '<br>' +
        rows.map(function (q) {
          return '<i style="display:inline-block;width:10px;height:10px;background:' + COL[q[2] % COL.length] +
            '"></i> ' + bytes(q[0]) + ' ' + esc(q[1]);
        }).join('<br>');
      tip.style.display = 'block';
      tip.style.left = Math.min(mx + 14, W - 300) + 'px'; tip.style.top = (ev.clientY - r.top + 14) + 'px';
    });
    window.addEventListener('resize', draw);
    legendHtml(); peakHtml(); draw();
    return {
      zoom: function (a, b) { zoom(a - off, b - off); },
      view: function () { return [v0 + off, v1 + off]; },
      keys: function () { return T.groups[grp].keys.slice(); },
      group: function (g) { sel.value = g; sel.onchange(); },
      at: at,
      peak: function () { return [off + T.peak_t, T.peak]; },
      columns: function () { var k = 0; for (var i = 0; cols && i < cols.length; i++) k += cols[i] >= 0; return k; },
      bins: n
    };
  }
})();
