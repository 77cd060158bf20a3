/**
 * A mode's socket opened in the prover's process (src/notary/sockets.ts, `inProcessSocket`), against a mode that
 * records what its socket hears: the events a WebSocket would give, in order, a close heard once by both ends.
 */
import { describe, expect, test } from "bun:test";
import { createLogger } from "../../src/base/log.ts";
import type { NotaryMode, NotarySocket } from "../../src/notary/modes.ts";
import { NotaryModes } from "../../src/notary/modes.ts";
import { inProcessSocket as openInProcess } from "../../src/notary/sockets.ts";
import type { SocketListener } from "../../src/protocol/notary.ts";
import { appErrorOf } from "../../testkit/app-error.ts";
import { keptLog } from "../../testkit/kept-log.ts";
import { afterPendingWork } from "../../testkit/wait.ts";

const SESSION = "session-1";

const logged = keptLog((message, fields) => `${message} ${fields.mode} ${fields.error}`);
const inProcessSocket = (modes: NotaryModes, url: string, listener: SocketListener) => openInProcess(modes, url, listener, logged.log);

/** A mode named `relay-test` whose socket accepts SESSION alone and records its events (and throws on `throwOn` bytes). */
function recordingMode(throwOn?: number, closeThrows = false) {
  const heard: string[] = [];
  let opened: NotarySocket | undefined;
  const mode = {
    facts: { name: "relay-test", summary: "a test mode", notaryDials: false, mayHideRequest: false, notarySeesAnswer: false, evmType: "Attestation" },
    active: () => 0,
    socket: {
      accepts: (sessionId: string) => sessionId === SESSION && opened === undefined,
      open: (socket: NotarySocket) => {
        opened = socket;
        heard.push(`open ${socket.data.mode} ${socket.data.sessionId}`);
      },
      message: (_socket: NotarySocket, bytes: Uint8Array) => {
        if (bytes[0] === throwOn) throw new Error(`the mode cannot take ${throwOn}`);
        heard.push(`bytes ${[...bytes].join(",")}`);
      },
      close: (socket: NotarySocket, code?: number) => {
        heard.push(`close ${code} readyState ${socket.readyState}`);
        if (closeThrows) throw new Error("the mode's close failed");
      },
    },
  } as unknown as NotaryMode;
  const modes = new NotaryModes([{ facts: mode.facts, create: () => mode }], { log: createLogger({ level: "error" }), testTrustAnchor: false });
  return { modes, heard, socket: () => opened! };
}

/** A prover's listener that records what it hears. */
function recordingListener() {
  const heard: string[] = [];
  return { heard, listener: { bytes: (bytes: Uint8Array) => heard.push(`bytes ${[...bytes].join(",")}`), closed: (code: number, reason: string) => heard.push(`closed ${code} ${reason}`) } };
}

const URL_OF = (sessionId: string, path = "/modes/relay-test/socket") => `ws://127.0.0.1:1${path}?sessionId=${sessionId}`;

