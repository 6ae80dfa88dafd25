// kstream console: charts. Pages work without this file; it only draws uPlot charts
// into <div class="chart" data-series="URL|LABEL;URL|LABEL"> from /c/C/api/series JSON.
// A page with a live part (htmx's SSE extension) redraws its charts on each SSE message,
// so the lag chart moves with the live offsets table. The drawn uPlot is kept on the div
// as div.kstreamPlot (its .data is what the browser tests read).
(function () {
  "use strict";
  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }
  var COLOURS = ["#0b5cad", "#cf222e", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#1b7c83", "#57606a"];

  function merge(results) {  // [{label, points: [[ts, v]]}] -> uPlot's [xs, ys1, ys2, ...]
    var stamps = {};
    results.forEach(function (r) { r.points.forEach(function (p) { stamps[p[0]] = true; }); });
    var xs = Object.keys(stamps).map(Number).sort(function (a, b) { return a - b; });
    var data = [xs.map(function (t) { return t / 1000; })];
    results.forEach(function (r) {
      var byTs = {};
      r.points.forEach(function (p) { byTs[p[0]] = p[1]; });
      data.push(xs.map(function (t) { return t in byTs ? byTs[t] : null; }));
    });
    return data;
  }

  var UNITS = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];

  function compact(splits, incr) {  // 12345678 -> "12.3M": short y labels, as many decimals as the step needs
    var top = splits.reduce(function (m, v) { return Math.max(m, Math.abs(v)); }, 0);
    var unit = UNITS.filter(function (u) { return top >= u[0]; })[0] || [1, ""];
    var decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(incr / unit[0]) + 1e-9)));
    return splits.map(function (v) { return v == null ? "" : (v / unit[0]).toFixed(decimals) + unit[1]; });
  }

  function labelsWidth(self, values, axisIdx, cycleNum) {  // uPlot's axis-autosize: the longest label fits
    var axis = self.axes[axisIdx];
    if (cycleNum > 1) { return axis._size; }  // (uPlot re-asks while sizes settle: stop after two rounds)
    var longest = (values || []).reduce(function (a, v) { return v.length > a.length ? v : a; }, "");
    var size = axis.ticks.size + axis.gap;
    if (longest) { self.ctx.font = axis.font[0]; size += self.ctx.measureText(longest).width / uPlot.pxRatio; }
    return Math.ceil(size) + 4;
  }

  function steps(integral) {  // 1, 2, 5 x 10^k: a count (all values integers) gets no fractional step
    var out = [];
    for (var k = integral ? 0 : -6; k <= 15; k++) { [1, 2, 5].forEach(function (m) { out.push(m * Math.pow(10, k)); }); }
    return out;
  }

  function draw(div) {
    if (typeof uPlot === "undefined" || !div.dataset.series || div.kstreamBusy) { return; }
    div.kstreamBusy = true;  // one fetch per chart at a time (SSE messages may come faster)
    var parts = div.dataset.series.split(";").filter(Boolean).map(function (s) {
      var i = s.lastIndexOf("|"); return { url: s.slice(0, i), label: s.slice(i + 1) };
    });
    Promise.all(parts.map(function (p) {
      return fetch(p.url).then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
        .then(function (j) { return { label: p.label, points: j.points }; });
    })).then(function (results) {
      var data = merge(results);
      if (data[0].length === 0) {
        if (!div.kstreamPlot) { div.textContent = "No history yet (the sampler writes it; see docs/CONSOLE.md)."; }
        return;
      }
      if (div.kstreamPlot) { div.kstreamPlot.setData(data); return; }
      div.textContent = "";
      var series = [{}].concat(results.map(function (r, i) {
        return { label: r.label, stroke: COLOURS[i % COLOURS.length], spanGaps: true };
      }));
      var integral = data.slice(1).every(function (ys) {
        return ys.every(function (v) { return v == null || Number.isInteger(v); });
      });
      var look = { stroke: css("--muted"), grid: { stroke: css("--line") } };
      // x: a label per 80 px at most; y: a tick per 40 px at most, compact labels, as wide as they are.
      var axes = [Object.assign({ space: 80 }, look),
                  Object.assign({ space: 40, incrs: steps(integral), size: labelsWidth,
                                  values: function (self, splits, idx, space, incr) { return compact(splits, incr); } }, look)];
      div.kstreamPlot = new uPlot({ title: div.dataset.title || "", width: Math.min(div.clientWidth || 900, 1200), height: 260,
                  series: series, axes: axes }, data, div);
    }).catch(function (err) { div.textContent = "Chart data failed: " + err; div.kstreamPlot = null; })
      .finally(function () { div.kstreamBusy = false; });
  }

  function drawAll() { document.querySelectorAll(".chart[data-series]").forEach(draw); }

  document.addEventListener("DOMContentLoaded", drawAll);
  document.addEventListener("htmx:sseMessage", drawAll);  // a live part changed: so may the history
})();
