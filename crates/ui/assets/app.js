// nexo ui: the little the page does in the browser beyond htmx. No inline
// script anywhere (the page's Content-Security-Policy forbids it).
"use strict";

// A tab too far behind the live stream reloads to catch up.
document.addEventListener("htmx:sseMessage", (event) => {
  if (event.detail && event.detail.type === "reload") {
    window.location.reload();
  }
});
document.addEventListener("DOMContentLoaded", () => {
  const sink = document.getElementById("sink");
  if (sink) {
    sink.addEventListener("htmx:sseOpen", () => document.body.classList.remove("offline"));
    sink.addEventListener("htmx:sseError", () => document.body.classList.add("offline"));
  }
});

// Filters: an input with data-filter="#list" hides the list's groups whose
// data-find does not hold what was typed.
document.addEventListener("input", (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || !input.dataset.filter) {
    return;
  }
  const list = document.querySelector(input.dataset.filter);
  if (!list) {
    return;
  }
  const wanted = input.value.trim().toLowerCase();
  for (const group of list.children) {
    const words = (group.dataset.find || group.textContent || "").toLowerCase();
    group.hidden = wanted !== "" && !words.includes(wanted);
  }
});

// The chat: Ctrl+Enter (or Cmd+Enter) sends; the box empties once the
// message is taken.
document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (box instanceof HTMLTextAreaElement && box.id === "chat-text" &&
      event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    box.form.requestSubmit();
  }
});
document.addEventListener("htmx:afterRequest", (event) => {
  const form = event.detail.elt;
  if (form instanceof HTMLFormElement && form.id === "chat-form" && event.detail.successful &&
      event.detail.xhr.status === 202) {
    form.reset();
  }
});
// New words scroll the conversation into view when it was at the end.
document.addEventListener("htmx:oobAfterSwap", (event) => {
  const log = document.getElementById("chat-log");
  if (log && log.contains(event.detail.target)) {
    const last = log.lastElementChild;
    if (last && window.innerHeight + window.scrollY >= document.body.scrollHeight - 200) {
      last.scrollIntoView({ block: "end" });
    }
  }
});
