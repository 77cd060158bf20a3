import { Duplex } from "node:stream";
import { connect } from "node:tls";

/**
 * The first flight a real TLS client (node:tls, as the prover's) sends for `serverName`: its ClientHello records,
 * captured from a stream that answers nothing. Without a name, the client sends no server_name extension.
 */
export function clientHelloFor(serverName?: string): Promise<Uint8Array> {
  return new Promise((resolve) => {
    const wire = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, done) {
        resolve(new Uint8Array(chunk));
        done();
        socket.destroy();
      },
    });
    const socket = connect({ socket: wire, servername: serverName, ALPNProtocols: ["http/1.1"] });
    socket.on("error", () => {});
  });
}
