// Preloaded into the reference servers' HTTP modes (node --require): a
// server told to listen on a port alone binds it on 127.0.0.1, not on every
// interface, since the tests touch loopback only.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const bare = typeof port === "number" || (typeof port === "string" && /^[0-9]+$/.test(port));
  if (bare && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
