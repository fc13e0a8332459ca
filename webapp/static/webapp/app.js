// The Mini App's only script, served from this site (no CDN). Inside Telegram it reads
// window.Telegram.WebApp when a host injected it, else the launch parameters Telegram puts in
// the URL fragment (#tgWebAppData=...&tgWebAppThemeParams=...); in a plain browser the page
// works without it. It signs in by posting initData (or the Login Widget's answer) with the
// page's CSRF token, applies Telegram's theme colours as --tg-theme-* variables and drives
// Telegram's back button.
(function () {
  "use strict";
  var fragment = new URLSearchParams(window.location.hash.slice(1));
  var webApp = window.Telegram && window.Telegram.WebApp;

  function post(type, data) {
    // Telegram clients listen for these events (core.telegram.org/api/web-events).
    try {
      if (window.TelegramWebviewProxy) {
        window.TelegramWebviewProxy.postEvent(type, JSON.stringify(data || {}));
      } else if (window.parent !== window) {
        window.parent.postMessage(JSON.stringify({eventType: type, eventData: data || {}}), "https://web.telegram.org");
      }
    } catch (e) { /* not inside Telegram */ }
  }

  function applyTheme(params) {
    if (!params) return;
    var root = document.documentElement.style;
    Object.keys(params).forEach(function (key) {
      if (/^[a-z_]+$/.test(key) && /^#[0-9a-fA-F]{3,8}$/.test(params[key])) {
        root.setProperty("--tg-theme-" + key.replace(/_/g, "-"), params[key]);
      }
    });
  }

  function themeParams() {
    if (webApp && webApp.themeParams) return webApp.themeParams;
    var raw = fragment.get("tgWebAppThemeParams");
    if (raw) {
      try { return JSON.parse(raw); } catch (e) { return null; }
    }
    try { return JSON.parse(sessionStorage.getItem("tgTheme") || "null"); } catch (e) { return null; }
  }

  var theme = themeParams();
  if (theme) {
    applyTheme(theme);
    try { sessionStorage.setItem("tgTheme", JSON.stringify(theme)); } catch (e) { /* private mode */ }
  }
  post("web_app_ready");
  post("web_app_expand");
  // Events from Telegram: native clients call window.Telegram.WebView.receiveEvent, the web
  // client posts a message from web.telegram.org.
  var handlers = {
    theme_changed: function (data) {
      if (!data || !data.theme_params) return;
      applyTheme(data.theme_params);
      try { sessionStorage.setItem("tgTheme", JSON.stringify(data.theme_params)); } catch (e) { /* private mode */ }
    }
  };
  function receive(name, data) {
    if (Object.prototype.hasOwnProperty.call(handlers, name)) handlers[name](data);
  }
  window.Telegram = window.Telegram || {};
  if (!window.Telegram.WebView) window.Telegram.WebView = {receiveEvent: receive};
  window.addEventListener("message", function (event) {
    if (event.origin !== "https://web.telegram.org") return;
    try {
      var message = JSON.parse(event.data);
      receive(message.eventType, message.eventData);
    } catch (e) { /* not Telegram's */ }
  });

  function csrf() {
    var input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function signIn(url, fields, status) {
    var body = new URLSearchParams(fields);
    fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: {"X-CSRFToken": csrf()}
    }).then(function (response) {
      return response.json().then(function (data) { return {ok: response.ok, data: data}; });
    }).then(function (result) {
      if (result.ok && result.data.next) {
        window.location.replace(result.data.next);
      } else if (status) {
        status.textContent = result.data.error || "";
      }
    }).catch(function () { if (status) status.textContent = "…"; });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var login = document.getElementById("login");
    var status = document.getElementById("login-status");
    var initData = (webApp && webApp.initData) || fragment.get("tgWebAppData");
    var widget = fragment.get("tgAuthResult");
    // A launch signs in once, on whichever page Telegram opened (another user's older session
    // on this device is replaced); a reload of the same launch does not try again.
    var used = null;
    try { used = sessionStorage.getItem("tgUsed"); } catch (e) { /* private mode */ }
    if (initData && initData !== used) {
      try { sessionStorage.setItem("tgUsed", initData); } catch (e) { /* private mode */ }
      signIn("/app/login/", {init_data: initData}, status);
    } else if (widget && login) {
      try {
        var fields = JSON.parse(atob(widget.replace(/-/g, "+").replace(/_/g, "/")));
        signIn(login.dataset.widget, fields, status);
      } catch (e) { status.textContent = ""; }
    } else if (status) {
      status.textContent = "";
    }
    // Telegram's back button goes where the page's own back link goes.
    var back = document.querySelector("a.back");
    if (back) {
      post("web_app_setup_back_button", {is_visible: true});
      var goBack = function () { window.location.href = back.href; };
      handlers.back_button_pressed = goBack;
      if (webApp && webApp.BackButton) {
        webApp.BackButton.show();
        webApp.BackButton.onClick(goBack);
      }
    } else {
      post("web_app_setup_back_button", {is_visible: false});
    }
  });
})();
