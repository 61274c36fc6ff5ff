/**
 * Who is on the other end of a unix socket, as the kernel says (SO_PEERCRED):
 * the only answer to "which user asks" that the asker cannot forge. Node has
 * no API for it, so libc's getsockopt is called through koffi on the
 * accepted socket's descriptor.
 */
import type { Socket } from 'node:net';

export interface PeerCred {
  pid: number;
  uid: number;
  gid: number;
}

const SOL_SOCKET = 1;
// asm-generic's value (x86-64, arm64); powerpc and mips differ
const SO_PEERCRED = 17;

type GetSockOpt = (fd: number, level: number, name: number, value: Buffer, len: Buffer) => number;
let getsockopt: GetSockOpt | undefined;

/**
 * Loads getsockopt. A server calls it before it listens, so that the first
 * connections (a flood, maybe) are not all accepted uncounted while koffi loads.
 */
export async function loadPeerCred(): Promise<void> {
  if (process.platform !== 'linux' || !['x64', 'arm64'].includes(process.arch))
    throw new Error(`peer credentials are not supported on ${process.platform}/${process.arch}`);
  if (!getsockopt) {
    const koffi = (await import('koffi')).default;
    getsockopt = koffi.load('libc.so.6').func('int getsockopt(int, int, int, void *, void *)') as GetSockOpt;
  }
}

export async function peerCred(socket: Socket): Promise<PeerCred> {
  await loadPeerCred();
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new Error('the connection has no file descriptor');
  if (!getsockopt) throw new Error('getsockopt not loaded');
  const cred = Buffer.alloc(12); // struct ucred { pid_t pid; uid_t uid; gid_t gid; }
  const len = Buffer.alloc(4);
  len.writeUInt32LE(cred.length);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, len) !== 0) throw new Error('getsockopt(SO_PEERCRED) failed');
  return { pid: cred.readInt32LE(0), uid: cred.readUInt32LE(4), gid: cred.readUInt32LE(8) };
}