describe("a mode's socket opened in process", () => {
  test("refused as the upgrade refuses it: a path no mode's socket is at, an unknown session, a session whose socket is open", () => {
    const { modes } = recordingMode();
    const { listener } = recordingListener();
    expect(appErrorOf(() => inProcessSocket(modes, URL_OF(SESSION, "/relay"), listener))).toEqual({ code: "not_found", message: "no mode has a socket at /relay" });
    expect(appErrorOf(() => inProcessSocket(modes, URL_OF("other"), listener))).toEqual({ code: "not_found", message: "unknown or used session" });
    inProcessSocket(modes, URL_OF(SESSION), listener);
    expect(appErrorOf(() => inProcessSocket(modes, URL_OF(SESSION), listener))).toEqual({ code: "not_found", message: "unknown or used session" });
  });

  test("opens at once; each side's bytes arrive in order as copies, a microtask later", async () => {
    const { modes, heard, socket } = recordingMode();
    const prover = recordingListener();
    const end = inProcessSocket(modes, URL_OF(SESSION), prover.listener);
    expect(heard).toEqual([`open relay-test ${SESSION}`]);
    const sent = Uint8Array.of(1, 2);
    expect(end.send(sent)).toBe(true);
    expect(end.send(Uint8Array.of(3))).toBe(true);
    // A buffer the sender reuses changes nothing of what was sent.
    sent[0] = 9;
    const back = Uint8Array.of(7, 8);
    expect(socket().sendBinary(back)).toBe(2);
    back[0] = 0;
    expect(heard).toHaveLength(1);
    expect(prover.heard).toEqual([]);
    await Promise.resolve();
    expect(heard).toEqual([`open relay-test ${SESSION}`, "bytes 1,2", "bytes 3"]);
    expect(prover.heard).toEqual(["bytes 7,8"]);
    expect(socket().readyState).toBe(1);
  });

  test("the prover's close: bytes sent before it arrive first, then one close with a normal code at both ends; nothing is sent after it", async () => {
    const { modes, heard, socket } = recordingMode();
    const prover = recordingListener();
    const end = inProcessSocket(modes, URL_OF(SESSION), prover.listener);
    end.send(Uint8Array.of(5));
    end.close();
    end.close();
    expect(socket().readyState).toBe(3);
    expect(end.send(Uint8Array.of(6))).toBe(false);
    expect(socket().sendBinary(Uint8Array.of(6))).toBe(0);
    await afterPendingWork();
    expect(heard).toEqual([`open relay-test ${SESSION}`, "bytes 5", "close 1000 readyState 3"]);
    expect(prover.heard).toEqual(["closed 1000 "]);
  });

  test("the mode's close with a code and a reason reaches the prover as it was given, once", async () => {
    const { modes, heard, socket } = recordingMode();
    const prover = recordingListener();
    inProcessSocket(modes, URL_OF(SESSION), prover.listener);
    socket().sendBinary(Uint8Array.of(4));
    socket().close(4000, "session_failed: a limit");
    socket().close();
    await afterPendingWork();
    expect(prover.heard).toEqual(["bytes 4", "closed 4000 session_failed: a limit"]);
    expect(heard.slice(1)).toEqual(["close 4000 readyState 3"]);
  });

  test("once the mode closed the socket it hears no more bytes, not even those the prover sent just before", async () => {
    const { modes, heard, socket } = recordingMode();
    const prover = recordingListener();
    const end = inProcessSocket(modes, URL_OF(SESSION), prover.listener);
    end.send(Uint8Array.of(1));
    socket().close(4000, "session_failed: the session ended");
    await afterPendingWork();
    expect(heard).toEqual([`open relay-test ${SESSION}`, "close 4000 readyState 3"]);
    expect(prover.heard).toEqual(["closed 4000 session_failed: the session ended"]);
  });

  test("a handler that throws is logged and its socket closed (1011) at both ends; the error goes no further", async () => {
    const { modes, heard } = recordingMode(66);
    const prover = recordingListener();
    const end = inProcessSocket(modes, URL_OF(SESSION), prover.listener);
    end.send(Uint8Array.of(1));
    end.send(Uint8Array.of(66));
    end.send(Uint8Array.of(2));
    await afterPendingWork();
    expect(heard).toEqual([`open relay-test ${SESSION}`, "bytes 1", "close 1011 readyState 3"]);
    expect(prover.heard).toEqual(["closed 1011 internal error"]);
    expect(logged.lines.at(-1)).toBe("a socket's event handler failed: the socket is closed relay-test the mode cannot take 66");
    expect(end.send(Uint8Array.of(3))).toBe(false);
  });

  test("a close handler that throws: the prover still hears the close", async () => {
    const { modes, heard } = recordingMode(undefined, true);
    const prover = recordingListener();
    inProcessSocket(modes, URL_OF(SESSION), prover.listener).close();
    await afterPendingWork();
    expect(heard.slice(1)).toEqual(["close 1000 readyState 3"]);
    expect(prover.heard).toEqual(["closed 1000 "]);
    expect(logged.lines.at(-1)).toBe("a socket's event handler failed: the socket is closed relay-test the mode's close failed");
  });

  test("the mode's close without a code is a normal one", async () => {
    const { modes, socket } = recordingMode();
    const prover = recordingListener();
    inProcessSocket(modes, URL_OF(SESSION), prover.listener);
    socket().close();
    await afterPendingWork();
    expect(prover.heard).toEqual(["closed 1000 "]);
  });
});
