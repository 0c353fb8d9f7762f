// The live-locks page: refresh the table in place every few seconds (no full page reload),
// and not while the tab is hidden.
"use strict";
(function () {
  const container = document.getElementById("dynalock-locks");
  if (!container) return;
  const seconds = Number(container.dataset.refreshSeconds) || 5;
  async function refresh() {
    if (document.hidden) return;
    const url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    try {
      const response = await fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } });
      if (response.ok) container.innerHTML = await response.text();
    } catch (error) {
      // The next tick tries again; the page keeps what it showed.
    }
  }
  window.setInterval(refresh, seconds * 1000);
})();
