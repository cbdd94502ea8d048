// Preloaded (`node --require`) into the TypeScript servers that scripts/interop
// starts over HTTP. @modelcontextprotocol/server-everything listens with
// `app.listen(process.env.PORT || 3001)`: on every interface, with no host
// option, and it logs the port it was asked for, not the one it got. This
// binds every listening TCP server to 127.0.0.1 instead, and prints the real
// address on stderr (`interop: listening on http://127.0.0.1:PORT`) so the
// script can start it with PORT=0 and never guess a free port.
"use strict";
const net = require("node:net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const port = Number(args[0]);
    const callback = args.find((a) => typeof a === "function");
    args = callback ? [port, "127.0.0.1", callback] : [port, "127.0.0.1"];
  } else if (args[0] && typeof args[0] === "object" && !Array.isArray(args[0])) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`interop: listening on http://127.0.0.1:${address.port}\n`);
    }
  });
  return listen.apply(this, args);
};
