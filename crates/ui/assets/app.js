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
