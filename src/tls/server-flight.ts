/**
 * The server's TLS 1.3 flight after its ServerHello (RFC 8446 §4.3-4.4), checked message by message as the
 * verifier and the TLS 1.3 client both read it: EncryptedExtensions, [CertificateRequest], Certificate (its chain
 * checked by the caller's `checkChain`), CertificateVerify (64 spaces + "TLS 1.3, server CertificateVerify" + 0 +
 * the transcript hash through Certificate, signed with the leaf's key), Finished (HMAC of the transcript hash
 * through CertificateVerify under the server handshake traffic secret's finished key).
 */
import type { KeyObject } from "node:crypto";
import { concatBytes, utf8ToBytes } from "@noble/hashes/utils.js";
import { sameBytes } from "../base/bytes.ts";
import { AppError } from "../core/errors.ts";
import { parseCertificateVerify, parseCertificates } from "./handshake.ts";
import { digest, finishedVerifyData } from "./key-schedule.ts";
import { type HandshakeMessage, HandshakeType } from "./records.ts";
import { checkSignature } from "./signatures.ts";
import type { CipherSuite } from "./suites.ts";
import { malformed } from "./wire.ts";

const SERVER_CONTEXT = utf8ToBytes("TLS 1.3, server CertificateVerify");

export interface ServerFlight {
  encryptedExtensions: HandshakeMessage;
  /** The server asked for a client certificate (the client answers with none). */
  certificateRequest: HandshakeMessage | null;
}

/**
 * Reads the flight with `next` (the next handshake message, `expecting` naming it for errors), appending each
 * message to `transcript`, and throws unless the chain, the signature and the Finished all check out.
 */
export function checkServerFlight(
  next: (expecting: string) => HandshakeMessage,
  transcript: Uint8Array[],
  suite: CipherSuite,
  serverHandshakeSecret: Uint8Array,
  checkChain: (chainDer: Uint8Array[]) => KeyObject,
): ServerFlight {
  const hash = () => digest(suite.hash, ...transcript);
  const expect = (message: HandshakeMessage, type: number, name: string): HandshakeMessage => {
    if (message.type !== type) throw malformed(`the server sent handshake message type ${message.type} where its ${name} was due`);
    transcript.push(message.raw);
    return message;
  };
  const encryptedExtensions = expect(next("EncryptedExtensions"), HandshakeType.encryptedExtensions, "EncryptedExtensions");
  let message = next("Certificate");
  let certificateRequest: HandshakeMessage | null = null;
  if (message.type === HandshakeType.certificateRequest) {
    certificateRequest = expect(message, HandshakeType.certificateRequest, "CertificateRequest");
    message = next("Certificate");
  }
  if (message.type === HandshakeType.finished) throw new AppError("tls_unsupported", "the server sent no certificate; proxy mode needs one");
  const leafKey = checkChain(parseCertificates(expect(message, HandshakeType.certificate, "Certificate").body, "TLS1.3"));
  const certificateVerify = next("CertificateVerify");
  const signed = concatBytes(new Uint8Array(64).fill(0x20), SERVER_CONTEXT, Uint8Array.of(0), hash());
  const { scheme, signature } = parseCertificateVerify(expect(certificateVerify, HandshakeType.certificateVerify, "CertificateVerify").body);
  checkSignature(leafKey, scheme, signed, signature, "TLS1.3", "CertificateVerify");
  const finished = next("Finished");
  const expected = finishedVerifyData(suite.hash, serverHandshakeSecret, hash());
  if (!sameBytes(expect(finished, HandshakeType.finished, "Finished").body, expected)) {
    throw new AppError("tls_untrusted", "the server's Finished does not match the handshake transcript");
  }
  return { encryptedExtensions, certificateRequest };
}
