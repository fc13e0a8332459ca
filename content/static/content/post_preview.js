// The post form's preview, asked again of the server as the author types (content/preview.py).
"use strict";
(function () {
  function ready() {
    const holder = document.getElementById("post-preview-holder");
    const form = holder && holder.closest("form");
    if (!form) return;
    const url = holder.dataset.previewUrl;
    let timer = null;
    let asked = 0;
    function photoChosen() {
      const input = form.querySelector('input[type="file"][name="photo"]');
      const clear = form.querySelector('input[name="photo-clear"]');
      if (input && input.files && input.files.length) return true;
      if (clear && clear.checked) return false;
      return holder.dataset.hasPhoto === "1";
    }
    function refresh() {
      const data = new FormData(form);
      data.delete("photo");
      data.set("has_photo", photoChosen() ? "on" : "");
      if (holder.dataset.postId) data.set("post_id", holder.dataset.postId);
      const mine = ++asked;
      fetch(url, { method: "POST", body: data, credentials: "same-origin" })
        .then((response) => (response.ok ? response.text() : null))
        .then((html) => {
          if (html !== null && mine === asked) holder.innerHTML = html;
        })
        .catch(() => {});
    }
    function later() {
      clearTimeout(timer);
      timer = setTimeout(refresh, 400);
    }
    form.addEventListener("input", later);
    form.addEventListener("change", later);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
