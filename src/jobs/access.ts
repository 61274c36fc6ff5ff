/** Who may see which jobs: root and the [jobs] admin_group see all, everyone else their own. */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { requireTool, runTool } from '../core/tool.js';

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

/**
 * The viewer behind a uid the kernel vouched for (a socket peer): its name and
 * groups through NSS (`id`, so LDAP and SSSD users count), not /etc files.
 */
export async function viewerOfUid(uid: number, adminGroup: string | null): Promise<Viewer> {
  if (uid === 0) return { name: 'root', privileged: true };
  const id = (args: string[]) => Promise.resolve().then(() => runTool(requireTool('id', ['/usr/bin', '/bin'], 'coreutils'), args, 2000)).then((out) => out.trim(), () => '');
  const [name, groups] = await Promise.all([id(['-nu', String(uid)]), adminGroup ? id(['-nG', String(uid)]) : Promise.resolve('')]);
  // a uid without a name still gets its own jobs only: none match it
  return { name: name || `#${uid}`, privileged: !!adminGroup && groups.split(/\s+/).includes(adminGroup) };
}
