import fs from 'node:fs';

/** Linux's clock ticks a second (`getconf CLK_TCK`): the unit of /proc/<pid>/stat's CPU times. */
const TICKS_PER_SECOND = 100;

/**
 * The CPU time (user + system, every thread) another process has used so far, in µs,
 * from /proc/<pid>/stat: bench:gateway reads it for the processes it starts that
 * cannot report it themselves (server-everything, mcp-hub) and for the pass-through
 * floor, so that each row's CPU a call is known for every process a call crosses.
 * Its resolution is a tick (10 ms): a few µs a call over a row's thousands of calls.
 */
export function processCpuUs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
}
