import pkg from "../../package.json" with { type: "json" };

// The build defines TLSPROOF_COMMIT and TLSPROOF_COMMIT_TIME; from source the commit is unknown.
declare const TLSPROOF_COMMIT: string | undefined;
declare const TLSPROOF_COMMIT_TIME: string | undefined;
const commit = typeof TLSPROOF_COMMIT === "string" && TLSPROOF_COMMIT ? TLSPROOF_COMMIT : undefined;
const commitTime = typeof TLSPROOF_COMMIT_TIME === "string" && TLSPROOF_COMMIT_TIME ? TLSPROOF_COMMIT_TIME : undefined;

export const VERSION: string = pkg.version;
export const GIT_COMMIT: string | undefined = commit;
/** The commit's committer date, ISO 8601 (`git show -s --format=%cI`). */
export const GIT_COMMIT_TIME: string | undefined = commitTime;
/** What `cli --version` prints: "0.1.0" or "0.1.0 (abc1234)". */
export const VERSION_TEXT = commit ? `${VERSION} (${commit.slice(0, 12)})` : VERSION;
