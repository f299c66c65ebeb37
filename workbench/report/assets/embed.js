
(function () {
  var charts = document.querySelectorAll('.wb-vega');
  if (typeof vegaEmbed !== 'function') { return; }
  Array.prototype.forEach.call(charts, function (el) {
    var spec = JSON.parse(el.querySelector('script.wb-vega-spec').textContent);
    var target = el.querySelector('.wb-vega-target');
    vegaEmbed(target, spec, {actions: false, renderer: 'svg', mode: 'vega-lite'})
      .then(function () { el.classList.add('wb-vega-ready'); })
      .catch(function (err) {
        el.classList.add('wb-vega-failed');
        target.textContent = 'interactive chart unavailable: ' + err;
      });
  });
})();
