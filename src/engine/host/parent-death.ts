import { FFIType, dlopen } from "bun:ffi";

const PR_SET_PDEATHSIG = 1;
const SIGKILL = 9;

/**
 * Has the kernel kill this process when its parent dies (Linux's `PR_SET_PDEATHSIG`). A host ends when its channel
 * closes, but a paused one (SIGSTOP) cannot notice: a prover killed while a host was paused left that host stopped,
 * holding its memory, for good. False where the call is not available; such a host is never paused.
 */
export function dieWithParent(): boolean {
  if (process.platform !== "linux") return false;
  try {
    const libc = dlopen("libc.so.6", {
      prctl: { args: [FFIType.i32, FFIType.u64, FFIType.u64, FFIType.u64, FFIType.u64], returns: FFIType.i32 },
    });
    return libc.symbols.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) === 0;
  } catch {
    return false;
  }
}
