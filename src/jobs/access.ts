/** Who may see which jobs: root and the [jobs] admin_group see all, everyone else their own. */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';

export interface Viewer {
  name: string;
  privileged: boolean;
}

function groupGid(name: string): number | undefined {
  try {
    const line = readFileSync('/etc/group', 'utf8').split('\n').find((l) => l.split(':')[0] === name);
    return line ? Number(line.split(':')[2]) : undefined;
  } catch {
    return undefined;
  }
}

export function viewer(adminGroup: string | null): Viewer {
  const name = userInfo().username;
  if (process.getuid?.() === 0) return { name, privileged: true };
  const gid = adminGroup ? groupGid(adminGroup) : undefined;
  return { name, privileged: gid !== undefined && (process.getgroups?.() ?? []).includes(gid) };
}
