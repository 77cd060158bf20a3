import pkg from "../package.json" with { type: "json" };

// The build defines TLSPROOF_COMMIT; from source the commit is unknown.
declare const TLSPROOF_COMMIT: string | undefined;
const commit = typeof TLSPROOF_COMMIT === "string" && TLSPROOF_COMMIT ? TLSPROOF_COMMIT : undefined;

export const VERSION: string = pkg.version;
export const GIT_COMMIT: string | undefined = commit;
/** What `cli --version` prints: "0.1.0" or "0.1.0 (abc1234)". */
export const VERSION_TEXT = commit ? `${VERSION} (${commit.slice(0, 12)})` : VERSION;
