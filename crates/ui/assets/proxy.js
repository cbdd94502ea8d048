// nexo ui: the sandbox proxy of MCP Apps. It runs on the sandbox's own
// origin (not the page's), draws the app's document in a frame sandboxed
// without allow-same-origin, and relays messages: the page's to the app
// and the app's to the page, nothing else. The proxy's own notifications
// (ui/notifications/sandbox-*) never reach the app.
"use strict";

(() => {
  // The page's origins: the page may be open as 127.0.0.1 or localhost.
  // A message posted to an origin the parent does not have is dropped, so
  // posting to each reaches the page only.
  const hosts = document.body.dataset.host.split(" ");
  const toPage = (message) => hosts.forEach((host) => window.parent.postMessage(message, host));
  const view = document.createElement("iframe");
  view.setAttribute("sandbox", "allow-scripts");
  if (document.body.dataset.allow) {
    view.setAttribute("allow", document.body.dataset.allow);
  }
  view.setAttribute("referrerpolicy", "no-referrer");
  view.title = document.title;
  for (const element of [document.documentElement, document.body]) {
    element.style.margin = "0";
    element.style.height = "100%";
    element.style.overflow = "hidden";
  }
  view.style.border = "0";
  view.style.width = "100%";
  view.style.height = "100%";
  view.src = document.body.dataset.view;
  document.body.appendChild(view);

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (event.source === window.parent && hosts.includes(event.origin)) {
      if (message && typeof message.method === "string" &&
          message.method.startsWith("ui/notifications/sandbox-")) {
        return;
      }
      // The app's document has an opaque origin: "*" is the only target
      // that reaches it, and only this frame's window is addressed.
      if (view.contentWindow) {
        view.contentWindow.postMessage(message, "*");
      }
    } else if (event.source === view.contentWindow) {
      toPage(message);
    }
  });
  toPage({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} });
})();
