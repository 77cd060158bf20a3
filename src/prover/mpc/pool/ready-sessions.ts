import type { ProverSession } from "../../../engine/session.ts";
import type { SessionSizes } from "../../../core/session-sizes.ts";
import { fitsIn } from "./pool-policy.ts";
import { className } from "./size-classes.ts";

interface Entry {
  session: ProverSession;
  idleTimer: Timer;
}

const bySize = (a: Entry, b: Entry) =>
  a.session.sizes.maxRecvData - b.session.sizes.maxRecvData || a.session.sizes.maxSentData - b.session.sizes.maxSentData;

/** Set-up sessions waiting for a request, each with its idle deadline. */
export class ReadySessions {
  private readonly entries: Entry[] = [];

  constructor(
    private readonly idleMs: number,
    /** Called when a session idled past `idleMs`; it is no longer held here. */
    private readonly onIdle: (session: ProverSession) => void,
  ) {}

  get size(): number {
    return this.entries.length;
  }

  add(session: ProverSession): void {
    const entry: Entry = {
      session,
      idleTimer: setTimeout(() => {
        if (this.remove(entry)) this.onIdle(session);
      }, this.idleMs),
    };
    this.entries.push(entry);
  }

  /** Takes the smallest session for `host` that carries `fits`; of equal sizes, one `avoid` does not pick. */
  take(host: string, fits: SessionSizes, avoid: (session: ProverSession) => boolean = () => false): ProverSession | undefined {
    const avoided = (e: Entry) => (avoid(e.session) ? 1 : 0);
    const entry = this.entries
      .filter((e) => e.session.serverName === host && fitsIn(fits, e.session.sizes))
      .sort((a, b) => bySize(a, b) || avoided(a) - avoided(b))[0];
    return entry && this.remove(entry) ? entry.session : undefined;
  }

  /** Sessions held for `host` in exactly the class `sizes`. */
  count(host: string, sizes: SessionSizes): number {
    const name = className(sizes);
    return this.entries.filter((e) => e.session.serverName === host && className(e.session.sizes) === name).length;
  }

  /** Removes and returns the sessions `unwanted` picks, one at a time (it sees the counts as they shrink). */
  removeWhere(unwanted: (session: ProverSession) => boolean): ProverSession[] {
    const removed: ProverSession[] = [];
    for (const entry of [...this.entries]) {
      if (unwanted(entry.session) && this.remove(entry)) removed.push(entry.session);
    }
    return removed;
  }

  private remove(entry: Entry): boolean {
    const index = this.entries.indexOf(entry);
    if (index < 0) return false;
    clearTimeout(entry.idleTimer);
    this.entries.splice(index, 1);
    return true;
  }
}
