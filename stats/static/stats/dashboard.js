/* Statistics dashboard: draws /api/v1/stats/report into the page, and pages the members with
 * /api/v1/stats/members. Chart.js (vendored, MIT) draws the charts; the rest is plain DOM,
 * written with textContent only. Texts come translated from the page's data-text-* attributes.
 * window.statsDashboard exposes the report and the charts (the browser tests read them). */
(function () {
  "use strict";
  const root = document.getElementById("stats-dashboard");
  if (!root) return;
  const status = document.getElementById("stats-status");
  const text = root.dataset;
  const chatId = text.chatId;
  const PAGE = 25;
  const state = { offset: 0, order: "messages", total: 0 };
  if (!chatId) {
    status.textContent = text.textNoChat;
    return;
  }
  const range = { chat_id: chatId, start: text.start, end: text.end };
  const membersUrl = text.reportUrl.replace(/report$/, "members");

  function el(tag, content, className) {
    const node = document.createElement(tag);
    if (content !== undefined && content !== null) node.textContent = String(content);
    if (className) node.className = className;
    return node;
  }

  function cell(row, content, className) {
    const td = el("td", content, className);
    row.appendChild(td);
    return td;
  }

  function body(id) {
    const tbody = document.querySelector("#" + id + " tbody");
    tbody.replaceChildren();
    return tbody;
  }

  function number(value) {
    return value === null || value === undefined ? "–" : Number(value).toLocaleString();
  }

  function getJson(url, params) {
    return fetch(url + "?" + new URLSearchParams(params).toString(), { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      });
  }

  // A change is coloured by what it means, not by its sign: more leaves is bad news.
  const UP_IS_BAD = { leaves: true };

  function card(label, value, previous, key) {
    const box = el("div", null, "stats-card");
    box.dataset.figure = key;
    box.appendChild(el("div", label, "label"));
    box.appendChild(el("div", number(value), "value"));
    if (previous !== null && previous !== undefined && value !== null) {
      const change = value - previous;
      const percent = previous ? " (" + (change >= 0 ? "+" : "") + Math.round((100 * change) / previous) + "%)" : "";
      const better = UP_IS_BAD[key] ? change < 0 : change > 0;
      const worse = UP_IS_BAD[key] ? change > 0 : change < 0;
      const delta = el("div", (change >= 0 ? "+" : "") + number(change) + percent + " · " + text.textPrevious + " " + number(previous),
        "delta " + (better ? "good" : worse ? "bad" : ""));
      box.appendChild(delta);
    }
    return box;
  }

  function renderCards(report) {
    const now = report.totals;
    const before = report.previous || {};
    const growth = report.growth.days.filter(function (d) { return d.members !== null; });
    const cards = [
      card(text.textMessages, now.messages, before.messages, "messages"),
      card(text.textActive, now.active_members, before.active_members, "active"),
    ];
    if (report.growth.available) {
      cards.push(card(text.textJoins, now.joins, before.joins, "joins"));
      cards.push(card(text.textLeaves, now.leaves, before.leaves, "leaves"));
      if (growth.length) cards.push(card(text.textMembers, growth[growth.length - 1].members, growth[0].members, "members"));
    }
    document.getElementById("stats-cards").replaceChildren(...cards);
  }

  function themeColour(name, fallback) {
    const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function chartOptions() {
    const fg = themeColour("--body-quiet-color", "#666");
    const grid = themeColour("--hairline-color", "#e5e5e5");
    const axis = { ticks: { color: fg, precision: 0 }, grid: { color: grid }, beginAtZero: true };
    return {
      animation: false,
      maintainAspectRatio: false,
      plugins: { legend: { labels: { color: fg } } },
      scales: { x: { ticks: { color: fg, maxRotation: 0, autoSkip: true }, grid: { color: grid } }, y: axis },
    };
  }

  // Long ranges are drawn by week (from Monday) or by month: "auto" picks days up to two
  // months, weeks up to about half a year, months beyond. The report is always per day.
  function groupingFor(days) {
    const chosen = text.grouping || "auto";
    if (chosen !== "auto") return chosen;
    return days.length <= 62 ? "day" : days.length <= 200 ? "week" : "month";
  }

  function periodOf(day, by) {
    if (by === "month") return day.slice(0, 7);
    if (by === "week") {
      const date = new Date(day + "T00:00:00Z");
      date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7));
      return date.toISOString().slice(0, 10);
    }
    return day;
  }

  // Each period: the sum of `summed`, the mean of `averaged`, the last known of `latest`.
  function grouped(days, by, summed, averaged, latest) {
    const periods = [];
    let current = null;
    for (const day of days) {
      const key = periodOf(day.day, by);
      if (!current || current.day !== key) {
        current = { day: key, count: 0 };
        summed.concat(averaged).forEach(function (name) { current[name] = 0; });
        latest.forEach(function (name) { current[name] = null; });
        periods.push(current);
      }
      current.count += 1;
      summed.concat(averaged).forEach(function (name) { current[name] += day[name] || 0; });
      latest.forEach(function (name) { if (day[name] !== null && day[name] !== undefined) current[name] = day[name]; });
    }
    periods.forEach(function (period) {
      averaged.forEach(function (name) { period[name] = Math.round((10 * period[name]) / period.count) / 10; });
    });
    return periods;
  }

  function renderActivity(report, by) {
    const days = by === "day" ? report.days : grouped(report.days, by, ["messages"], ["members"], []);
    return new window.Chart(document.getElementById("activity-chart"), {
      data: {
        labels: days.map(function (day) { return day.day; }),
        datasets: [
          { type: "bar", label: text.textMessages, data: days.map(function (d) { return d.messages; }), backgroundColor: "#79aec8" },
          { type: "line", label: by === "day" ? text.textActive : text.textActiveAverage, data: days.map(function (d) { return d.members; }), borderColor: "#e69500", backgroundColor: "#e69500", pointRadius: 0 },
        ],
      },
      options: chartOptions(),
    });
  }

  function renderGrowth(report, by) {
    const missing = document.getElementById("growth-missing");
    if (!report.growth.available) {
      missing.textContent = text.textNoGrowth;
      missing.hidden = false;
      document.getElementById("growth-box").hidden = true;
      return null;
    }
    const days = by === "day" ? report.growth.days : grouped(report.growth.days, by, ["joins", "leaves"], [], ["members"]);
    const options = chartOptions();
    const datasets = [
      { type: "bar", label: text.textJoins, data: days.map(function (d) { return d.joins; }), backgroundColor: "#2e7d32" },
      { type: "bar", label: text.textLeaves, data: days.map(function (d) { return -d.leaves; }), backgroundColor: "#c62828" },
    ];
    if (days.some(function (d) { return d.members !== null; })) {  // counts fetched once a day
      // Anchored at zero: a chat of 180 members that gains 3 is not drawn as a jump.
      options.scales.members = { position: "right", beginAtZero: true, ticks: { color: options.scales.y.ticks.color, precision: 0 }, grid: { display: false } };
      datasets.push({ type: "line", label: text.textMembers, yAxisID: "members", data: days.map(function (d) { return d.members; }), borderColor: "#79aec8", spanGaps: true, pointRadius: 0 });
    }
    return new window.Chart(document.getElementById("growth-chart"), {
      data: { labels: days.map(function (d) { return d.day; }), datasets: datasets },
      options: options,
    });
  }

  // Retention cohorts (the community app's /retention/weeks): joined in week N, and of them
  // still here and wrote after 7 and 30 days; a figure not knowable yet is a gap, not a zero.
  function loadCohorts() {
    const box = document.getElementById("cohorts-box");
    if (!text.cohortsUrl || !box) return Promise.resolve(null);
    return getJson(text.cohortsUrl, { chat_id: chatId, weeks: 12 }).then(function (weeks) {
      box.hidden = false;
      const series = [
        ["joined", text.textCohortJoined, "#79aec8"],
        ["still_members_after_7_days", text.textCohortStill7, "#2e7d32"],
        ["still_members_after_30_days", text.textCohortStill30, "#1b5e20"],
        ["wrote_after_7_days", text.textCohortWrote7, "#e69500"],
        ["wrote_after_30_days", text.textCohortWrote30, "#a86b00"],
      ];
      const chart = new window.Chart(document.getElementById("cohorts-chart"), {
        type: "bar",
        data: {
          labels: weeks.map(function (week) { return week.week_start; }),
          datasets: series.map(function (entry) {
            return { label: entry[1], data: weeks.map(function (week) { return week[entry[0]]; }), backgroundColor: entry[2] };
          }),
        },
        options: chartOptions(),
      });
      window.statsDashboard = Object.assign(window.statsDashboard || {}, { cohorts: weeks, cohortsChart: chart });
      return chart;
    }).catch(function (error) {
      const missing = document.getElementById("cohorts-missing");
      missing.textContent = text.textFailed + " " + error.message;
      missing.hidden = false;
    });
  }

  function renderMembers(members) {
    const tbody = body("top-members");
    members.forEach(function (member, index) {
      const tr = document.createElement("tr");
      tr.dataset.userId = member.user_id;
      cell(tr, state.offset + index + 1, "num");
      // The member's own page (messages over time, warnings, tickets, joins and leaves).
      const name = cell(tr, "", "name");
      const link = el("a", member.name || (member.username ? "@" + member.username : "#" + member.user_id), "member-link");
      link.href = text.memberUrl.replace("CHAT", chatId).replace("USER", member.user_id);
      name.appendChild(link);
      if (member.name && member.username) name.appendChild(document.createTextNode(" (@" + member.username + ")"));
      cell(tr, member.messages, "num messages");
      cell(tr, member.words, "num words");
      cell(tr, member.voice_minutes.toFixed(1), "num voice-minutes");
      const seen = member.last_seen ? new Date(member.last_seen).toLocaleString() : (member.last_day || "");
      cell(tr, seen, "last-seen");
      tbody.appendChild(tr);
    });
    const last = state.offset + members.length;
    document.getElementById("members-range").textContent = state.total
      ? text.textPage.replace("%(first)s", state.offset + 1).replace("%(last)s", last).replace("%(total)s", state.total)
      : "";
    document.getElementById("members-prev").disabled = state.offset === 0;
    document.getElementById("members-next").disabled = last >= state.total;
  }

  function loadMembers() {
    const params = Object.assign({ limit: PAGE, offset: state.offset, order: state.order }, range);
    return getJson(membersUrl, params).then(renderMembers).catch(function (error) {
      status.textContent = text.textFailed + " " + error.message;
    });
  }

  function renderHeatmap(report) {
    const table = document.getElementById("week-heatmap");
    const head = document.createElement("tr");
    head.appendChild(el("th", ""));
    for (let hour = 0; hour < 24; hour++) head.appendChild(el("th", String(hour).padStart(2, "0")));
    table.tHead.replaceChildren(head);
    const week = report.hours.week;
    const max = Math.max(1, ...week.flat());
    const names = text.weekdays.split(" ");
    const tbody = body("week-heatmap");
    week.forEach(function (hours, weekday) {
      const tr = document.createElement("tr");
      tr.dataset.weekday = weekday;
      tr.appendChild(el("th", names[weekday] || weekday));
      hours.forEach(function (count, hour) {
        const td = cell(tr, count || "", "num");
        td.dataset.hour = hour;
        td.dataset.count = count;
        td.title = (names[weekday] || weekday) + " " + String(hour).padStart(2, "0") + ":00 · " + count;
        td.style.backgroundColor = "rgba(121, 174, 200, " + (count / max).toFixed(2) + ")";
      });
      tbody.appendChild(tr);
    });
  }

  function renderDays(report) {
    const tbody = body("days");
    const sources = {};
    for (const day of report.days) {
      sources[day.source_label] = (sources[day.source_label] || 0) + 1;
      const tr = document.createElement("tr");
      tr.dataset.day = day.day;
      tr.dataset.source = day.source;
      cell(tr, day.day);
      cell(tr, day.messages, "num messages");
      cell(tr, day.words, "num words");
      cell(tr, day.members, "num members");
      cell(tr, day.source_label, "source source-" + day.source);
      // Days not verified: the KV daily total next to the one read, when they differ.
      const behind = day.live_total !== null && day.live_total !== day.messages ? "; KV " + day.live_total : "";
      cell(tr, day.status + (day.reason ? " (" + day.reason + ")" : "") + behind, "status");
      cell(tr, day.poisoned.join(", "), day.poisoned.length ? "poisoned" : "");
      tbody.appendChild(tr);
    }
    document.getElementById("quality-summary").textContent = "(" + Object.entries(sources).map(function (entry) {
      return entry[1] + " × " + entry[0];
    }).join(", ") + ")";
    document.getElementById("quality-line").textContent = report.completeness ? report.completeness.line : "";
  }

  document.getElementById("members-prev").addEventListener("click", function () {
    state.offset = Math.max(0, state.offset - PAGE);
    loadMembers();
  });
  document.getElementById("members-next").addEventListener("click", function () {
    state.offset += PAGE;
    loadMembers();
  });
  document.getElementById("members-order").addEventListener("change", function (event) {
    state.order = event.target.value;
    state.offset = 0;
    loadMembers();
  });

  getJson(text.reportUrl, Object.assign({ limit: PAGE }, range))
    .then(function (report) {
      state.total = report.members_total;
      renderCards(report);
      renderDays(report);
      renderMembers(report.members);
      renderHeatmap(report);
      const by = groupingFor(report.days);
      const activity = renderActivity(report, by);
      const growth = renderGrowth(report, by);
      window.statsDashboard = Object.assign(window.statsDashboard || {}, { report: report, chart: activity, growthChart: growth, grouping: by });
      status.textContent = report.totals.messages === 0 ? text.textEmpty : "";
      return loadCohorts();
    })
    .then(function () {
      if (root.dataset.loaded !== "error") root.dataset.loaded = "true";
    })
    .catch(function (error) {
      status.textContent = text.textFailed + " " + error.message;
      root.dataset.loaded = "error";
    });
})();
