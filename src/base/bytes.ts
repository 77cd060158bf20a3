/**
 * Byte helpers on web-standard APIs only (atob/btoa, Uint8Array): the proof verifier runs in browsers too (the
 * viewer page, `tlsproof/client`), where Node's Buffer does not exist.
 */

/** The base64 methods of Uint8Array (TC39, in Bun and current browsers): native, about 10 times the loops below. */
interface Base64Native {
  fromBase64?: (text: string) => Uint8Array;
  prototype: { toBase64?: (this: Uint8Array) => string };
}
const native = Uint8Array as unknown as Base64Native;

/**
 * Base64 on atob/btoa, where Uint8Array has no base64 methods of its own (older browsers). Exported for the test
 * that holds both ways to the same answers.
 */
export const portableBase64 = {
  toBytes(text: string): Uint8Array | null {
    let binary: string;
    try {
      binary = atob(text);
    } catch {
      return null;
    }
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  },
  fromBytes(bytes: Uint8Array): string {
    let binary = "";
    // In slices: String.fromCharCode takes its bytes as arguments, and arguments are limited. `apply` takes the typed
    // array as it is, where a spread walks it through the iterator protocol (five times slower).
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000) as unknown as number[]);
    return btoa(binary);
  },
};

/** Bytes of base64 text (padding and whitespace as `atob` allows), or null when it is not base64. */
export function base64ToBytes(text: string): Uint8Array | null {
  if (!native.fromBase64) return portableBase64.toBytes(text);
  try {
    return native.fromBase64(text);
  } catch {
    return null;
  }
}

export function bytesToBase64(bytes: Uint8Array): string {
  return native.prototype.toBase64 ? native.prototype.toBase64.call(bytes) : portableBase64.fromBytes(bytes);
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** `chunks` joined in order; `length` is their total when the caller counted it already. */
export function concatBytes(chunks: readonly Uint8Array[], length = chunks.reduce((sum, chunk) => sum + chunk.length, 0)): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}
