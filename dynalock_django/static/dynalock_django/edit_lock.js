// The edit lock of an admin change page (dynalock_django.admin.EditLockMixin).
// Editing: renew the tab's lock every third of its lease, hand it to the tab's next page on a
// reload or a save-and-continue, release it when the page goes away, and say so when it is lost.
// Between renewals a visible page looks (one read, checkSeconds) whether someone asked to edit, took
// over or released its lock, so its user hears within seconds; a hidden tab looks when shown again.
// Idle (no input for EDIT_IDLE_TIMEOUT): let the lock go, keep the form as typed, offer to continue.
// Read-only: tell the user when whoever is editing lets go; "Ask to edit" gets in line for the lock,
// and the page switches to editing by itself at the user's turn (it reloads, and the reload edits).
"use strict";
(function () {
  const TURN_FLAG = "dynalock-turn";  // sessionStorage: this tab reloads into editing at its turn in line
  const configElement = document.getElementById("dynalock-edit-lock");
  if (!configElement) return;
  const config = JSON.parse(configElement.textContent);
  const banner = document.getElementById("dynalock-banner");
  const message = document.getElementById("dynalock-message");
  const form = banner.closest("form");
  const csrfToken = form.querySelector("[name=csrfmiddlewaretoken]").value;
  const waitingLine = document.getElementById("dynalock-waiting");
  const baseTitle = document.title;
  let timer = null;
  let checkTimer = null;

  // The tab's title says what changed (and a notification, where the user allowed them), until the user acts.
  function tell(titlePrefix, notification) {
    document.title = titlePrefix + " – " + baseTitle;
    if (notification && window.Notification && Notification.permission === "granted" && document.hidden) {
      try { new Notification(notification); } catch (error) { /* some browsers allow them only from a worker */ }
    }
    const restore = () => { document.title = baseTitle; };
    for (const type of ["keydown", "pointerdown"]) document.addEventListener(type, restore, { once: true, capture: true });
  }

  // Who waits to edit: a line of its own under the banner's sentence ("" hides it).
  function showWaiting(text) {
    waitingLine.textContent = text || "";
    waitingLine.hidden = !text;
  }

  function say(kind, text) {
    banner.hidden = false;
    banner.className = "dynalock-banner dynalock-" + kind;
    message.textContent = text;
  }

  function schedule(action, seconds) {
    window.clearTimeout(timer);
    timer = window.setTimeout(action, seconds * 1000);
  }

  // When the next renewal is due (performance.now()): a look that falls due with it is left to it.
  let renewalDue = Infinity;

  function scheduleRenewal(seconds) {
    renewalDue = performance.now() + seconds * 1000;
    schedule(renew, seconds);
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

  // One POST of a renewal or a look: its response and JSON body, both null when the server could not be
  // reached. A logged-out session answers with the login page: only the endpoint's own JSON counts.
  async function postForAnswer(url) {
    let response = null;
    try {
      response = await post(url);
    } catch (error) {
      return { response: null, body: null };
    }
    return { response, body: await response.json().catch(() => null) };
  }

  function lost(text) {
    holding = false;
    window.clearTimeout(timer);
    window.clearTimeout(checkTimer);
    showWaiting("");
    say("lost", text);
    stopSaving();
    tell(config.strings.titleLost, text);
  }

  async function renew() {
    if (!holding || wentIdle()) return;
    // The lease counts from when the renewal was sent, as the server's does.
    const started = performance.now();
    const { response, body } = await postForAnswer(config.renewUrl);  // unreachable: retried below
    if (!holding) return;
    if (response && response.ok && body && body.state === "held") {
      safeUntil = started + config.leaseSeconds * 1000;
      lastLook = started;
      say("edit", config.strings.editing);
      showWaiting(body.waiting);  // who waits to edit came with the renewal itself
      scheduleRenewal(config.renewSeconds);
      return;
    }
    if (response && response.status === 409 && body) {
      lost(body.message);
      return;
    }
    // Unreachable, or DynamoDB unavailable: try again soon; the lock holds until safeUntil.
    if (performance.now() > safeUntil - config.renewSeconds * 1000) say("unreachable", config.strings.unreachable);
    scheduleRenewal(Math.min(2, config.renewSeconds));
  }

  // A look between renewals: one read, no write. A renewal counts as a look (its answer says the same).
  let lastLook = performance.now();

  function scheduleCheck() {
    window.clearTimeout(checkTimer);
    checkTimer = window.setTimeout(check, config.checkSeconds * 1000);
  }

  async function check() {
    if (!holding || document.hidden) return;  // hidden: it looks again as soon as it is shown
    const now = performance.now();
    if (now - lastLook >= config.checkSeconds * 1000 - 100 && renewalDue - now > 100) {
      lastLook = performance.now();
      const { response, body } = await postForAnswer(config.checkUrl);  // unreachable: the renewals say so; the next look tries again
      if (!holding) return;
      if (response && response.ok && body && body.state === "held") showWaiting(body.waiting);
      else if (response && response.status === 409 && body) {
        lost(body.message);
        return;
      }
    }
    scheduleCheck();
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
    window.clearTimeout(checkTimer);
    window.clearTimeout(idleTimer);
    showWaiting("");
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
      scheduleRenewal(config.renewSeconds);
      scheduleCheck();
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
    scheduleRenewal(config.renewSeconds);
    scheduleCheck();
    // A hidden tab's timers may be slowed down, and it does not look: renew as soon as it is looked at again.
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && holding) {
        renew();
        scheduleCheck();
      }
    });
    // The page this tab was handed at its turn in line (see turn): say so in the title until the user acts.
    if (window.sessionStorage.getItem(TURN_FLAG) === window.location.pathname) {
      window.sessionStorage.removeItem(TURN_FLAG);
      tell(config.strings.titleTurn, null);
    }
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
  // Counts this user's asks and leaves. A poll's answer is for the line as it was when the poll was sent:
  // one sent before the user asked or left is stale, and must not put back the banner (or the button) of
  // before ("You are next" after a leave, or a "dropped" answered to a wait that reached the server after it).
  let lineChanges = 0;

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
      window.sessionStorage.setItem(TURN_FLAG, window.location.pathname);
      tell(config.strings.titleTurn, config.strings.notifyTurn);
      window.location.reload();
      return;
    }
    waiting = answer.state === "waiting";
    const askButton = document.getElementById("dynalock-ask");
    if (waiting && askButton) askButton.remove();
    if (answer.message) say("view", answer.message);
    if (waiting && !document.getElementById("dynalock-stop-waiting")) {
      bannerButton("dynalock-stop-waiting", config.strings.stopWaiting, stopWaiting, true);
    }
    if (!waiting) offerAsk();
  }

  async function stopWaiting() {
    waiting = false;
    lineChanges += 1;
    const button = document.getElementById("dynalock-stop-waiting");
    if (button) button.remove();
    try {
      await post(config.leaveUrl, csrfForm());
    } catch (error) {
      // Unsent: the entry goes stale and drops out by itself, as a closed page's does.
    }
    say("view", config.strings.stoppedWaiting);
    offerAsk();
  }

  async function ask() {
    // The user's click: the one moment a browser lets a page ask to notify them at their turn.
    if (window.Notification && Notification.permission === "default") Notification.requestPermission().catch(() => {});
    lineChanges += 1;
    try {
      const response = await post(config.askUrl, csrfForm());
      const answer = await response.json().catch(() => null);
      if (answer && answer.state) turn(answer);
    } catch (error) {
      say("unreachable", config.strings.unreachable);
    }
  }

  async function poll() {
    const sentAt = lineChanges;
    try {
      if (waiting) {
        const response = await post(config.waitUrl, csrfForm());
        const answer = await response.json().catch(() => null);
        if (response.ok && answer && sentAt === lineChanges) turn(answer);
      } else {
        const response = await fetch(config.statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (response.ok && sentAt === lineChanges) showStatus(await response.json());
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
