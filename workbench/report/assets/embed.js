
/* workbench report: draws each inlined Vega-Lite spec with the bundled vega-embed (offline).
   The chart's theme follows the reader's colour scheme (prefers-color-scheme): the background,
   axis, grid, legend and title colours come from the page's own CSS variables (--card, --ink,
   --muted, --line), so in dark mode a chart is not a white box; a change of scheme redraws. */
(function () {
  var charts = document.querySelectorAll('.wb-vega');
  if (typeof vegaEmbed !== 'function') { return; }
  var scheme = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

  function cssVar(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  function theme() {
    var dark = !!(scheme && scheme.matches);
    var bg = cssVar('--card', '#ffffff');
    var t = {dark: dark, bg: bg, config: {background: bg}};
    if (dark) {
      var ink = cssVar('--ink', '#e6e9ed'), muted = cssVar('--muted', '#a9b1bb'),
        line = cssVar('--line', '#38404a');
      t.config.axis = {domainColor: muted, tickColor: muted, gridColor: line, labelColor: ink,
        titleColor: ink};
      t.config.legend = {labelColor: ink, titleColor: ink};
      t.config.title = {color: ink, subtitleColor: muted};
    }
    return t;
  }

  /* dark mode: the marks' colours named in usermeta.wb_dark_colors (figures.DARK_COLORS: the
     valid-mean blue and the zero-filled red, lighter) are swapped wherever a mark, a value or a
     scale range names them; marks drawn in the page's white (the heatmap's cell borders, a
     hollow point's fill) take the chart's background. Text on a heatmap cell keeps its colour:
     only mark.stroke and encoding.fill are read for white. */
  function recolour(spec, bg, swap) {
    (spec.layer || []).forEach(function (layer) { recolour(layer, bg, swap); });
    var mark = spec.mark;
    if (mark && typeof mark === 'object') {
      if (mark.stroke === 'white') { mark.stroke = bg; }
      ['color', 'fill', 'stroke'].forEach(function (k) {
        if (swap[mark[k]] && mark[k] !== 'white') { mark[k] = swap[mark[k]]; }
      });
    }
    var enc = spec.encoding || {};
    Object.keys(enc).forEach(function (channel) {
      var e = enc[channel];
      if (!e || typeof e !== 'object') { return; }
      if (channel === 'fill' && e.value === 'white') { e.value = bg; }
      [e, e.condition].forEach(function (x) {
        if (x && typeof x.value === 'string' && x.value !== 'white' && swap[x.value]) {
          x.value = swap[x.value];
        }
      });
      if (e.scale && Array.isArray(e.scale.range)) {
        e.scale.range = e.scale.range.map(function (c) { return (c !== 'white' && swap[c]) || c; });
      }
    });
  }

  function themed(source) {
    var t = theme();
    var spec = JSON.parse(source);
    var config = spec.config || {};
    Object.keys(t.config).forEach(function (key) {
      var mine = t.config[key];
      config[key] = (mine && typeof mine === 'object')
        ? Object.assign({}, config[key] || {}, mine) : mine;
    });
    spec.config = config;
    if (t.dark) { recolour(spec, t.bg, (spec.usermeta || {}).wb_dark_colors || {}); }
    return {spec: spec, dark: t.dark, bg: t.bg};
  }

  function draw(el) {
    var source = el.querySelector('script.wb-vega-spec').textContent;
    var target = el.querySelector('.wb-vega-target');
    var t = themed(source);
    if (el._wbView) { el._wbView.finalize(); el._wbView = null; }
    return vegaEmbed(target, t.spec, {actions: false, renderer: 'svg', mode: 'vega-lite',
                                      tooltip: {theme: t.dark ? 'dark' : 'light'}})
      .then(function (result) {
        el._wbView = result.view;
        el.setAttribute('data-theme', t.dark ? 'dark' : 'light');
        el.setAttribute('data-background', t.bg);
        el.classList.add('wb-vega-ready');
      })
      .catch(function (err) {
        el.classList.add('wb-vega-failed');
        target.textContent = 'interactive chart unavailable: ' + err;
      });
  }

  Array.prototype.forEach.call(charts, draw);
  if (scheme) {
    var redraw = function () {
      Array.prototype.forEach.call(charts, function (el) {
        if (el.classList.contains('wb-vega-ready')) { draw(el); }
      });
    };
    if (scheme.addEventListener) { scheme.addEventListener('change', redraw); }
    else if (scheme.addListener) { scheme.addListener(redraw); }
  }
})();
