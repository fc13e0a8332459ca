/* Statistics dashboard: draws the report of /api/v1/stats/report into the page.
 * Chart.js (vendored, MIT) draws the messages-per-day chart; the tables are plain DOM.
 * window.statsDashboard exposes the report and the chart (the browser tests read them). */
(function () {
  "use strict";
  const root = document.getElementById("stats-dashboard");
  const status = document.getElementById("stats-status");
  if (!root) return;
  const chatId = root.dataset.chatId;
  if (!chatId) {
    status.textContent = "No chat has statistics yet.";
    return;
  }
  const params = new URLSearchParams({ chat_id: chatId, start: root.dataset.start, end: root.dataset.end, limit: "100" });

  function cell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function body(id) {
    const tbody = document.querySelector("#" + id + " tbody");
    tbody.replaceChildren();
    return tbody;
  }

  function renderDays(report) {
    const tbody = body("days");
    for (const day of report.days) {
      const tr = document.createElement("tr");
      tr.dataset.day = day.day;
      tr.dataset.source = day.source;
      cell(tr, day.day);
      cell(tr, day.messages, "num messages");
      cell(tr, day.words, "num words");
      cell(tr, day.members, "num members");
      cell(tr, day.source_label, "source source-" + day.source);
      // Days not verified: the KV daily total next to the one read, when they differ.
      const behind = day.live_total !== null && day.live_total !== day.messages
        ? "; KV total " + day.live_total + " messages" : "";
      cell(tr, day.status + (day.reason ? " (" + day.reason + ")" : "") + behind, "status");
      cell(tr, day.poisoned.join(", "), day.poisoned.length ? "poisoned" : "");
      tbody.appendChild(tr);
    }
  }

  function renderMembers(report) {
    const tbody = body("top-members");
    report.members.forEach(function (member, index) {
      const tr = document.createElement("tr");
      tr.dataset.userId = member.user_id;
      cell(tr, index + 1, "num");
      cell(tr, member.name + (member.username ? " (@" + member.username + ")" : ""), "name");
      cell(tr, member.messages, "num messages");
      cell(tr, member.words, "num words");
      cell(tr, member.voice_minutes.toFixed(1), "num voice-minutes");
      cell(tr, member.video_notes, "num video-notes");
      cell(tr, member.profanity, "num profanity");
      cell(tr, [member.violations_low, member.violations_medium, member.violations_high].join(" / "), "num violations");
      tbody.appendChild(tr);
    });
  }

  function renderHeatmap(report) {
    const table = document.getElementById("hour-heatmap");
    const head = document.createElement("tr");
    cell(head, "Day");
    for (let hour = 0; hour < 24; hour++) cell(head, String(hour).padStart(2, "0"));
    table.tHead.replaceChildren(head);
    const max = Math.max(1, ...report.hours.days.flatMap(function (row) { return row.hours; }));
    const tbody = body("hour-heatmap");
    for (const row of report.hours.days) {
      const tr = document.createElement("tr");
      tr.dataset.day = row.day;
      cell(tr, row.day);
      row.hours.forEach(function (count, hour) {
        const td = cell(tr, count || "", "num");
        td.dataset.hour = hour;
        td.dataset.count = count;
        td.style.backgroundColor = "rgba(31, 119, 180, " + (count / max).toFixed(2) + ")";
      });
      tbody.appendChild(tr);
    }
  }

  function renderCoverage(report) {
    const tbody = body("coverage");
    for (const day of report.coverage) {
      const tr = document.createElement("tr");
      tr.dataset.day = day.day;
      cell(tr, day.day);
      cell(tr, day.source, "source source-" + day.source);
      cell(tr, day.status, "status");
      cell(tr, day.reason, "reason");
      const parts = Object.entries(day.categories).map(function (entry) {
        return entry[0] + ": " + entry[1] + (day.poisoned.includes(entry[0]) ? " (poisoned)" : "");
      });
      cell(tr, parts.join(", "), "categories");
      tbody.appendChild(tr);
    }
  }

  function renderChart(report) {
    const colours = { database: "#1f7a1f", live: "#e69500", database_unverified: "#999", none: "#ccc" };
    return new window.Chart(document.getElementById("messages-chart"), {
      type: "bar",
      data: {
        labels: report.days.map(function (day) { return day.day; }),
        datasets: [{
          label: "messages",
          data: report.days.map(function (day) { return day.messages; }),
          backgroundColor: report.days.map(function (day) { return colours[day.source]; }),
        }],
      },
      options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false } } },
    });
  }

  fetch(root.dataset.reportUrl + "?" + params.toString(), { credentials: "same-origin" })
    .then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    })
    .then(function (report) {
      renderDays(report);
      renderMembers(report);
      renderHeatmap(report);
      renderCoverage(report);
      const chart = renderChart(report);
      window.statsDashboard = { report: report, chart: chart };
      status.textContent = "";
      root.dataset.loaded = "true";
    })
    .catch(function (error) {
      status.textContent = "Could not load the statistics: " + error.message;
      root.dataset.loaded = "error";
    });
})();
