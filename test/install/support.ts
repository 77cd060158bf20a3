import type { ExecutableFormat } from "../../scripts/build-all.ts";

/** What `file -b` prints for each executable format a release ships. */
export const FILE_OUTPUT: Record<ExecutableFormat, RegExp> = {
  "ELF x86-64": /^ELF 64-bit LSB (pie )?executable, x86-64/,
  "ELF aarch64": /^ELF 64-bit LSB (pie )?executable, ARM aarch64/,
  "Mach-O x86_64": /^Mach-O 64-bit x86_64 executable/,
  "Mach-O arm64": /^Mach-O 64-bit arm64 executable/,
};

export function run(cmd: string[], cwd: string, env?: Record<string, string>): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync(cmd, { cwd, env, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/**
 * A Debian-packaged command the tests need. Tests never change the host: .ci/run installs the packages listed
 * in .ci/debian-packages before the suite runs.
 */
export function requireTool(command: string, debPackage: string): string {
  const found = Bun.which(command);
  if (!found) throw new Error(`${command} is missing: install the Debian package ${debPackage} (.ci/run does, from .ci/debian-packages)`);
  return found;
}
