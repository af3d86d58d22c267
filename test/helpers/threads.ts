import fs from 'node:fs';

/** The Linux threads of this process (chDB runs in it) as name and nice value. */
function threads(): { name: string; nice: number }[] {
  const found: { name: string; nice: number }[] = [];
  for (const tid of fs.readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    found.push({ name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), nice: Number(fields[16]) });
  }
  return found;
}

/** The names of this process's threads. */
export const threadNames = (): string[] => threads().map((thread) => thread.name);

/** The names of this process's threads at `nice`. */
export const threadsAtNice = (nice: number): string[] => threads().flatMap((thread) => (thread.nice === nice ? [thread.name] : []));
