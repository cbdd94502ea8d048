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
// A new question in the inbox is brought into view (an app's request to
// call a tool may come while the person looks further down the page).
document.addEventListener("htmx:oobAfterSwap", (event) => {
  const inbox = document.getElementById("inbox");
  if (inbox && event.detail.target === inbox && inbox.children.length > 0 &&
      inbox.getBoundingClientRect().bottom < 0) {
    inbox.scrollIntoView({ block: "start" });
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

// MCP Apps: each app's frame (iframe.app-frame) is a sandbox proxy on the
// sandbox's origin, which relays the app's JSON-RPC messages. What only
// the browser can do is done here, each at the person's hand; everything
// else goes to the page's server (POST /apps/ID/rpc), which decides what
// the app may do, and whose answers are posted back to the app.
const appFrames = () => Array.from(document.querySelectorAll("iframe.app-frame"));
const csrfToken = () => {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRF-Token"] || "";
  } catch (_) {
    return "";
  }
};
const toApp = (frame, message) => {
  if (frame.contentWindow) {
    frame.contentWindow.postMessage(message, frame.dataset.origin);
  }
};
const appReply = (frame, id, result) => toApp(frame, { jsonrpc: "2.0", id, result });
const appRefuse = (frame, id, message) =>
  toApp(frame, { jsonrpc: "2.0", id, error: { code: -32000, message } });
// The browser's side of the host context: theme, language and time zone.
const withBrowserContext = (message) => {
  const context = message && message.result && message.result.hostContext;
  if (context) {
    context.theme = window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
    context.locale = navigator.language;
    context.timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    context.userAgent = "nexo ui";
  }
  return message;
};
const inBrowser = {
  "ui/notifications/size-changed": (frame, message) => {
    const height = Number(message.params && message.params.height);
    if (Number.isFinite(height) && height > 0) {
      frame.style.height = `${Math.min(Math.ceil(height), 800)}px`;
    }
  },
  "ui/open-link": (frame, message) => {
    const url = String((message.params && message.params.url) || "");
    let parsed = null;
    try {
      parsed = new URL(url);
    } catch (_) {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
      appRefuse(frame, message.id, "only http and https links are opened");
    } else if (window.confirm(`An app asks to open this link in a new tab:\n\n${parsed.href}`)) {
      window.open(parsed.href, "_blank", "noopener,noreferrer");
      appReply(frame, message.id, {});
    } else {
      appRefuse(frame, message.id, "the person did not open the link");
    }
  },
  "ui/message": (frame, message) => {
    const box = document.getElementById("chat-text");
    const content = message.params && message.params.content;
    const blocks = Array.isArray(content) ? content : [content];
    const text = blocks.filter((block) => block && block.type === "text")
      .map((block) => block.text).join("\n");
    if (!box) {
      appRefuse(frame, message.id, "the chat is not open on this view");
    } else if (!text) {
      appRefuse(frame, message.id, "the message has no text");
    } else {
      // Put in the box, not sent: the person sends it if they agree.
      box.value = text;
      box.focus();
      appReply(frame, message.id, {});
    }
  },
  "ui/request-display-mode": (frame, message) => appReply(frame, message.id, { mode: "inline" }),
};
window.addEventListener("message", (event) => {
  const frame = appFrames().find((candidate) => candidate.contentWindow === event.source);
  const message = event.data;
  if (!frame || event.origin !== frame.dataset.origin || !message || typeof message !== "object" ||
      typeof message.method !== "string" && !("id" in message)) {
    return;
  }
  if (message.method === "ui/notifications/sandbox-proxy-ready") {
    return;
  }
  const local = inBrowser[message.method];
  if (local) {
    local(frame, message);
    return;
  }
  if (typeof message.method !== "string") {
    return; // an answer to a request of ours: the page sends none
  }
  fetch(`/apps/${encodeURIComponent(frame.dataset.app)}/rpc`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrfToken() },
    body: JSON.stringify(message),
  })
    .then((response) => response.ok ? response.json() : { messages: [] })
    .then((answer) => {
      for (const reply of answer.messages || []) {
        toApp(frame, withBrowserContext(reply));
      }
    })
    .catch(() => {
      if ("id" in message) {
        appRefuse(frame, message.id, "the page could not reach nexo");
      }
    });
});
