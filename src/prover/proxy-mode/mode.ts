/** The per-request choice of proof mode (`T-PROOF-MODE`) and, in proxy mode, whether the request is revealed. */
import type { ProofMode } from "../../proof/format.ts";
import { AppError } from "../../errors.ts";

export const PROOF_MODES: readonly ProofMode[] = ["mpc", "proxy"];

export interface ModeChoice {
  mode: ProofMode;
  /** `T-PROXY-REVEAL: request` (proxy mode only). */
  revealRequest: boolean;
}

export function parseModeHeaders(headers: Headers, defaultMode: ProofMode): ModeChoice {
  const raw = headers.get("t-proof-mode")?.trim().toLowerCase();
  const mode = raw === undefined || raw === "" ? defaultMode : PROOF_MODES.find((m) => m === raw);
  if (!mode) throw new AppError("invalid_header", "T-PROOF-MODE must be mpc or proxy");
  const reveal = headers.get("t-proxy-reveal")?.trim().toLowerCase();
  if (reveal !== undefined && reveal !== "request") throw new AppError("invalid_header", "T-PROXY-REVEAL must be request");
  if (reveal && mode !== "proxy") throw new AppError("invalid_header", "T-PROXY-REVEAL applies to proxy mode only (T-PROOF-MODE: proxy)");
  return { mode, revealRequest: reveal === "request" };
}
