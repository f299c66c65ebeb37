/* workbench report: sortable, filterable tables with CSV export, and drill-down from a
   scorecard or census row to the rows behind it. Offline, no libraries. Text is only ever
   read and written through textContent, never innerHTML, so no string from the input can
   become markup or script here. */
(function () {
  'use strict';
  var MIN_ROWS = 4;

  function cellText(td) { return (td.textContent || '').replace(/\s+/g, ' ').trim(); }

  function sortKey(text) {
    var m = text.replace(/,/g, '').match(/^[+\u2212-]?\d+(?:\.\d+)?/);
    if (m) { return {num: true, v: parseFloat(m[0].replace('\u2212', '-'))}; }
    if (text === '-' || text === '') { return {num: true, v: null}; }
    return {num: false, v: text.toLowerCase()};
  }

  function compare(a, b) {
    if (a.v === null && b.v === null) { return 0; }
    if (a.v === null) { return 1; }   /* undefined last, whatever the direction */
    if (b.v === null) { return -1; }
    if (a.num && b.num) { return a.v - b.v; }
    return String(a.v).localeCompare(String(b.v));
  }

  /* CSV injection (OWASP): a spreadsheet reads a field that begins with = + - @ TAB or CR as a
     formula, so such a field is exported behind a single quote, unless it is a number as the
     report prints one (-0.12, +1.50, -1.5e-3, 12%) or the lone '-' that stands for no value;
     then it is quoted as any field. workbench.text.csv_cell is the same rule in Python. */
  var FORMULA = /^[=+\-@\t\r]/;
  var NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?%?$/;

  function csvField(s) {
    if (FORMULA.test(s) && s !== '-' && !NUMBER.test(s)) { s = "'" + s; }
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  function tableCsv(table) {
    var lines = [];
    var heads = table.querySelectorAll('thead th');
    lines.push(Array.prototype.map.call(heads, function (th) { return csvField(cellText(th)); }).join(','));
    Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
      if (tr.hidden) { return; }
      lines.push(Array.prototype.map.call(tr.cells, function (td) { return csvField(cellText(td)); }).join(','));
    });
    return lines.join('\r\n') + '\r\n';
  }

  function slug(table, i) {
    var h = table.closest('section, .wb-page') && findHeading(table);
    return (h || 'table-' + i).replace(/[^A-Za-z0-9_-]+/g, '-').replace(/^-|-$/g, '').toLowerCase() || 'table';
  }

  function findHeading(el) {
    var node = el.closest('.wb-table-wrap') || el;
    while (node) {
      var prev = node.previousElementSibling;
      while (prev) {
        if (/^H[23]$/.test(prev.tagName)) { return cellText(prev); }
        var inner = prev.querySelector && prev.querySelectorAll('h2, h3');
        if (inner && inner.length) { return cellText(inner[inner.length - 1]); }
        prev = prev.previousElementSibling;
      }
      node = node.parentElement;
      if (node && node.classList.contains('wb-page')) { break; }
    }
    return null;
  }

  function applyFilters(table) {
    var text = (table._wbText || '').toLowerCase();
    var cols = table._wbCols || {};
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
      var ok = !text || cellText(tr).toLowerCase().indexOf(text) !== -1;
      Object.keys(cols).forEach(function (idx) {
        var td = tr.cells[+idx];
        if (!td || cellText(td) !== cols[idx]) { ok = false; }
      });
      tr.hidden = !ok;
      if (ok) { shown += 1; }
    });
    if (table._wbCount) {
      table._wbCount.textContent = shown + ' of ' + table.tBodies[0].rows.length + ' rows';
    }
    return shown;
  }

  function enhance(table, i) {
    var body = table.tBodies[0];
    if (!body || (body.rows.length < MIN_ROWS && !table.classList.contains('wb-rows'))) { return; }
    table.classList.add('wb-interactive');
    var bar = document.createElement('div');
    bar.className = 'wb-toolbar';
    var input = document.createElement('input');
    input.type = 'search';
    input.className = 'wb-filter';
    input.placeholder = 'filter rows';
    input.setAttribute('aria-label', 'filter this table');
    input.addEventListener('input', function () { table._wbText = input.value; applyFilters(table); });
    var csv = document.createElement('button');
    csv.type = 'button';
    csv.className = 'wb-csv';
    csv.textContent = 'CSV';
    csv.title = 'download the rows shown as CSV';
    csv.addEventListener('click', function () {
      var blob = new Blob([tableCsv(table)], {type: 'text/csv;charset=utf-8'});
      var a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = slug(table, i) + '.csv';
      document.body.appendChild(a);
      a.click();
      setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
    });
    var count = document.createElement('span');
    count.className = 'wb-count';
    table._wbCount = count;
    var note = document.createElement('span');
    note.className = 'wb-drill-note';
    table._wbNote = note;
    table._wbBar = bar;
    bar.appendChild(input); bar.appendChild(csv); bar.appendChild(count); bar.appendChild(note);
    var wrap = table.closest('.wb-table-wrap') || table;
    wrap.parentNode.insertBefore(bar, wrap);
    Array.prototype.forEach.call(table.querySelectorAll('thead th'), function (th, col) {
      th.tabIndex = 0;
      th.classList.add('wb-sortable');
      th.setAttribute('aria-sort', 'none');
      function sort() {
        var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
        Array.prototype.forEach.call(table.querySelectorAll('thead th'), function (o) { o.setAttribute('aria-sort', 'none'); });
        th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
        var rows = Array.prototype.slice.call(body.rows).map(function (tr, k) {
          return {tr: tr, k: k, key: sortKey(tr.cells[col] ? cellText(tr.cells[col]) : '')};
        });
        rows.sort(function (a, b) {
          var c = compare(a.key, b.key);
          if (a.key.v !== null && b.key.v !== null) { c *= dir; }
          return c || a.k - b.k;
        });
        rows.forEach(function (r) { body.appendChild(r.tr); });
      }
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); } });
    });
    applyFilters(table);
  }

  /* drill-down: a row with data-drill='{"judge": "...", "variant": "..."}' filters the rows
     appendix to those values and scrolls to it */
  function drill(spec, label) {
    var rows = document.querySelector('table.wb-rows');
    if (!rows) { return; }
    var heads = Array.prototype.map.call(rows.querySelectorAll('thead th'), cellText);
    var cols = {};
    Object.keys(spec).forEach(function (name) {
      var idx = heads.indexOf(name);
      if (idx !== -1 && spec[name] !== null) { cols[idx] = String(spec[name]); }
    });
    rows._wbCols = cols;
    var shown = applyFilters(rows);
    var d = rows.closest('details');
    if (d) { d.open = true; }
    if (rows._wbNote) {
      rows._wbNote.textContent = '';
      var t = document.createElement('span');
      var listed = rows.tBodies[0].rows.length, total = +(rows.getAttribute('data-total') || listed);
      var cellTotal = null;
      try {
        var totals = JSON.parse(rows.getAttribute('data-cell-totals') || '{}');
        var key = (spec.judge == null ? '' : String(spec.judge)) + '\x1f' + (spec.variant == null ? '' : String(spec.variant));
        if (Object.prototype.hasOwnProperty.call(totals, key)) { cellTotal = totals[key]; }
      } catch (e) { cellTotal = null; }
      t.textContent = 'rows behind ' + label + ': ' + shown +
        (total > listed
          ? (cellTotal !== null ? ' listed of ' + cellTotal : '') + ' (the listing holds ' + listed + ' of ' + total +
            ' rows, every cell\'s held-out rows first; rows.parquet has every one) '
          : ' ');
      var clear = document.createElement('button');
      clear.type = 'button';
      clear.className = 'wb-clear';
      clear.textContent = 'show all';
      clear.addEventListener('click', function () { rows._wbCols = {}; rows._wbNote.textContent = ''; applyFilters(rows); });
      rows._wbNote.appendChild(t); rows._wbNote.appendChild(clear);
    }
    (rows._wbBar || rows.closest('.wb-table-wrap') || rows).scrollIntoView({block: 'start'});
  }

  Array.prototype.forEach.call(document.querySelectorAll('table.wb-table'), enhance);
  Array.prototype.forEach.call(document.querySelectorAll('tr[data-drill]'), function (tr) {
    var spec;
    try { spec = JSON.parse(tr.getAttribute('data-drill')); } catch (e) { return; }
    tr.classList.add('wb-drillable');
    tr.tabIndex = 0;
    tr.title = 'show the rows behind this cell';
    var label = Object.keys(spec).filter(function (k) { return spec[k] !== null; })
      .map(function (k) { return k + ' ' + spec[k]; }).join(', ');
    tr.addEventListener('click', function (e) { if (e.target.closest('a, button, summary')) { return; } drill(spec, label); });
    tr.addEventListener('keydown', function (e) { if (e.key === 'Enter') { drill(spec, label); } });
  });

  /* print: every collapsed part expanded, restored afterwards */
  var opened = [];
  window.addEventListener('beforeprint', function () {
    opened = Array.prototype.filter.call(document.querySelectorAll('details:not([open])'), function (d) { d.open = true; return true; });
  });
  window.addEventListener('afterprint', function () { opened.forEach(function (d) { d.open = false; }); opened = []; });
})();
