import { FFIType, dlopen, ptr } from "bun:ffi";
import { type Socket, connect } from "node:net";

/**
 * A TCP port on loopback that never accepts: a socket listening with a backlog of 0 that nobody ever accepts from,
 * made through libc (a Bun or Node server accepts by itself). Its one queue place is filled at start, so the kernel
 * drops every further SYN: a connection to it neither succeeds nor fails, as with a host that drops packets.
 */
export interface UnacceptingListener {
  port: number;
  close(): void;
}

const AF_INET = 2;
const SOCK_STREAM = 1;

function libc() {
  return dlopen("libc.so.6", {
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    bind: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
  }).symbols;
}

export async function startUnacceptingListener(): Promise<UnacceptingListener> {
  const c = libc();
  const fd = c.socket(AF_INET, SOCK_STREAM, 0);
  // struct sockaddr_in: family (host order), port 0 (any), 127.0.0.1.
  const address = Uint8Array.of(AF_INET, 0, 0, 0, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  const length = Uint32Array.of(address.length);
  if (fd < 0 || c.bind(fd, ptr(address), address.length) !== 0 || c.listen(fd, 0) !== 0 || c.getsockname(fd, ptr(address), ptr(length)) !== 0) {
    throw new Error("could not make a listening socket through libc");
  }
  const port = (address[2]! << 8) | address[3]!;
  const filler = await new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port }, () => resolve(socket));
    socket.once("error", reject);
  });
  return {
    port,
    close() {
      filler.destroy();
      c.close(fd);
    },
  };
}
