// The edit lock of an admin change page (dynalock_django.admin.EditLockMixin).
// Editing: renew the tab's lock every third of its lease, hand it to the tab's next page on a
// reload or a save-and-continue, release it when the page goes away, and say so when it is lost.
// Idle (no input for EDIT_IDLE_TIMEOUT): let the lock go, keep the form as typed, offer to continue.
// Read-only: tell the user when whoever is editing lets go; "Ask to edit" gets in line for the lock,
// and the page switches to editing by itself at the user's turn (it reloads, and the reload edits).
"use strict";
(function () {
  const configElement = document.getElementById("dynalock-edit-lock");
  if (!configElement) return;
  const config = JSON.parse(configElement.textContent);
  const banner = document.getElementById("dynalock-banner");
  const message = document.getElementById("dynalock-message");
  const form = banner.closest("form");
  const csrfToken = form.querySelector("[name=csrfmiddlewaretoken]").value;
  let timer = null;

  function say(kind, text) {
    banner.hidden = false;
    banner.className = "dynalock-banner dynalock-" + kind;
    message.textContent = text;
  }

  function schedule(action, seconds) {
    window.clearTimeout(timer);
    timer = window.setTimeout(action, seconds * 1000);
  }

  function stopSaving() {
    for (const button of form.querySelectorAll("[type=submit]")) button.disabled = true;
  }

  function allowSaving() {
    for (const button of form.querySelectorAll("[type=submit]")) button.disabled = false;
  }

  // A button in the banner, instead of those there (or beside them, with keep).
  function bannerButton(id, text, onClick, keep = false) {
    if (!keep) for (const old of banner.querySelectorAll("button, a.button")) old.remove();
    const button = document.createElement("button");
    button.type = "button";
    button.className = "button";
    button.id = id;
    button.textContent = text;
    button.addEventListener("click", onClick);
    banner.appendChild(button);
  }

  function offerReload(text) {
    say("free", text);
    if (!config.mayEdit || document.getElementById("dynalock-reload")) return;
    bannerButton("dynalock-reload", config.strings.reload, () => window.location.reload());
  }

  // ---- editing: this tab holds the lock
  let holding = config.mode === "edit";
  let submitting = false;
  let safeUntil = performance.now() + config.leaseSeconds * 1000;

  function ticketForm() {
    return new URLSearchParams({ csrfmiddlewaretoken: csrfToken, ticket: config.ticket });
  }

  function post(url, body = ticketForm()) {
    const headers = { "X-CSRFToken": csrfToken };
    return fetch(url, { method: "POST", body, credentials: "same-origin", headers });
  }

  function lost(text) {
    holding = false;
    window.clearTimeout(timer);
    say("lost", text);
    stopSaving();
  }

  async function renew() {
    if (!holding || wentIdle()) return;
    // The lease counts from when the renewal was sent, as the server's does.
    const started = performance.now();
    let response = null;
    try {
      response = await post(config.renewUrl);
    } catch (error) {
      // Unreachable: retried below.
    }
    if (!holding) return;
    // A logged-out session answers with the login page: only the endpoint's own answer counts.
    const body = response ? await response.json().catch(() => null) : null;
    if (response && response.ok && body && body.state === "held") {
      safeUntil = started + config.leaseSeconds * 1000;
      // Who waits to edit came with the renewal itself.
      say("edit", body.waiting ? config.strings.editing + " " + body.waiting : config.strings.editing);
      schedule(renew, config.renewSeconds);
      return;
    }
    if (response && response.status === 409 && body) {
      lost(body.message);
      return;
    }
    // Unreachable, or DynamoDB unavailable: try again soon; the lock holds until safeUntil.
    if (performance.now() > safeUntil - config.renewSeconds * 1000) say("unreachable", config.strings.unreachable);
    schedule(renew, Math.min(2, config.renewSeconds));
  }

  // ---- idle: no input for idleSeconds lets the lock go; the form keeps what was typed
  const idleMs = config.idleSeconds ? config.idleSeconds * 1000 : null;
  let lastInput = performance.now();
  let idleTimer = null;

  function wentIdle() {
    // Judged on the input before this moment: a tab coming back after lunch is idle, though focused now.
    if (!holding || idleMs === null || performance.now() - lastInput < idleMs) return false;
    goIdle();
    return true;
  }

  function noteInput() {
    if (!wentIdle()) lastInput = performance.now();
  }

  function watchIdle() {
    if (idleMs === null || !holding) return;
    window.clearTimeout(idleTimer);
    const left = lastInput + idleMs - performance.now();
    idleTimer = window.setTimeout(() => { if (!wentIdle()) watchIdle(); }, Math.max(left, 0) + 50);
  }

  function goIdle() {
    holding = false;
    window.clearTimeout(timer);
    window.clearTimeout(idleTimer);
    const body = ticketForm();
    body.set("idle", "1");  // told apart from a closed page (a span event on the server)
    post(config.releaseUrl, body).catch(() => {});  // if it is lost, the lock runs out one lease later
    say("idle", config.strings.idle);
    stopSaving();
    bannerButton("dynalock-continue", config.strings.continue, resume);
  }

  async function resume() {
    const body = ticketForm();
    body.set("opened", config.opened);
    let response = null;
    try {
      response = await post(config.resumeUrl, body);
    } catch (error) {
      say("unreachable", config.strings.unreachable);
      return;
    }
    const answer = await response.json().catch(() => null);
    if (response.status === 404) {
      say("lost", config.strings.deleted);
      bannerButton("dynalock-reload", config.strings.reloadLosing, () => window.location.reload());
    } else if (answer && answer.state === "held") {
      config.ticket = answer.ticket;
      const field = form.querySelector("[name=_dynalock_ticket]");
      if (field) field.value = answer.ticket;
      for (const old of banner.querySelectorAll("button")) old.remove();
      holding = true;
      lastInput = performance.now();
      safeUntil = lastInput + config.leaseSeconds * 1000;
      say("edit", config.strings.editing);
      allowSaving();
      schedule(renew, config.renewSeconds);
      watchIdle();
    } else if (answer && answer.state === "changed") {
      // Their save stands: this page may not save over it. Reloading is the user's choice.
      say("lost", answer.message);
      bannerButton("dynalock-reload", config.strings.reloadLosing, () => window.location.reload());
    } else if (answer) {
      say("idle", answer.message);  // busy or unavailable: the Continue button stays to try again
    }
  }

  if (holding && idleMs !== null) {
    for (const type of ["keydown", "pointerdown", "pointermove", "wheel", "scroll", "focusin", "input", "touchstart"]) {
      document.addEventListener(type, noteInput, { capture: true, passive: true });
    }
    window.addEventListener("focus", noteInput);
    watchIdle();  // one timer: when it fires it re-arms from the latest input, so input need not touch it
  }

  if (holding) {
    schedule(renew, config.renewSeconds);
    // A hidden tab's timers may be slowed down: renew as soon as it is looked at again.
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && holding) renew();
    });
    form.addEventListener("submit", (event) => {
      // The server keeps or releases the lock of a save; "save as new" leaves this object's lock to us.
      submitting = !(event.submitter && event.submitter.name === "_saveasnew");
    });
    window.addEventListener("beforeunload", () => {
      if (!holding) return;
      // If this tab's next page is this object again (a reload), it takes the lock over with this.
      document.cookie =
        `${config.handoffCookie}=${config.ticket}; path=${window.location.pathname}; ` +
        `max-age=${config.handoffSeconds}; samesite=strict`;
    });
    window.addEventListener("pagehide", () => {
      if (!holding || submitting) return;
      // Sent even as the tab closes. On a reload the next page has already taken the lock over
      // under a new ticket, so this release finds nothing of its own and changes nothing.
      navigator.sendBeacon(config.releaseUrl, ticketForm());
      holding = false;
    });
  }

  if (config.mode === "lost") stopSaving();

  // A page restored from the back-forward cache released its lock as it was hidden: load it anew.
  window.addEventListener("pageshow", (event) => {
    if (event.persisted && config.mode !== "view") window.location.reload();
  });

  // ---- read-only: someone else holds the lock (or it is kept for whoever asked first)
  let lastHolder = config.holder;
  let waiting = false;  // this user is in line: polls keep them there, and take the lock at their turn

  function csrfForm() {
    return new URLSearchParams({ csrfmiddlewaretoken: csrfToken });
  }

  function offerAsk() {
    if (config.mayAsk && !document.getElementById("dynalock-ask")) {
      bannerButton("dynalock-ask", config.strings.ask, ask, true);
    }
  }

  // An answer of ask or wait: taken (reload: the next page edits), waiting, or dropped from the line.
  function turn(answer) {
    if (answer.state === "taken") {
      waiting = false;
      say("edit", answer.message);
      window.location.reload();
      return;
    }
    waiting = answer.state === "waiting";
    const askButton = document.getElementById("dynalock-ask");
    if (waiting && askButton) askButton.remove();
    if (answer.message) say("view", answer.message);
    if (!waiting) offerAsk();
  }

  async function ask() {
    try {
      const response = await post(config.askUrl, csrfForm());
      const answer = await response.json().catch(() => null);
      if (answer && answer.state) turn(answer);
    } catch (error) {
      say("unreachable", config.strings.unreachable);
    }
  }

  async function poll() {
    try {
      if (waiting) {
        const response = await post(config.waitUrl, csrfForm());
        const answer = await response.json().catch(() => null);
        if (response.ok && answer) turn(answer);
      } else {
        const response = await fetch(config.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (response.ok) showStatus(await response.json());
      }
    } catch (error) {
      // The next poll tries again.
    }
    schedule(poll, config.pollSeconds);
  }

  function showStatus(status) {
    if (status.state === "free") {
      const ask = document.getElementById("dynalock-ask");
      if (ask) ask.remove();
      offerReload(lastHolder ? config.strings.free.replace("%(holder)s", lastHolder) : config.strings.freeNobody);
    } else if (status.state === "held" || status.state === "next") {
      if (status.state === "held") lastHolder = status.holder;
      const reload = document.getElementById("dynalock-reload");
      if (reload) reload.remove();
      say("view", status.message);
      offerAsk();
    }
  }

  if (config.mode === "view") {
    offerAsk();
    schedule(poll, config.pollSeconds);
    window.addEventListener("pagehide", () => {
      // Out of the line at once; a page that could not say so drops out when its entry goes stale.
      if (waiting) navigator.sendBeacon(config.leaveUrl, csrfForm());
      waiting = false;
    });
  }
})();
