/* caplab sizing report: draws the charts (plotly.js, loaded beside this page) and sorts tables.
   When every chart is drawn, <body data-charts-rendered="N"> tells a test (or a script) so. */
(function () {
  "use strict";
  /* Not plotly's own "responsive": it resizes hidden plots too, and throws when printing hides them. */
  var CONFIG = { displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function readCharts() {
    var node = document.getElementById("caplab-charts");
    return node ? JSON.parse(node.textContent) : {};
  }

  function draw(div, figure) {
    return Plotly.react(div, figure.data, figure.layout, CONFIG);
  }

  function drawAll(charts) {
    var plots = Array.prototype.slice.call(document.querySelectorAll(".plot[data-chart]"));
    if (typeof Plotly === "undefined") {
      plots.forEach(function (div) {
        div.innerHTML = '<p class="missing">The interactive chart needs plotly.min.js beside this page; ' +
          "report.md has the same charts as SVG files.</p>";
      });
      document.body.setAttribute("data-charts-rendered", "0");
      document.body.setAttribute("data-charts-missing", "plotly.min.js");
      return;
    }
    var pending = plots.map(function (div) {
      var figure = charts[div.getAttribute("data-chart")];
      return figure ? draw(div, figure) : Promise.resolve(null);
    });
    Promise.all(pending).then(function () {
      document.body.setAttribute("data-charts-rendered", String(plots.length));
    });
    document.querySelectorAll("select[data-explorer]").forEach(function (select) {
      select.addEventListener("change", function () {
        var div = document.getElementById(select.getAttribute("data-explorer"));
        var figure = charts[select.value];
        if (div && figure) {
          div.setAttribute("data-chart", select.value);
          draw(div, figure);
        }
      });
    });
    var timer = null;
    window.addEventListener("resize", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        plots.forEach(function (div) {
          if (div.offsetParent !== null && div.querySelector(".main-svg")) { Plotly.Plots.resize(div); }
        });
      }, 150);
    });
  }

  function sortKey(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw !== null && raw !== "") { return { n: parseFloat(raw), s: "" }; }
    return { n: NaN, s: cell.textContent.trim().toLowerCase() };
  }

  function compare(a, b) {
    var aNum = !isNaN(a.n), bNum = !isNaN(b.n);
    if (aNum && bNum) { return a.n - b.n; }
    if (aNum !== bNum) { return aNum ? -1 : 1; }   /* figures before blanks */
    return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  }

  function sortable(table) {
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (th, column) {
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var order = compare(sortKey(r1.cells[column]), sortKey(r2.cells[column]));
          return ascending ? order : -order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("table.sortable").forEach(sortable);
    drawAll(readCharts());
  });
})();
