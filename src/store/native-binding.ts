/**
 * Where better-sqlite3's native module is. Its own lookup (the "bindings"
 * package) walks a dozen paths and a stack trace: the bundles (the hooks, the
 * light CLI) name the file instead. Apart from open.ts so that naming it loads
 * neither better-sqlite3 nor the store's schema: the light CLI names it at
 * start, and most of its commands never open the store.
 */
import { existsSync } from 'node:fs';

let path: string | undefined;

export function useNativeBinding(file: string | undefined): void {
  path = file && existsSync(file) ? file : undefined;
}

/** better-sqlite3's nativeBinding option: {} when nothing was named (its own lookup). */
export const nativeBindingOption = (): { nativeBinding?: string } => (path ? { nativeBinding: path } : {});
