// Preloaded into server-everything (`node --import ./loopback.mjs ...`) by
// tests/all/mcp/client.rs: its HTTP transport listens on every interface
// and on $PORT; this makes it listen on 127.0.0.1 only and, with PORT=0,
// say on stderr which port it got ("toolhost-test-port NNNN"), so tests
// never race for a free port.
import http from "node:http";

const listen = http.Server.prototype.listen;
http.Server.prototype.listen = function (port, ...rest) {
  const callback = rest.find((a) => typeof a === "function");
  this.once("listening", () => {
    console.error(`toolhost-test-port ${this.address().port}`);
  });
  return listen.call(this, Number(port) || 0, "127.0.0.1", callback);
};
