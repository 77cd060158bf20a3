// An HTTPS server for the TLS 1.3 client's interoperability tests, run by Node and by Bun (node:https in both):
// `<runtime> https-echo.mjs <key> <chain> '<tls options as JSON>'`. It answers every request with the Authorization
// it received (proof that a hidden header arrived whole), /big with 200 kB more; it prints its port
// (LISTENING <port>) and its TLS key log lines (KEYLOG <line>) on stdout.
import { readFileSync } from "node:fs";
import { createServer } from "node:https";

const [keyPath, chainPath, optionsJson] = process.argv.slice(2);
const options = JSON.parse(optionsJson ?? "{}");
const server = createServer({ key: readFileSync(keyPath), cert: readFileSync(chainPath), minVersion: "TLSv1.3", ...options }, (request, response) => {
  const echo = `received authorization: ${request.headers.authorization ?? ""}\n`;
  const body = request.url === "/big" ? echo + "y".repeat(200_000) : echo;
  response.setHeader("content-type", "text/plain");
  response.setHeader("content-length", Buffer.byteLength(body));
  response.end(body);
});
server.on("keylog", (line) => process.stdout.write(`KEYLOG ${line.toString().trim()}\n`));
server.listen(0, "127.0.0.1", () => process.stdout.write(`LISTENING ${server.address().port}\n`));
