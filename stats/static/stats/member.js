/* The member page: the member's messages per day (or week) as a bar chart. The figures come
 * from the page (json_script), the table under the chart holds the same numbers. Chart.js is
 * vendored (MIT). window.memberChart exposes the chart (the browser tests read it). */
(function () {
  "use strict";
  const canvas = document.getElementById("member-chart");
  const source = document.getElementById("member-chart-data");
  if (!canvas || !source || !window.Chart) return;
  const data = JSON.parse(source.textContent);

  function themeColour(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  const fg = themeColour("--body-quiet-color", "#666");
  const grid = themeColour("--hairline-color", "#e5e5e5");
  window.memberChart = new window.Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: [{ label: data.label, data: data.messages, backgroundColor: "#79aec8" }],
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      plugins: { legend: { display: false } },
      scales: {
        x: { ticks: { color: fg, maxRotation: 0, autoSkip: true }, grid: { color: grid } },
        y: { ticks: { color: fg, precision: 0 }, grid: { color: grid }, beginAtZero: true },
      },
    },
  });
})();
