import { readFileSync, readdirSync, readlinkSync } from "node:fs";

/** Figures of running processes, from /proc. A prover's figures include its engine hosts (child processes). */

/** Whether a process with this pid still exists (signal 0 checks without sending anything), another user's too. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A /proc `stat` file: the command name (which may hold spaces), and the fields after it, from field 3 (state) on. */
function readStat(path: string): { name: string; fields: string[] } {
  const stat = readFileSync(path, "utf8");
  const end = stat.lastIndexOf(")");
  return { name: stat.slice(stat.indexOf("(") + 1, end), fields: stat.slice(end + 2).split(" ") };
}
const statFields = (pid: number | string): string[] => readStat(`/proc/${pid}/stat`).fields;

const statusKiB = (pid: number, field: string): number =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);

/** The process's state letter: R running, S sleeping, T stopped by a signal, Z zombie… */
export const processState = (pid: number): string => statFields(pid)[0]!;

/** Resident memory now. */
export const rssBytes = (pid: number): number => statusKiB(pid, "VmRSS") * 1024;
/** Peak resident memory so far. */
export const peakRssBytes = (pid: number): number => statusKiB(pid, "VmHWM") * 1024;
export const openFds = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

/** What each open descriptor of a process points at (`socket:[123]`, `pipe:[45]`, a path…); "closed while read" for one that went meanwhile. */
function fdTargets(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return "closed while read";
    }
  });
}

const countBy = (keys: string[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const key of keys) counts[key] = (counts[key] ?? 0) + 1;
  return counts;
};

/** What a process's open descriptors are, counted by kind (socket, pipe, anon_inode:[eventfd], file…). */
export const fdKinds = (pid: number): Record<string, number> =>
  countBy(fdTargets(pid).map((target) => target.replace(/:\[\d+\]$/, "").replace(/^\/.*/, "file")));

/** CPU seconds (user + system) used so far, with those of children already ended (clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const [utime, stime, cutime, cstime] = statFields(pid).slice(11, 15).map(Number);
  return (utime! + stime! + cutime! + cstime!) / 100;
}

/**
 * CPU seconds (user + system) each thread of a process has used so far, by thread id, with its name (Linux keeps a
 * name's first 15 characters). Empty once the process has ended; a thread that ends meanwhile is left out.
 */
export function threadCpuSeconds(pid: number): Map<number, { name: string; seconds: number }> {
  const threads = new Map<number, { name: string; seconds: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    try {
      const { name, fields } = readStat(`/proc/${pid}/task/${tid}/stat`);
      threads.set(Number(tid), { name, seconds: (Number(fields[11]) + Number(fields[12])) / 100 }); // utime + stime, in 1/100 s
    } catch {
      // it ended while read
    }
  }
  return threads;
}

/** `pid` and its running children. */
export function processTree(pid: number): number[] {
  const parentOf = (entry: string): number => {
    try {
      return Number(statFields(entry)[1]);
    } catch {
      return -1; // it ended while /proc was read
    }
  };
  return [pid, ...readdirSync("/proc").filter((entry) => /^\d+$/.test(entry) && parentOf(entry) === pid).map(Number)];
}

/** A figure summed over `pid` and its running children; a child that ends meanwhile counts nothing. */
export function treeTotal(pid: number, figure: (pid: number) => number): number {
  let total = 0;
  for (const member of processTree(pid)) {
    try {
      total += figure(member);
    } catch {
      if (member === pid) throw new Error(`process ${pid} is gone`);
    }
  }
  return total;
}

const TCP_STATES: Record<string, string> = {
  "01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2", "06": "TIME_WAIT",
  "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING",
};

/**
 * A process's sockets counted by what they are: `not tcp (unix…)`, `tcp LISTEN :port`, or an accepted or outgoing TCP
 * connection by state and the listening port it belongs to (`tcp CLOSE_WAIT in :8080`, `tcp ESTABLISHED out :443`).
 */
export function socketKinds(pid: number): Record<string, number> {
  const inodes = new Set(fdTargets(pid).flatMap((target) => /^socket:\[(\d+)\]$/.exec(target)?.[1] ?? []));
  const rows = ["tcp", "tcp6"].flatMap((table) =>
    readFileSync(`/proc/${pid}/net/${table}`, "utf8").split("\n").slice(1).filter(Boolean).map((line) => {
      const f = line.trim().split(/\s+/);
      const port = (address: string) => parseInt(address.split(":")[1]!, 16);
      return { local: port(f[1]!), remote: port(f[2]!), state: TCP_STATES[f[3]!] ?? f[3]!, inode: f[9]! };
    }),
  );
  const listening = new Set(rows.filter((row) => row.state === "LISTEN").map((row) => row.local));
  return countBy(
    [...inodes].map((inode) => {
      const row = rows.find((candidate) => candidate.inode === inode);
      if (!row) return "not tcp (unix…)";
      if (row.state === "LISTEN") return `tcp LISTEN :${row.local}`;
      return listening.has(row.local) ? `tcp ${row.state} in :${row.local}` : `tcp ${row.state} out :${row.remote}`;
    }),
  );
}

/** The processes of a process group (what a terminal's Ctrl-C signals), by pid; one that ends meanwhile is left out. */
export function processGroup(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return Number(statFields(entry)[2]) === pgid;
      } catch {
        return false;
      }
    })
    .map(Number);
}
