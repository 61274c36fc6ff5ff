/**
 * The hooks' process entry (esbuild bundles it into dist/hook/hook.cjs):
 * `node hook.cjs prolog|epilog`. Kept apart from hook.ts so that importing
 * the hook logic as a library never runs a hook.
 */
import { join } from 'node:path';
import { useNativeBinding } from '../src/store/native-binding.js';
import { main } from './hook.js';

const kind = process.argv[2];
if (kind === 'prolog' || kind === 'epilog') {
  // dist/hook/hook.cjs and dist/slurm/hook-main.js both sit two folders below the package root
  useNativeBinding(
    join(process.argv[1] ?? '', '..', '..', '..', 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'),
  );
  main(kind);
} else {
  process.stderr.write(`l9gpu hook: expected "prolog" or "epilog", got ${JSON.stringify(kind ?? '')}\n`);
  process.exit(0);
}
