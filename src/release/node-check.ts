/**
 * The check that the node's Node.js can run this build: the same ABI as the one
 * better-sqlite3 was compiled for (a Node of another major fails at the first
 * store access with "was compiled against a different Node.js version"), and at
 * least the version package.json's engines names. One POSIX sh text, shipped as
 * bin/check-node and run by the .deb's preinst and the tarball's install.sh, so
 * an unsupported Node stops the install, not the first job.
 */
/** The Node a build targets: what the check compares (release-tree.ts's BuildInfo extends it). */
export interface NodeTarget {
  readonly version: string;
  /** Node's os.platform()-arch() the native modules were built for. */
  readonly platform: string;
  /** process.versions.modules: better-sqlite3 loads only on a Node with the same ABI (the same major). */
  readonly nodeAbi: string;
  readonly nodeVersion: string;
  /** The oldest Node the code runs on (package.json engines). */
  readonly nodeMin: string;
}

/** The check as a sh function `l9gpu_check_node`, for embedding. Exit status 0: supported. */
export function nodeCheckFunction(info: NodeTarget): string {
  return `# Node.js for l9gpu ${info.version} (${info.platform}): ABI ${info.nodeAbi} (Node ${info.nodeVersion.split('.')[0]}.x), at least ${info.nodeMin}.
# $L9GPU_NODE names another node than /usr/bin/node (the hooks and the unit use the same variable and path).
l9gpu_check_node() {
  node=\${L9GPU_NODE:-/usr/bin/node}
  if [ ! -x "$node" ]; then
    echo "l9gpu: Node.js ${info.nodeVersion.split('.')[0]}.x (>= ${info.nodeMin}) is needed at $node and none is there: install it first, or set L9GPU_NODE=/path/to/node" >&2
    return 1
  fi
  found=$("$node" -e 'process.stdout.write(process.versions.modules + " " + process.versions.node)' 2>/dev/null) || {
    echo "l9gpu: $node does not run" >&2
    return 1
  }
  abi=\${found%% *}; version=\${found#* }
  if [ "$abi" != "${info.nodeAbi}" ]; then
    echo "l9gpu: $node is Node.js $version; this package's native modules (better-sqlite3) are built for Node.js ${info.nodeVersion.split('.')[0]}.x (ABI ${info.nodeAbi}): install Node.js ${info.nodeVersion.split('.')[0]}.x, or use the package built for yours" >&2
    return 1
  fi
  need="${info.nodeMin.split('.').map((n) => Number(n)).concat([0, 0]).slice(0, 3).join(' ')}"
  set -- $need
  IFS=. read -r a b c <<EOF
$version
EOF
  if [ "$a" -lt "$1" ] || { [ "$a" -eq "$1" ] && [ "$b" -lt "$2" ]; } || { [ "$a" -eq "$1" ] && [ "$b" -eq "$2" ] && [ "\${c%%[!0-9]*}" -lt "$3" ]; }; then
    echo "l9gpu: $node is Node.js $version; l9gpu needs at least ${info.nodeMin}" >&2
    return 1
  fi
  return 0
}
`;
}

/** bin/check-node: the function and a call, for admins after a Node upgrade and for install.sh. */
export function nodeCheckScript(info: NodeTarget): string {
  return `#!/bin/sh
# Says whether this node's Node.js can run the l9gpu installed beside it (exit 0) or what is wrong (exit 1).
${nodeCheckFunction(info)}
l9gpu_check_node && echo "l9gpu: $node (Node.js $version) is supported"
`;
}
